"""The core install (`pip install hetsched`) is the planner, its service and the command line, without the extras.

The fast tests hide the extras' modules from a subprocess of this venv; the slow one installs the
repository into a fresh venv (pip's cache makes that ~25 s) and plans over HTTP with it.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hetsched import extras
from hetsched.cli import COMMAND_EXTRAS, TOPOLOGY_COMMANDS, _register, app
from planner.model import Plan

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "planner" / "fixtures"
EXTRA_MODULES = ("pyspark", "streamparse", "matplotlib")
INSTALL_TIMEOUT_S = 300
START_TIMEOUT_S = 60


def _hetsched_without(hidden: tuple[str, ...], *args: str, extra_code: str = "") -> subprocess.CompletedProcess:
    """``hetsched ARGS`` in a subprocess of this venv in which the ``hidden`` modules cannot be imported."""
    code = ("import sys\n"
            f"for m in {hidden!r}: sys.modules[m] = None\n"
            f"sys.argv = ['hetsched', *{list(args)!r}]\n"
            "from hetsched.cli import main, app, _register\n"
            f"{extra_code}\n"
            "main()\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, cwd=REPO, check=False)


def _registered_paths() -> dict[str, object]:
    _register()
    paths: dict[str, object] = {info.name: info.callback for info in app.registered_commands}
    for group in app.registered_groups:
        paths |= {f"{group.name} {info.name}": info.callback for info in group.typer_instance.registered_commands}
    return paths


def test_every_command_needing_an_extra_is_a_registered_command():
    assert set(COMMAND_EXTRAS) <= set(_registered_paths())
    assert all(set(needed) <= set(extras.EXTRA_MODULES) for needed in COMMAND_EXTRAS.values())


def test_the_placeholders_stand_for_exactly_the_topology_commands():
    from_module = {path for path, callback in _registered_paths().items()
                   if getattr(callback, "__module__", "") == "hetsched.topology_cmd"}
    assert from_module == set(TOPOLOGY_COMMANDS)


@pytest.mark.parametrize(("argv", "named"), [
    (("submit", "linear", "-p", "spout=2", "--unknown-option"), "pip install 'hetsched[topologies]'"),
    (("cluster", "up"), "pip install 'hetsched[topologies]'"),
    (("aggregate", "tests/__init__.py"), "pip install 'hetsched[spark]'"),
    (("profile", "linear"), "pip install 'hetsched[spark,topologies]'"),
    (("bench",), "pip install 'hetsched[bench]'"),
])
def test_a_command_whose_extra_is_missing_exits_2_with_one_sentence_naming_it(argv, named):
    done = _hetsched_without(EXTRA_MODULES, *argv)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and named in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error: `hetsched {' '.join(argv[:2] if argv[0] == 'cluster' else argv[:1])}` needs the ")


def test_the_help_lists_a_command_of_a_missing_extra_with_its_pip_command():
    done = _hetsched_without(EXTRA_MODULES, "--help")
    assert done.returncode == 0, done.stderr
    assert re.search(r"submit +Needs the topologies extra: pip install 'hetsched\[topologies\]'", done.stdout)


def test_an_extra_reached_only_on_some_path_is_named_too():
    boom = "_register()\n@app.command('boom')\ndef boom():\n    import pyspark.sql\n"
    done = _hetsched_without(("pyspark",), "boom", extra_code=boom)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("error: this command needs the spark extra of hetsched (pyspark is not installed); "
                                   "install with: pip install 'hetsched[spark]'")


def test_the_core_commands_load_no_extra():
    code = ("import sys\n"
            "from hetsched.cli import _register\n"
            "_register()\n"
            "from planner.service.app import create_app\n"
            "from planner.service.settings import ServiceSettings\n"
            "import planner.api\n"
            f"print(sorted(m for m in {('pyspark', 'matplotlib')!r} if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_plan_works_with_every_extra_hidden():
    done = _hetsched_without(EXTRA_MODULES, "plan", "--json", "--topology", str(FIXTURES / "paper_topology_linear.yaml"),
                             "--cluster", str(FIXTURES / "paper_cluster_1.yaml"), "--profiles", str(FIXTURES / "paper_profiles.yaml"))
    assert done.returncode == 0, done.stderr
    assert Plan.model_validate_json(done.stdout).topology == "linear"


def _copy_sources(to: Path) -> Path:
    """The repository's files as a clean clone has them (no build/ or egg-info left by an in-tree build)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        pytest.skip("the repository is not a git checkout")
    for name in listed.stdout.splitlines():
        source = REPO / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)
    return to


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory) -> Path:
    """A fresh venv with ``pip install <repo>``: the core only."""
    root = tmp_path_factory.mktemp("core-install")
    source = _copy_sources(root / "src")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(source)], capture_output=True, text=True,
                          env=env, timeout=INSTALL_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"pip install of the core failed:\n{done.stderr[-3000:]}"
    return venv


def _core_env() -> dict[str, str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("PYTHONPATH", None)
    env.pop("HETSCHED_PLANNER_TOKEN", None)
    return env


@pytest.mark.slow
def test_the_core_install_has_none_of_the_extras(core_venv):
    for module in EXTRA_MODULES:
        done = subprocess.run([str(core_venv / "bin" / "python"), "-c", f"import {module}"], capture_output=True,
                              text=True, env=_core_env(), cwd=core_venv, timeout=60, check=False)
        assert done.returncode != 0 and f"No module named '{module}'" in done.stderr


@pytest.mark.slow
def test_the_core_install_serves_and_plans_over_http(core_venv, tmp_path):
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen([str(core_venv / "bin" / "hetsched"), "serve", "--host", "127.0.0.1", "--port", "0",
                                   "--db", str(tmp_path / "plans.db")], stdout=log, stderr=subprocess.STDOUT,
                                  env=_core_env(), cwd=tmp_path)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        url = None
        while url is None and time.monotonic() < deadline and server.poll() is None:
            found = re.search(r"Uvicorn running on (http://[\d.]+:\d+)", log_path.read_text())
            url = found.group(1) if found else None
            time.sleep(0.1)
        assert url, f"hetsched serve of the core install did not start:\n{log_path.read_text()}"
        done = subprocess.run([str(core_venv / "bin" / "hetsched"), "plan", "--json", "--planner", url,
                               "--topology", str(FIXTURES / "paper_topology_linear.yaml"),
                               "--cluster", str(FIXTURES / "paper_cluster_1.yaml"),
                               "--profiles", str(FIXTURES / "paper_profiles.yaml")],
                              capture_output=True, text=True, env=_core_env(), cwd=tmp_path, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        plan = Plan.model_validate_json(done.stdout)
        assert plan.topology == "linear" and plan.input_rate > 0 and plan.id
        assert f"id={plan.id}" in log_path.read_text()
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)


@pytest.mark.slow
def test_the_core_install_refuses_a_topology_command_naming_the_extra(core_venv, tmp_path):
    done = subprocess.run([str(core_venv / "bin" / "hetsched"), "submit", "linear"], capture_output=True, text=True,
                          env=_core_env(), cwd=tmp_path, timeout=60, check=False)
    assert done.returncode == 2
    assert re.fullmatch(r"error: `hetsched submit` needs the topologies extra of hetsched \(streamparse, [a-z_0-9, ]+ are not "
                        r"installed\); install with: pip install 'hetsched\[topologies\]'\n", done.stderr), done.stderr
    assert done.stdout == ""


def test_an_installed_package_caches_storm_in_the_users_cache_not_site_packages(tmp_path, monkeypatch):
    """`pip install .` copies cluster/ into site-packages, with no source tree around it: Storm's home and Flux's
    jars go to the user's cache there (the operator's walk found them inside the virtualenv)."""
    import cluster.storm_home as storm_home

    monkeypatch.delenv("HETSCHED_STORM_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert storm_home.cache_dir() == (storm_home.REPO_ROOT / ".cache").resolve()
    monkeypatch.setattr(storm_home, "REPO_ROOT", tmp_path / "site-packages")
    assert storm_home.cache_dir() == (tmp_path / "xdg" / "hetsched").resolve()
    monkeypatch.setenv("HETSCHED_STORM_CACHE", str(tmp_path / "mine"))
    assert storm_home.cache_dir() == (tmp_path / "mine").resolve()
