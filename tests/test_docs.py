"""docs/ against the code: examples run against a real planner, settings against the plugin's Java source.

A fenced block marked ``doc-test`` (```bash doc-test, ```python doc-test) is run, in page order,
in a scratch folder holding a copy of ``docs/examples/``, against a real ``hetsched serve`` of
that page (``token=T`` in the info string: one started with that token). The documented default
address ``http://127.0.0.1:8765`` is replaced by the test service's. A ``doc-output`` block right
after it is the documented answer: JSON values are compared by structure (documented keys must
exist, strings and whole numbers must be equal, fractional numbers need only be numbers, ``"..."``
stands for anything), other lines must be equal (``...`` inside a line stands for any text).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer.main
import yaml

from cluster.spec import load_spec
from hetsched import reference
from hetsched.cli import _register, app
from planner.model import PlanRequest, ProfileSet
from tests.fixtures import storm_conf
from tests.fixtures.docs import (
    DOCS,
    REPO,
    CodeBlock,
    baseline_setting_keys,
    code_blocks,
    doc_pages,
    hetsched_literals_in_plugin,
    plugin_settings,
    shell_commands,
)
from topologies import conf as topology_keys
from topologies.catalog import lookup, planner_topology

DOC_URL = "http://127.0.0.1:8765"
ANY = "..."
EXAMPLES = DOCS / "examples"
REQUIRED_PAGES = ["README.md", "quickstart/local.md", "quickstart/existing-cluster.md", "quickstart/compose.md",
                  "concepts/model.md", "concepts/strategies.md", "concepts/bench.md", "concepts/baselines.md",
                  "reference/api.md", "reference/cli.md", "reference/configuration.md", "reference/profiling-records.md",
                  "operations/install.md", "operations/plugin.md", "operations/planner.md", "operations/submitting.md",
                  "operations/profiling.md", "operations/cluster.md", "operations/upgrade.md", "operations/uninstall.md",
                  "operations/security.md", "operations/troubleshooting.md"]
"""The pages of the four parts (quickstart, concepts, reference, operations) and their index."""
QUICKSTARTS = ["quickstart/local.md", "quickstart/existing-cluster.md", "quickstart/compose.md"]
BLOCK_TIMEOUT_S = 600
"""Only against a hang: on a loaded machine one `hetsched` start can take half a minute."""


def pages_with_examples() -> list[Path]:
    return [page for page in doc_pages() if any(b.runs for b in code_blocks(page))]


# --- comparing documented and real answers ----------------------------------------------------------

def answer_items(text: str) -> list[tuple[str, object]]:
    """The answer as a sequence of JSON values and text lines, in order."""
    items: list[tuple[str, object]] = []
    decoder = json.JSONDecoder()
    i = 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        if text[i] in '{["-0123456789':
            try:
                value, i = decoder.raw_decode(text, i)
                items.append(("json", value))
                continue
            except ValueError:
                pass
        end = text.find("\n", i)
        end = len(text) if end < 0 else end
        items.append(("text", text[i:end].rstrip()))
        i = end
    return items


def _pattern(documented: str) -> re.Pattern:
    return re.compile(".*".join(re.escape(part) for part in documented.split(ANY)), re.S)


def mismatch(documented: object, real: object, where: str = "$") -> str | None:
    """Why ``real`` does not fit ``documented``, or None where it does."""
    if documented == ANY:
        return None
    if isinstance(documented, str):
        fits = isinstance(real, str) and (_pattern(documented).fullmatch(real) if ANY in documented else real == documented)
        return None if fits else f"{where}: documented {documented!r}, real {real!r}"
    if isinstance(documented, bool) or documented is None:
        return None if real is documented else f"{where}: documented {documented!r}, real {real!r}"
    if isinstance(documented, (int, float)):
        if isinstance(real, bool) or not isinstance(real, (int, float)):
            return f"{where}: documented a number, real {real!r}"
        if isinstance(documented, int) and real != documented:
            return f"{where}: documented {documented}, real {real}"
        return None
    if isinstance(documented, dict):
        if not isinstance(real, dict):
            return f"{where}: documented an object, real {real!r}"
        for key, value in documented.items():
            if key not in real:
                return f"{where}: documented key {key!r} is not in the answer (keys: {sorted(real)})"
            found = mismatch(value, real[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(documented, list):
        if not isinstance(real, list):
            return f"{where}: documented a list, real {real!r}"
        open_ended = bool(documented) and documented[-1] == ANY
        shown = documented[:-1] if open_ended else documented
        if len(real) < len(shown) or (not open_ended and len(real) != len(shown)):
            return f"{where}: documented {len(shown)} items{' or more' if open_ended else ''}, real {len(real)}"
        for n, (d, r) in enumerate(zip(shown, real)):
            found = mismatch(d, r, f"{where}[{n}]")
            if found:
                return found
        return None
    raise AssertionError(f"{where}: cannot compare documented value {documented!r}")


def answer_mismatch(documented: str, real: str) -> str | None:
    wanted, got = answer_items(documented), answer_items(real)
    if len(wanted) != len(got):
        return f"documented {len(wanted)} answer items, real {len(got)}:\n{real}"
    for n, ((kind, value), (real_kind, real_value)) in enumerate(zip(wanted, got)):
        if kind != real_kind:
            return f"item {n}: documented {kind} {value!r}, real {real_kind} {real_value!r}"
        found = mismatch(value, real_value, f"item {n}")
        if found:
            return found
    return None


def test_the_comparison_tells_good_answers_from_bad():
    documented = '201\n{"id": "...", "n": 2, "x": 1.5, "l": ["a", "..."]}\nplan ... stored'
    assert answer_mismatch(documented, '201\n{"id": "abc", "n": 2, "x": 7, "l": ["a", "b"], "y": 0}\nplan 12 stored') is None
    assert answer_mismatch(documented, '404\n{"id": "abc", "n": 2, "x": 7, "l": ["a"]}\nplan 12 stored')
    assert answer_mismatch(documented, '201\n{"id": "abc", "n": 3, "x": 7, "l": ["a"]}\nplan 12 stored')
    assert answer_mismatch(documented, '201\n{"id": "abc", "n": 2, "x": "7", "l": ["a"]}\nplan 12 stored')
    assert answer_mismatch(documented, '201\n{"id": "abc", "n": 2, "l": ["a"]}\nplan 12 stored')
    assert answer_mismatch(documented, '201\n{"id": "abc", "n": 2, "x": 7, "l": ["a"]}\nplan 12 lost')
    assert answer_mismatch(documented, '201\n{"id": "abc", "n": 2, "x": 7, "l": ["a"]}')


# --- running the examples -------------------------------------------------------------------------------

def run_block(block: CodeBlock, code: str, workdir: Path, url: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("HETSCHED_PLANNER_TOKEN", "HETSCHED_NIMBUS")}
    env.update({
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
        "HETSCHED_PLANNER_URL": url,
        "COLUMNS": "200",
        "NO_COLOR": "1",
    })
    if block.language == "bash":
        command = ["bash", "-euo", "pipefail", "-c", code]
    elif block.language == "python":
        command = [sys.executable, "-c", code]
    else:
        raise AssertionError(f"{block.where}: doc-test blocks are bash or python, not {block.language!r}")
    done = subprocess.run(command, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=BLOCK_TIMEOUT_S)
    assert done.returncode == 0, f"{block.where}: the example failed (exit {done.returncode}):\n{done.stdout}"
    return done.stdout


@pytest.mark.parametrize("page", pages_with_examples(), ids=lambda p: p.name)
def test_examples_give_the_documented_answers(page, tmp_path, start_planner_service):
    blocks = code_blocks(page)
    if any(b.runs and b.language == "bash" for b in blocks):
        missing = [tool for tool in ("curl", "jq") if shutil.which(tool) is None]
        if missing:
            pytest.skip(f"{', '.join(missing)} not installed (make setup installs them from Debian's packages where apt can be used)")
    workdir = tmp_path / "work"
    shutil.copytree(EXAMPLES, workdir / "docs" / "examples")
    services = {}

    def service(token: str | None):
        if token not in services:
            services[token] = start_planner_service(token=token)
        return services[token]

    ran = 0
    for n, block in enumerate(blocks):
        if not block.runs:
            continue
        live = service(block.attributes.get("token"))
        output = run_block(block, block.text.replace(DOC_URL, live.url), workdir, live.url)
        ran += 1
        answer = blocks[n + 1] if n + 1 < len(blocks) and blocks[n + 1].is_output else None
        if answer is not None:
            problem = answer_mismatch(answer.text, output.replace(live.url, DOC_URL))
            assert problem is None, f"{answer.where}: the documented answer is not what the service says: {problem}"
    assert ran > 0


def test_every_answer_follows_an_example():
    for page in doc_pages():
        blocks = code_blocks(page)
        for n, block in enumerate(blocks):
            if block.is_output:
                assert n > 0 and blocks[n - 1].runs, f"{block.where}: a doc-output block must follow a doc-test block"


# --- the plugin's settings ------------------------------------------------------------------------------

def settings_tables(page: Path) -> dict[str, tuple[str, str]]:
    """``key -> (default cell, heading above the table)`` from the Markdown tables of a page."""
    rows, heading = {}, ""
    for line in page.read_text().splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 3 and re.fullmatch(r"`[\w.-]+`", cells[0]):
            rows[cells[0].strip("`")] = (cells[1].strip("`"), heading)
    return rows


def test_every_plugin_setting_is_documented_with_its_default():
    documented = settings_tables(DOCS / "operations" / "plugin.md")
    settings = plugin_settings()
    assert len(settings) >= 10
    unparsed = hetsched_literals_in_plugin() - {s.key for s in settings}
    assert not unparsed, f"the plugin names settings outside SchedulerSettings/TopologySettings: {sorted(unparsed)}"
    for setting in settings:
        assert setting.key in documented, f"docs/operations/plugin.md does not document {setting.key} (read in {setting.scope} conf)"
        default, heading = documented[setting.key]
        expected = setting.default if setting.default is not None else "none"
        assert default == expected, f"docs/operations/plugin.md gives {setting.key} the default {default!r}, the plugin {expected!r}"
        section = "storm.yaml" if setting.scope == "nimbus" else "topology conf"
        assert section in heading, f"docs/operations/plugin.md lists {setting.key} under {heading!r}, not a {section} section"
    extra = {k for k in documented if k.startswith("hetsched.")} - {s.key for s in settings}
    assert not extra, f"docs/operations/plugin.md documents settings the plugin does not read: {sorted(extra)}"


def known_keys() -> set[str]:
    keys = {s.key for s in plugin_settings()} | {k.key for k in reference.plugin_keys()}
    keys |= {v for v in vars(topology_keys).values() if isinstance(v, str) and v.startswith("hetsched.")}
    return keys | baseline_setting_keys()


def test_every_baseline_setting_is_documented():
    page = (DOCS / "concepts" / "baselines.md").read_text()
    for key in baseline_setting_keys():
        assert f"`{key}`" in page, f"docs/concepts/baselines.md does not document {key}"


def test_every_hetsched_setting_named_in_the_docs_exists():
    keys = known_keys()
    for page in doc_pages():
        for found in re.finditer(r"(?<![\w/.])hetsched\.[a-z][a-z0-9.]*[a-z0-9]", page.read_text()):
            key = found.group(0)
            if key.startswith(topology_keys.CPU_MS_PREFIX) or (REPO / (key.replace(".", "/") + ".py")).is_file():
                continue  # a CPU cost key, or a Python module (python -m hetsched.reference)
            assert key in keys, f"{page.name} names {key}, which neither the plugin nor the topologies read"


def test_yaml_examples_are_valid_and_use_known_settings():
    keys = known_keys()
    for page in doc_pages():
        for block in code_blocks(page):
            if block.language != "yaml":
                continue
            settings = yaml.safe_load(block.text)
            assert isinstance(settings, dict), f"{block.where}: not a YAML mapping"
            unknown = [k for k in settings if k.startswith("hetsched.") and k not in keys]
            assert not unknown, f"{block.where}: unknown settings {unknown}"
            if "supervisor.scheduler.meta" in settings:
                meta = settings["supervisor.scheduler.meta"]
                defaults = {s.constant: s.default for s in plugin_settings()}
                assert defaults["MACHINE_TYPE_KEY"] in meta and defaults["MACHINE_ID_KEY"] in meta, block.where
                not_strings = {k: v for k, v in meta.items() if not isinstance(v, str)}
                assert not not_strings, f"{block.where}: Storm wants strings in supervisor.scheduler.meta, got {not_strings}"
            faults = storm_conf.violations(settings, STORM_RULES, keys)
            assert not faults, f"{block.where}: Storm 2.8.3 would refuse this storm.yaml: {'; '.join(faults)}"


STORM_RULES = storm_conf.load_rules()


@pytest.mark.parametrize("settings, fault", [
    ({"supervisor.scheduler.meta": {"machine-type": "small", "cores": 0.2}}, "supervisor.scheduler.meta: {'machine-type': 'small', 'cores': 0.2} fails Storm's IsMapEntryType"),
    ({"supervisor.cpu.capacity": "20"}, "supervisor.cpu.capacity: '20' fails Storm's IsPositiveNumber"),
    ({"executor.metrics.frequency.secs": 10.5}, "executor.metrics.frequency.secs: 10.5 fails Storm's IsInteger"),
    ({"nimbus.seeds": "nimbus"}, "nimbus.seeds: 'nimbus' fails Storm's IsStringList"),
    ({"supervisor.cpu.capacty": 20.0}, "supervisor.cpu.capacty is not a Storm 2.8.3 setting"),
])
def test_the_storm_yaml_check_refuses_what_storm_refuses(settings, fault):
    found = storm_conf.violations(settings, STORM_RULES, known_keys())
    assert any(fault in f for f in found), found


def test_the_storm_rules_are_those_of_the_storm_release_the_project_runs():
    from cluster.storm_home import STORM_VERSION

    assert json.loads(storm_conf.RULES_FILE.read_text())["storm"] == STORM_VERSION
    assert len(STORM_RULES) > 400 and STORM_RULES["supervisor.scheduler.meta"][0]["name"] == "IsMapEntryType"


# --- command lines ------------------------------------------------------------------------------------

def hetsched_command_lines() -> list[tuple[str, list[str]]]:
    """Every ``hetsched ...`` command in a bash block of the docs and of the results page (each figure's command),
    with shell expansions replaced by a word."""
    found = []
    for page in [*doc_pages(), RESULTS_PAGE]:
        for block in code_blocks(page):
            if block.language != "bash":
                continue
            text = re.sub(r"\$\([^()]*\)", "ID", block.text)
            text = re.sub(r"\$\{?[A-Za-z_]\w*\}?", "VALUE", text)
            text = re.sub(r" \[--?[^\]]*\]", "", text)  # optional arguments written as [--option VALUE]
            for words in shell_commands(CodeBlock(block.page, block.line, "bash", text=text)):
                segment: list[str] = []
                for word in words + ["|"]:
                    if word in ("|", "||", "&&", ";"):
                        if "hetsched" in segment:
                            found.append((block.where, segment[segment.index("hetsched") + 1:]))
                        segment = []
                    else:
                        segment.append(word)
    return found


def test_every_hetsched_command_in_the_docs_parses():
    _register()
    root = typer.main.get_command(app)
    lines = hetsched_command_lines()
    assert len(lines) >= 15
    for where, args in lines:
        try:
            context = root.make_context("hetsched", list(args), resilient_parsing=False)
            command = root
            while hasattr(command, "resolve_command"):  # a group (Typer ships its own click)
                protected = getattr(context, "_protected_args", None) or getattr(context, "protected_args", [])
                name, command, rest = command.resolve_command(context, [*protected, *context.args])
                context = command.make_context(name, rest, parent=context)
        except (click.exceptions.Exit, typer.Exit):
            continue
        except (click.ClickException, typer.TyperException) as fault:
            if type(fault).__name__ == "NoArgsIsHelpError":
                continue  # a group named alone (`hetsched profiles`) prints its help
            message = fault.format_message() if hasattr(fault, "format_message") else str(fault)
            pytest.fail(f"{where}: `hetsched {' '.join(args)}` does not parse: {message}")


def test_every_serve_option_is_documented():
    _register()
    serve = typer.main.get_command(app).commands["serve"]
    text = (DOCS / "operations" / "planner.md").read_text()
    for param in serve.params:
        for option in param.opts:
            if option.startswith("--") and option != "--help":
                assert f"`{option}`" in text, f"docs/operations/planner.md does not document hetsched serve {option}"


# --- the pages and their examples -------------------------------------------------------------------------

def test_examples_are_the_default_cluster_and_a_catalog_topology():
    request = PlanRequest.model_validate_json((EXAMPLES / "linear-plan.json").read_text())
    assert request.cluster == load_spec().planner_cluster()
    graph = planner_topology(lookup(request.topology.name))
    assert [(c.id, c.kind, c.profile) for c in request.topology.components] == [
        (c.id, c.kind, c.profile) for c in graph.components]
    assert [(s.source, s.target) for s in request.topology.streams] == [(s.source, s.target) for s in graph.streams]

    profiles = ProfileSet.model_validate_json((EXAMPLES / "micro-profiles.json").read_text())
    pairs = {(e.profile, e.machine_type) for e in profiles.entries}
    needed = {(c.profile, t.name) for c in graph.components for t in request.cluster.machine_types}
    assert needed <= pairs, f"micro-profiles.json lacks {sorted(needed - pairs)}"


def test_pages_exist_and_links_resolve():
    for name in REQUIRED_PAGES:
        assert (DOCS / name).is_file(), f"docs/{name} is missing"
    readme = (REPO / "README.md").read_text()
    for name in ["README.md", *QUICKSTARTS]:
        assert f"](docs/{name})" in readme, f"README.md does not link docs/{name}"
    index = (DOCS / "README.md").read_text()
    for page in doc_pages():
        name = page.relative_to(DOCS).as_posix()
        if name != "README.md":
            assert f"]({name})" in index, f"docs/README.md, the index, does not link docs/{name}"
    for page in [*doc_pages(), REPO / "README.md", REPO / "ARCHITECTURE.md"]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(REPO)} links {target}, which does not exist"


def test_compose_page_says_how_it_runs_and_what_it_measured():
    text = (DOCS / "quickstart" / "compose.md").read_text()
    assert "not run here" not in text and "checked for consistency" not in text
    for command in ("hetsched cluster up --compose", "hetsched cluster down --compose", "hetsched bench --cluster compose",
                    "docker/start-dockerd.sh", "docker/build-base.sh"):
        assert command in text, f"docs/quickstart/compose.md does not say {command!r}"
    assert "../results/README.md" in text, "the compose page links the results page for what it measured"


def test_quoted_plugin_messages_are_the_plugin_s_own():
    """What plugin.md tells operators to look for in Nimbus's log and the Storm UI."""
    java = "\n".join(p.read_text() for p in (REPO / "storm-plugin" / "src" / "main").rglob("*.java"))
    page = (DOCS / "operations" / "plugin.md").read_text()
    for fragment in ("hetsched: planner at ", "placed by planner (", "planner not used (",
                     "scheduled evenly by Storm's DefaultScheduler", " supervisors in ", "machine type from scheduler meta '",
                     "stored plan ", " not used (", "; asking for a new plan"):
        assert fragment in page, f"docs/operations/plugin.md no longer quotes {fragment!r}"
        assert fragment in java, f"the plugin no longer says {fragment!r}, which docs/operations/plugin.md quotes"


# --- figures live on the results page ---------------------------------------------------------------

RESULTS_PAGE = DOCS / "results" / "README.md"
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
_FIGURE_LINE = re.compile(r"%|\d(?:\.\d+)?x\b")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]*\d)")


def readme_figures() -> list[tuple[int, str]]:
    """Every number on a README line that states a measured figure (a percentage or a speed-up), dates left out."""
    found = []
    for number, line in enumerate((REPO / "README.md").read_text().splitlines(), 1):
        if not _FIGURE_LINE.search(line):
            continue
        for figure in _NUMBER.findall(_DATE.sub(" ", line.replace("`", " "))):
            found.append((number, figure))
    return found


def test_readme_figures_are_those_of_the_results_page():
    """A figure lives on the results page; the README quotes it with the same value, so no figure has two values."""
    results = RESULTS_PAGE.read_text()
    figures = readme_figures()
    assert len(figures) >= 20, "the README states its result as figures"
    for line, figure in figures:
        assert re.search(rf"(?<![\d.]){re.escape(figure)}(?![\d])", results), (
            f"README.md:{line} states {figure}, which docs/results/README.md does not: the README quotes the results page")


def test_the_figure_check_reads_figures():
    line = "| Linear | 2.75x (2.09-3.84) | +1.1 % (range -5.8 to +8.1 %) on 2026-11-22, python 3.11 |"
    assert [f for f in _NUMBER.findall(_DATE.sub(" ", line))] == ["2.75", "2.09", "3.84", "1.1", "5.8", "8.1", "3.11"]
