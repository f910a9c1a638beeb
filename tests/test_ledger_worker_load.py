"""Every topology's worker costs each machine it uses its base load (docs/concepts/model.md, "Many topologies")."""
from __future__ import annotations

import copy

import pytest
from fastapi.testclient import TestClient

from planner.ledger import TenantRecord, allocation_of, capacities, ledger_of
from planner.service.app import create_app
from planner.service.settings import ServiceSettings
from tests.fixtures.service import small_plan_request, small_profiles

BASE = {"slow": 20.0, "fast": 10.0}


def record(name: str, worker: float, arrival: float) -> TenantRecord:
    share = {"slope": 1.0, "fixed": 0.0, "worker": worker, "capacity": 80.0, "type": "slow"}
    return TenantRecord(topology=name, machines={"m0": share}, registered_at=arrival, heartbeat_at=arrival)


def test_one_tenant_alone_is_planned_as_before_and_a_second_worker_costs_the_machine_again():
    alone = allocation_of([record("a", 20.0, 0)], "weighted")
    assert capacities([record("a", 20.0, 0)]) == {"m0": 100.0}
    assert alone.rates["a"] == pytest.approx(80.0)  # 100 - its own worker's 20: the limit it was planned on
    two = [record("a", 20.0, 0), record("b", 20.0, 1)]
    shared = allocation_of(two, "weighted")
    assert shared.rates == pytest.approx({"a": 30.0, "b": 30.0})  # 100 - 2 workers, halved
    ledger = ledger_of(two, "weighted", ttl_s=60, now=1)
    assert ledger.machines[0].loads == pytest.approx({"a": 50.0, "b": 50.0})
    assert ledger.machines[0].free == pytest.approx(0.0)
    without = allocation_of([record("a", 0.0, 0), record("b", 0.0, 1)], "weighted")
    assert without.rates == pytest.approx({"a": 40.0, "b": 40.0})  # the old charge: one worker per machine


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", tenant_ttl_s=3600))) as c:
        profiles = {**small_profiles("based"), "source": {"machine_base_load": BASE}}
        assert c.put("/v1/profiles/based", json=profiles).status_code in (200, 201)
        yield c


def request(name: str | None = None, **tenant) -> dict:
    body = copy.deepcopy(small_plan_request(profiles={"name": "based"}))
    for t in body["cluster"]["machine_types"]:
        t["capacity"] = 100.0 - BASE[t["name"]]  # as the Nimbus plugin sends it
    if name is not None:
        body["topology"]["name"] = name
        body["tenant"] = tenant
    return body


def test_the_service_charges_each_tenant_its_worker_on_every_machine_it_uses(client):
    alone = client.post("/v1/plans", json=request()).json()["input_rate"]
    first = client.post("/v1/plans", json=request("a", priority=0))
    assert first.status_code == 201, first.text
    assert first.json()["stats"]["tenancy"]["rate"] == pytest.approx(alone, rel=1e-3)
    second = client.post("/v1/plans", json=request("b", priority=0, min_rate=0))
    assert second.status_code == 201, second.text
    ledger = client.get("/v1/ledger").json()
    types = {m["id"]: m["type"] for m in ledger["machines"]}
    for m in ledger["machines"]:
        assert m["capacity"] == pytest.approx(100.0 - BASE[m["type"]] + BASE[m["type"]], abs=1e-3)
        assert sum(m["loads"].values()) <= m["capacity"] + 1e-3
        for load in m["loads"].values():
            assert load >= BASE[types[m["id"]]] - 1e-3  # its own worker at least


def test_a_machine_hosting_only_an_instance_that_costs_nothing_still_pays_the_worker():
    from planner.ledger import registration_of
    from planner.model import Cluster, PlanOptions, ProfileEntry, TenantSpec, Topology
    from planner.problem import compile_problem
    from planner.profiles import ProfileTable
    from tests.fixtures.service import small_profiles

    body = small_plan_request()
    entries = small_profiles()["entries"] + [{"profile": "idle", "machine_type": t, "e": 0.0, "met": 0.0, "alpha": 1.0}
                                             for t in ("slow", "fast")]
    topology = Topology.model_validate({**body["topology"], "components": body["topology"]["components"] + [
        {"id": "__acker", "kind": "bolt", "profile": "idle"}]})
    problem = compile_problem(topology, Cluster.model_validate(body["cluster"]), ProfileTable.from_entries([ProfileEntry.model_validate(e) for e in entries]),
                              PlanOptions())
    placement = {"spout": ["m1"], "low": ["m1"], "high": ["m1"], "__acker": ["m0"]}
    registration = registration_of(problem, placement, TenantSpec(), None, worker_load=BASE)
    assert set(registration.machines) == {"m0", "m1"}
    assert registration.machines["m0"].slope == 0 and registration.machines["m0"].fixed == 0
    assert registration.machines["m0"].worker == BASE["slow"]


def test_a_newcomer_may_be_planned_without_some_machine_types_never_without_all():
    from planner.ledger import cluster_with_room, leave_out_choices
    from planner.model import Cluster

    cluster = Cluster.model_validate({
        "machine_types": [{"name": n, "capacity": 90, "cores": 1, "slots": 2} for n in ("a", "b", "c")],
        "machines": [{"id": "a1", "type": "a"}, {"id": "a2", "type": "a"}, {"id": "b1", "type": "b"},
                     {"id": "c1", "type": "c"}]})
    choices = leave_out_choices(cluster, limit=10)
    assert choices == [frozenset("a"), frozenset("b"), frozenset("c"), frozenset("ab"), frozenset("ac"),
                       frozenset("bc")]
    assert leave_out_choices(cluster, limit=2) == choices[:2]
    two_types = cluster.model_copy(update={"machines": cluster.machines[:3]})
    assert leave_out_choices(two_types, limit=10) == [frozenset("a"), frozenset("b")]
    room, _ = cluster_with_room(cluster, [], {"b1": 45.0}, 0.9, leave_out=frozenset("a"))
    assert [m.id for m in room.machines] == ["b1", "c1"]
    assert {t.name: t.capacity for t in room.machine_types}["b@b1"] == pytest.approx(40.0)
    with pytest.raises(ValueError):
        cluster_with_room(cluster, [], {}, 0.9, leave_out=frozenset("abc"))
