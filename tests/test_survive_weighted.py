"""Plans with both ``options.weighted_shares`` and ``options.survive_loss`` (issues 33 and 34): the worst-case search
and the contingencies score the nominal rate with the plan's own shares and the rate after each loss with the plan's
machine shares kept (nothing sends others after a loss: the weighted groupings resolve the plan's over the repaired
placement), so neither figure falls below the survive plan without shares; plans without ``weighted_shares`` are
exactly as before."""
from __future__ import annotations

import itertools
import json
import time
from functools import cache
from pathlib import Path

import pytest

from bench.placement import ActualPlacement, placement_shares
from benchmarks.weighted_shares_joint import TOPOLOGIES, default_cluster_request
from planner import survive
from planner.api import evaluate_assignments, make_plan
from planner.model import Contingency, InstanceAssignment, Plan, PlanOptions, SurviveLoss
from planner.problem import compile_problem
from planner.profiles import ProfileTable
from planner.stream_shares import kept_shares, machine_shares
from planner.strategies.fast import plan as fast_plan
from tests.test_survive_loss import CASES as SMALL_CASES
from tests.test_survive_loss import _request

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "plans_survive_without_weighted_shares.json"
"""Plans made with ``survive_loss`` and without ``weighted_shares`` on the default cluster by the planner before
the worst-case search scored with shares (commit d9e979f): placement, R, worst case and contingencies."""
GOLDEN_RULES = {"worst_case": SurviveLoss(), "nominal-moves": SurviveLoss(objective="nominal", move_min_gain=0.0),
                "worst_case-floor": SurviveLoss(max_nominal_loss=0.05)}
WEIGHTED = PlanOptions(weighted_shares=True)


@cache
def default_plan(name: str, weighted: bool, objective: str = "worst_case") -> Plan:
    topology, cluster, entries = default_cluster_request(name)
    return make_plan(topology, cluster, entries, options=PlanOptions(
        weighted_shares=weighted, survive_loss=SurviveLoss(objective=objective)))


def placement_of(plan: Plan) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for a in sorted(plan.assignments, key=lambda a: (a.component, a.index)):
        found.setdefault(a.component, []).append(a.machine)
    return found


def where_of(plan: Plan) -> dict[tuple[str, int], str]:
    return {(a.component, a.index): a.machine for a in plan.assignments}


def assignments(where: dict[tuple[str, int], str]) -> list[InstanceAssignment]:
    return [InstanceAssignment(component=c, machine=m) for (c, _), m in sorted(where.items())]


def after(plan: Plan, contingency: Contingency) -> dict[tuple[str, int], str]:
    return {**where_of(plan), **{(m.component, m.index): m.machine for m in contingency.moves}}


def weighted_rate_without(request, where: dict[tuple[str, int], str], lost: str | None = None) -> float:
    """The rate of ``where`` with shares chosen for it, as ``evaluate_assignments`` scores a placement; on the
    cluster without ``lost``."""
    topology, cluster, entries = request
    if lost is not None:
        cluster = cluster.model_copy(update={"machines": [m for m in cluster.machines if m.id != lost]})
    return evaluate_assignments(topology, cluster, entries, assignments(where), WEIGHTED).input_rate


def kept_rate_without(request, where: dict[tuple[str, int], str], by_machine: dict, lost: str) -> float:
    """The rate of ``where`` on the cluster without ``lost``, its streams split by the machine shares ``by_machine``
    as the weighted groupings resolve them where Storm placed the tasks (bench.placement.placement_shares)."""
    topology, cluster, entries = request
    cluster = cluster.model_copy(update={"machines": [m for m in cluster.machines if m.id != lost]})
    executors: dict[str, list[str]] = {}
    for (component, _), machine in sorted(where.items()):
        executors.setdefault(component, []).append(machine)
    resolved = placement_shares(ActualPlacement(executors=executors), by_machine)
    return evaluate_assignments(topology, cluster, entries, assignments(where), shares=resolved or None).input_rate


def test_kept_shares_resolve_machine_shares_as_the_weighted_groupings_do():
    """A task's weight is its machine's share over the stream's tasks there; a task on a machine the shares do not
    name gets the others' mean; the lost machine's share goes with it; nothing named: the stream is left even."""
    topology, cluster, entries = _request({"spout": 1, "low": 3, "high": 4},
                                          [("a", "fast"), ("b", "slow"), ("c", "slow"), ("d", "slow")])
    problem = compile_problem(topology, cluster, ProfileTable.from_entries(entries), WEIGHTED)
    by_machine = {"spout->low": {"a": 0.5, "b": 0.3, "c": 0.2}, "low->high": {"d": 1.0}}
    after_loss = {"spout": ["a"], "low": ["a", "b", "b"], "high": ["a", "b", "c", "c"]}  # c lost from low
    found = kept_shares(problem, after_loss, by_machine)
    low = problem.component_index["low"]
    assert len(found) == 1  # low->high names no machine high runs on: even
    (s, shares), = found.items()
    assert int(problem.stream_target[s]) == low
    assert shares == pytest.approx([0.5 / 0.8, 0.15 / 0.8, 0.15 / 0.8])
    moved = {**after_loss, "low": ["a", "b", "d"]}  # d is not named: the mean of a and b's tasks
    assert kept_shares(problem, moved, by_machine)[s] == pytest.approx([0.5 / 1.2, 0.3 / 1.2, 0.4 / 1.2])
    for placement in (after_loss, moved):
        bench = {e.stream: e.shares for e in placement_shares(ActualPlacement(executors=placement), by_machine)}
        assert bench == {"spout->low": pytest.approx(list(kept_shares(problem, placement, by_machine)[s]))}


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_with_shares_neither_the_nominal_nor_the_worst_case_rate_is_below_the_survive_plan(name):
    survive, both = default_plan(name, False), default_plan(name, True)
    assert both.input_rate >= survive.input_rate * (1 - 1e-9)
    worst, even_worst = both.stats["survive_loss"]["worst_case_rate"], survive.stats["survive_loss"]["worst_case_rate"]
    assert worst >= even_worst * (1 - 1e-9)
    assert both.shares  # the plan keeps weighted shares: on this cluster they beat an even split


@pytest.mark.parametrize("objective", ["worst_case", "nominal"])
@pytest.mark.parametrize("name", TOPOLOGIES)
def test_every_contingency_is_scored_with_the_plans_machine_shares_kept(name, objective):
    plan = default_plan(name, True, objective)
    request = default_cluster_request(name)
    by_machine = machine_shares(plan)
    assert plan.contingencies and by_machine
    for c in plan.contingencies:
        assert c.input_rate == pytest.approx(kept_rate_without(request, after(plan, c), by_machine, c.machine),
                                             rel=1e-6)
    rates = [c.input_rate for c in plan.contingencies]
    assert plan.stats["survive_loss"]["worst_case_rate"] == pytest.approx(
        min(rates + [plan.input_rate] * (len(plan.contingencies) < len(plan.machines))), rel=1e-12)


def test_survivors_move_for_their_gain_scored_with_the_shares_kept():
    """Storm's even placement (strategy even) leaves survivors worth moving once a machine is lost, with shares too."""
    request = _request({"spout": 1, "low": 3, "high": 5}, [("a", "fast"), ("b", "slow"), ("c", "slow"), ("d", "slow")])

    def plan(gain: float | None) -> Plan:
        return make_plan(*request, "even", PlanOptions(weighted_shares=True, survive_loss=SurviveLoss(
            objective="nominal", move_min_gain=gain)))
    plain, loose = plan(None), plan(0.0)
    for before, moved in zip(plain.contingencies, loose.contingencies):
        assert moved.machine == before.machine and moved.moved >= moved.lost == before.lost
        assert moved.input_rate >= before.input_rate * (1 - 1e-9)
        if moved.moved > moved.lost:
            assert moved.input_rate > before.input_rate * (1 + 1e-9)
        assert moved.input_rate == pytest.approx(
            kept_rate_without(request, after(loose, moved), machine_shares(loose), moved.machine), rel=1e-6)
    assert sum(c.moved - c.lost for c in loose.contingencies) > 0, "this request has a survivor worth moving"


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_the_search_starts_from_the_strategys_plan_scored_with_its_shares(name):
    both = default_plan(name, True)
    searched = both.stats["survive_loss"]
    assert searched["plan_nominal_rate"] == pytest.approx(both.stats["joint_shares"]["rate"], rel=1e-9)
    assert searched["scored_with"] == "weighted shares" and searched["served"] == "with the plan's shares"
    assert survive.EVEN_START_KEY not in both.stats  # planner.api hands fast's plan for an even split on


def test_fast_gives_its_plan_for_an_even_split_in_its_stats_only_where_the_search_needs_it():
    topology, cluster, entries = default_cluster_request("diamond")
    for options, given in ((PlanOptions(weighted_shares=True, survive_loss=SurviveLoss()), True),
                           (WEIGHTED, False), (PlanOptions(survive_loss=SurviveLoss()), False)):
        problem = compile_problem(topology, cluster, ProfileTable.from_entries(entries), options)
        stats = fast_plan(problem).stats
        assert (survive.EVEN_START_KEY in stats) == given
        if given:
            assert set(stats[survive.EVEN_START_KEY]) == {c.id for c in topology.components}


def _best_weighted_worst_case(request, floor: float) -> float:
    """Brute force: the best rate after the worst loss over every placement whose nominal rate with shares is at
    least ``floor``; each loss's lost instances re-placed every way, the others kept, each scored with the
    placement's machine shares kept."""
    topology, cluster, entries = request
    slots = [(c.id, i) for c in topology.components for i in range(c.parallelism)]
    machines = [m.id for m in cluster.machines]
    best = 0.0
    for choice in itertools.product(machines, repeat=len(slots)):
        where = dict(zip(slots, choice))
        nominal = evaluate_assignments(topology, cluster, entries, assignments(where), WEIGHTED)
        if nominal.input_rate < floor:
            continue
        by_machine = machine_shares(nominal)
        worst = nominal.input_rate
        for lost in machines:
            moving = [k for k, m in where.items() if m == lost]
            survivors = [m for m in machines if m != lost]
            if not moving:
                continue
            worst = min(worst, max(kept_rate_without(request, {**where, **dict(zip(moving, repair))}, by_machine, lost)
                                   for repair in itertools.product(survivors, repeat=len(moving))))
        best = max(best, worst)
    return best


@pytest.mark.parametrize("counts, machines, cores", [
    ({"spout": 1, "low": 1, "high": 2}, [("a", "fast"), ("b", "slow"), ("c", "slow")], None),
    (*SMALL_CASES[0], 2.0),
])
def test_on_few_placements_the_search_is_exact_with_shares(counts, machines, cores):
    """Fixed counts, three machines: against every placement, each scored with shares (its machine shares kept after
    a loss), within the nominal floor of the survive plan without shares, and that plan served evenly (sent without
    shares)."""
    request = _request(counts, machines, cores)
    survive = make_plan(*request, None, PlanOptions(survive_loss=SurviveLoss()))
    both = make_plan(*request, None, PlanOptions(survive_loss=SurviveLoss(), weighted_shares=True))
    searched = both.stats["survive_loss"]
    assert searched["search"] == "exhaustive"
    best = max(_best_weighted_worst_case(request, survive.input_rate * (1 - 1e-9)),
               survive.stats["survive_loss"]["worst_case_rate"])
    assert searched["worst_case_rate"] == pytest.approx(best, rel=1e-6)
    assert both.input_rate >= survive.input_rate * (1 - 1e-9)
    assert (searched["served"] == "evenly (no shares sent)") == (both.shares is None and placement_of(both)
                                                               == placement_of(survive))


@pytest.mark.parametrize("key", sorted(json.loads(GOLDEN.read_text())))
def test_a_survive_plan_without_weighted_shares_is_exactly_as_before(key):
    before = json.loads(GOLDEN.read_text())[key]
    name, label = key.removeprefix("default-").split("-", 1)
    plan = make_plan(*default_cluster_request(name), options=PlanOptions(survive_loss=GOLDEN_RULES[label]))
    assert placement_of(plan) == before["placement"]
    assert plan.input_rate == pytest.approx(before["input_rate"], rel=1e-12)
    assert plan.stats["survive_loss"]["worst_case_rate"] == pytest.approx(before["worst_case_rate"], rel=1e-12)
    assert [c.model_dump() for c in plan.contingencies] == before["contingencies"]
    assert plan.shares is None and "scored_with" not in plan.stats["survive_loss"]


def test_the_time_limit_holds_with_both_options():
    limit = 10.0  # the service's default
    topology, cluster, entries = default_cluster_request("linear")
    started = time.perf_counter()
    plan = make_plan(topology, cluster, entries, None,
                     PlanOptions(weighted_shares=True, survive_loss=SurviveLoss(), time_limit_s=limit))
    assert time.perf_counter() - started <= limit and plan.stats["elapsed_ms"] <= limit * 1000
    assert plan.contingencies and plan.input_rate > 0


def test_past_the_time_limit_the_search_answers_the_survive_plan_served_evenly():
    """The survive plan is made first (here exhaustively, whatever the time), so a search out of time answers it,
    sent without shares: the plan without ``weighted_shares``, its contingencies included."""
    topology, cluster, entries = request = default_cluster_request("linear")
    options = PlanOptions(weighted_shares=True, survive_loss=SurviveLoss())
    problem = compile_problem(topology, cluster, ProfileTable.from_entries(entries), options)
    result = fast_plan(problem)
    found = survive.worst_case(problem, result.placement, SurviveLoss(), deadline_s=0.0,
                               even_start=result.stats[survive.EVEN_START_KEY])
    survive_plan = default_plan("linear", False)
    assert found.placement == placement_of(survive_plan) and found.serve_evenly
    assert found.stats["stopped_by"] == "time limit" and found.stats["scored_with"].startswith("an even split")
    assert found.survival.nominal == pytest.approx(survive_plan.input_rate, rel=1e-12)
    answered = survive.contingencies(problem, found.placement, None)  # no shares sent: none kept
    assert [c.model_dump() for c in answered] == [c.model_dump() for c in survive_plan.contingencies]
    assert weighted_rate_without(request, where_of(survive_plan)) >= survive_plan.input_rate


def test_a_contingency_with_the_shares_kept_is_never_below_the_even_repair_run_so():
    """The repair chosen for the shares kept is never below the even split's repair run with them."""
    plan = default_plan("star", True)
    topology, cluster, entries = default_cluster_request("star")
    problem = compile_problem(topology, cluster, ProfileTable.from_entries(entries), PlanOptions(
        weighted_shares=True, survive_loss=SurviveLoss()))
    placement = placement_of(plan)
    by_machine = machine_shares(plan)
    even = survive.contingencies(problem, placement, None)
    kept = survive.contingencies(problem, placement, None, by_machine)
    def same(c: Contingency) -> dict:
        return {**c.model_dump(), "moves": sorted((m.component, m.index, m.machine) for m in c.moves)}
    assert [same(c) for c in kept] == [same(c) for c in plan.contingencies]
    request = default_cluster_request("star")
    for e, k in zip(even, kept):
        assert e.machine == k.machine
        assert k.input_rate >= kept_rate_without(request, after(plan, e), by_machine, e.machine) * (1 - 1e-6)
