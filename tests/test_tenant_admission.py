"""Newcomers planned at the same time against a real ``hetsched serve``: each is admitted only where it still fits
beside those registered while it was planned, so the ledger never commits a machine's room or worker slot twice."""
from __future__ import annotations

import copy
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.fixtures.service import small_plan_request

NEWCOMERS = 6


def newcomer(name: str, min_rate: float, slots: int = NEWCOMERS) -> dict:
    """A copy of Linear on 4 machines of ``slots`` worker slots each (by default one for every newcomer)."""
    body = copy.deepcopy(small_plan_request(machines=4))
    body["topology"]["name"] = name
    body["tenant"] = {"min_rate": min_rate}
    for t in body["cluster"]["machine_types"]:
        t["slots"] = slots
    return body


def plan_at_once(service, bodies: list[dict]) -> dict[str, int]:
    """Every request sent at the same moment, each from its own thread; topology -> HTTP status."""
    ready = threading.Barrier(len(bodies))

    def ask(body: dict) -> tuple[str, int]:
        with service.http() as http:
            ready.wait()
            answer = http.post("/v1/plans", json=body)
        assert answer.status_code in (201, 409), answer.text
        if answer.status_code == 409 and not body["tenant"]["min_rate"]:
            assert "slot" in answer.json()["detail"], answer.text  # no minimum: only a worker slot can be short
        return body["topology"]["name"], answer.status_code

    with ThreadPoolExecutor(len(bodies)) as pool:
        return dict(pool.map(ask, bodies))


@pytest.mark.parametrize(("share", "slots"), [(0.4, NEWCOMERS), (0.0, NEWCOMERS), (0.0, 1)],
                         ids=["minimums-for-two", "no-minimum", "one-slot-each"])
def test_newcomers_planned_at_once_are_never_admitted_on_the_same_room(start_planner_service, share, slots):
    """Six copies of Linear at once on an empty ledger: each was planned on the whole cluster. With minimums of 40%
    of its solo rate at most two fit, so the others are refused (409), not registered over them. With one worker
    slot a machine, no two share a machine (the ledger counts slots), and at most four are admitted."""
    service = start_planner_service(extra_args=["--tenant-ttl-s", "3600"])
    with service.http() as http:
        alone = http.post("/v1/plans", json=small_plan_request(machines=4)).json()["input_rate"]
    statuses = plan_at_once(service, [newcomer(f"copy-{i}", alone * share, slots) for i in range(NEWCOMERS)])
    with service.http() as http:
        ledger = http.get("/v1/ledger").json()
    admitted = sorted(name for name, status in statuses.items() if status == 201)
    tenants = {t["topology"]: t for t in ledger["tenants"]}
    assert sorted(tenants) == admitted, "every answered plan is registered, and only those"
    assert all(t["status"] == "admitted" for t in tenants.values()), tenants
    assert 1 <= len(admitted) <= (2 if share else min(NEWCOMERS, 4 * slots))
    if share:
        assert all(t["rate"] >= alone * share - 1e-3 for t in tenants.values())
    elif slots >= NEWCOMERS:
        assert len(admitted) == NEWCOMERS, statuses
    for machine in ledger["machines"]:
        assert sum(machine["loads"].values()) <= machine["capacity"] + 0.01, machine  # loads rounded to 0.001 each
        assert machine["free"] >= -0.01, machine
        assert machine["slots"] == slots and machine["slots_used"] <= slots, machine
