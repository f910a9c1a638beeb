"""A topology's events (issue 34, part 5): recorded where the service learns of them, bounded, read back newest first
through GET /v1/topologies/{name}/events, and never the reason a request fails. The Nimbus plugin's binds are told
apart by their reasons, whose wording the plugin's Java source is held to here (and by its JUnit tests)."""
from __future__ import annotations

import copy
import logging

import pytest
from fastapi.testclient import TestClient

from planner.events import (
    CONTINGENCY_LOST,
    CONTINGENCY_REASON,
    EVENT_KINDS,
    PLUGIN_REASON,
    TopologyEvents,
    binding_kind,
    contingency_machine,
)
from planner.service.app import create_app
from planner.service.scopes import ALL_SCOPES, Scope, required_scope
from planner.service.settings import ServiceSettings
from planner.storage import Storage
from tests.fixtures.service import small_plan_request, small_profiles


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", tenant_ttl_s=3600))) as c:
        yield c


def stored_plan(client: TestClient, name: str = "linear", **options) -> dict:
    body = small_plan_request(strategy="paper")
    body["topology"]["name"] = name
    if options:
        body["options"] = options
    answer = client.post("/v1/plans", json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()


def events(client: TestClient, topology: str, **params) -> list[dict]:
    answer = client.get(f"/v1/topologies/{topology}/events", params=params)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert TopologyEvents.model_validate(body).topology == topology
    return body["events"]


# --- binds, the endpoint, its limit and order --------------------------------------------------------------

def test_each_bind_is_an_event_of_its_kind_newest_first(client):
    plan = stored_plan(client)["id"]
    for reason in ("operator's choice", "hetsched replan: predicted 10.00 -> 12.00 tuples/s (+20.0%)",
                   f"hetsched plugin, machine joined: plan {plan} predicts 12.00 tuples/s against 8.00 now (+50.0%)"):
        assert client.put("/v1/assignments/run", json={"plan_id": plan, "reason": reason}).status_code == 200
    assert client.delete("/v1/assignments/run").status_code == 204
    found = events(client, "run")
    assert [e["kind"] for e in found] == ["unbound", "machine-returned", "re-planned", "bound"]
    assert found[-1]["sentence"] == f"Plan {plan} bound: operator's choice."
    assert found[0]["sentence"].startswith(f"Plan {plan} unbound")
    times = [e["at"] for e in found]
    assert all(t.endswith("Z") and "T" in t for t in times) and times == sorted(times, reverse=True)


def test_limit_answers_the_newest(client):
    plan = stored_plan(client)["id"]
    for n in range(5):
        client.put("/v1/assignments/run", json={"plan_id": plan, "reason": f"bind {n}"}).raise_for_status()
    assert [e["sentence"] for e in events(client, "run", limit=2)] == [f"Plan {plan} bound: bind 4.",
                                                                      f"Plan {plan} bound: bind 3."]
    assert len(events(client, "run")) == 5


def test_a_topology_nothing_happened_to_has_no_events(client):
    assert events(client, "never-seen") == []


@pytest.mark.parametrize("limit, sentence", [
    ("0", "query.limit: Input should be greater than or equal to 1"),
    ("201", "query.limit: Input should be less than or equal to 200"),
    ("ten", "query.limit: Input should be a valid integer, unable to parse string as an integer"),
])
def test_a_bad_limit_is_422_in_one_sentence(client, limit, sentence):
    answer = client.get("/v1/topologies/run/events", params={"limit": limit})
    assert answer.status_code == 422
    assert (answer.json()["error"], answer.json()["detail"]) == ("invalid_request", sentence)


def test_the_events_are_read_with_the_read_scope(tmp_path):
    assert required_scope("GET", "/v1/topologies/run/events") == Scope.READ
    grants = {"t-read": frozenset({Scope.READ}), "t-bind": frozenset({Scope.BIND}), "t-admin": ALL_SCOPES}
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", tokens=grants))) as c:
        assert c.get("/v1/topologies/run/events", headers={"Authorization": "Bearer t-read"}).status_code == 200
        refused = c.get("/v1/topologies/run/events", headers={"Authorization": "Bearer t-bind"})
        assert refused.status_code == 403 and refused.json()["detail"] == (
            "this token may not read from the planner: it lacks the 'read' scope (it has bind)")


def test_the_kind_of_a_bind_comes_from_its_reason():
    assert binding_kind("hetsched plugin, machine joined: plan p predicts ...") == "machine-returned"
    assert binding_kind("hetsched replan: predicted 1 -> 2") == "re-planned"
    assert binding_kind("hetsched plugin, planned again beside b: plan p, 1.00 -> 2.00 tuples/s") == "bound"
    assert set(EVENT_KINDS) >= {"bound", "repaired", "machine-lost", "machine-returned", "re-planned", "evicted",
                                "admitted", "refused"}


PLUGIN_CONTINGENCY_REASON = ("hetsched plugin, contingency for m-large-1 lost: kept 5 executors where they run, moved 3, "
                             "predicted 45.13 tuples/s, 1 surviving workers restart")
"""A contingency reason word for word as the plugin makes it (ContingencyTest.theReasonNamesTheLostMachineAsTheServiceReadsIt
asserts the same string)."""
PLUGIN_REPAIR_REASON = "hetsched plugin, repair placed after losing m-large-1: kept 5 executors where they run, placed 3 on m-a"
"""The reason the plugin binds a repair plan it placed with (ReplanningTest asserts its wording)."""


def test_the_plugin_still_words_its_reasons_as_the_kinds_read_them():
    """The plugin's bind reasons are how the service tells a return or a contingency from a bind: a change there must
    change both."""
    from tests.fixtures.docs import REPO, java_string_constant

    java = REPO / "storm-plugin" / "src" / "main" / "java" / "org" / "hetsched" / "storm"
    assert java_string_constant("HetschedScheduler.java", "PLUGIN_REASON") == PLUGIN_REASON
    assert "PLUGIN_REASON + reason" in (java / "HetschedScheduler.java").read_text()
    assert '"machine joined: " + figures' in (java / "Upgrades.java").read_text()
    assert PLUGIN_REASON + java_string_constant("ContingencyPlacement.java", "REASON_START") == CONTINGENCY_REASON
    assert java_string_constant("ContingencyPlacement.java", "REASON_LOST") == CONTINGENCY_LOST
    assert "REASON_START + result.machine() + REASON_LOST + \": kept \"" in (java / "ContingencyPlacement.java").read_text()
    assert '"repair placed"' in (java / "RepairPlacement.java").read_text()

    assert (binding_kind(PLUGIN_CONTINGENCY_REASON), contingency_machine(PLUGIN_CONTINGENCY_REASON)) == (
        "contingency-applied", "m-large-1")
    assert binding_kind(PLUGIN_REPAIR_REASON) == "bound"


@pytest.mark.parametrize("reason, machines, machine", [
    ("hetsched plugin, contingency for m-1 lost: kept 2", [], "m-1"),
    ("hetsched plugin, contingency for m-1 lost", [], "m-1"),
    ("hetsched plugin, contingency for rack 2 lost: kept 2", [], "rack 2"),
    ("hetsched plugin, contingency for m lost: b lost: kept 2", ["m lost: b", "m"], "m lost: b"),
    ("hetsched plugin, contingency for m lost: kept 2", ["m lost: b", "m"], "m"),
    ("hetsched plugin, contingency for  lost: kept 2", [], None),
    ("hetsched plugin, contingency for m-1", [], None),
    ("hetsched plugin, machine joined: plan p", [], None),
    ("operator: contingency for m-1 lost", [], None),
])
def test_the_lost_machine_is_read_from_a_contingency_reason(reason, machines, machine):
    assert contingency_machine(reason, machines) == machine


# --- a contingency the plugin applied, a repair it placed -------------------------------------------------

def surviving_plan(client: TestClient, name: str = "linear") -> tuple[dict, dict]:
    """A stored plan with contingencies, and its contingency for the machine holding the most instances."""
    plan = stored_plan(client, name, survive_loss={"objective": "nominal"})
    assert plan["contingencies"], plan
    busiest = max(plan["machines"], key=lambda m: m["instances"])["id"]
    return plan, next(c for c in plan["contingencies"] if c["machine"] == busiest)


def test_a_contingency_the_plugin_applied_is_the_loss_and_the_contingency(client):
    plan, contingency = surviving_plan(client)
    machine = contingency["machine"]
    reason = (f"hetsched plugin, contingency for {machine} lost: kept 4 executors where they run, moved "
              f"{contingency['moved']}, predicted {contingency['input_rate']:.2f} tuples/s")
    answer = client.put("/v1/assignments/linear", json={"plan_id": plan["id"], "reason": reason})
    assert answer.status_code == 200, answer.text
    assert client.get("/v1/assignments/linear").json()["plan_id"] == plan["id"]

    applied, loss = events(client, "linear")
    assert (applied["kind"], loss["kind"]) == ("contingency-applied", "machine-lost")
    on_it = [f"{a['component']} #{a['index']}" for a in plan["assignments"] if a["machine"] == machine]
    count = f"{len(on_it)} instance{'s' if len(on_it) != 1 else ''}"
    assert loss["sentence"] == (f"Lost machine {machine} with {count} of plan {plan['id']} ({', '.join(on_it[:6])}"
                                f"{f' and {len(on_it) - 6} more' if len(on_it) > 6 else ''}); the plugin applied the "
                                "contingency the plan stores for it, without a repair.")
    moves = [f"{m['component']} #{m['index']} to {m['machine']}" for m in contingency["moves"]]
    assert applied["sentence"].startswith(
        f"Applied plan {plan['id']}'s contingency for machine {machine}: moved {len(moves)} "
        f"instance{'s' if len(moves) != 1 else ''} ({', '.join(moves[:6])}"), applied["sentence"]
    assert f"), predicted {contingency['input_rate']:.2f} tuples/s" in applied["sentence"]
    assert applied["sentence"].endswith(f"; the plugin: {reason.split(' lost: ')[1]}."), applied["sentence"]


def test_a_contingency_of_a_plan_without_it_is_still_the_loss_and_the_contingency(client):
    plan = stored_plan(client)
    assert plan.get("contingencies") is None
    reason = "hetsched plugin, contingency for m-gone lost: kept 4 executors where they run, moved 2"
    client.put("/v1/assignments/linear", json={"plan_id": plan["id"], "reason": reason}).raise_for_status()
    applied, loss = events(client, "linear")
    assert loss == {**loss, "kind": "machine-lost", "sentence": "Lost machine m-gone; the plugin applied the contingency "
                    "the plan stores for it, without a repair."}
    assert applied["sentence"] == (f"Applied plan {plan['id']}'s contingency for machine m-gone (plan {plan['id']} "
                                   "stores no contingency for it); the plugin: kept 4 executors where they run, moved 2.")


def test_a_plan_that_cannot_be_read_still_records_the_contingency_and_binds(client, caplog):
    plan, contingency = surviving_plan(client)
    storage = client.app.state.storage

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    storage.get_plan = broken
    reason = f"hetsched plugin, contingency for {contingency['machine']} lost: kept 4 executors where they run, moved 1"
    with caplog.at_level(logging.WARNING, logger="hetsched.service"):
        answer = client.put("/v1/assignments/linear", json={"plan_id": plan["id"], "reason": reason})
    assert answer.status_code == 200, answer.text
    assert [e["kind"] for e in events(client, "linear")] == ["contingency-applied", "machine-lost"]
    assert f"(plan {plan['id']} is not stored); the plugin: kept 4" in events(client, "linear")[0]["sentence"]
    assert f"plan {plan['id']} bound to topology linear cannot be read for its events: disk full" in caplog.text


def test_the_repair_the_plugin_placed_is_bound_as_a_plain_bind(client):
    plan = stored_plan(client)
    repair = repair_after_losing(client, plan)["plan"]
    reason = PLUGIN_REPAIR_REASON.replace("m-large-1", "m-x")
    client.put("/v1/assignments/linear", json={"plan_id": repair["id"], "reason": reason}).raise_for_status()
    assert [e["kind"] for e in events(client, "linear")] == ["bound", "repaired", "machine-lost"]
    assert events(client, "linear")[0]["sentence"] == f"Plan {repair['id']} bound: {reason}."


# --- repairs ---------------------------------------------------------------------------------------------

def repair_after_losing(client: TestClient, plan: dict, name: str = "linear") -> dict:
    request = small_plan_request(machines=4)
    request["topology"]["name"] = name
    lost = max(plan["machines"], key=lambda m: m["instances"])["id"]
    request["cluster"]["machines"] = [m for m in request["cluster"]["machines"] if m["id"] != lost]
    for component in request["topology"]["components"]:
        component["parallelism"] = plan["instances"][component["id"]]
    keep = [{"component": a["component"], "index": a["index"], "machine": a["machine"]}
            for a in plan["assignments"] if a["machine"] != lost]
    client.put("/v1/profiles/small-micro", json=small_profiles()).raise_for_status()
    request["profiles"] = {"name": "small-micro"}
    answer = client.post("/v1/repairs", json={**request, "keep": keep})
    assert answer.status_code == 201, answer.text
    return {"lost": lost, "plan": answer.json()}


def test_a_repair_records_the_machine_lost_and_the_repair(client):
    plan = stored_plan(client)
    repaired = repair_after_losing(client, plan)
    newest, loss = events(client, "linear")
    assert (newest["kind"], loss["kind"]) == ("repaired", "machine-lost")
    assert f"with machine {repaired['lost']} (plan {plan['id']} placed them there)" in loss["sentence"]
    assert loss["sentence"].startswith("Lost ") and loss["sentence"].endswith("the plugin asked for a repair.")
    assert newest["sentence"].startswith(f"Repaired by plan {repaired['plan']['id']}: kept ")
    assert f"predicted {repaired['plan']['input_rate']:.2f} tuples/s" in newest["sentence"]


def test_a_loss_no_stored_plan_explains_names_no_machine(client):
    plan = stored_plan(client)
    repair_after_losing(client, plan, name="from-elsewhere")
    loss = events(client, "from-elsewhere")[1]
    assert loss["kind"] == "machine-lost" and "does not know which machines went" in loss["sentence"]


# --- tenancy: admission, eviction, priority -------------------------------------------------------------

def register(client: TestClient, topology: str, priority: int) -> None:
    """A tenant whose minimum (1 tuple/s) takes 60% of the one machine: two of them never both fit."""
    registration = {"plan_id": f"plan-{topology}", "priority": priority, "min_rate": 1,
                    "machines": {"m0": {"slope": 60.0, "fixed": 0.0, "capacity": 100.0, "type": "slow"}}}
    assert client.put(f"/v1/tenants/{topology}", json=registration).status_code == 200


def test_admission_eviction_and_a_priority_change_are_events(client):
    register(client, "running", priority=5)
    register(client, "waiting", priority=6)
    alive = {"topologies": ["running", "waiting"]}
    assert [e["topology"] for e in client.post("/v1/tenants/alive", json=alive).json()["evicted"]] == ["waiting"]
    client.post("/v1/tenants/alive", json=alive).raise_for_status()  # the plugin's next heartbeat: said once
    client.put("/v1/tenants/waiting/priority", json={"priority": 0}).raise_for_status()
    client.post("/v1/tenants/alive", json=alive).raise_for_status()
    client.post("/v1/tenants/alive", json={"topologies": ["waiting"]}).raise_for_status()
    assert [e["kind"] for e in events(client, "waiting")] == ["priority-changed", "evicted", "refused"]
    assert [e["kind"] for e in events(client, "running")] == ["released", "evicted", "admitted"]
    changed = events(client, "waiting")[0]["sentence"]
    assert changed == ("Priority 6 -> 0; the shares of running changed too; refused now, evicted at the plugin's next "
                       "heartbeat: running.")
    evicted = events(client, "running")[1]["sentence"]
    assert evicted.startswith("Evicted: the ledger refuses it beside the tenants running now (its minimum rate 1 "
                              "tuples/s needs 60.0% of machine m0")


def tenant_request(name: str, **tenant) -> dict:
    body = copy.deepcopy(small_plan_request(machines=4))
    body["topology"]["name"] = name
    body["tenant"] = tenant
    return body


def test_a_newcomer_that_evicts_a_tenant_records_both_and_a_refusal_is_recorded(client):
    alone = client.post("/v1/plans", json=small_plan_request(machines=4)).json()["input_rate"]
    first = client.post("/v1/plans", json=tenant_request("first", priority=5, min_rate=alone * 0.7))
    second = client.post("/v1/plans", json=tenant_request("second", priority=0, min_rate=alone * 0.7))
    third = client.post("/v1/plans", json=tenant_request("third", priority=9, min_rate=alone * 0.7))
    assert (first.status_code, second.status_code, third.status_code) == (201, 201, 409)
    assert [e["kind"] for e in events(client, "first")] == ["evicted", "admitted"]
    assert events(client, "first")[0]["sentence"].startswith("Evicted beside second: its minimum rate")
    admitted = events(client, "second")[0]
    assert admitted["kind"] == "admitted" and admitted["sentence"].startswith(
        f"Admitted on plan {second.json()['id']}: its share is ")
    (refused,) = events(client, "third")
    assert refused["kind"] == "refused" and refused["sentence"].startswith("Topology third is not admitted: ")


# --- bounded, deduplicated, never failing a request -----------------------------------------------------

def test_the_log_keeps_the_newest_of_each_topology_and_says_a_repeat_once(tmp_path):
    storage = Storage(tmp_path / "db.sqlite", events_kept=3)
    for n in range(5):
        assert storage.add_event("a", "bound", f"bind {n}", at=1000.0 + n)
    storage.add_event("b", "bound", "other", at=1000.0)
    assert [e.sentence for e in storage.events("a", 10)] == ["bind 4", "bind 3", "bind 2"]
    assert [e.sentence for e in storage.events("b", 10)] == ["other"]
    assert not storage.add_event("a", "bound", "bind 4", at=1100.0), "the same event within the quiet time"
    assert storage.add_event("a", "bound", "bind 4", at=1500.0), "said again once the quiet time passed"
    assert storage.events("a", 1)[0].at == "1970-01-01T00:25:00.000Z"
    storage.close()


def test_an_event_that_cannot_be_recorded_does_not_fail_the_bind(client, caplog):
    plan = stored_plan(client)["id"]

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    client.app.state.storage.add_event = broken
    with caplog.at_level(logging.WARNING, logger="hetsched.service"):
        answer = client.put("/v1/assignments/run", json={"plan_id": plan, "reason": "still bound"})
    assert answer.status_code == 200
    assert client.get("/v1/assignments/run").json()["plan_id"] == plan
    assert "event bound of topology run not recorded: disk full" in caplog.text
