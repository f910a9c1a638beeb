"""The ledger through the service: tenants planned on what the others leave, admission, heartbeats, priorities."""
from __future__ import annotations

import copy
from collections import Counter

import pytest
from fastapi.testclient import TestClient

from planner.service.app import create_app
from planner.service.settings import ServiceSettings
from tests.fixtures.service import small_plan_request


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", tenant_ttl_s=3600))) as c:
        yield c


def tenant_request(name: str, **tenant) -> dict:
    body = copy.deepcopy(small_plan_request(machines=4))
    body["topology"]["name"] = name
    body["tenant"] = tenant
    return body


def plan(client: TestClient, body: dict) -> dict:
    response = client.post("/v1/plans", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def machine_totals(ledger: dict) -> dict[str, tuple[float, float]]:
    return {m["id"]: (sum(m["loads"].values()), m["capacity"]) for m in ledger["machines"]}


@pytest.mark.slow  # joint re-plans of several tenants: seconds
def test_two_copies_share_the_cluster_and_no_machine_is_over_capacity(client):
    alone = plan(client, small_plan_request(machines=4))["input_rate"]
    first = plan(client, tenant_request("linear-a", target_rate=alone / 2))
    second = plan(client, tenant_request("linear-b"))
    assert first["stats"]["tenancy"]["rate"] == pytest.approx(alone / 2, rel=1e-3)
    assert second["stats"]["tenancy"]["others"] == ["linear-a"]
    assert second["stats"]["planned_on_room"]  # planned on what linear-a leaves
    assert {m["type"] for m in second["machines"]} <= {"slow", "fast"}  # derived types mapped back
    ledger = client.get("/v1/ledger").json()
    assert [t["topology"] for t in ledger["tenants"]] == ["linear-a", "linear-b"]
    assert all(t["status"] == "admitted" for t in ledger["tenants"])
    for machine, (load, capacity) in machine_totals(ledger).items():
        assert load <= capacity + 1e-3, machine
    rates = {t["topology"]: t["rate"] for t in ledger["tenants"]}
    assert rates["linear-a"] + rates["linear-b"] <= alone * 1.001
    assert rates["linear-b"] > 0


def test_a_minimum_that_does_not_fit_is_refused_and_nothing_is_registered(client):
    alone = plan(client, small_plan_request(machines=4))["input_rate"]
    plan(client, tenant_request("first", min_rate=alone * 0.7, target_rate=alone * 0.7))
    response = client.post("/v1/plans", json=tenant_request("second", min_rate=alone * 0.7))
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "admission_refused"
    assert body["detail"].startswith("topology second is not admitted: its minimum rate")
    assert "would fit" in body["detail"]
    ledger = client.get("/v1/ledger").json()
    assert [t["topology"] for t in ledger["tenants"]] == ["first"]
    assert ledger["tenants"][0]["rate"] == pytest.approx(alone * 0.7, rel=1e-3)


@pytest.mark.slow  # joint re-plans of several tenants: seconds
def test_alive_renews_the_listed_and_releases_the_rest(client):
    plan(client, tenant_request("kept"))
    plan(client, tenant_request("killed"))
    answer = client.post("/v1/tenants/alive", json={"topologies": ["kept", "never-planned"]}).json()
    assert answer == {"renewed": ["kept"], "released": ["killed"], "evicted": []}
    assert [t["topology"] for t in client.get("/v1/ledger").json()["tenants"]] == ["kept"]


def test_registrations_without_a_heartbeat_expire(tmp_path):
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", tenant_ttl_s=0.001))) as c:
        plan(c, tenant_request("short-lived"))
        assert c.get("/v1/ledger").json()["tenants"] == []


@pytest.fixture
def sharing_client(tmp_path):
    """Tenants left where they come: no running tenant planned again (a joint re-plan may part two copies)."""
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", tenant_ttl_s=3600,
                                               joint_min_gain=None))) as c:
        yield c


def test_priority_change_names_the_affected_topologies(sharing_client):
    client = sharing_client
    plan(client, tenant_request("a", priority=5))
    plan(client, tenant_request("b", priority=5))
    before = {t["topology"]: t["rate"] for t in client.get("/v1/ledger").json()["tenants"]}
    answer = client.put("/v1/tenants/b/priority", json={"priority": 0})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["priority"] == 0 and set(body["affected"]) == {"a", "b"}
    rates = {t["topology"]: t["rate"] for t in body["ledger"]["tenants"]}
    assert rates["b"] > before["b"] and rates["a"] < before["a"]
    assert client.put("/v1/tenants/nobody/priority", json={"priority": 1}).status_code == 404


def _register(client: TestClient, topology: str, priority: int) -> None:
    """A tenant whose minimum (1 tuple/s) takes 60% of the one machine: two of them never both fit."""
    registration = {"plan_id": f"plan-{topology}", "priority": priority, "min_rate": 1,
                    "machines": {"m0": {"slope": 60.0, "fixed": 0.0, "capacity": 100.0, "type": "slow"}}}
    assert client.put(f"/v1/tenants/{topology}", json=registration).status_code == 200


@pytest.mark.parametrize("evict", [True, False])
def test_a_tenant_a_priority_change_refuses_is_named_to_the_plugins_heartbeat(tmp_path, evict):
    settings = ServiceSettings(db_path=tmp_path / "db.sqlite", tenant_ttl_s=3600, evict_refused=evict)
    with TestClient(create_app(settings)) as c:
        _register(c, "running", priority=5)
        _register(c, "waiting", priority=6)
        first = c.post("/v1/tenants/alive", json={"topologies": ["running", "waiting"]}).json()["evicted"]
        assert [(e["topology"], e["fits_rate"]) for e in first] == ([("waiting", pytest.approx(2 / 3, abs=1e-3))]
                                                                    if evict else [])
        stored = plan(c, small_plan_request(machines=4))
        assert c.put("/v1/assignments/running", json={"plan_id": stored["id"]}).status_code in (200, 201)
        changed = c.put("/v1/tenants/waiting/priority", json={"priority": 0}).json()
        alive = c.post("/v1/tenants/alive", json={"topologies": ["running", "waiting"]}).json()
        # evicted at the heartbeat, it loses the binding the plugin would otherwise place it by again
        assert c.get("/v1/assignments/running").status_code == (404 if evict else 200)
    assert set(changed["affected"]) == {"running", "waiting"}
    if evict:
        assert [e["topology"] for e in changed["evicted"]] == ["running"], "admitted before, refused after"
        assert [e["topology"] for e in alive["evicted"]] == ["running"]
        assert alive["evicted"][0]["reason"].startswith("its minimum rate 1 tuples/s needs 60.0% of machine m0")
    else:
        assert changed["evicted"] == [] and alive["evicted"] == []


def test_put_and_delete_a_registration(client):
    registration = {"plan_id": "p1", "priority": 3, "min_rate": 1,
                    "machines": {"m0": {"slope": 2.0, "fixed": 1.0, "capacity": 100.0, "type": "slow"}}}
    ledger = client.put("/v1/tenants/manual", json=registration).json()
    assert ledger["machines"] == [{"id": "m0", "type": "slow", "capacity": 100.0, "loads": {"manual": 100.0}, "free": 0.0,
                                   "slots": None, "slots_used": 1}]  # a registration that does not say its slots
    assert client.delete("/v1/tenants/manual").status_code == 204
    assert client.delete("/v1/tenants/manual").json()["error"] == "not_found"


def test_a_target_below_the_minimum_is_refused_naming_both(client):
    response = client.post("/v1/plans", json=tenant_request("x", min_rate=5, target_rate=2))
    assert response.status_code == 422
    assert "target_rate 2 is below min_rate 5" in response.json()["detail"]


@pytest.mark.slow  # joint re-plans of several tenants: seconds
def test_the_ledger_and_priority_on_the_command_line(start_planner_service):
    """On a server of its own: the session's server hears the live cluster's plugin, whose heartbeats
    (``POST /v1/tenants/alive``) release every registration Nimbus does not run."""
    from typer.testing import CliRunner

    from hetsched.cli import _register, app

    _register()
    runner = CliRunner()
    planner_service = start_planner_service()
    with planner_service.http() as http:
        plan(http, tenant_request("cli-first", priority=1, target_rate=20))
        plan(http, tenant_request("cli-second", priority=4))
    shown = runner.invoke(app, ["ledger", "--planner", planner_service.url], env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    assert "cli-first" in shown.output and "cli-second" in shown.output and "free" in shown.output
    with planner_service.http() as http:
        ledger = http.get("/v1/ledger").json()
    slots = {f"{m['slots_used']} of {m['slots']}" for m in ledger["machines"] if m.get("slots")}
    assert "slots used" in shown.output and slots and all(s in shown.output for s in slots), (ledger, shown.output)
    changed = runner.invoke(app, ["priority", "cli-second", "0", "--no-replace", "--planner", planner_service.url])
    assert changed.exit_code == 0, changed.output
    line = next(line for line in changed.output.splitlines() if line.startswith("cli-second: priority 0; shares changed:"))
    assert "cli-second" in line.split(":", 2)[2]
    missing = runner.invoke(app, ["priority", "nobody", "0", "--planner", planner_service.url])
    assert missing.exit_code == 1
    assert "topology 'nobody' is not registered in the ledger" in missing.output


def test_priority_on_the_command_line_names_the_tenants_it_evicts(start_planner_service):
    """On a server of its own (the live plugin heartbeats the session's): two tenants that never both fit, the
    less important made most important, so the other is refused and the plugin will evict it."""
    import json
    import re

    from typer.testing import CliRunner

    from hetsched.cli import _register as register_commands, app

    register_commands()
    runner = CliRunner()
    planner_service = start_planner_service()
    with planner_service.http() as http:
        _register(http, "running", priority=5)
        _register(http, "waiting", priority=6)
    changed = runner.invoke(app, ["priority", "waiting", "0", "--no-replace", "--planner", planner_service.url],
                            env={"COLUMNS": "250"})
    assert changed.exit_code == 0, changed.output
    lines = [line for line in changed.output.splitlines() if line.startswith("evicted")]
    assert len(lines) == 1 and re.fullmatch(r"evicted at the plugin's next heartbeat: running "
                                            r"\(a min rate up to 0\.66\d* tuples/s would fit\)", lines[0]), lines

    back = runner.invoke(app, ["priority", "running", "0", "--no-replace", "--json", "--planner", planner_service.url])
    assert back.exit_code == 0, back.output
    answer = json.loads(back.stdout)
    assert [e["topology"] for e in answer["evicted"]] == ["waiting"] and answer["priority"] == 0
    assert back.stderr.splitlines()[-1].startswith("evicted at the plugin's next heartbeat: waiting (")


def _shipped_tenant_request(topology: str, cluster: dict, profiles: str, **tenant) -> dict:
    from topologies.catalog import lookup, planner_topology

    body = {"topology": planner_topology(lookup(topology)).model_dump(mode="json", exclude_none=True),
            "cluster": cluster, "profiles": {"name": profiles}, "tenant": tenant}
    body["topology"]["name"] = f"mt-{topology}"
    return body


@pytest.fixture(scope="module")
def default_cluster_tenants(tmp_path_factory):
    """Linear (priority 0) then Diamond (1, a quarter of its solo rate) on the default spec, strict shares,
    with the newcomer's placement search and without it (MAX_LEAVE_OUT_PLANS 0)."""
    from bench.profiles import fill_pass_through_alphas, load_profile_set
    from cluster.spec import load_spec
    from planner.profiles import machine_base_load
    from planner.service import tenants as service_tenants

    profile_set, _ = fill_pass_through_alphas(load_profile_set("default-cluster")[0], ["linear", "diamond"])
    cluster = load_spec().planner_cluster(machine_base_load(profile_set)).model_dump(mode="json")
    ledgers = {}
    for search in (True, False):
        settings = ServiceSettings(db_path=tmp_path_factory.mktemp("db") / "db.sqlite", tenant_ttl_s=3600,
                                   share_mode="strict", joint_budget_s=None)  # the doc's figures: the whole search
        limit = service_tenants.MAX_LEAVE_OUT_PLANS
        service_tenants.MAX_LEAVE_OUT_PLANS = limit if search else 0
        try:
            with TestClient(create_app(settings)) as c:
                assert c.put(f"/v1/profiles/{profile_set.name}", json=profile_set.model_dump(mode="json")).status_code < 300
                alone = plan(c, _shipped_tenant_request("diamond", cluster, profile_set.name, priority=1))["input_rate"]
                c.delete("/v1/tenants/mt-diamond")
                plan(c, _shipped_tenant_request("linear", cluster, profile_set.name, priority=0))
                diamond = plan(c, _shipped_tenant_request("diamond", cluster, profile_set.name, priority=1,
                                                          min_rate=round(alone / 4, 3)))
                ledgers[search] = (c.get("/v1/ledger").json(), diamond, alone / 4)
        finally:
            service_tenants.MAX_LEAVE_OUT_PLANS = limit
    return ledgers


def test_a_newcomer_is_placed_where_the_tenants_weighted_rate_is_highest(default_cluster_tenants):
    """Diamond's worker costs every machine it uses a base load; left off a machine Linear is bottlenecked on,
    Linear (weight 1) gains more than Diamond (weight 1/2) loses."""
    def weighted(ledger):
        return sum(t["rate"] / (1 + t["priority"]) for t in ledger["tenants"])

    searched, diamond, minimum = default_cluster_tenants[True]
    plain, _, _ = default_cluster_tenants[False]
    assert weighted(searched) > weighted(plain)
    assert diamond["stats"]["left_out_types"], "the kept placement leaves a machine type out"
    rates = {t["topology"]: t["rate"] for t in searched["tenants"]}
    assert rates["mt-diamond"] >= minimum - 1e-3
    for machine, (load, capacity) in machine_totals(searched).items():
        assert load <= capacity + 1e-3, machine


def test_the_share_mode_comes_from_the_environment_when_not_given(monkeypatch, tmp_path):
    from planner.service.settings import SHARE_MODE_ENV

    monkeypatch.setenv(SHARE_MODE_ENV, "strict")
    assert ServiceSettings(db_path=tmp_path / "db").share_mode == "strict"
    assert ServiceSettings(db_path=tmp_path / "db", share_mode="weighted").share_mode == "weighted"
    monkeypatch.setenv(SHARE_MODE_ENV, "fair")
    with pytest.raises(ValueError, match="HETSCHED_SHARE_MODE must be one of weighted, strict, not 'fair'"):
        ServiceSettings(db_path=tmp_path / "db")
    monkeypatch.delenv(SHARE_MODE_ENV)
    assert ServiceSettings(db_path=tmp_path / "db").share_mode == "weighted"


@pytest.fixture(scope="module")
def joint_replanned(tmp_path_factory):
    """Linear (priority 0) then Diamond (1, a quarter of its solo rate) on the default spec, strict shares, with the
    running tenants planned again beside the newcomer and without (``joint_min_gain`` None). The shipped set's
    ``idle_met`` is cleared: the set the model doc's first joint re-plan figures are for."""
    from bench.profiles import load_profile_set

    shipped = load_profile_set("default-cluster")[0]
    lab = shipped.model_copy(update={"entries": [e.model_copy(update={"idle_met": 0.0}) for e in shipped.entries]})
    return _linear_then_diamond(tmp_path_factory, lab)


@pytest.fixture(scope="module")
def shipped_joint(tmp_path_factory):
    """As ``joint_replanned``, with the shipped set as it is (``idle_met`` charged)."""
    from bench.profiles import load_profile_set

    return _linear_then_diamond(tmp_path_factory, load_profile_set("default-cluster")[0])


def _linear_then_diamond(tmp_path_factory, shipped) -> dict:
    from bench.profiles import fill_pass_through_alphas
    from cluster.spec import load_spec
    from planner.profiles import machine_base_load

    profile_set, _ = fill_pass_through_alphas(shipped, ["linear", "diamond"])
    cluster = load_spec().planner_cluster(machine_base_load(profile_set)).model_dump(mode="json")
    runs = {}
    for gain in (0.05, None):
        settings = ServiceSettings(db_path=tmp_path_factory.mktemp("db") / "db.sqlite", tenant_ttl_s=3600,
                                   share_mode="strict", joint_min_gain=gain, joint_budget_s=None)  # the whole search
        with TestClient(create_app(settings)) as c:
            assert c.put(f"/v1/profiles/{profile_set.name}", json=profile_set.model_dump(mode="json")).status_code < 300
            alone = plan(c, _shipped_tenant_request("diamond", cluster, profile_set.name, priority=1))["input_rate"]
            c.delete("/v1/tenants/mt-diamond")
            request = _shipped_tenant_request("linear", cluster, profile_set.name, priority=0)
            counts = Counter(a["component"] for a in plan(c, request)["assignments"])
            c.delete("/v1/tenants/mt-linear")
            for component in request["topology"]["components"]:  # as the plugin asks: its executor counts fixed
                component["parallelism"] = counts[component["id"]]
            linear = plan(c, request)
            diamond = plan(c, _shipped_tenant_request("diamond", cluster, profile_set.name, priority=1,
                                                      min_rate=round(alone / 4, 3)))
            binding = c.get("/v1/assignments/mt-linear")
            bound = c.get(f"/v1/plans/{binding.json()['plan_id']}").json() if binding.status_code == 200 else None
            runs[gain] = {"ledger": c.get("/v1/ledger").json(), "linear": linear, "diamond": diamond,
                          "binding": binding, "bound": bound, "minimum": alone / 4}
    return runs


@pytest.mark.slow  # joint re-plans of several tenants: seconds
def test_a_running_tenant_is_planned_again_beside_a_newcomer_when_the_weighted_rate_rises(joint_replanned):
    """Linear was placed alone on the whole cluster; beside Diamond's minimum it is planned again on what that leaves
    and bound to the new plan, the ledger charges the new placement, and no machine is over its limit."""
    def weighted(ledger):
        return sum(t["rate"] / (1 + t["priority"]) for t in ledger["tenants"])

    joint, alone = joint_replanned[0.05], joint_replanned[None]
    replaced = joint["diamond"]["stats"]["tenancy"]["replaced"]
    assert [r["topology"] for r in replaced] == ["mt-linear"]
    assert replaced[0]["weighted_after"] >= replaced[0]["weighted_before"] * 1.05
    assert joint["binding"].status_code == 200 and joint["binding"].json()["plan_id"] == replaced[0]["plan_id"]
    assert "planned again beside mt-diamond" in joint["binding"].json()["reason"]
    assert joint["bound"]["id"] != joint["linear"]["id"]
    assert sorted(a["component"] for a in joint["bound"]["assignments"]) == \
        sorted(a["component"] for a in joint["linear"]["assignments"]), "the executor counts are kept"
    tenants = {t["topology"]: t for t in joint["ledger"]["tenants"]}
    assert tenants["mt-linear"]["plan_id"] == replaced[0]["plan_id"]
    assert tenants["mt-linear"]["rate"] == pytest.approx(replaced[0]["rate_after"], abs=1e-3)
    assert tenants["mt-diamond"]["rate"] >= joint["minimum"] - 1e-3
    assert weighted(joint["ledger"]) >= weighted(alone["ledger"]) * 1.05
    assert joint["diamond"]["stats"]["tenancy"]["rates"]["mt-linear"] == pytest.approx(tenants["mt-linear"]["rate"], abs=1e-3)
    for machine, (load, capacity) in machine_totals(joint["ledger"]).items():
        assert load <= capacity + 1e-3, machine
    assert "replaced" not in alone["diamond"]["stats"]["tenancy"] and alone["binding"].status_code == 404


def test_the_joint_replan_figures_in_the_model_doc_are_the_services(joint_replanned):
    import re
    from pathlib import Path

    text = " ".join((Path(__file__).parents[1] / "docs" / "concepts" / "model.md").read_text().split())
    said = re.search(r"rises from ([\d.]+) to ([\d.]+) tuples/s and the weighted rate from ([\d.]+) to ([\d.]+)", text)
    assert said, "docs/concepts/model.md states the joint re-plan's figures"
    replaced = joint_replanned[0.05]["diamond"]["stats"]["tenancy"]["replaced"][0]
    computed = (replaced["rate_before"], replaced["rate_after"], replaced["weighted_before"], replaced["weighted_after"])
    assert [float(x) for x in said.groups()] == pytest.approx(computed, abs=0.006)


@pytest.mark.parametrize("evict", [True, False])
def test_a_running_tenant_a_more_important_newcomer_leaves_without_its_minimum_is_evicted(tmp_path, evict):
    settings = ServiceSettings(db_path=tmp_path / "db.sqlite", tenant_ttl_s=3600, evict_refused=evict)
    with TestClient(create_app(settings)) as c:
        alone = plan(c, small_plan_request(machines=4))["input_rate"]
        first_plan = plan(c, tenant_request("first", priority=5, min_rate=alone * 0.7))
        bound = c.put("/v1/assignments/first", json={"plan_id": first_plan["id"]})
        assert bound.status_code in (200, 201), bound.text
        second = plan(c, tenant_request("second", priority=0, min_rate=alone * 0.7))
        ledger = {t["topology"]: t for t in c.get("/v1/ledger").json()["tenants"]}
        first_bound = c.get("/v1/assignments/first").status_code
    tenancy = second["stats"]["tenancy"]
    # evicted, it loses the binding the plugin would place it by again without admission
    assert first_bound == (404 if evict else 200)
    if evict:
        assert [e["topology"] for e in tenancy["evicted"]] == ["first"]
        assert "its minimum rate" in tenancy["evicted"][0]["reason"] and tenancy["evicted"][0]["fits_rate"] >= 0
        assert list(ledger) == ["second"], "released from the ledger: its idle workers are no longer charged"
        assert tenancy["rates"] == {"second": pytest.approx(ledger["second"]["rate"], abs=1e-3)}
    else:
        assert "evicted" not in tenancy
        assert ledger["first"]["status"] == "refused" and ledger["first"]["rate"] == 0
    assert ledger["second"]["rate"] >= alone * 0.7 - 1e-3


def test_beside_a_newcomer_the_tenants_part_the_machines_when_that_raises_the_weighted_rate(shipped_joint):
    """With the shipped set, Diamond's best placement beside Linear as it runs gains nothing worth a move; Diamond
    off large-1 with Linear planned again onto large-1 alone, and Diamond then planned again on the rest, does."""
    def weighted(ledger):
        return sum(t["rate"] / (1 + t["priority"]) for t in ledger["tenants"])

    joint, alone = shipped_joint[0.05], shipped_joint[None]
    machines = {name: {a["machine"] for a in plan["assignments"]}
                for name, plan in (("linear", joint["bound"]), ("diamond", joint["diamond"]))}
    assert machines["linear"] and not machines["linear"] & machines["diamond"], machines
    assert weighted(joint["ledger"]) >= weighted(alone["ledger"]) * 1.05
    tenants = {t["topology"]: t for t in joint["ledger"]["tenants"]}
    assert tenants["mt-diamond"]["plan_id"] == joint["diamond"]["id"]
    assert tenants["mt-diamond"]["rate"] >= joint["minimum"] - 1e-3
    for machine, (load, capacity) in machine_totals(joint["ledger"]).items():
        assert load <= capacity + 1e-3, machine


def test_the_parted_machines_figures_in_the_model_doc_are_the_services(shipped_joint):
    import re
    from pathlib import Path

    text = " ".join((Path(__file__).parents[1] / "docs" / "concepts" / "model.md").read_text().split())
    said = re.search(r"the weighted rate rises from ([\d.]+) to ([\d.]+) \(Linear ([\d.]+) tuples/s alone on "
                     r"(\S+), Diamond ([\d.]+) on", text)
    assert said, "docs/concepts/model.md states the parted placement's figures"

    def weighted(ledger):
        return sum(t["rate"] / (1 + t["priority"]) for t in ledger["tenants"])

    rates = {t["topology"]: t["rate"] for t in shipped_joint[0.05]["ledger"]["tenants"]}
    computed = (weighted(shipped_joint[None]["ledger"]), weighted(shipped_joint[0.05]["ledger"]), rates["mt-linear"],
                rates["mt-diamond"])
    assert [float(said.group(i)) for i in (1, 2, 3, 5)] == pytest.approx(computed, abs=0.006)
    assert {a["machine"] for a in shipped_joint[0.05]["bound"]["assignments"]} == {said.group(4)}


def test_a_joint_placements_below_one_still_plans_the_newcomer_on_its_best_placement(tmp_path):
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", tenant_ttl_s=3600,
                                               joint_placements=0))) as c:
        plan(c, tenant_request("a", priority=0))
        second = plan(c, tenant_request("b", priority=1))
    assert second["stats"]["tenancy"]["others"] == ["a"]
