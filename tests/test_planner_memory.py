"""Memory as a hard limit (docs/concepts/model.md, "Memory"): the simulator, validation, every strategy, and the exact
solver against brute force with memory."""
from __future__ import annotations

import pytest

from planner.api import evaluate_assignments, make_plan
from planner.brute_force import brute_force
from planner.errors import PlanningError
from planner.model import (
    Cluster,
    Component,
    InstanceAssignment,
    Machine,
    MachineType,
    PlanOptions,
    ProfileEntry,
    Stream,
    Topology,
)
from planner.problem import Problem
from planner.profiles import ProfileTable
from planner.random_requests import random_request, with_memory
from planner.strategies import STRATEGIES
from planner.strategies.optimal import DEFAULT_TUNING, OptimalTuning, solve
from planner.validation import validate

GAP = DEFAULT_TUNING.optimality_gap
TINY = dict(components=(2, 3), machine_types=(1, 2), machines=(2, 3), fixed_parallelism_share=0.3)
MEMORY_AWARE = ("fast", "optimal", "paper", "resource_aware")


def _request(big_mb: float | None = 4096, small_mb: float | None = 1024, bolt_mb: float = 300,
             worker_mb: float = 400) -> tuple[Topology, Cluster, list[ProfileEntry]]:
    """spout -> bolt on a big and a small machine of equal speed: the small one's memory holds the worker and one bolt."""
    topology = Topology(
        name="mem",
        components=[Component(id="spout", kind="spout", profile="s", memory_mb=100),
                    Component(id="bolt", kind="bolt", profile="b", parallelism=4, memory_mb=bolt_mb)],
        streams=[Stream(source="spout", target="bolt")],
        worker_memory_mb=worker_mb,
    )
    cluster = Cluster(
        machine_types=[MachineType(name="big", memory_mb=big_mb), MachineType(name="small", memory_mb=small_mb)],
        machines=[Machine(id="big-1", type="big"), Machine(id="small-1", type="small")],
    )
    entries = [ProfileEntry(profile=p, machine_type=t, e=e, met=1.0)
               for p, e in (("s", 0.001), ("b", 0.004)) for t in ("big", "small")]
    return topology, cluster, entries


def _memory_used(plan, topology: Topology) -> dict[str, float]:
    memory = {c.id: c.memory_mb or 0.0 for c in topology.components}
    used: dict[str, float] = {}
    for a in plan.assignments:
        used[a.machine] = used.get(a.machine, topology.worker_memory_mb or 0.0) + memory[a.component]
    return used


def test_blind_placement_over_memory_sustains_no_rate_and_says_which_machine():
    topology, cluster, entries = _request()
    # two bolts on small-1: 400 worker + 2 * 300 = 1000 MB fits 1024; three do not
    fits = [InstanceAssignment(component="spout", machine="big-1")] + [
        InstanceAssignment(component="bolt", machine=m) for m in ("big-1", "big-1", "small-1", "small-1")]
    over = [InstanceAssignment(component="spout", machine="big-1")] + [
        InstanceAssignment(component="bolt", machine=m) for m in ("big-1", "small-1", "small-1", "small-1")]
    ok = evaluate_assignments(topology, cluster, entries, fits)
    bad = evaluate_assignments(topology, cluster, entries, over)
    assert ok.input_rate > 0 and ok.stats["feasible"] and ok.stats["memory"]["over"] == []
    assert [(m["machine"], m["no_room_for"]) for m in ok.stats["memory"]["binding"]] == [("small-1", ["spout", "bolt"])]
    assert bad.input_rate == 0 and bad.stats["feasible"] is False and bad.bottleneck == "small-1"
    assert bad.stats["memory"]["over"] == [{"machine": "small-1", "used_mb": 1300.0, "capacity_mb": 1024.0}]
    small = next(m for m in bad.machines if m.id == "small-1")
    assert (small.memory_mb, small.memory_capacity_mb) == (1300.0, 1024.0)


@pytest.mark.parametrize("strategy", MEMORY_AWARE)
def test_every_memory_aware_strategy_keeps_within_memory(strategy):
    topology, cluster, entries = _request()
    plan = make_plan(topology, cluster, entries, strategy)
    used = _memory_used(plan, topology)
    assert used.get("small-1", 0.0) <= 1024 and used.get("big-1", 0.0) <= 4096
    assert plan.input_rate > 0 and plan.stats["memory"]["over"] == []


def test_memory_binds_and_costs_rate():
    """Without the small machine's memory limit the bolts spread evenly; with it fewer fit there and R drops."""
    topology, cluster, entries = _request()
    unlimited = _request(small_mb=None)[1]
    free = make_plan(topology, unlimited, entries, "optimal")
    bound = make_plan(topology, cluster, entries, "optimal")
    assert bound.input_rate < free.input_rate
    assert _memory_used(bound, topology)["small-1"] <= 1024
    assert [(m["machine"], "bolt" in m["no_room_for"]) for m in bound.stats["memory"]["binding"]] == [("small-1", True)]


def test_even_is_memory_blind_like_storms_default_scheduler():
    topology, cluster, entries = _request(small_mb=800)
    plan = make_plan(topology, cluster, entries, "even")
    assert plan.input_rate == 0 and plan.stats["feasible"] is False
    assert plan.stats["memory"]["over"][0]["machine"] == "small-1"


def test_request_without_memory_has_no_memory_figures():
    topology, cluster, entries = _request(big_mb=None, small_mb=None)
    plan = make_plan(topology, cluster, entries, "fast")
    assert "memory" not in plan.stats
    assert all(m.memory_mb is None and m.memory_capacity_mb is None for m in plan.machines)


@pytest.mark.parametrize(("change", "message"), [
    (dict(bolt_mb=900), "cannot host one instance of component bolt: it needs 900 MB of memory with its worker's "
                        "400 MB and the largest machine holds 512 MB"),
    (dict(bolt_mb=100, worker_mb=300), "cannot host one instance of every component: they need 500 MB of memory "
                                       "besides 300 MB per worker and the machines hold 424 MB besides their workers'"),
])
def test_validation_says_when_memory_cannot_fit(change, message):
    topology, cluster, entries = _request(big_mb=512, small_mb=512, **change)
    with pytest.raises(PlanningError, match=message):
        make_plan(topology, cluster, entries, "fast")


def test_fast_says_which_machine_when_nothing_fits():
    """Each instance fits a machine and the 960 MB in all fit the 2 x 500 MB left beside the workers, but a spout of
    200 MB and four bolts of 190 MB do not pack into two bins of 500 MB."""
    topology, cluster, entries = _request(big_mb=700, small_mb=700, bolt_mb=190, worker_mb=200)
    topology = topology.model_copy(update={"components": [
        topology.components[0].model_copy(update={"memory_mb": 200}), topology.components[1]]})
    with pytest.raises(PlanningError, match=r"memory .*machine (big|small)-1 would need \d+ MB of memory"):
        make_plan(topology, cluster, entries, "fast")


def _random_problem(seed: int) -> Problem | None:
    rq = with_memory(random_request(1000 + seed, **TINY), seed)
    profiles = ProfileTable.from_entries(rq.entries)
    try:
        validate(rq.topology, rq.cluster, profiles, rq.options)
    except PlanningError:
        return None
    return Problem.build(rq.topology, rq.cluster, profiles, PlanOptions())


@pytest.mark.parametrize("seed", range(24))
def test_milp_with_memory_equals_brute_force(seed):
    """The exact solver with memory rows against every placement tried; where memory binds the optimum drops."""
    problem = _random_problem(seed)
    if problem is None:
        pytest.skip("this random draw cannot host its topology in memory")
    cap = 3 if problem.n_machines == 2 else 2
    exact = brute_force(problem, max_instances=cap)
    if exact.input_rate == 0:
        with pytest.raises(PlanningError, match="within the machines' memory"):
            solve(problem, OptimalTuning(max_instances_per_component=cap))
        return
    milp = solve(problem, OptimalTuning(max_instances_per_component=cap))
    assert exact.input_rate * (1 - 1.01 * GAP) <= milp.input_rate <= exact.input_rate * (1 + 1e-9)
    hosts = _hosts(problem, milp.placement)
    assert (problem.memory_used(hosts) <= problem.memory_limit + 1e-6).all()


def test_memory_binds_on_a_share_of_the_random_requests():
    """The brute-force check above is only worth something if memory changes the optimum on some draws."""
    changed = 0
    for seed in range(24):
        problem = _random_problem(seed)
        if problem is None:
            continue
        cap = 3 if problem.n_machines == 2 else 2
        blind = Problem.build(problem.topology.model_copy(update={"worker_memory_mb": None}),
                              problem.cluster.model_copy(update={"machine_types": [
                                  t.model_copy(update={"memory_mb": None}) for t in problem.cluster.machine_types]}),
                              problem.profiles, problem.options)
        changed += brute_force(problem, cap).input_rate < brute_force(blind, cap).input_rate * (1 - 1e-9)
    assert changed >= 5


@pytest.mark.parametrize("seed", range(24))
def test_fast_finds_a_plan_within_memory_wherever_one_exists(seed):
    problem = _random_problem(seed)
    if problem is None:
        pytest.skip("this random draw cannot host its topology in memory")
    exact = brute_force(problem, max_instances=3 if problem.n_machines == 2 else 2)
    if exact.input_rate == 0:
        with pytest.raises(PlanningError, match="memory"):
            STRATEGIES["fast"](problem)
        return
    placement = STRATEGIES["fast"](problem).placement
    assert (problem.memory_used(_hosts(problem, placement)) <= problem.memory_limit + 1e-6).all()


def _hosts(problem: Problem, placement):
    import numpy as np

    hosts = np.zeros((problem.n_components, problem.n_machines), dtype=np.int64)
    for cid, machines in placement.items():
        for m in machines:
            hosts[problem.component_index[cid], problem.machine_index[m]] += 1
    return hosts


def test_hetsched_plan_shows_where_memory_binds():
    from rich.console import Console

    from hetsched.plan_cmd import plan_tables

    topology, cluster, entries = _request()
    console = Console(width=200, record=True)
    for table in plan_tables(make_plan(topology, cluster, entries, "fast")):
        console.print(table)
    text = console.export_text()
    assert "memory binds (no room for one more)" in text and "small-1: 1000 of 1024" in text
    assert "memory MB" in text
