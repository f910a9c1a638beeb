"""The /ui page and /v1/overview: the views, the token, and the page rendered by a real headless Chromium."""
from __future__ import annotations

import json
import struct
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from hetsched.cli import _register, app as cli
from planner.api import make_plan
from planner.model import PlanRequest, ProfileSet
from planner.service.app import create_app
from planner.service.overview import (
    KnownMachine,
    OverviewError,
    PlacementNow,
    live_placement,
    placement_now,
    plan_view,
    profile_set_view,
    read_live_cluster,
    recent_plans,
    supervisor_views,
)
from planner.service.settings import ServiceSettings
from planner.storage import Storage
from tests.fixtures.browser import chromium, dump_dom, screenshot
from tests.fixtures.service import small_plan_request, small_profiles

_register()
REPO = Path(__file__).resolve().parents[1]
TOKEN = "ui-test-token"
_NO_CHROMIUM = pytest.mark.skipif(chromium() is None, reason="chromium is not installed (docker/install-tools.sh installs it)")


def needs_chromium(test):
    """A test that renders the page in Chromium: slow (seconds a page; `make test` runs it), skipped without Chromium."""
    return pytest.mark.slow(_NO_CHROMIUM(test))


def _plan(machines: int = 4):
    request = PlanRequest.model_validate(small_plan_request(machines=machines))
    return make_plan(request.topology, request.cluster, request.profiles.entries, request.strategy, request.options)


# --- the views -----------------------------------------------------------------------------------


def test_plan_view_puts_every_instance_once_on_its_machine_grouped_by_machine_type():
    plan = _plan(machines=5).model_copy(update={"id": "p1"})
    view = plan_view(plan, created_at=1.0)
    assert [g.machine_type for g in view.machine_types] == list(dict.fromkeys(m.type for m in plan.machines))
    assert all(m.type == g.machine_type for g in view.machine_types for m in g.machines)
    drawn = {(e.component, e.index): m.id for g in view.machine_types for m in g.machines for e in m.executors}
    assert sum(len(m.executors) for g in view.machine_types for m in g.machines) == len(plan.assignments)
    assert drawn == {(a.component, a.index): a.machine for a in plan.assignments}
    loads = {m.id: m.utilization for g in view.machine_types for m in g.machines}
    assert loads == {m.id: m.utilization for m in plan.machines}
    assert (view.topology, view.input_rate, view.instances) == (plan.topology, plan.input_rate, plan.instances)


def test_profile_set_view_reports_the_weakest_fit():
    measured = ProfileSet.model_validate_json((REPO / "profiles" / "default-cluster.json").read_text())
    view = profile_set_view(measured)
    assert view.worst_r2 == min(e.r2 for e in measured.entries)
    assert len(view.entries) == len(measured.entries)
    assert profile_set_view(ProfileSet.model_validate(small_profiles())).worst_r2 is None


class _Supervisor:
    def __init__(self, host: str, meta: dict | None = None):
        self.host, self.slots, self.used_slots, self.cpu_capacity = host, 4, 1, 50.0
        self.scheduler_meta = meta or {}


class _Executor:
    def __init__(self, component: str, task_start: int, task_end: int, host: str):
        self.component, self.task_start, self.task_end, self.host = component, task_start, task_end, host


def test_supervisors_get_their_machine_from_the_meta_else_the_cluster_spec_else_none():
    views = supervisor_views(
        [_Supervisor("127.0.0.3"), _Supervisor("127.0.0.2", {"machine-type": "small", "machine-id": "small-1"}),
         _Supervisor("10.0.0.9")],
        {"127.0.0.3": KnownMachine("large-1", "large")})
    assert [(v.host, v.machine_id, v.machine_type) for v in views] == [
        ("10.0.0.9", None, None), ("127.0.0.2", "small-1", "small"), ("127.0.0.3", "large-1", "large")]


def test_live_placement_shows_each_executor_on_its_machine_and_the_unplaced_apart():
    supervisors = supervisor_views([_Supervisor("127.0.0.2")], {"127.0.0.2": KnownMachine("small-1", "small")})
    machines = live_placement([_Executor("spout", 1, 1, "127.0.0.2"), _Executor("high", 2, 3, "127.0.0.2"),
                               _Executor("low", 4, 4, "")], supervisors)
    assert [(m.id, m.type, [(e.component, e.tasks) for e in m.executors]) for m in machines] == [
        ("not placed", "", [("low", "4")]),
        ("small-1", "small", [("high", "2-3"), ("spout", "1")]),
    ]


def test_without_nimbus_the_cluster_says_why_it_is_not_shown():
    cluster = read_live_cluster(None)
    assert not cluster.readable and "--nimbus" in cluster.problem


def test_a_nimbus_that_does_not_answer_is_named_in_one_sentence():
    pytest.importorskip("streamparse")
    cluster = read_live_cluster("127.0.0.1:1")
    assert not cluster.readable and "127.0.0.1:1" in cluster.problem and "\n" not in cluster.problem


def test_without_the_topologies_extra_the_page_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "observe.nimbus", None)
    cluster = read_live_cluster("127.0.0.1:6627")
    assert not cluster.readable and "'topologies' extra" in cluster.problem


def test_the_live_cluster_is_read_from_nimbus_summary_and_executors(monkeypatch):
    nimbus = pytest.importorskip("observe.nimbus")
    from observe.counts import ExecutorCounts, TopologyCounts

    def counts(component, task, host):
        return ExecutorCounts(component, task, task, host, 6700, 10, component == "spout", 0, 0, 0, 0, 0,
                              emitted_recent=40 if component == "spout" else None)

    class FakeNimbus:
        def __init__(self, address, timeout_ms, retries):
            assert (address.host, address.port) == ("nimbus.example", 6627)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def summary(self):
            return nimbus.ClusterSummary(
                leader="nimbus.example:6627",
                supervisors=[nimbus.SupervisorSummary("s1", "10.0.0.2", 4, 1, 60, 100.0, 1024.0,
                                                      {"machine-type": "large", "machine-id": "large-1"})],
                topologies=[nimbus.TopologySummary("linear-1-1", "linear", "ACTIVE", 1, 2, 2, 60, "hetsched: placed by plan p1")])

        def counts(self, topology_id):
            assert topology_id == "linear-1-1"
            return TopologyCounts("", {1: counts("spout", 1, "10.0.0.2"), 2: counts("high", 2, "10.0.0.2")}, {})

    monkeypatch.setattr(nimbus, "Nimbus", FakeNimbus)
    cluster = read_live_cluster("nimbus.example:6627")
    assert cluster.readable and cluster.leader == "nimbus.example:6627"
    assert [(s.host, s.machine_type) for s in cluster.supervisors] == [("10.0.0.2", "large")]
    (topology,) = cluster.topologies
    assert (topology.name, topology.status, topology.sched_status) == ("linear", "ACTIVE", "hetsched: placed by plan p1")
    assert [(m.id, [e.component for e in m.executors]) for m in topology.machines] == [("large-1", ["high", "spout"])]
    assert (topology.measured_rate, topology.measured_window_s) == (4.0, 10.0), "40 emits in the 10 s it has run"


# --- the service ---------------------------------------------------------------------------------


@pytest.fixture
def guarded_app(tmp_path):
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "ui.db", token=TOKEN))) as client:
        yield client


def test_the_page_is_open_static_and_locked_down_while_its_data_needs_the_token(guarded_app):
    page = guarded_app.get("/ui")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert guarded_app.get("/ui/ui.js").headers["content-type"].startswith("text/javascript")
    assert guarded_app.get("/ui/secrets.txt").status_code == 404
    refused = guarded_app.get("/v1/overview")
    assert refused.status_code == 401 and "token" in refused.json()["detail"]
    assert guarded_app.get("/v1/overview", headers={"Authorization": "Bearer wrong"}).status_code == 401


def test_overview_lists_stored_plans_newest_first_and_profile_sets(guarded_app):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert guarded_app.put("/v1/profiles/small-micro", json=small_profiles(), headers=auth).status_code == 200
    made = [guarded_app.post("/v1/plans", json=small_plan_request(machines=n), headers=auth).json() for n in (2, 3)]
    overview = guarded_app.get("/v1/overview", headers=auth).json()
    assert [p["id"] for p in overview["plans"]] == [made[1]["id"], made[0]["id"]]
    assert overview["plans_stored"] == 2
    assert [s["name"] for s in overview["profile_sets"]] == ["small-micro"]
    assert overview["cluster"]["readable"] is False


def survivable_plan(client: TestClient, headers: dict[str, str] | None = None) -> dict:
    """Linear on the example's three machines, planned to survive any one loss, with the micro set stored."""
    profiles = json.loads((REPO / "docs" / "examples" / "micro-profiles.json").read_text())
    request = json.loads((REPO / "docs" / "examples" / "linear-plan.json").read_text())
    request["options"] = {"survive_loss": {"objective": "nominal"}}
    client.put(f"/v1/profiles/{profiles['name']}", json=profiles, headers=headers).raise_for_status()
    answer = client.post("/v1/plans", json=request, headers=headers)
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_overview_shows_each_topology_with_its_plan_contingencies_and_events(guarded_app):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    plan = survivable_plan(guarded_app, auth)
    guarded_app.put("/v1/assignments/linear-run", json={"plan_id": plan["id"], "reason": "operator"},
                    headers=auth).raise_for_status()
    guarded_app.put("/v1/assignments/other", json={"plan_id": plan["id"]}, headers=auth).raise_for_status()
    overview = guarded_app.get("/v1/overview", headers=auth).json()
    assert [t["name"] for t in overview["topologies"]] == ["other", "linear-run"], "the newest activity first"
    shown = overview["topologies"][1]
    assert (shown["plan_id"], shown["plan_source"], shown["running"]) == (plan["id"], "bound", False)
    assert shown["predicted_rate"] == plan["input_rate"] and shown["measured_rate"] is None
    assert shown["contingencies"] == plan["contingencies"]
    assert [(e["kind"], e["sentence"]) for e in shown["events"]] == [("bound", f"Plan {plan['id']} bound: operator.")]


CONTINGENCY_REASON = "hetsched plugin, contingency for {} lost: kept 2 executors where they run, moved {}"


def _survivable_plan_model():
    request = json.loads((REPO / "docs" / "examples" / "linear-plan.json").read_text())
    request["options"] = {"survive_loss": {"objective": "nominal"}}
    request["profiles"] = {"entries": json.loads((REPO / "docs" / "examples" / "micro-profiles.json").read_text())["entries"]}
    parsed = PlanRequest.model_validate(request)
    return make_plan(parsed.topology, parsed.cluster, parsed.profiles.entries, parsed.strategy,
                     parsed.options).model_copy(update={"id": "p1"})


def test_what_runs_after_a_contingency_is_the_contingency_not_the_plan():
    plan = _survivable_plan_model()
    large = next(c for c in plan.contingencies if c.machine == "large-1")
    now = placement_now(plan, "p1", CONTINGENCY_REASON.format("large-1", large.moved), "2026-01-02T03:04:05.000Z")
    running = now.running_contingency
    assert running is not None
    assert (running.machine, running.lost_at, running.plan_id) == ("large-1", "2026-01-02T03:04:05.000Z", "p1")
    assert (running.input_rate, running.bottleneck, running.moved, running.moves) == (
        large.input_rate, large.bottleneck, large.moved, large.moves)
    assert now.predicted_rate == large.input_rate < plan.input_rate, "R predicted is the contingency's, not the plan's"
    assert now.contingencies is None, "the plan's contingencies are for its placement before the loss"
    assert now.contingencies_note == (
        "Plan p1's contingencies are not shown: they are for its placement before large-1 was lost, which no longer "
        "runs, so the plugin applies none of them; the next loss is repaired by the planner.")


@pytest.mark.parametrize("reason", ["operator", "hetsched replan: +20%", "hetsched plugin, machine joined: m-1", "",
                                    None])
def test_any_other_bind_runs_the_plan_with_its_contingencies(reason):
    plan = _survivable_plan_model()
    assert placement_now(plan, "p1", reason, None) == PlacementNow(predicted_rate=plan.input_rate,
                                                                   contingencies=plan.contingencies)
    assert placement_now(None, None, reason, None) == PlacementNow()


def test_a_repair_the_plugin_placed_runs_as_its_plan_with_the_contingencies_the_plugin_applies_next():
    plan = _survivable_plan_model()
    reason = "hetsched plugin, repair placed after losing m-9: kept 2 executors where they run, placed 1 on small-1"
    now = placement_now(plan, "p1", reason, None)
    assert (now.predicted_rate, now.contingencies, now.running_contingency) == (plan.input_rate, plan.contingencies, None)
    assert now.contingencies_note is None
    plain = _plan().model_copy(update={"id": "p2"})
    assert placement_now(plain, "p2", reason, None) == PlacementNow(predicted_rate=plain.input_rate)


def test_a_contingency_the_plan_does_not_store_runs_with_no_rate_known():
    plain = _plan().model_copy(update={"id": "p2"})
    assert plain.contingencies is None
    now = placement_now(plain, "p2", CONTINGENCY_REASON.format("m0", 1), "2026-01-02T03:04:05.000Z")
    assert now.running_contingency is not None and now.running_contingency.machine == "m0"
    assert (now.predicted_rate, now.running_contingency.input_rate, now.contingencies) == (None, None, None)
    assert now.contingencies_note == ("No contingency is known for what runs: it is plan p2's contingency for m0, and "
                                      "the next loss is repaired by the planner.")


def test_overview_shows_the_contingency_that_runs_after_a_loss_and_not_the_plans(guarded_app):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    plan = survivable_plan(guarded_app, auth)
    large = next(c for c in plan["contingencies"] if c["machine"] == "large-1")
    bound = guarded_app.put("/v1/assignments/linear-run", headers=auth, json={
        "plan_id": plan["id"], "reason": CONTINGENCY_REASON.format("large-1", large["moved"])})
    bound.raise_for_status()
    shown = guarded_app.get("/v1/overview", headers=auth).json()["topologies"][0]
    assert (shown["name"], shown["plan_id"], shown["plan_source"]) == ("linear-run", plan["id"], "bound")
    assert shown["running_contingency"] == {
        "machine": "large-1", "lost_at": bound.json()["created_at"], "plan_id": plan["id"],
        "input_rate": large["input_rate"], "bottleneck": large["bottleneck"], "moved": large["moved"],
        "moves": large["moves"]}
    assert shown["predicted_rate"] == large["input_rate"] and shown["contingencies"] is None
    assert shown["contingencies_note"].startswith(f"Plan {plan['id']}'s contingencies are not shown: they are for "
                                                  "its placement before large-1 was lost")
    assert [e["kind"] for e in shown["events"]] == ["contingency-applied", "machine-lost"]


def test_recent_plans_reads_without_writing(tmp_path):
    storage = Storage(tmp_path / "ro.db")
    stored = storage.save_plan(_plan())
    before = (tmp_path / "ro.db").read_bytes(), storage.plan_json(stored.id)
    views, total = recent_plans(tmp_path / "ro.db")
    assert total == 1 and views[0].id == stored.id
    assert ((tmp_path / "ro.db").read_bytes(), storage.plan_json(stored.id)) == before
    storage.close()


def test_a_database_that_cannot_be_read_is_named(tmp_path):
    with pytest.raises(OverviewError, match="missing.db"):
        recent_plans(tmp_path / "missing.db")


def test_serve_refuses_a_nimbus_option_that_is_not_host_port(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--port", "0", "--db", str(tmp_path / "db"), "--nimbus", "nimbus:http"],
                                env={"HETSCHED_PLANNER_TOKEN": ""})
    assert result.exit_code == 2
    assert "--nimbus 'nimbus:http' is not host:port" in result.output


# --- in a real browser ---------------------------------------------------------------------------


class _Placement(HTMLParser):
    """Executor labels by the machine box (data-machine) and plan card (data-plan) they are drawn in."""

    VOID = {"meta", "link", "input", "br", "img", "hr"}

    def __init__(self):
        super().__init__()
        self.open: list[dict] = []
        self.chips: Counter = Counter()
        self.machines: set[tuple[str, str, str]] = set()
        self.plans: dict[str, str] = {}
        self.token_form_hidden: bool | None = None
        self.text: list[str] = []

    def _nearest(self, attribute: str) -> str | None:
        return next((a[attribute] for a in reversed(self.open) if attribute in a), None)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if attributes.get("id") == "token-form":
            self.token_form_hidden = "hidden" in attributes
        if tag in self.VOID:
            return
        self.open.append(attributes)
        if "data-plan" in attributes:
            self.plans[attributes["data-plan"]] = attributes["data-topology"]
        if "data-machine" in attributes:
            self.machines.add((self._nearest("data-plan"), attributes["data-machine"], self._nearest("data-machine-type")))

    def handle_endtag(self, tag):
        if tag not in self.VOID and self.open:
            self.open.pop()

    def handle_data(self, data):
        self.text.append(data)
        if self.open and "executor" in (self.open[-1].get("class") or "").split():
            self.chips[(self._nearest("data-plan"), self._nearest("data-machine"), data)] += 1


def _rendered(url: str) -> _Placement:
    parsed = _Placement()
    parsed.feed(dump_dom(url))
    return parsed


@pytest.fixture(scope="module")
def served_plan(tmp_path_factory):
    """A real ``hetsched serve`` with a token, a stored profile set and a stored plan."""
    from tests.fixtures.service import LiveService

    tmp = tmp_path_factory.mktemp("ui-service")
    service = LiveService(db_path=tmp / "hetsched.db", log_path=tmp / "serve.log", token=TOKEN).start()
    try:
        with service.http() as http:
            assert http.put("/v1/profiles/small-micro", json=small_profiles()).status_code == 200
            answer = http.post("/v1/plans", json=small_plan_request(profiles={"name": "small-micro"}, machines=5))
            assert answer.status_code == 201, answer.text
        yield service, answer.json()
    finally:
        service.stop()


@needs_chromium
def test_chromium_draws_the_plan_its_machines_and_the_executors_on_each(served_plan):
    service, plan = served_plan
    page = _rendered(f"{service.url}/ui#token={TOKEN}")
    assert page.token_form_hidden is True
    assert page.plans == {plan["id"]: plan["topology"]}
    assert page.machines == {(plan["id"], m["id"], m["type"]) for m in plan["machines"]}
    expected = Counter((plan["id"], a["machine"], f"{a['component']} #{a['index']}") for a in plan["assignments"])
    assert page.chips == expected
    text = " ".join(page.text)
    assert "small-micro v1" in text and "started without --nimbus" in text
    assert f"{plan['input_rate']:.2f}".rstrip("0").rstrip(".") in text.replace(",", "")


@needs_chromium
def test_chromium_draws_each_topologys_contingencies_and_events(start_planner_service):
    service = start_planner_service(token=TOKEN)
    with service.http() as http:
        plan = survivable_plan(http)
        http.put("/v1/assignments/linear-run", json={"plan_id": plan["id"], "reason": "operator"}).raise_for_status()
    page = _rendered(f"{service.url}/ui#token={TOKEN}")
    text = " ".join(page.text)
    assert "linear-run" in text and f"Plan {plan['id']} bound: operator." in text
    for c in plan["contingencies"]:
        assert f"{c['input_rate']:.2f}" in text.replace(",", "")
    large = next(c for c in plan["contingencies"] if c["machine"] == "large-1")
    moved = [f"{m['component']} #{m['index']}" for m in large["moves"] if m["machine"] == "small-1"]
    assert f"{', '.join(moved)} → small-1" in text


@needs_chromium
def test_chromium_draws_the_contingency_that_runs_after_a_loss_not_the_plans(start_planner_service):
    service = start_planner_service(token=TOKEN)
    with service.http() as http:
        plan = survivable_plan(http)
        large = next(c for c in plan["contingencies"] if c["machine"] == "large-1")
        http.put("/v1/assignments/linear-run", json={
            "plan_id": plan["id"], "reason": CONTINGENCY_REASON.format("large-1", large["moved"])}).raise_for_status()
    text = " ".join(_rendered(f"{service.url}/ui#token={TOKEN}").text)
    assert f"Runs plan {plan['id']}'s contingency for machine large-1" in text
    assert f"predicted R {large['input_rate']:.2f} tuples/s" in text.replace(",", "")
    assert f"Plan {plan['id']}'s contingencies are not shown" in text and "stores no contingencies" not in text


@needs_chromium
def test_chromium_with_a_wrong_token_asks_for_it_and_shows_no_data(served_plan):
    service, plan = served_plan
    page = _rendered(f"{service.url}/ui#token=wrong")
    assert page.token_form_hidden is False
    assert "That token was refused." in " ".join(page.text)
    assert not page.plans and not page.chips


@needs_chromium
def test_chromium_saves_a_screenshot_of_the_page(served_plan, tmp_path):
    service, _ = served_plan
    png = screenshot(f"{service.url}/ui#token={TOKEN}", tmp_path / "ui.png", window=(1400, 1000))
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", header[16:24]) == (1400, 1000)


def test_overview_json_round_trips_through_the_model(guarded_app):
    body = guarded_app.get("/v1/overview", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert json.loads(json.dumps(body)) == body and body["plans"] == [] and body["plans_stored"] == 0


@needs_chromium
def test_chromium_draws_the_live_cluster_read_from_a_nimbus_over_thrift(start_planner_service, monkeypatch):
    """A Thrift server answering as Nimbus on the port where the local cluster's spec puts it, so hosts map to machines."""
    pytest.importorskip("streamparse")
    from cluster.local import LocalCluster
    from cluster.spec import load_spec
    from tests.fixtures.fake_nimbus import FakeExecutor, FakeNimbus

    machines = LocalCluster(load_spec()).layout.machines  # hosts 127.0.0.2, ... whatever the port base
    assert machines[0].host != machines[-1].host
    executors = [FakeExecutor("spout", 1, machines[0].host), FakeExecutor("high", 2, machines[-1].host),
                 FakeExecutor("high", 3, machines[-1].host)]
    nimbus = FakeNimbus("linear", "hetsched: placed by plan p-123", [m.host for m in machines], executors)
    monkeypatch.setenv("HETSCHED_CLUSTER_PORT_BASE", str(nimbus.port - 1))  # the spec's Nimbus is now this one
    try:
        service = start_planner_service(token=TOKEN, extra_args=["--nimbus", nimbus.address])
        page = _rendered(f"{service.url}/ui#token={TOKEN}")
    finally:
        nimbus.close()
    text = " ".join(page.text)
    assert "hetsched: placed by plan p-123" in text and "ACTIVE" in text
    for m in machines:
        assert m.host in text and m.type in text
    assert page.machines == {(None, machines[0].id, machines[0].type), (None, machines[-1].id, machines[-1].type)}
    assert page.chips == Counter({(None, machines[0].id, "spout [1]"): 1, (None, machines[-1].id, "high [2]"): 1,
                                  (None, machines[-1].id, "high [3]"): 1})
