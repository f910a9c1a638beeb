"""The repair of a placement after a machine is lost (planner.repair), against brute force on small cases."""
from __future__ import annotations

import itertools

import pytest

from planner import survive
from planner.api import evaluate_assignments, make_plan
from planner.errors import PlanningError
from planner.fixtures import load_scenario
from planner.model import Cluster, Component, InstanceAssignment, PlanOptions, SurviveLoss, Topology
from planner.problem import compile_problem
from planner.profiles import ProfileTable
from planner.repair import KeptInstance, make_repair, repair, repair_options, survive_rule_of
from tests.fixtures.service import small_plan_request, small_profiles


def _fixed(topology: Topology, counts: dict[str, int]) -> Topology:
    return topology.model_copy(update={"components": [
        c.model_copy(update={"parallelism": counts[c.id]}) for c in topology.components]})


def _without(cluster: Cluster, machine: str) -> Cluster:
    return cluster.model_copy(update={"machines": [m for m in cluster.machines if m.id != machine]})


def _lost_machine_case(counts: dict[str, int], scenario: int = 1):
    """Linear planned on the paper's cluster, then its busiest machine lost: (topology, smaller cluster, entries, keep)."""
    s = load_scenario("linear", scenario)
    topology = _fixed(s.topology, counts)
    plan = make_plan(topology, s.cluster, s.profiles.entries, "paper")
    busiest = max(plan.machines, key=lambda m: m.instances).id
    keep = [KeptInstance(component=a.component, index=a.index, machine=a.machine)
            for a in plan.assignments if a.machine != busiest]
    return topology, _without(s.cluster, busiest), s.profiles.entries, keep


def _brute_force_rate(topology: Topology, cluster: Cluster, entries, keep: list[KeptInstance]) -> float:
    """The best R over every machine choice for the instances not kept, scored through the public evaluation."""
    kept = {(k.component, k.index): k.machine for k in keep}
    slots = [(c.id, i) for c in topology.components for i in range(c.parallelism) if (c.id, i) not in kept]
    best = 0.0
    for choice in itertools.product([m.id for m in cluster.machines], repeat=len(slots)):
        where = {**kept, **dict(zip(slots, choice))}
        assignments = [InstanceAssignment(component=c.id, machine=where[(c.id, i)])
                       for c in topology.components for i in range(c.parallelism)]
        best = max(best, evaluate_assignments(topology, cluster, entries, assignments).input_rate)
    return best


@pytest.mark.parametrize("counts", [
    {"spout": 1, "low": 1, "mid": 1, "high": 2},
    {"spout": 1, "low": 2, "mid": 2, "high": 3},
    {"spout": 2, "low": 1, "mid": 2, "high": 2},
])
def test_repair_keeps_surviving_instances_and_matches_brute_force(counts):
    topology, cluster, entries, keep = _lost_machine_case(counts)
    plan = make_repair(topology, cluster, entries, keep)

    placed = {(a.component, a.index): a.machine for a in plan.assignments}
    assert all(placed[(k.component, k.index)] == k.machine for k in keep)
    assert plan.instances == counts
    assert plan.stats["kept"] == len(keep)
    assert plan.stats["placed"] == sum(counts.values()) - len(keep) > 0
    assert plan.input_rate == pytest.approx(_brute_force_rate(topology, cluster, entries, keep), rel=1e-9)


def test_greedy_search_is_never_worse_than_all_lost_on_one_machine_and_keeps_instances():
    topology, cluster, entries, keep = _lost_machine_case({"spout": 1, "low": 2, "mid": 2, "high": 3})
    problem = compile_problem(topology, cluster, ProfileTable.from_entries(entries), PlanOptions())
    placement, stats = repair(problem, keep, exhaustive_limit=0)
    assert stats["search"] == "greedy"
    kept = {(k.component, k.index): k.machine for k in keep}
    for (component, index), machine in kept.items():
        assert placement[component][index] == machine
    greedy = evaluate_assignments(topology, cluster, entries, [
        InstanceAssignment(component=c, machine=m) for c in problem.component_ids for m in placement[c]]).input_rate
    exact = _brute_force_rate(topology, cluster, entries, keep)
    for machine in cluster.machines:
        one = [InstanceAssignment(component=c.id, machine=kept.get((c.id, i), machine.id))
               for c in topology.components for i in range(c.parallelism)]
        assert greedy >= evaluate_assignments(topology, cluster, entries, one).input_rate - 1e-9
    assert 0 < greedy <= exact + 1e-9


def test_one_lost_instance_is_placed_exactly_by_the_greedy_search():
    topology, cluster, entries, keep = _lost_machine_case({"spout": 1, "low": 1, "mid": 1, "high": 2})
    full = {(c.id, i) for c in topology.components for i in range(c.parallelism)}
    missing = sorted(full - {(k.component, k.index) for k in keep})
    keep_all_but_one = keep + [KeptInstance(component=c, index=i, machine=cluster.machines[0].id) for c, i in missing[1:]]
    problem = compile_problem(topology, cluster, ProfileTable.from_entries(entries), PlanOptions())
    placement, _ = repair(problem, keep_all_but_one, exhaustive_limit=0)
    greedy = evaluate_assignments(topology, cluster, entries, [
        InstanceAssignment(component=c, machine=m) for c in problem.component_ids for m in placement[c]]).input_rate
    assert greedy == pytest.approx(_brute_force_rate(topology, cluster, entries, keep_all_but_one), rel=1e-9)


def test_nothing_lost_changes_nothing():
    s = load_scenario("linear", 1)
    topology = _fixed(s.topology, {"spout": 1, "low": 1, "mid": 1, "high": 1})
    plan = make_plan(topology, s.cluster, s.profiles.entries, "paper")
    keep = [KeptInstance(component=a.component, index=a.index, machine=a.machine) for a in plan.assignments]
    repaired = make_repair(topology, s.cluster, s.profiles.entries, keep)
    assert [(a.component, a.index, a.machine) for a in repaired.assignments] == \
        [(a.component, a.index, a.machine) for a in plan.assignments]
    assert repaired.input_rate == pytest.approx(plan.input_rate)
    assert repaired.stats["placed"] == 0


@pytest.mark.parametrize("keep, fault", [
    ([KeptInstance(component="nope", index=0, machine="m1-01")], "unknown component nope"),
    ([KeptInstance(component="high", index=5, machine="m1-01")], "instance 5 of high, which has 1 instances"),
    ([KeptInstance(component="high", index=0, machine="gone")], "machine gone, which is not in the cluster"),
    ([KeptInstance(component="high", index=0, machine="m1-01")] * 2, "instance 0 of high twice"),
])
def test_bad_keep_is_one_sentence(keep, fault):
    s = load_scenario("linear", 1)
    topology = _fixed(s.topology, {"spout": 1, "low": 1, "mid": 1, "high": 1})
    with pytest.raises(PlanningError, match=fault):
        make_repair(topology, s.cluster, s.profiles.entries, keep)


def test_a_component_without_a_count_is_refused():
    s = load_scenario("linear", 1)
    topology = s.topology.model_copy(update={"components": [
        c if c.id == "high" else c.model_copy(update={"parallelism": 1}) for c in s.topology.components]})
    assert isinstance(topology.components[0], Component)
    with pytest.raises(PlanningError, match="give high a parallelism"):
        make_repair(topology, s.cluster, s.profiles.entries, [])


# --- a repair of a topology planned to survive a loss keeps its contingencies ------------------------------------


def _survivable_loss(rule: SurviveLoss, scenario: int = 1):
    """Linear planned on the paper's cluster to survive a loss, then its busiest machine lost: (plan, topology with the
    plan's counts, smaller cluster, entries, keep)."""
    s = load_scenario("linear", scenario)
    plan = make_plan(s.topology, s.cluster, s.profiles.entries, "paper", PlanOptions(survive_loss=rule))
    plan = plan.model_copy(update={"id": "before"})
    busiest = max(plan.machines, key=lambda m: m.instances).id
    keep = [KeptInstance(component=a.component, index=a.index, machine=a.machine)
            for a in plan.assignments if a.machine != busiest]
    return plan, _fixed(s.topology, plan.instances), _without(s.cluster, busiest), s.profiles.entries, keep


def test_a_repair_with_survive_loss_stores_the_contingencies_of_the_repaired_placement():
    plan, topology, cluster, entries, keep = _survivable_loss(SurviveLoss(objective="nominal", move_min_gain=0.05))
    rule = SurviveLoss(objective="nominal", move_min_gain=0.05)
    repaired = make_repair(topology, cluster, entries, keep, PlanOptions(survive_loss=rule), "plan before")
    without = make_repair(topology, cluster, entries, keep)
    assert without.contingencies is None and "survive_loss" not in without.stats
    assert repaired.assignments == without.assignments and repaired.input_rate == without.input_rate, (
        "a repair places the lost instances for the highest rate, with contingencies or not")
    problem = compile_problem(topology, cluster, ProfileTable.from_entries(entries), PlanOptions())
    placement = {c: [a.machine for a in sorted(repaired.assignments, key=lambda a: a.index) if a.component == c]
                 for c in repaired.instances}
    assert repaired.contingencies == survive.contingencies(problem, placement, 0.05)
    assert {c.machine for c in repaired.contingencies} == {a.machine for a in repaired.assignments}
    said = repaired.stats["survive_loss"]
    assert (said["objective"], said["rule"], said["from"]) == ("nominal", rule.model_dump(mode="json"), "plan before")
    assert said["worst_case_rate"] == pytest.approx(min(c.input_rate for c in repaired.contingencies))
    assert said["contingencies_ms"] >= 0 and "skipped" not in said


def test_a_repair_is_answered_without_contingencies_past_its_share_of_the_time_limit():
    _, topology, cluster, entries, keep = _survivable_loss(SurviveLoss())
    repaired = make_repair(topology, cluster, entries, keep, PlanOptions(survive_loss=SurviveLoss(), time_limit_s=1e-9))
    assert repaired.contingencies is None and repaired.stats["placed"] > 0
    assert repaired.stats["survive_loss"]["skipped"].startswith(
        "the contingencies were not done within 50% of the time limit (0 of ")


def test_a_repair_onto_one_machine_stores_no_contingency_and_says_why():
    _, topology, cluster, entries, keep = _survivable_loss(SurviveLoss())
    one = cluster.machines[0].id
    cluster = cluster.model_copy(update={"machines": [m for m in cluster.machines if m.id == one]})
    keep = [k for k in keep if k.machine == one]
    repaired = make_repair(topology, cluster, entries, keep, PlanOptions(survive_loss=SurviveLoss()))
    assert repaired.contingencies is None
    assert repaired.stats["survive_loss"]["skipped"] == ("one machine is left, and losing it leaves nowhere to place "
                                                        "its instances")


def test_the_repair_keeps_the_survive_loss_of_the_plan_it_ran_by_unless_the_request_says():
    plan, *_ = _survivable_loss(SurviveLoss(objective="nominal"))
    inherited, source = repair_options(PlanOptions(max_utilization=0.9), plan)
    assert (inherited.survive_loss, inherited.max_utilization, source) == (
        SurviveLoss(objective="nominal"), 0.9, "plan before")
    assert not inherited.weighted_shares, "a repair's shares would reach no worker: never taken from the plan"
    asked = PlanOptions.model_validate({"survive_loss": {"objective": "worst_case", "move_min_gain": 0.2}})
    assert repair_options(asked, plan) == (asked, "request")
    declined = PlanOptions.model_validate({"survive_loss": None})
    assert repair_options(declined, plan) == (declined, None)
    plain = make_plan(*_survivable_loss(SurviveLoss())[1:4], "paper").model_copy(update={"id": "plain"})
    assert repair_options(PlanOptions(), plain) == (PlanOptions(), None)
    assert repair_options(PlanOptions(), None) == (PlanOptions(), None)


def test_the_rule_is_read_whole_from_a_plan_or_a_repair_and_as_its_objective_from_an_older_plan():
    plan, topology, cluster, entries, keep = _survivable_loss(SurviveLoss(objective="nominal", move_min_gain=0.3))
    assert survive_rule_of(plan) == SurviveLoss(objective="nominal", move_min_gain=0.3)
    older = {**plan.stats["survive_loss"]}
    del older["rule"]
    assert survive_rule_of(plan.model_copy(update={"stats": {"survive_loss": older}})) == SurviveLoss(objective="nominal")
    rule = SurviveLoss(objective="worst_case", max_nominal_loss=0.1, move_min_gain=0.3)
    repaired = make_repair(topology, cluster, entries, keep, PlanOptions(survive_loss=rule), "request")
    assert survive_rule_of(repaired) == rule
    assert survive_rule_of(repaired.model_copy(update={"contingencies": None})) is None
    assert survive_rule_of(plan.model_copy(update={"stats": {"survive_loss": {"objective": "sideways"}}})) == SurviveLoss()


# --- the service: POST /v1/repairs and /v1/assignments/{topology} through a real `hetsched serve` ----------------


@pytest.fixture
def http(planner_service):
    with planner_service.http() as client:
        yield client


def _stored_plan(http) -> dict:
    http.put("/v1/profiles/repair-micro", json=small_profiles("repair-micro")).raise_for_status()
    response = http.post("/v1/plans", json=small_plan_request({"name": "repair-micro"}, strategy="paper"))
    assert response.status_code == 201, response.text
    return response.json()


def test_a_repair_over_http_keeps_the_surviving_instances_and_is_stored(http):
    plan = _stored_plan(http)
    request = small_plan_request({"name": "repair-micro"}, machines=4)
    lost = max(plan["machines"], key=lambda m: m["instances"])["id"]
    request["cluster"]["machines"] = [m for m in request["cluster"]["machines"] if m["id"] != lost]
    for component in request["topology"]["components"]:
        component["parallelism"] = plan["instances"][component["id"]]
    request.pop("strategy", None)
    keep = [{"component": a["component"], "index": a["index"], "machine": a["machine"]}
            for a in plan["assignments"] if a["machine"] != lost]
    response = http.post("/v1/repairs", json={**request, "keep": keep})
    assert response.status_code == 201, response.text
    repaired = response.json()
    assert repaired["strategy"] == "repair" and repaired["stats"]["kept"] == len(keep)
    placed = {(a["component"], a["index"]): a["machine"] for a in repaired["assignments"]}
    assert all(placed[(k["component"], k["index"])] == k["machine"] for k in keep)
    assert lost not in placed.values()
    assert http.get(f"/v1/plans/{repaired['id']}").json()["assignments"] == repaired["assignments"]


def test_a_repair_naming_an_unknown_machine_is_refused_in_one_sentence(http):
    _stored_plan(http)
    request = small_plan_request({"name": "repair-micro"})
    for component in request["topology"]["components"]:
        component["parallelism"] = 1
    first = request["topology"]["components"][0]["id"]
    response = http.post("/v1/repairs", json={**request, "keep": [{"component": first, "index": 0, "machine": "gone"}]})
    assert response.status_code == 422
    assert "machine gone, which is not in the cluster" in response.json()["detail"]


def test_a_plan_bound_to_a_topology_reads_back_and_unbinds(http):
    plan = _stored_plan(http)
    bound = http.put("/v1/assignments/linear-run", json={"plan_id": plan["id"], "reason": "replan: +25%"})
    assert bound.status_code == 200, bound.text
    assert bound.json()["plan_id"] == plan["id"] and bound.json()["topology"] == "linear-run"
    read = http.get("/v1/assignments/linear-run").json()
    assert read == bound.json() and read["created_at"].endswith("Z")
    assert http.delete("/v1/assignments/linear-run").status_code == 204
    assert http.get("/v1/assignments/linear-run").status_code == 404


def test_binding_an_unknown_plan_is_404_and_keeps_the_old_binding(http):
    plan = _stored_plan(http)
    http.put("/v1/assignments/kept-run", json={"plan_id": plan["id"]}).raise_for_status()
    response = http.put("/v1/assignments/kept-run", json={"plan_id": "no-such-plan"})
    assert response.status_code == 404 and "plan 'no-such-plan' does not exist" in response.json()["detail"]
    assert http.get("/v1/assignments/kept-run").json()["plan_id"] == plan["id"]


@pytest.fixture
def fresh(tmp_path):
    """The service in process on a database of its own: which stored plan a repair inherits from depends on the
    topology's plans and binding, so no other test's may be there."""
    from fastapi.testclient import TestClient

    from planner.service.app import create_app
    from planner.service.settings import ServiceSettings

    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "repairs.db"))) as client:
        yield client


def _survivable_stored_plan(http) -> dict:
    http.put("/v1/profiles/repair-micro", json=small_profiles("repair-micro")).raise_for_status()
    request = small_plan_request({"name": "repair-micro"}, strategy="paper")
    request["options"] = {"survive_loss": {"objective": "nominal"}}
    response = http.post("/v1/plans", json=request)
    assert response.status_code == 201, response.text
    assert response.json()["contingencies"]
    return response.json()


def _repair_request(plan: dict, lost: str, placed: dict[tuple[str, int], str] | None = None) -> dict:
    """The plugin's repair body after losing ``lost``: every instance of ``placed`` (default: the plan's) kept where it
    runs unless it ran there."""
    request = small_plan_request({"name": "repair-micro"})
    request["cluster"]["machines"] = [m for m in request["cluster"]["machines"] if m["id"] != lost]
    for component in request["topology"]["components"]:
        component["parallelism"] = plan["instances"][component["id"]]
    placed = placed or {(a["component"], a["index"]): a["machine"] for a in plan["assignments"]}
    keep = [{"component": c, "index": i, "machine": m} for (c, i), m in sorted(placed.items()) if m != lost]
    return {**request, "keep": keep}


def test_a_repair_keeps_the_survive_loss_of_the_stored_plan_that_placed_the_survivors(fresh):
    http = fresh
    plan = _survivable_stored_plan(http)
    lost = max(plan["machines"], key=lambda m: m["instances"])["id"]
    response = http.post("/v1/repairs", json=_repair_request(plan, lost))
    assert response.status_code == 201, response.text
    repaired = response.json()
    assert repaired["contingencies"], "a topology planned to survive a loss has contingencies again after its repair"
    assert {c["machine"] for c in repaired["contingencies"]} == {a["machine"] for a in repaired["assignments"]}
    assert lost not in {c["machine"] for c in repaired["contingencies"]}
    assert repaired["stats"]["survive_loss"]["from"] == f"plan {plan['id']}"
    assert http.get(f"/v1/plans/{repaired['id']}").json()["contingencies"] == repaired["contingencies"]


def test_after_a_contingency_the_repair_keeps_the_survive_loss_of_the_plan_bound(fresh):
    """The second loss: the survivors run where the contingency put them, which no stored plan says; the plan bound
    (whose contingency runs) still tells the rule."""
    http = fresh
    plan = _survivable_stored_plan(http)
    first = max(plan["machines"], key=lambda m: m["instances"])["id"]
    contingency = next(c for c in plan["contingencies"] if c["machine"] == first)
    http.put("/v1/assignments/linear", json={"plan_id": plan["id"], "reason": (
        f"hetsched plugin, contingency for {first} lost: kept 3 executors where they run, moved "
        f"{contingency['moved']}")}).raise_for_status()
    placed = {(a["component"], a["index"]): a["machine"] for a in plan["assignments"]}
    placed.update({(m["component"], m["index"]): m["machine"] for m in contingency["moves"]})
    second = next(m for m in sorted(set(placed.values()) - {first})
                  if any(move["machine"] != m for move in contingency["moves"]))  # a survivor where no plan put it
    request = _repair_request(plan, second, placed)
    request["cluster"]["machines"] = [m for m in request["cluster"]["machines"] if m["id"] != first]
    response = http.post("/v1/repairs", json=request)
    assert response.status_code == 201, response.text
    repaired = response.json()
    assert repaired["contingencies"] and repaired["stats"]["survive_loss"]["from"] == f"plan {plan['id']}"


def test_a_repair_request_that_says_survive_loss_null_gets_no_contingencies(fresh):
    http = fresh
    plan = _survivable_stored_plan(http)
    lost = max(plan["machines"], key=lambda m: m["instances"])["id"]
    request = _repair_request(plan, lost)
    request["options"] = {"survive_loss": None}
    response = http.post("/v1/repairs", json=request)
    assert response.status_code == 201, response.text
    assert response.json()["contingencies"] is None and "survive_loss" not in response.json()["stats"]
