"""The planner core's contracts: an immutable compiled problem, one closed form, deadlines, clean stdout, no import cycle."""
from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from hetsched.cli import _register, app
from planner.api import make_plan
from planner.errors import PlanningTimeout
from planner.model import ProfileEntry
from planner.problem import compile_problem
from planner.profiles import ProfileTable
from planner.random_requests import tree_request, RandomRequest, random_request
from planner.simulator import HostedModel, entry_cpu_pct, entry_rate_at_cpu, evaluate_problem, instance_cpu_pct
from planner.strategies import STRATEGIES
from planner.strategies.fast import FastTuning
from planner.strategies.fast.orchestration import plan as fast_plan

ROOT = Path(__file__).resolve().parents[1]

_register()
runner = CliRunner()


def _problem(rq: RandomRequest):
    return compile_problem(rq.topology, rq.cluster, ProfileTable.from_entries(rq.entries), rq.options)


def test_compiled_problem_is_read_only():
    problem = _problem(random_request(3))
    for name in ("cost", "met", "limit", "thread_limit", "machine_type", "fixed", "is_sink"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(problem, name)[0] = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        problem.has_all_grouping = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        problem.component_index["x"] = 0  # type: ignore[index]
    shares = problem.shares()
    with pytest.raises(ValueError, match="read-only"):
        shares.split[0] = 1.0


def test_shares_with_all_grouping_follow_the_counts_and_leave_the_problem_as_it_was():
    rq = random_request(5, groupings=("all",))
    problem = _problem(rq)
    assert problem.has_all_grouping
    ones = np.ones(problem.n_components, dtype=np.int64)
    before = problem.shares(ones).total(ones).copy()
    threes = ones * 3
    assert problem.component_rates(threes).sum() > before.sum()
    np.testing.assert_array_equal(problem.shares(ones).total(ones), before)


def test_instance_cpu_is_the_papers_tcu():
    entry = ProfileEntry(profile="p", machine_type="t", e=2e-3, met=5.0)
    assert entry_cpu_pct(entry, 100.0) == pytest.approx(100 * 2e-3 * 100 + 5)
    assert entry_rate_at_cpu(entry, entry_cpu_pct(entry, 37.0)) == pytest.approx(37.0)
    assert entry_rate_at_cpu(ProfileEntry(profile="p", machine_type="t", e=0.0, met=5.0), 50.0) == np.inf
    np.testing.assert_allclose(instance_cpu_pct(np.array([0.2, 0.4]), np.array([1.0, 2.0]), 10.0), [3.0, 6.0])


@pytest.mark.parametrize("seed", [0, 2, 4, 7])
def test_matrix_closed_form_matches_the_per_instance_one(seed):
    """The local searches' (component x machine) form and evaluate's per-instance form give the same R_max."""
    problem = _problem(random_request(seed))
    placement = make_plan(problem.topology, problem.cluster, random_request(seed).entries, "paper").assignments
    by_component: dict[str, list[str]] = {}
    for a in placement:
        by_component.setdefault(a.component, []).append(a.machine)
    hosts = np.zeros((problem.n_components, problem.n_machines), dtype=np.int64)
    first = np.zeros(problem.n_components, dtype=np.int64)
    for c, cid in enumerate(problem.component_ids):
        machines = [problem.machine_index[m] for m in by_component[cid]]
        np.add.at(hosts[c], machines, 1)
        first[c] = machines[0]
    matrix_rate = HostedModel.of(problem).max_rate(hosts, first).rate
    assert matrix_rate == pytest.approx(evaluate_problem(problem, by_component).input_rate, rel=1e-12)


def test_fast_tuning_defaults_reproduce_the_default_plan():
    problem = _problem(random_request(2))
    assert fast_plan(problem).placement == fast_plan(problem, FastTuning()).placement
    fewer = fast_plan(problem, FastTuning(size_divisors=(1,), packing_steps=1))
    assert set(fewer.placement) == set(problem.component_ids)




@pytest.mark.parametrize("strategy", ["fast", "paper"])
def test_a_huge_request_stops_at_its_time_limit(strategy):
    """2,000 components on 1,000 machines with a 1 s limit: a clean PlanningTimeout, not a hang (the bound is generous)."""
    rq = tree_request(2000, 1000)
    options = rq.options.model_copy(update={"time_limit_s": 1.0})
    started = time.perf_counter()
    with pytest.raises(PlanningTimeout, match=f"the {strategy} strategy ran past its time limit of 1 s"):
        make_plan(rq.topology, rq.cluster, rq.entries, strategy, options)
    assert time.perf_counter() - started < 15.0


def _write_request(rq: RandomRequest, folder: Path, time_limit_s: float) -> list[str]:
    files = {
        "topology": rq.topology.model_dump(by_alias=True, exclude_none=True),
        "cluster": rq.cluster.model_dump(exclude_none=True),
        "profiles": [e.model_dump(exclude_none=True) for e in rq.entries],
        "options": rq.options.model_copy(update={"time_limit_s": time_limit_s}).model_dump(exclude_none=True),
    }
    args = []
    for name, data in files.items():
        path = folder / f"{name}.json"
        path.write_text(json.dumps(data))
        args += [f"--{name}", str(path)]
    return args


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 6])
def test_plan_json_is_the_only_thing_on_stdout(seed, tmp_path, capfd):
    """Seed 6 made HiGHS print ``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();`` on fd 1
    before the JSON; capfd reads file descriptor 1 itself, so C-level prints show up there."""
    args = _write_request(random_request(seed), tmp_path, time_limit_s=60.0)
    for strategy in sorted(STRATEGIES):
        result = runner.invoke(app, ["plan", "--json", "--strategy", strategy, *args])
        if strategy == "resource_aware" and result.exit_code == 1:
            continue  # RAS may fail to schedule a random request; that is an error line, not a plan
        assert result.exit_code == 0, (strategy, result.output)
        plan = json.loads(result.stdout)
        assert plan["strategy"] == strategy
        assert capfd.readouterr().out == "", strategy


SOLVER_PRINTS = """
import ctypes, json, os, sys, threading
from planner.highs import stdout_to_stderr
libc = ctypes.CDLL(None)
def solve(k):
    with stdout_to_stderr():
        libc.printf(b"C printf %d\\n", k)   # buffered C stdio, as HiGHS prints
        os.write(1, b"raw fd 1\\n")
threads = [threading.Thread(target=solve, args=(k,)) for k in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"plan": "only this"}))
"""


def test_solver_prints_go_to_stderr_from_concurrent_threads():
    """What C code prints to fd 1 inside ``stdout_to_stderr`` (several threads at once, as the service plans)
    lands on stderr, and stdout holds only what Python printed outside it."""
    done = subprocess.run([sys.executable, "-c", SOLVER_PRINTS], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"plan": "only this"}
    assert done.stderr.count("raw fd 1") == 8 and done.stderr.count("C printf") == 8


def test_strategy_modules_import_first_in_a_fresh_interpreter():
    """Each strategy module imports first thing in a fresh interpreter (no late imports needed)."""
    modules = ["planner.strategies.fast", "planner.strategies.optimal", "planner.strategies.paper",
               "planner.strategies.even", "planner.strategies.resource_aware"]
    for module in modules:
        done = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT, capture_output=True, text=True,
                              env={"PYTHONPATH": str(ROOT)}, timeout=120)
        assert done.returncode == 0, done.stderr


def test_strategies_never_import_from_the_registry():
    """Strategy modules take shared types from planner.strategies.base; from the package only sibling modules."""
    package = ROOT / "planner" / "strategies"
    siblings = {p.stem for p in package.glob("*.py")} | {p.name for p in package.iterdir() if p.is_dir()}
    for path in package.rglob("*.py"):
        if path == package / "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "planner.strategies":
                names = {alias.name for alias in node.names}
                assert names <= siblings, f"{path.relative_to(ROOT)} imports {names - siblings} from the registry"
            if isinstance(node, ast.ImportFrom | ast.Import):
                assert "importlib" not in {a.name for a in node.names} and node_module(node) != "importlib", path


def node_module(node: ast.Import | ast.ImportFrom) -> str | None:
    return node.module if isinstance(node, ast.ImportFrom) else None
