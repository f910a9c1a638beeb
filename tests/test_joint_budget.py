"""A newcomer's search beside the running tenants is bounded (a time budget, a cap on the tenants planned again), so
its plan request answers well within the Nimbus plugin's timeout, and the answer says what was left out."""
from __future__ import annotations

import copy
from collections.abc import Callable

import anyio
import pytest
from fastapi.testclient import TestClient

from planner.ledger import MachineShare, TenantRecord
from planner.model import PlanRequest
from planner.service.app import create_app
from planner.service.settings import ServiceSettings
from planner.service.tenants import SearchBounds, joint_replans
from tests.fixtures.service import small_plan_request

REQUEST = PlanRequest.model_validate(small_plan_request(machines=4))
CHOICES_PER_TENANT = 3
"""Every machine, without slow, without fast: the sets of machine types a tenant is planned on again (two types)."""


def record(name: str, priority: int) -> TenantRecord:
    """A running tenant on m0 with its stored request, so a joint re-plan may plan it again."""
    return TenantRecord(topology=name, priority=priority, plan_id=None, registered_at=float(priority), heartbeat_at=0.0,
                        machines={"m0": MachineShare(slope=1.0, capacity=100.0, type="slow")}, request=REQUEST)


def replans(tenants: int, bounds: Callable[[], SearchBounds], seconds: float) -> tuple[list[str], SearchBounds, float]:
    """The tenants a joint re-plan plans again beside a newcomer on m0, each plan taking ``seconds``, within the
    bounds ``bounds()`` makes (in the event loop, whose clock a deadline is on); and the seconds it took."""
    asked: list[str] = []

    async def replan(tenant, used, leave_out, held):
        asked.append(tenant.topology)
        await anyio.sleep(seconds)
        return None

    records = [record(f"t{i}", priority=i) for i in range(tenants)] + [record("newcomer", priority=50)]
    capacity = {m.id: 100.0 for m in REQUEST.cluster.machines}

    async def run() -> tuple[SearchBounds, float]:
        made = bounds()
        started = anyio.current_time()
        kept = await joint_replans(records, "newcomer", capacity, "weighted", 0.05, replan, REQUEST.cluster,
                                   bounds=made)
        assert kept == []
        return made, anyio.current_time() - started

    made, took = anyio.run(run)
    return asked, made, took


def test_a_joint_replan_plans_again_only_the_most_important_tenants_up_to_the_cap():
    asked, bounds, _ = replans(5, lambda: SearchBounds(max_tenants=2), seconds=0.0)
    assert asked == ["t0"] * CHOICES_PER_TENANT + ["t1"] * CHOICES_PER_TENANT
    assert bounds.capped == (2, 5) and not bounds.timed_out
    assert bounds.sentence() == (
        "Only the 2 most important of the 5 running topologies on its machines were planned again beside it "
        "(hetsched serve --joint-max-tenants), so its placement is the best found within that bound.")


def test_a_joint_replan_stops_at_the_deadline_and_its_plans_under_way_are_cancelled():
    asked, bounds, took = replans(5, lambda: SearchBounds(deadline=anyio.current_time() + 0.3, budget_s=0.3),
                                  seconds=0.2)
    assert sorted(set(asked)) == ["t0", "t1"], "t1's plans were cut at 0.3 s, t2 never asked"
    assert took < 1.0
    assert bounds.timed_out and bounds.capped is None
    assert bounds.sentence().startswith("The search beside the running topologies stopped at the service's budget of "
                                        "0.3 s (hetsched serve --joint-budget-s), so its placement is the best found")


def test_a_search_within_its_bounds_says_nothing():
    asked, bounds, _ = replans(3, lambda: SearchBounds(max_tenants=8), seconds=0.0)
    assert len(asked) == 3 * CHOICES_PER_TENANT
    assert bounds.sentence() is None


def test_calls_side_by_side_past_the_deadline_answer_none():
    async def run() -> tuple[list, SearchBounds]:
        bounds = SearchBounds(deadline=anyio.current_time() + 0.2)

        async def answer(value, seconds):
            await anyio.sleep(seconds)
            return value

        return await bounds.side_by_side([lambda: answer("quick", 0.0), lambda: answer("slow", 5.0)]), bounds

    answers, bounds = anyio.run(run)
    assert answers == ["quick", None] and bounds.timed_out


def newcomer(name: str) -> dict:
    body = copy.deepcopy(small_plan_request(machines=4))
    body["topology"]["name"] = name
    body["tenant"] = {"priority": 1}
    return body


@pytest.mark.parametrize("bound", ["budget", "cap"])
def test_past_its_bound_a_newcomer_is_planned_on_what_the_tenants_leave_and_the_answer_says_so(tmp_path, bound):
    limits = {"joint_budget_s": 0.0} if bound == "budget" else {"joint_budget_s": None, "joint_max_tenants": 0}
    settings = ServiceSettings(db_path=tmp_path / "db.sqlite", tenant_ttl_s=3600, **limits)
    with TestClient(create_app(settings)) as client:
        first = client.post("/v1/plans", json=newcomer("first"))
        second = client.post("/v1/plans", json=newcomer("second"))
        ledger = client.get("/v1/ledger").json()
    assert first.status_code == second.status_code == 201, second.text
    assert "bounded" not in first.json()["stats"]["tenancy"], "alone, there is nothing to search"
    tenancy = second.json()["stats"]["tenancy"]
    said = {"budget": "The search beside the running topologies stopped at the service's budget of 0 s "
                      "(hetsched serve --joint-budget-s)",
            "cap": "None of the 1 running topologies on its machines was planned again beside it "
                   "(hetsched serve --joint-max-tenants)"}[bound]
    assert tenancy["bounded"].startswith(said), tenancy["bounded"]
    assert "replaced" not in tenancy and tenancy["others"] == ["first"]
    if bound == "budget":
        assert "left_out_types" not in second.json()["stats"], "no placement without some machine types was tried"
    assert [t["status"] for t in ledger["tenants"]] == ["admitted", "admitted"]
