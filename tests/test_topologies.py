"""The topologies' graphs, the jar, the submission (parallelism and config) and every user error before Nimbus."""
from __future__ import annotations

import itertools
import math
import json
import os
import socket
import subprocess
import sys
import zipfile
from collections import Counter
from io import StringIO
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console
from typer.testing import CliRunner

from hetsched.cli import app
import hetsched.topology_cmd  # noqa: F401  registers submit/kill/topologies on app
from hetsched.status import print_scheduler_status
from planner.fixtures import TOPOLOGIES, load_topology
from planner.model import Topology as PlannerTopology
from topologies import conf as keys
from topologies.catalog import CATALOG, lookup, planner_topology
from topologies.errors import TopologyError
from topologies.inputs import URL_COUNT, URL_ZIPF_S, ZipfSampler, page_views, parse_page_view, sentences, word
from topologies.jar import PACKAGE_DIR, build_jar, source_files
from observe.nimbus import parse_address
from topologies.pacing import Pacer
from topologies.plans import plan_parallelism
from topologies.submission import (
    MULTILANG_COMMAND,
    SubmitRequest,
    build_submission,
    default_streamparse_run,
    parse_conf,
    parse_parallelism,
)
from topologies.windows import SlidingCounts, SlidingSets, slot_count

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _graph(topology: PlannerTopology) -> tuple[dict, set]:
    components = {c.id: (c.kind, c.profile) for c in topology.components}
    streams = {(s.source, s.target, s.grouping) for s in topology.streams}
    return components, streams


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_micro_benchmarks_have_the_planner_fixtures_components_and_streams(name):
    assert _graph(planner_topology(lookup(name))) == _graph(load_topology(name))


def test_storm_benchmark_topologies_group_the_second_stream_by_key():
    rolling = planner_topology(lookup("rolling_count"))
    unique = planner_topology(lookup("unique_visitor"))
    assert _graph(rolling)[1] == {("spout", "split", "shuffle"), ("split", "rolling_count", "fields")}
    assert _graph(unique)[1] == {("spout", "view", "shuffle"), ("view", "uniquer", "fields")}
    assert lookup("rolling_count").topology.thrift_bolts["rolling_count"].common.inputs
    grouping = next(iter(lookup("unique_visitor").topology.thrift_bolts["uniquer"].common.inputs.values()))
    assert grouping.fields == ["url"]


def test_every_component_runs_through_streamparse_run_from_this_package():
    for entry in CATALOG.values():
        for spec in entry.topology.specs:
            shell = spec.component_object.shell
            assert shell.execution_command == "streamparse_run"
            module, cls = shell.script.rsplit(".", 1)
            assert module in ("topologies.spouts", "topologies.bolts")
            assert (PACKAGE_DIR / f"{module.split('.')[1]}.py").exists()


@pytest.mark.parametrize(("text", "name"), [
    ("Linear", "linear"), ("DIAMOND", "diamond"), ("rolling-count", "rolling_count"), ("RollingCount", "rolling_count"),
    (" unique_visitor ", "unique_visitor"), ("Unique-Visitor", "unique_visitor"),
])
def test_lookup_ignores_case_and_separators(text, name):
    assert lookup(text) is CATALOG[name]


def test_unknown_topology_lists_the_known_ones():
    with pytest.raises(TopologyError, match="unknown topology 'ring'; known topologies: linear, diamond, star"):
        lookup("ring")


# --- the jar ---

def test_jar_holds_the_package_sources_under_resources(tmp_path):
    jar = build_jar(tmp_path / "t.jar")
    with zipfile.ZipFile(jar) as zf:
        names = zf.namelist()
        assert "META-INF/MANIFEST.MF" in names
        python = sorted(n for n in names if n.startswith("resources/"))
        assert python == sorted(f"resources/{p.as_posix()}" for p in source_files())
        assert "resources/topologies/bolts.py" in python and "resources/topologies/spouts.py" in python
        assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
        assert zf.read("resources/topologies/bolts.py") == (PACKAGE_DIR / "bolts.py").read_bytes()


def test_jar_is_the_same_for_the_same_sources(tmp_path):
    assert build_jar(tmp_path / "a.jar").read_bytes() == build_jar(tmp_path / "b.jar").read_bytes()


# --- the submission ---

def test_submission_sets_parallelism_shell_command_and_config_without_touching_the_catalog():
    request = SubmitRequest("linear", parallelism={"low": 2, "high": 5}, rate=40.0, workers=3,
                            conf={"topology.max.spout.pending": 10, keys.cpu_ms_key("highCompute"): 8})
    submission = build_submission(request, "/opt/venv/bin/streamparse_run")
    assert submission.parallelism == {"spout": 1, "low": 2, "mid": 1, "high": 5}
    assert submission.topology.bolts["high"].common.parallelism_hint == 5
    assert CATALOG["linear"].topology.thrift_topology.bolts["high"].common.parallelism_hint == 1
    for spec in [*submission.topology.spouts.values()]:
        assert spec.spout_object.shell.execution_command == "/opt/venv/bin/streamparse_run"
    for spec in submission.topology.bolts.values():
        assert spec.bolt_object.shell.execution_command == "/opt/venv/bin/streamparse_run"
    assert CATALOG["linear"].topology.thrift_topology.bolts["high"].bolt_object.shell.execution_command == "streamparse_run"
    conf = submission.conf
    assert conf[keys.COMPONENT_PROFILES] == {"spout": "spout", "low": "lowCompute", "mid": "midCompute", "high": "highCompute"}
    assert conf[keys.STATS_SAMPLE_RATE] == 1.0
    assert conf[keys.SPOUT_RATE] == 40.0 and conf[keys.WORKERS] == 3
    assert conf["topology.max.spout.pending"] == 10
    assert conf[keys.cpu_ms_key("highCompute")] == 8 and conf[keys.cpu_ms_key("lowCompute")] == keys.DEFAULT_CPU_MS["lowCompute"]
    assert keys.PLAN_ID not in conf
    json.dumps(conf)


def test_default_cpu_per_tuple_keeps_the_paper_ratio():
    ms = keys.DEFAULT_CPU_MS
    paper = {"lowCompute": 0.0581, "midCompute": 0.103, "highCompute": 0.1915}
    for profile in ("midCompute", "highCompute"):
        assert ms[profile] / ms["lowCompute"] == pytest.approx(paper[profile] / paper["lowCompute"], rel=0.05)


def test_plan_and_profiles_go_into_the_config():
    submission = build_submission(SubmitRequest("star", plan_id="p-1", profiles="micro", planner_url="http://x:1"))
    assert submission.conf[keys.PLAN_ID] == "p-1"
    assert submission.conf[keys.PROFILES] == "micro"
    assert submission.conf[keys.PLANNER_URL] == "http://x:1"


def test_windowed_bolts_tick_at_the_emit_frequency():
    submission = build_submission(SubmitRequest("rolling_count", conf={keys.EMIT_FREQUENCY_S: 5}))
    assert json.loads(submission.topology.bolts["rolling_count"].common.json_conf)[keys.TICK_FREQ_S] == 5
    default = build_submission(SubmitRequest("unique_visitor"))
    assert json.loads(default.topology.bolts["uniquer"].common.json_conf)[keys.TICK_FREQ_S] == 3


def test_streamparse_run_is_the_virtualenvs():
    run = default_streamparse_run()
    assert run == Path(sys.prefix).resolve() / "bin" / "streamparse_run"
    assert os.access(run, os.X_OK)
    interpreter = Path(run.read_text().splitlines()[0].removeprefix("#!").strip())
    assert interpreter.parent.parent.resolve() == Path(sys.prefix).resolve(), f"{run} runs {interpreter}, not this venv's Python"
    done = subprocess.run([str(run), "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "streamparse_run" in done.stdout, done.stderr


def test_workers_find_the_multilang_command_on_their_path_not_at_the_submitter_s():
    submission = build_submission(SubmitRequest("diamond"))
    commands = {spec.spout_object.shell.execution_command for spec in submission.topology.spouts.values()}
    commands |= {spec.bolt_object.shell.execution_command for spec in submission.topology.bolts.values()}
    assert commands == {MULTILANG_COMMAND} and "/" not in MULTILANG_COMMAND


@pytest.mark.parametrize("command, fault", [
    ("", "must be one program"),
    ("python -m streamparse.run", "must be one program"),
    ("venv/bin/streamparse_run", "is a relative path"),
])
def test_a_multilang_command_workers_cannot_run_is_refused(command, fault):
    with pytest.raises(TopologyError, match=fault):
        build_submission(SubmitRequest("linear"), command)


@pytest.mark.parametrize("request_, fault", [
    (SubmitRequest("linear", parallelism={"lo": 2}), "topology linear has no component 'lo'; its components are spout, low, mid, high"),
    (SubmitRequest("linear", rate=-1.0), "--rate must be"),
    (SubmitRequest("linear", rate=float("nan")), "--rate must be"),
    (SubmitRequest("linear", workers=0), "--workers must be at least 1"),
    (SubmitRequest("linear", sample_rate=0.0), "sample rate"),
    (SubmitRequest("linear", conf={keys.cpu_ms_key("lowCompute"): "fast"}), "CPU milliseconds"),
    (SubmitRequest("nope"), "unknown topology 'nope'"),
])
def test_bad_requests_are_refused_with_a_sentence(request_, fault):
    with pytest.raises(TopologyError, match=fault.replace("(", r"\(").replace(")", r"\)")):
        build_submission(request_)


def test_parse_parallelism_and_conf():
    assert parse_parallelism("spout=1, low=3,") == {"spout": 1, "low": 3}
    assert parse_conf(["a=1", "b=x", "c=[1,2]", "d={\"k\": true}"]) == {"a": 1, "b": "x", "c": [1, 2], "d": {"k": True}}
    for bad, fault in [("low", "not component=N"), ("low=x", "whole number"), ("low=0", "at least 1"),
                       ("low=1,low=2", "twice"), ("=3", "not component=N")]:
        with pytest.raises(TopologyError, match=fault):
            parse_parallelism(bad)
    with pytest.raises(TopologyError, match="not key=value"):
        parse_conf(["novalue"])


def test_parse_nimbus_address():
    assert (parse_address("10.0.0.1:7000").host, parse_address("10.0.0.1:7000").port) == ("10.0.0.1", 7000)
    assert parse_address("nimbus").port == 6627
    for bad in ("h:x", "h:0", ":"):
        with pytest.raises(TopologyError, match="is not host:port"):
            parse_address(bad)


# --- plans ---

def _plan(instances: dict[str, int]):
    from planner.model import Plan
    return Plan(id="p1", strategy="paper", topology="linear", input_rate=1, total_throughput=1, sink_throughput=1,
                instances=instances, assignments=[], machines=[], weighted_utilization=0)


def test_plan_instances_become_the_parallelism_system_components_aside():
    plan = _plan({"spout": 1, "low": 2, "mid": 3, "high": 6, "__acker": 2})
    assert plan_parallelism(plan, lookup("linear")) == {"spout": 1, "low": 2, "mid": 3, "high": 6}


def test_plan_for_other_components_is_refused():
    with pytest.raises(TopologyError, match="does not match topology star: it has no instances for spout1, spout2 "
                                            r"and places components the topology does not have \(spout\)"):
        plan_parallelism(_plan({"spout": 1, "low": 2, "mid": 3, "high": 6}), lookup("star"))


# --- the components' pure parts ---

def test_pacer_emits_at_the_rate_and_forgives_long_stalls():
    pacer = Pacer(rate=10.0, start=0.0)
    assert pacer.due(0.05) == 0 and pacer.wait(0.05) == pytest.approx(0.05)
    assert pacer.due(0.35) == 3
    pacer.sent(3)
    assert pacer.due(0.39) == 0
    assert pacer.due(100.0) == 10
    pacer.sent(10)
    assert pacer.due(100.0) == 0 and pacer.due(100.1) == 1


def test_sliding_windows_forget_the_oldest_slot():
    counts = SlidingCounts(slots=2)
    for key in ("a", "a", "b"):
        counts.add(key)
    assert counts.totals_then_advance() == {"a": 2, "b": 1}
    counts.add("a")
    assert counts.totals_then_advance() == {"a": 3, "b": 1}
    assert counts.totals_then_advance() == {"a": 1}
    sets = SlidingSets(slots=2)
    for visitor in (1, 1, 2):
        sets.add("u", visitor)
    assert sets.sizes_then_advance() == {"u": 2}
    assert slot_count(9, 3) == 3 and slot_count(300, 60) == 5 and slot_count(1, 5) == 1


def test_page_views_follow_the_declared_zipf_skew():
    views = [parse_page_view(line) for line in itertools.islice(page_views(task=0), 20_000)]
    assert all(v is not None for v in views)
    counts = Counter(url for url, _ in views)
    share_top = counts.most_common(1)[0][1] / len(views)
    assert share_top == pytest.approx(ZipfSampler(URL_COUNT, URL_ZIPF_S, None).probability(1), rel=0.15)
    assert counts.most_common(1)[0][0].endswith("/page/1")


def test_generated_inputs_are_reproducible_and_differ_per_task():
    first = list(itertools.islice(sentences(task=0), 5))
    assert first == list(itertools.islice(sentences(task=0), 5))
    assert first != list(itertools.islice(sentences(task=1), 5))
    assert len({word(r) for r in range(1, 5001)}) == 5000
    assert parse_page_view("garbage") is None and parse_page_view("u\t200\t1\tx") is None


# --- the command line, before any cluster ---

def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_unknown_topology():
    result = runner.invoke(app, ["submit", "ring", "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1
    assert "unknown topology 'ring'; known topologies: linear, diamond, star, rolling_count, unique_visitor" in result.output
    assert "Traceback" not in result.output


def test_cli_parallelism_for_unknown_component():
    result = runner.invoke(app, ["submit", "diamond", "--parallelism", "low=2,sink=3", "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1
    assert "topology diamond has no component 'sink'; its components are spout, low, mid, high" in result.output


def test_cli_says_where_it_looked_for_nimbus():
    port = _closed_port()
    for args in (["submit", "linear"], ["kill", "linear"], ["topologies"]):
        result = runner.invoke(app, [*args, "--nimbus", f"127.0.0.1:{port}"])
        assert result.exit_code == 1
        assert f"cannot reach Nimbus at 127.0.0.1:{port} (from --nimbus)" in result.output
        assert "Traceback" not in result.output


def test_cli_nimbus_from_environment(monkeypatch):
    port = _closed_port()
    monkeypatch.setenv("HETSCHED_NIMBUS", f"127.0.0.1:{port}")
    result = runner.invoke(app, ["topologies"])
    assert result.exit_code == 1
    assert f"cannot reach Nimbus at 127.0.0.1:{port} (from $HETSCHED_NIMBUS)" in result.output


def test_cli_plan_and_parallelism_together_are_refused():
    result = runner.invoke(app, ["submit", "linear", "--plan", "p1", "-p", "low=2", "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1
    assert "give either --plan or --parallelism, not both" in result.output


# --- plans from a real planning service ---

def _linear_plan_request() -> dict:
    entries = [
        {"profile": profile, "machine_type": machine_type, "e": e * factor, "met": 0.5}
        for profile, e in (("spout", 0.0005), ("lowCompute", 0.002), ("midCompute", 0.0036), ("highCompute", 0.0066))
        for machine_type, factor in (("small", 2.0), ("large", 1.0))
    ]
    return {
        "topology": planner_topology(lookup("linear")).model_dump(mode="json", by_alias=True, exclude_none=True),
        "cluster": {
            "machine_types": [{"name": "small", "capacity": 100, "cores": 1, "slots": 4},
                              {"name": "large", "capacity": 100, "cores": 4, "slots": 4}],
            "machines": [{"id": "sup-small", "type": "small"}, {"id": "sup-large", "type": "large"}],
        },
        "profiles": {"entries": entries},
        "strategy": "paper",
    }


@pytest.fixture(scope="module")
def stored_plan(planner_service):
    with planner_service.http() as http:
        response = http.post("/v1/plans", json=_linear_plan_request())
    assert response.status_code == 201, response.text
    return response.json()


def test_plan_from_the_service_sets_every_components_parallelism(planner_service, stored_plan):
    from topologies.submit import apply_plan

    request = apply_plan(SubmitRequest("linear", plan_id=stored_plan["id"], planner_url=planner_service.url, profiles="micro"))
    assert request.parallelism == {c: stored_plan["instances"][c] for c in ("spout", "low", "mid", "high")}
    submission = build_submission(request)
    assert submission.parallelism == request.parallelism
    assert submission.conf[keys.PLAN_ID] == stored_plan["id"]
    assert submission.conf[keys.PROFILES] == "micro"


def test_cli_plan_that_does_not_exist(planner_service):
    result = runner.invoke(app, ["submit", "linear", "--plan", "no-such-plan", "--planner", planner_service.url,
                                 "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1
    assert f"the planner at {planner_service.url} has no plan 'no-such-plan'" in result.output


def test_cli_plan_for_another_topology(planner_service, stored_plan):
    result = runner.invoke(app, ["submit", "star", "--plan", stored_plan["id"], "--planner", planner_service.url,
                                 "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1
    assert f"plan {stored_plan['id']} (topology 'linear') does not match topology star" in result.output


def test_cli_planner_unreachable():
    result = runner.invoke(app, ["submit", "linear", "--plan", "p1", "--planner", f"http://127.0.0.1:{_closed_port()}",
                                 "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1
    assert "no planner at http://127.0.0.1:" in result.output and "Traceback" not in result.output


def test_scheduler_status_is_listed_a_line_per_topology_as_the_scheduler_said_it():
    out = StringIO()
    said = "hetsched: planner not used (planner refused the request: [bad] list); scheduled evenly"
    print_scheduler_status(Console(file=out, width=40), [SimpleNamespace(name="b", scheduler_status=said),
                                                        SimpleNamespace(name="a", scheduler_status="")])
    assert out.getvalue() == f"scheduler status:\n  b: {said}\n", "markup-like text kept, unwrapped; silent ones left out"


def test_spare_tasks_give_every_component_more_tasks_than_executors():
    submission = build_submission(SubmitRequest("linear", parallelism={"high": 2}, spare_tasks=2.5))
    assert submission.tasks["high"] == 5 and submission.parallelism["high"] == 2
    for component_id, spec in {**submission.topology.spouts, **submission.topology.bolts}.items():
        assert json.loads(spec.common.json_conf)[keys.TASKS] == submission.tasks[component_id]
        assert submission.tasks[component_id] == math.ceil(2.5 * submission.parallelism[component_id])
    assert submission.conf[keys.SPARE_TASKS] == 2.5


def test_without_spare_tasks_a_component_has_one_task_per_executor():
    submission = build_submission(SubmitRequest("linear"))
    assert submission.tasks == submission.parallelism
    assert all(keys.TASKS not in json.loads(s.common.json_conf or "{}")
               for s in {**submission.topology.spouts, **submission.topology.bolts}.values())


@pytest.mark.parametrize("factor", [0.5, float("nan"), "two"])
def test_spare_tasks_below_one_are_refused_in_one_sentence(factor):
    with pytest.raises(TopologyError, match="spare tasks .* must be a factor of at least 1"):
        build_submission(SubmitRequest("linear", conf={keys.SPARE_TASKS: factor}))


def test_metrics_are_on_by_request_and_keep_the_topologys_own_hooks():
    on = build_submission(SubmitRequest("linear", metrics=True, metrics_url="http://planner:8765",
                                        conf={keys.TASK_HOOKS: ["com.example.Hook"]})).conf
    assert on[keys.TASK_HOOKS] == ["com.example.Hook", keys.METRICS_HOOK_CLASS]
    assert on[keys.MULTILANG_LOG_HANDLER] == keys.PID_LOG_HANDLER_CLASS
    assert on[keys.METRICS_URL] == "http://planner:8765"
    workers_own = build_submission(SubmitRequest("linear", metrics=True)).conf
    assert keys.METRICS_URL not in workers_own and workers_own[keys.TASK_HOOKS] == [keys.METRICS_HOOK_CLASS]
    off = build_submission(SubmitRequest("linear")).conf
    assert keys.TASK_HOOKS not in off and keys.MULTILANG_LOG_HANDLER not in off


@pytest.mark.parametrize("where", [["linear"], ["--flux", "topologies/flux/words-cpu.yaml"]])
def test_the_workers_metrics_url_is_an_option_of_its_own(monkeypatch, where):
    """On compose this machine reaches the planner on 127.0.0.1 and the workers reach it by service name."""
    import topologies.java_submit as java_submit
    import topologies.submit as catalog_submit

    asked = []

    def stop(request, address, **kwargs):
        asked.append(request)
        raise TopologyError("stopped before Nimbus")

    monkeypatch.setattr(catalog_submit, "submit", stop)
    monkeypatch.setattr(java_submit, "submit_java", stop)
    args = ["submit", *where, "--plan", "p1", "--nimbus", "127.0.0.1:1", "--planner", "http://127.0.0.1:26001"]
    runner.invoke(app, [*args, "--metrics-url", "http://planner:8765"])
    runner.invoke(app, args)
    assert [(r.planner_url, r.metrics_url) for r in asked] == [
        ("http://127.0.0.1:26001", "http://planner:8765"), ("http://127.0.0.1:26001", "http://127.0.0.1:26001")]


def test_a_metrics_url_without_metrics_is_one_sentence():
    result = runner.invoke(app, ["submit", "linear", "--no-metrics", "--metrics-url", "http://planner:8765",
                                 "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1 and "--no-metrics turns them off" in result.output


def test_a_python_float_can_cross_workers_storm_is_told_how_to_serialize_it():
    # Storm's multi-lang JSON reader makes a Python float a java.math.BigDecimal; unregistered, the first such tuple
    # that crosses workers kills the worker (heldout-streamparse's readings, 2026-11-27)
    from topologies.submission import KRYO_REGISTER, MULTILANG_NUMBER_CLASSES, with_multilang_numbers

    assert with_multilang_numbers(None) == list(MULTILANG_NUMBER_CLASSES)
    mine = [{"java.math.BigDecimal": "my.Serializer"}, "my.Event"]
    assert with_multilang_numbers(mine) == mine + ["java.math.BigInteger"]
    assert KRYO_REGISTER == "topology.kryo.register"


@pytest.mark.parametrize("cpu_ms, least_s", [(None, 0.0), (4.0, 0.004)])
def test_rolling_count_spends_the_cpu_its_conf_adds_per_tuple(cpu_ms, least_s):
    """storm-benchmark's count does next to no work; hetsched.cpu.ms.rollingCount makes the counting the bottleneck."""
    import time

    from topologies.bolts import RollingCount

    bolt = object.__new__(RollingCount)
    bolt.is_sink, bolt.processed, bolt.log_interval_s, bolt.last_log = True, 0, 0.0, 0.0
    bolt.setup({} if cpu_ms is None else {keys.cpu_ms_key("rollingCount"): cpu_ms})
    start = time.thread_time()
    bolt.process(SimpleNamespace(values=["the"]))
    spent = time.thread_time() - start
    assert spent >= least_s and bolt.processed == 1
    assert (spent < 0.004) == (cpu_ms is None)
