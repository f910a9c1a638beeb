"""Plans with both ``options.weighted_shares`` and ``options.survive_loss`` (issues 33 and 34): the worst-case search
and the contingencies score with the plan's own shares, so neither figure falls below the survive plan without
shares; plans without ``weighted_shares`` are exactly as before."""
from __future__ import annotations

import itertools
import json
import time
from functools import cache
from pathlib import Path

import pytest

from benchmarks.weighted_shares_joint import TOPOLOGIES, default_cluster_request
from planner import survive
from planner.api import evaluate_assignments, make_plan
from planner.model import Contingency, InstanceAssignment, Plan, PlanOptions, SurviveLoss
from planner.problem import compile_problem
from planner.profiles import ProfileTable
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


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_with_shares_neither_the_nominal_nor_the_worst_case_rate_is_below_the_survive_plan(name):
    survive, both = default_plan(name, False), default_plan(name, True)
    assert both.input_rate >= survive.input_rate * (1 - 1e-9)
    worst, even_worst = both.stats["survive_loss"]["worst_case_rate"], survive.stats["survive_loss"]["worst_case_rate"]
    assert worst >= even_worst * (1 - 1e-9)
    assert both.shares  # the plan keeps weighted shares: on this cluster they beat an even split


@pytest.mark.parametrize("objective", ["worst_case", "nominal"])
@pytest.mark.parametrize("name", TOPOLOGIES)
def test_every_contingency_is_scored_with_shares_chosen_for_its_placement(name, objective):
    plan = default_plan(name, True, objective)
    request = default_cluster_request(name)
    assert plan.contingencies
    for c in plan.contingencies:
        assert c.input_rate == pytest.approx(weighted_rate_without(request, after(plan, c), c.machine), rel=1e-9)
    rates = [c.input_rate for c in plan.contingencies]
    assert plan.stats["survive_loss"]["worst_case_rate"] == pytest.approx(
        min(rates + [plan.input_rate] * (len(plan.contingencies) < len(plan.machines))), rel=1e-12)


def test_survivors_move_for_their_gain_scored_with_shares():
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
            weighted_rate_without(request, after(loose, moved), moved.machine), rel=1e-9)
    assert sum(c.moved - c.lost for c in loose.contingencies) > 0, "this request has a survivor worth moving"


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_the_search_starts_from_the_strategys_plan_scored_with_its_shares(name):
    both = default_plan(name, True)
    searched = both.stats["survive_loss"]
    assert searched["plan_nominal_rate"] == pytest.approx(both.stats["joint_shares"]["rate"], rel=1e-9)
    assert searched["scored_with"] == "weighted shares"


def _best_weighted_worst_case(request, floor: float) -> float:
    """Brute force: the best rate after the worst loss over every placement whose nominal rate with shares is at
    least ``floor``; each loss's lost instances re-placed every way, the others kept, each scored with shares."""
    topology, cluster, entries = request
    slots = [(c.id, i) for c in topology.components for i in range(c.parallelism)]
    machines = [m.id for m in cluster.machines]
    best = 0.0
    for choice in itertools.product(machines, repeat=len(slots)):
        where = dict(zip(slots, choice))
        if weighted_rate_without(request, where) < floor:
            continue
        worst = float("inf")
        for lost in machines:
            moving = [k for k, m in where.items() if m == lost]
            survivors = [m for m in machines if m != lost]
            if not moving:
                continue
            worst = min(worst, max(weighted_rate_without(request, {**where, **dict(zip(moving, repair))}, lost)
                                   for repair in itertools.product(survivors, repeat=len(moving))))
        best = max(best, worst)
    return best


@pytest.mark.parametrize("counts, machines, cores", [
    ({"spout": 1, "low": 1, "high": 2}, [("a", "fast"), ("b", "slow"), ("c", "slow")], None),
    (*SMALL_CASES[0], 2.0),
])
def test_on_few_placements_the_search_is_exact_with_shares(counts, machines, cores):
    """Fixed counts, three machines: against every placement, each scored with shares, within the nominal floor
    of the survive plan without shares (the first case: shares raise the worst case from 98 to 108.9 tuples/s)."""
    request = _request(counts, machines, cores)
    survive = make_plan(*request, None, PlanOptions(survive_loss=SurviveLoss()))
    both = make_plan(*request, None, PlanOptions(survive_loss=SurviveLoss(), weighted_shares=True))
    assert both.stats["survive_loss"]["search"] == "exhaustive"
    best = _best_weighted_worst_case(request, survive.input_rate * (1 - 1e-9))
    assert both.stats["survive_loss"]["worst_case_rate"] == pytest.approx(best, rel=1e-6)
    assert both.input_rate >= survive.input_rate * (1 - 1e-9)


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


def test_past_the_time_limit_the_search_answers_the_survive_plan_and_contingencies_keep_an_even_split():
    """The survive plan is made first (here exhaustively, whatever the time), so a search out of time answers it;
    contingencies begun past the limit keep the even split's, as a plan without shares has them."""
    topology, cluster, entries = request = default_cluster_request("linear")
    options = PlanOptions(weighted_shares=True, survive_loss=SurviveLoss())
    problem = compile_problem(topology, cluster, ProfileTable.from_entries(entries), options)
    placement = fast_plan(problem).placement  # offers the worst-case search its plan for an even split
    found = survive.worst_case(problem, placement, SurviveLoss(), deadline_s=0.0)
    survive_plan = default_plan("linear", False)
    assert found.placement == placement_of(survive_plan)
    assert found.stats["stopped_by"] == "time limit" and found.stats["scored_with"].startswith("an even split")
    answered = survive.contingencies(problem, found.placement, None)
    assert [c.model_dump() for c in answered] == [c.model_dump() for c in survive_plan.contingencies]
    assert weighted_rate_without(request, where_of(survive_plan)) >= survive_plan.input_rate
