"""The ledger counts Storm worker slots: every tenant holds one on each machine it uses (the plugin runs one worker
per topology per supervisor), a newcomer is planned only where one is free, and admission refuses a placement that
needs a slot the tenants before it hold, also one taken while it was planned (issue 35)."""
from __future__ import annotations

import copy
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import anyio
import pytest
from fastapi.testclient import TestClient

from planner.ledger import (
    TenantRecord,
    allocation_of,
    cluster_with_room,
    ledger_of,
    ledger_version,
    registration_of,
    slots_held,
    slots_of,
)
from planner.model import Cluster, PlanOptions, ProfileEntry, TenantSpec, Topology
from planner.problem import compile_problem
from planner.profiles import ProfileTable
from planner.service.app import create_app
from planner.service.routers import plans as plans_router
from planner.service.settings import ServiceSettings
from planner.tenancy import Tenant, allocate, no_free_slot
from tests.fixtures.service import small_plan_request, small_profiles


def record(name: str, machines: dict[str, int | None], arrival: float, **tenant) -> TenantRecord:
    """A tenant on ``machines`` (machine -> its slots, None: not said), 1% per tuple/s of each of 100%."""
    shares = {w: {"slope": 1.0, "capacity": 100.0, "type": "t", **({} if s is None else {"slots": s})}
              for w, s in machines.items()}
    return TenantRecord(topology=name, machines=shares, registered_at=arrival, heartbeat_at=arrival, **tenant)


def cluster(slots: int) -> Cluster:
    return Cluster.model_validate({"machine_types": [{"name": "t", "capacity": 90, "slots": slots}],
                                   "machines": [{"id": f"m{i}", "type": "t"} for i in range(3)]})


# --- the pure functions ---------------------------------------------------------------------------------------------

def test_a_machine_whose_slots_the_others_hold_is_left_out_and_one_free_slot_is_enough():
    room, _ = cluster_with_room(cluster(2), [], {"m1": 10.0}, 0.9, held={"m0": 2, "m1": 1})
    assert [m.id for m in room.machines] == ["m1", "m2"]  # m0: both slots held; m1: one left, its room derived
    assert {t.name: t.capacity for t in room.machine_types}["t@m1"] == pytest.approx(90 - 10 / 0.9)
    assert [m.id for m in cluster_with_room(cluster(2), [], {}, 0.9)[0].machines] == ["m0", "m1", "m2"]
    with pytest.raises(ValueError, match="worker slots"):
        cluster_with_room(cluster(1), [], {}, 0.9, held={"m0": 1, "m1": 1, "m2": 3})


def test_admission_refuses_a_tenant_whose_machine_has_no_free_slot_whatever_its_minimum_or_priority():
    slots = {"m0": 2, "m1": 2}
    a, b = (Tenant(n, slope={"m0": 0.1}, hosts=frozenset({"m0"}), arrival=i) for i, n in enumerate("ab"))
    c = Tenant("c", slope={"m0": 0.1, "m1": 0.1}, hosts=frozenset({"m0", "m1"}), arrival=2)
    allocation = allocate([a, b, c], {"m0": 100.0, "m1": 100.0}, slots=slots)
    assert set(allocation.rates) == {"a", "b"}
    refusal = allocation.refused["c"]
    assert refusal.no_slot == "m0" and refusal.fits_rate == 0.0
    assert refusal.reason == "it needs a worker slot on machine m0, whose 2 slots the 2 tenants placed before it already hold"
    assert allocation.loads["m1"] == {"c": 0.0}  # refused, it is charged as the refused are: idle
    important = allocate([replace(c, priority=0), a, b], {"m0": 100.0, "m1": 100.0}, slots=slots)
    assert set(important.rates) == {"a", "b"}, "first come, first served: a running topology keeps its slot"
    first = allocate([replace(c, arrival=-1), a, b], {"m0": 100.0, "m1": 100.0}, slots=slots)
    assert set(first.rates) == {"c", "a"} and first.refused["b"].no_slot == "m0"
    idle = allocate([replace(a, min_rate=1e6), b, c], {"m0": 100.0, "m1": 100.0}, slots=slots)
    assert idle.refused["a"].no_slot is None and idle.refused["c"].no_slot == "m0"  # a refused runs idle: its slot held
    assert set(allocate([a, b, c], {"m0": 100.0, "m1": 100.0}).rates) == {"a", "b", "c"}  # slots not given: not counted
    assert no_free_slot({"m1", "m0"}, {"m0": 1, "m1": 2}, slots) == "m1"
    assert no_free_slot({"m9"}, {"m9": 50}, slots) is None


def test_the_fit_check_notices_a_slot_taken_while_the_newcomer_was_planned():
    """What the service's serialised admission does: the newcomer planned beside ``seen`` is admitted beside ``now``
    only if it still fits there, and a newcomer registered meanwhile holds the last slot of m0."""
    resident = record("resident", {"m0": 2, "m1": 2}, 0.0)
    seen = [resident]
    newcomer = record("newcomer", {"m0": 2}, 2.0)
    assert "newcomer" in allocation_of(seen + [newcomer], "weighted").rates  # one slot of m0 left when it was planned
    now = seen + [record("meanwhile", {"m0": 2}, 1.0)]
    assert ledger_version(now) != ledger_version(seen)
    refused = allocation_of(now + [newcomer], "weighted").refused
    assert set(refused) == {"newcomer"} and refused["newcomer"].no_slot == "m0"
    elsewhere = record("newcomer", {"m1": 2}, 2.0)  # planned again on what is left: m1's last slot
    assert "newcomer" in allocation_of(now + [elsewhere], "weighted").rates


def test_the_ledger_shows_slots_used_of_slots_and_the_newest_registration_says_the_slots():
    records = [record("a", {"m0": 4, "m1": None}, 0.0), record("b", {"m0": 3}, 1.0)]
    assert slots_of(records) == {"m0": 3} and slots_held(records) == {"m0": 2, "m1": 1}
    machines = {m.id: m for m in ledger_of(records, "weighted", ttl_s=60, now=1).machines}
    assert (machines["m0"].slots, machines["m0"].slots_used) == (3, 2)
    assert (machines["m1"].slots, machines["m1"].slots_used) == (None, 1)  # a registration that does not say
    assert ledger_version(records) != ledger_version([records[0], record("b", {"m0": 4}, 1.0)])


def test_a_registration_holds_its_machine_type_s_slots_on_every_machine_it_uses():
    body = small_plan_request()
    body["cluster"]["machine_types"][1]["slots"] = 2
    problem = compile_problem(Topology.model_validate(body["topology"]), Cluster.model_validate(body["cluster"]),
                              ProfileTable.from_entries([ProfileEntry.model_validate(e) for e in small_profiles()["entries"]]),
                              PlanOptions())
    registration = registration_of(problem, {"spout": ["m0"], "low": ["m1"], "high": ["m1"]}, TenantSpec(), None)
    assert {w: (m.type, m.slots) for w, m in registration.machines.items()} == {"m0": ("slow", 4), "m1": ("fast", 2)}


# --- through the service ----------------------------------------------------------------------------------------

def newcomer(name: str) -> dict:
    body = copy.deepcopy(small_plan_request(machines=2))
    body["topology"]["name"] = name
    body["tenant"] = {}
    for t in body["cluster"]["machine_types"]:
        t["slots"] = 2
    return body


def test_two_newcomers_planned_at_once_are_never_both_given_the_last_slot_of_a_machine(tmp_path, monkeypatch):
    """A resident holds one of the two slots of m0 and of m1; ``first`` is planned, then ``second`` comes, is planned
    on the same reading and registered before ``first`` is: ``first``'s choice needs a slot ``second`` took, so it is
    planned again with the ledger held, on what is left, or refused."""
    chosen, second_done = threading.Event(), threading.Event()
    calls: list[str] = []
    choose = plans_router._choose

    async def held_open(request, *args, **kwargs):
        picked = await choose(request, *args, **kwargs)
        calls.append(request.topology.name)
        if calls == ["first"]:  # first has chosen but is not registered: second comes now
            chosen.set()
            await anyio.to_thread.run_sync(second_done.wait)
        return picked

    monkeypatch.setattr(plans_router, "_choose", held_open)
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", tenant_ttl_s=3600))) as client:
        resident = {w: {"slope": 0.01, "capacity": 100.0, "type": t, "slots": 2} for w, t in (("m0", "slow"), ("m1", "fast"))}
        assert client.put("/v1/tenants/resident", json={"machines": resident}).status_code == 200

        def second():
            chosen.wait(timeout=120)
            try:
                return client.post("/v1/plans", json=newcomer("second"))
            finally:
                second_done.set()

        with ThreadPoolExecutor(2) as pool:
            first_answer = pool.submit(client.post, "/v1/plans", json=newcomer("first"))
            second_answer = pool.submit(second).result()
            first_answer = first_answer.result()
        ledger = client.get("/v1/ledger").json()
    assert second_answer.status_code == 201, second_answer.text
    assert calls[:2] == ["first", "second"]
    second_machines = {a["machine"] for a in second_answer.json()["assignments"]}
    if first_answer.status_code == 201:  # planned again with the ledger held, on the machines second left
        assert calls == ["first", "second", "first"]
        assert "planned again with the ledger held" in first_answer.json()["stats"]["tenancy"]["bounded"]
        assert not {a["machine"] for a in first_answer.json()["assignments"]} & second_machines
    else:
        assert first_answer.status_code == 409, first_answer.text
        assert "worker slot" in first_answer.json()["detail"], first_answer.text
    for machine in ledger["machines"]:
        assert machine["slots"] == 2 and machine["slots_used"] <= 2, machine
    assert all(t["status"] == "admitted" for t in ledger["tenants"]), ledger["tenants"]
    assert {t["topology"] for t in ledger["tenants"]} == {"resident", "second"} | (
        {"first"} if first_answer.status_code == 201 else set())


def test_a_stored_placement_on_a_machine_without_a_free_slot_is_refused_in_one_sentence(tmp_path):
    """A reused plan is not planned on the room left, so only admission stands between it and a slot another holds."""
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", tenant_ttl_s=3600))) as client:
        body = newcomer("stored")
        for t in body["cluster"]["machine_types"]:
            t["slots"] = 1
        stored = client.post("/v1/plans", json={k: v for k, v in body.items() if k != "tenant"}).json()
        machines = sorted({a["machine"] for a in stored["assignments"]})
        resident = {w: {"slope": 0.01, "capacity": 100.0, "type": "slow" if w == "m0" else "fast", "slots": 1}
                    for w in machines}
        assert client.put("/v1/tenants/resident", json={"machines": resident}).status_code == 200
        answer = client.post("/v1/plans", json={**body, "plan_id": stored["id"]})
    assert answer.status_code == 409, answer.text
    assert answer.json()["detail"] == (
        f"topology stored is not admitted: it needs a worker slot on machine {machines[0]}, whose only slot a tenant "
        "placed before it already holds")
