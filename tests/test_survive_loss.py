"""Plans that survive a machine loss (planner.survive): the worst-case objective against brute force on small
requests, contingencies that keep survivors where they run, and bad options refused in one sentence."""
from __future__ import annotations

import itertools

import pytest

from planner.api import evaluate_assignments, make_plan
from planner.errors import PlanningError
from planner.model import (
    Cluster,
    InstanceAssignment,
    PlanOptions,
    ProfileEntry,
    SurviveLoss,
    Topology,
)
from planner.problem import compile_problem
from planner.profiles import ProfileTable
from planner.repair import KeptInstance, repair
from planner.simulator import linear_loads, max_rate
from tests.fixtures.service import small_plan_request, small_profiles


def _request(counts: dict[str, int], machines: list[tuple[str, str]], cores: float | None = 2.0):
    """spout -> low -> high with fixed counts on machines of a fast and a slow type (the paper's small setting)."""
    topology = Topology.model_validate({
        "name": "linear",
        "components": [{"id": "spout", "kind": "spout", "profile": "spout", "parallelism": counts["spout"]},
                       {"id": "low", "kind": "bolt", "profile": "lowCompute", "parallelism": counts["low"]},
                       {"id": "high", "kind": "bolt", "profile": "highCompute", "parallelism": counts["high"]}],
        "streams": [{"from": "spout", "to": "low"}, {"from": "low", "to": "high"}]})
    cluster = Cluster.model_validate({
        "machine_types": [{"name": "slow", "capacity": 100, "cores": cores},
                          {"name": "fast", "capacity": 100, "cores": cores}],
        "machines": [{"id": m, "type": t} for m, t in machines]})
    entries = [ProfileEntry.model_validate(e) for e in small_profiles()["entries"]]
    return topology, cluster, entries


def _rate(topology, cluster, entries, where: dict[tuple[str, int], str]) -> float:
    assignments = [InstanceAssignment(component=c.id, machine=where[(c.id, i)])
                   for c in topology.components for i in range(c.parallelism)]
    return evaluate_assignments(topology, cluster, entries, assignments).input_rate


def _after_loss(topology, cluster, entries, where: dict[tuple[str, int], str], lost: str) -> float:
    """The best rate with ``lost``'s instances re-placed and every other kept (planner.repair, exhaustive here)."""
    if lost not in where.values():
        return _rate(topology, cluster, entries, where)
    smaller = cluster.model_copy(update={"machines": [m for m in cluster.machines if m.id != lost]})
    keep = [KeptInstance(component=c, index=i, machine=m) for (c, i), m in where.items() if m != lost]
    problem = compile_problem(topology, smaller, ProfileTable.from_entries(entries), PlanOptions())
    placement, stats = repair(problem, keep)
    assert stats["search"] in ("exhaustive", "none")
    return max_rate(problem, linear_loads(problem, placement))[0]


def _brute_force(topology, cluster, entries, max_nominal_loss: float | None = None) -> tuple[float, float]:
    """(the best worst-case rate over every placement, the best nominal rate), through the public evaluation."""
    slots = [(c.id, i) for c in topology.components for i in range(c.parallelism)]
    placements = [dict(zip(slots, choice)) for choice in
                  itertools.product([m.id for m in cluster.machines], repeat=len(slots))]
    nominal = {i: _rate(topology, cluster, entries, where) for i, where in enumerate(placements)}
    best_nominal = max(nominal.values())
    floor = 0.0 if max_nominal_loss is None else best_nominal * (1 - max_nominal_loss) * (1 - 1e-9)
    best = 0.0
    for i, where in enumerate(placements):
        if nominal[i] >= floor:
            best = max(best, min(_after_loss(topology, cluster, entries, where, m.id) for m in cluster.machines))
    return best, best_nominal


CASES = [
    ({"spout": 1, "low": 1, "high": 2}, [("a", "fast"), ("b", "fast"), ("c", "slow")]),
    ({"spout": 1, "low": 2, "high": 2}, [("a", "fast"), ("b", "slow"), ("c", "slow")]),
    ({"spout": 1, "low": 1, "high": 3}, [("a", "fast"), ("b", "fast"), ("c", "slow")]),
]


@pytest.mark.parametrize("counts, machines", CASES)
def test_worst_case_objective_matches_brute_force_over_placements(counts, machines):
    topology, cluster, entries = _request(counts, machines)
    plan = make_plan(topology, cluster, entries, None, PlanOptions(survive_loss=SurviveLoss()))
    best, _ = _brute_force(topology, cluster, entries)
    survived = plan.stats["survive_loss"]
    assert survived["search"] == "exhaustive"
    assert survived["worst_case_rate"] == pytest.approx(best, rel=1e-9)
    assert min(c.input_rate for c in plan.contingencies) == pytest.approx(best, rel=1e-9)
    assert survived["worst_case_rate"] >= survived["plan_worst_case_rate"] - 1e-9


@pytest.mark.parametrize("counts, machines", CASES[:2])
def test_a_stated_nominal_loss_keeps_the_nominal_rate_and_matches_brute_force(counts, machines):
    topology, cluster, entries = _request(counts, machines)
    plan = make_plan(topology, cluster, entries, None,
                     PlanOptions(survive_loss=SurviveLoss(max_nominal_loss=0.05)))
    best, best_nominal = _brute_force(topology, cluster, entries, max_nominal_loss=0.05)
    assert plan.input_rate >= best_nominal * 0.95 * (1 - 1e-9)
    assert plan.stats["survive_loss"]["worst_case_rate"] == pytest.approx(best, rel=1e-9)


def test_the_worst_case_plan_gives_up_nominal_rate_only_for_a_worst_case_gain():
    topology, cluster, entries = _request({"spout": 1, "low": 1, "high": 3}, [("a", "fast"), ("b", "fast"), ("c", "slow")])
    nominal = make_plan(topology, cluster, entries, None, PlanOptions(survive_loss=SurviveLoss(objective="nominal")))
    worst = make_plan(topology, cluster, entries, None, PlanOptions(survive_loss=SurviveLoss()))
    nominal_worst = nominal.stats["survive_loss"]["worst_case_rate"]
    assert worst.stats["survive_loss"]["worst_case_rate"] >= nominal_worst - 1e-9
    if worst.input_rate < nominal.input_rate * (1 - 1e-9):
        assert worst.stats["survive_loss"]["worst_case_rate"] > nominal_worst * (1 + 1e-9)


def _plan_and_where(plan) -> dict[tuple[str, int], str]:
    return {(a.component, a.index): a.machine for a in plan.assignments}


def test_contingencies_move_only_the_lost_machines_instances_by_default():
    topology, cluster, entries = _request({"spout": 1, "low": 2, "high": 4},
                                          [("a", "fast"), ("b", "fast"), ("c", "slow"), ("d", "slow")])
    plan = make_plan(topology, cluster, entries, None, PlanOptions(survive_loss=SurviveLoss(objective="nominal")))
    where = _plan_and_where(plan)
    used = {m.id for m in plan.machines if m.instances}
    assert {c.machine for c in plan.contingencies} == used
    for c in plan.contingencies:
        on_lost = {k for k, m in where.items() if m == c.machine}
        assert {(m.component, m.index) for m in c.moves} == on_lost
        assert c.lost == c.moved == len(on_lost)
        assert all(m.machine != c.machine for m in c.moves)
        after = {**where, **{(m.component, m.index): m.machine for m in c.moves}}
        smaller = cluster.model_copy(update={"machines": [m for m in cluster.machines if m.id != c.machine]})
        assert c.input_rate == pytest.approx(_rate(topology, smaller, entries, after), rel=1e-9)
        assert c.input_rate == pytest.approx(_after_loss(topology, cluster, entries, where, c.machine), rel=1e-9)


def test_a_move_threshold_lets_survivors_move_only_for_their_gain():
    """Storm's even placement (strategy even) leaves survivors worth moving once a machine is lost."""
    topology, cluster, entries = _request({"spout": 1, "low": 3, "high": 5},
                                          [("a", "fast"), ("b", "slow"), ("c", "slow"), ("d", "slow")])

    def plan(**rule):
        return make_plan(topology, cluster, entries, "even", PlanOptions(survive_loss=SurviveLoss(objective="nominal",
                                                                                                  **rule)))
    plain, strict, loose = plan(), plan(move_min_gain=10.0), plan(move_min_gain=0.0)
    assert [c.model_dump() for c in strict.contingencies] == [c.model_dump() for c in plain.contingencies]
    for before, after in zip(plain.contingencies, loose.contingencies):
        assert after.machine == before.machine and after.moved >= after.lost == before.lost
        assert after.input_rate >= before.input_rate * (1 - 1e-9)
        if after.moved > after.lost:
            assert after.input_rate > before.input_rate * (1 + 1e-9)
    assert sum(c.moved - c.lost for c in loose.contingencies) > 0, "this request has a survivor worth moving"


def test_a_cluster_of_one_machine_cannot_survive_a_loss():
    topology, cluster, entries = _request({"spout": 1, "low": 1, "high": 1}, [("a", "fast")])
    with pytest.raises(PlanningError, match="^options.survive_loss needs at least two machines: losing the only "
                                            "machine leaves nowhere to place its instances$"):
        make_plan(topology, cluster, entries, None, PlanOptions(survive_loss=SurviveLoss()))


def test_plans_without_the_option_carry_no_contingencies():
    topology, cluster, entries = _request({"spout": 1, "low": 1, "high": 2}, [("a", "fast"), ("b", "slow")])
    plan = make_plan(topology, cluster, entries)
    assert plan.contingencies is None and "survive_loss" not in plan.stats


# --- the service: stored with the plan, bad options refused ------------------------------------------------------


@pytest.fixture
def http(planner_service):
    with planner_service.http() as client:
        yield client


def test_contingencies_are_stored_with_the_plan_and_read_back(http):
    request = small_plan_request(strategy="fast")
    request["options"] = {"survive_loss": {"objective": "nominal"}}
    response = http.post("/v1/plans", json=request)
    assert response.status_code == 201, response.text
    plan = response.json()
    used = sorted(m["id"] for m in plan["machines"] if m["instances"])
    assert sorted(c["machine"] for c in plan["contingencies"]) == used
    for c in plan["contingencies"]:
        assert c["input_rate"] > 0 and c["moved"] == c["lost"] == len(c["moves"])
    assert http.get(f"/v1/plans/{plan['id']}").json()["contingencies"] == plan["contingencies"]


@pytest.mark.parametrize("survive_loss, detail", [
    ({"objective": "best"}, "options.survive_loss.objective: Input should be 'nominal' or 'worst_case'"),
    ({"max_nominal_loss": 1.0}, "options.survive_loss.max_nominal_loss: Input should be less than 1"),
    ({"max_nominal_loss": -0.1}, "options.survive_loss.max_nominal_loss: Input should be greater than or equal to 0"),
    ({"move_min_gain": -1}, "options.survive_loss.move_min_gain: Input should be greater than or equal to 0"),
    ({"contingency": True}, "options.survive_loss.contingency: Extra inputs are not permitted"),
])
def test_bad_survive_loss_options_are_one_sentence_422s(http, survive_loss, detail):
    request = small_plan_request()
    request["options"] = {"survive_loss": survive_loss}
    response = http.post("/v1/plans", json=request)
    assert response.status_code == 422
    assert response.json()["error"] == "invalid_request"
    assert response.json()["detail"] == detail


def test_a_one_machine_cluster_is_a_one_sentence_422(http):
    request = small_plan_request(machines=1)
    request["options"] = {"survive_loss": {}}
    response = http.post("/v1/plans", json=request)
    assert response.status_code == 422
    assert response.json() == {"detail": "options.survive_loss needs at least two machines: losing the only machine "
                                         "leaves nowhere to place its instances", "error": "planning_error"}
