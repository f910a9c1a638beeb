"""A topology's worker budget (``topology.max_workers``): its plan uses at most that many machines, the strongest
for it, whatever the strategy; so many topologies fit a cluster's worker slots as Storm's topology.workers packs them."""
from __future__ import annotations

import copy

import pytest
from fastapi.testclient import TestClient

from planner.api import make_plan
from planner.errors import PlanningError
from planner.model import Cluster, PlanOptions, PlanRequest, ProfileEntry, Topology
from planner.problem import budget_machines, compile_problem, machine_strength, within_worker_budget
from planner.profiles import ProfileTable
from planner.repair import KeptInstance, make_repair
from planner.service.app import create_app
from planner.service.planning import stored_plan_fits
from planner.service.settings import ServiceSettings
from planner.strategies import STRATEGIES
from tests.fixtures.service import small_plan_request

FAST = ("m1", "m3", "m5")
"""The fast machines of ``small_plan_request(machines=6)`` (odd ids)."""


def _request(max_workers: int | None = None, machines: int = 6) -> PlanRequest:
    body = small_plan_request(machines=machines)
    if max_workers is not None:
        body["topology"]["max_workers"] = max_workers
    return PlanRequest.model_validate(body)


def _used(plan) -> set[str]:
    return {a.machine for a in plan.assignments}


def _plan(request: PlanRequest, strategy: str | None = None):
    options = PlanOptions(time_limit_s=20.0)
    assert request.profiles.entries is not None
    return make_plan(request.topology, request.cluster, request.profiles.entries, strategy, options)


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", tenant_ttl_s=3600))) as c:
        yield c


@pytest.mark.parametrize("value", [0, -1, 1.5, "two"])
def test_a_budget_below_one_or_not_whole_is_422_naming_the_field(client, value):
    body = small_plan_request()
    body["topology"]["max_workers"] = value
    response = client.post("/v1/plans", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["detail"].startswith("topology.max_workers:")


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_strategy_places_within_the_budget_on_the_fastest_machines(strategy):
    plan = _plan(_request(max_workers=2), strategy)
    assert len(_used(plan)) <= 2
    assert _used(plan) <= {"m1", "m3"}  # the fast machines, ties in cluster order
    assert {m.id for m in plan.machines} == {"m1", "m3"}
    assert plan.stats["max_workers"] == {"budget": 2, "restricted": True, "machines": ["m1", "m3"], "of_machines": 6}
    assert plan.input_rate > 0


def test_without_the_field_the_plan_is_unchanged_and_a_budget_past_the_cluster_restricts_nothing():
    alone = _plan(_request())
    roomy = _plan(_request(max_workers=6))
    assert "max_workers" not in alone.stats
    assert roomy.stats["max_workers"] == {"budget": 6, "restricted": False}
    assert [(a.component, a.index, a.machine) for a in roomy.assignments] == [
        (a.component, a.index, a.machine) for a in alone.assignments]
    assert roomy.input_rate == pytest.approx(alone.input_rate)
    assert len(_used(alone)) > 2  # unbudgeted, this topology spreads: the budget above is what packs it


def test_the_budget_ranks_by_free_capacity_times_speed():
    """A fast machine with little room left (a tenant's derived type) ranks below a slow one that is free."""
    request = _request(max_workers=2)
    cluster = request.cluster.model_copy(deep=True)
    cluster.machine_types.append(cluster.machine_types[1].model_copy(update={"name": "fast@m1", "capacity": 10.0}))
    cluster.machines[1] = cluster.machines[1].model_copy(update={"type": "fast@m1"})
    entries = list(request.profiles.entries or []) + [
        e.model_copy(update={"machine_type": "fast@m1"}) for e in request.profiles.entries or [] if e.machine_type == "fast"]
    problem = compile_problem(request.topology, cluster, ProfileTable.from_entries(entries), PlanOptions())
    strength = machine_strength(problem)
    assert strength[problem.machine_index["m3"]] > strength[problem.machine_index["m0"]] > strength[problem.machine_index["m1"]]
    assert budget_machines(problem, 2) == ("m3", "m5")
    assert budget_machines(problem, 2, first={"m0"}) == ("m0", "m3")
    kept, stats = within_worker_budget(problem)
    assert kept.machine_ids == ("m3", "m5") and stats is not None and stats["machines"] == ["m3", "m5"]


def test_a_budget_too_small_to_host_the_topology_is_refused_naming_it():
    body = small_plan_request(machines=6)
    for t in body["cluster"]["machine_types"]:
        t["memory_mb"] = 1000
    for c in body["topology"]["components"]:
        c["memory_mb"] = 600  # one instance a machine: three machines, not one
    body["topology"]["max_workers"] = 1
    request = PlanRequest.model_validate(body)
    with pytest.raises(PlanningError, match="worker budget, max_workers 1"):
        make_plan(request.topology, request.cluster, request.profiles.entries or [], None, request.options)


def test_a_repair_keeps_its_survivors_and_places_the_lost_within_the_budget():
    request = _request(max_workers=2)
    entries: list[ProfileEntry] = list(request.profiles.entries or [])
    fixed = _fixed(request.topology, _plan(request))
    plan = _plan(request.model_copy(update={"topology": fixed}))
    lost = "m1"
    cluster = Cluster(machine_types=request.cluster.machine_types,
                      machines=[m for m in request.cluster.machines if m.id != lost])
    keep = [KeptInstance(component=a.component, index=a.index, machine=a.machine)
            for a in plan.assignments if a.machine != lost]
    repaired = make_repair(fixed, cluster, entries, keep)
    assert len(_used(repaired)) <= 2
    assert {"m3"} <= _used(repaired)
    assert repaired.stats["max_workers"]["budget"] == 2


def _fixed(topology: Topology, plan) -> Topology:
    """The topology with the plan's instance counts fixed, as the plugin sends it."""
    return topology.model_copy(update={"components": [
        c.model_copy(update={"parallelism": plan.instances[c.id]}) for c in topology.components]})


def test_a_stored_plan_on_more_machines_than_the_budget_is_planned_afresh():
    spread = _plan(_request())
    assert stored_plan_fits(_request(), spread)
    assert not stored_plan_fits(_request(max_workers=2), spread)
    assert stored_plan_fits(_request(max_workers=len(_used(spread))), spread)


def test_tenants_with_a_budget_share_a_cluster_of_one_slot_machines(client):
    """Each takes its two workers where the others leave a slot: three fit six one-slot machines, none is refused."""
    used: list[set[str]] = []
    for name in ("a", "b", "c"):
        body = copy.deepcopy(small_plan_request(machines=6))
        for t in body["cluster"]["machine_types"]:
            t["slots"] = 1
        body["topology"]["name"] = name
        body["topology"]["max_workers"] = 2
        body["tenant"] = {}
        response = client.post("/v1/plans", json=body)
        assert response.status_code == 201, response.text
        used.append({a["machine"] for a in response.json()["assignments"]})
    assert all(len(u) <= 2 for u in used)
    assert not (used[0] & used[1]) and not (used[0] & used[2]) and not (used[1] & used[2])
