"""The operator's commands: ``hetsched supervisors`` and ``hetsched placement`` against a fake Nimbus (Thrift answers
built from streamparse's own structs), the counts window, the multi-lang command and the profile-set check at submit."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from streamparse import thrift as st
from typer.testing import CliRunner

import observe.nimbus
from hetsched.cli import _register, app
from hetsched.inventory import Declaration, MetaKeys, meta_faults, supervisor_rows
from observe.nimbus import cluster_summary
from topologies.errors import TopologyError
from topologies.plans import check_profile_set
from topologies.submit import STORM_STATS_FREQUENCY_S, count_window, stats_frequency_s
from tests.fixtures.storm_thrift import linear_storm_topology

_register()
runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"

HOSTS = {"127.0.0.2": ("small-1", "small", "0.2", 20.0), "127.0.0.3": ("large-1", "large", "1", 100.0)}


def supervisor(host: str, used: int = 1, capacity: float = 20.0) -> st.SupervisorSummary:
    return st.SupervisorSummary(host=host, uptime_secs=30, num_workers=2, num_used_workers=used,
                                supervisor_id=f"sup-{host}", version="2.8.3",
                                total_resources={"cpu.pcore.percent": capacity, "memory.mb": 1024.0})


def executor(component: str, task: int, host: str, port: int, recent: int | None = None,
             uptime: int = 20) -> st.ExecutorSummary:
    """An executor; with ``recent``, a spout's stats holding that many emits in Nimbus's 10-minute window."""
    stats = None if recent is None else st.ExecutorStats(
        emitted={"600": {"default": recent, "__ack_init": recent}, ":all-time": {"default": recent}}, transferred={},
        specific=st.ExecutorSpecificStats(spout=st.SpoutStats(acked={}, failed={}, complete_ms_avg={})), rate=1.0)
    return st.ExecutorSummary(executor_info=st.ExecutorInfo(task_start=task, task_end=task), component_id=component,
                              host=host, port=port, uptime_secs=uptime, stats=stats)


LINEAR_PLACEMENT = [("spout", 1, "127.0.0.3", 6700), ("low", 2, "127.0.0.3", 6700), ("mid", 3, "127.0.0.2", 6700),
                    ("high", 4, "127.0.0.3", 6700), ("__acker", 5, "127.0.0.2", 6700)]


class FakeThriftNimbus:
    """Answers the Thrift calls the commands make, as streamparse's client would return them."""

    def __init__(self, topology_conf: dict | None = None, nimbus_conf: dict | None = None):
        self.topology_conf = topology_conf or {}
        self.nimbus_conf = nimbus_conf or {}
        self.name = "linear"
        """The running topology's name, which the planner binds plans to."""
        self.spout_recent: tuple[int, int] | None = None
        """(emits in the 10-minute window, uptime seconds) of the spout's executor; None: no stats."""

    def getLeader(self):
        return st.NimbusSummary(host="127.0.0.1", port=6627, uptime_secs=1, isLeader=True, version="2.8.3")

    def getClusterInfo(self):
        topology = st.TopologySummary(id="linear-1-1", name=self.name, num_tasks=5, num_executors=5, num_workers=2,
                                      uptime_secs=20, status="ACTIVE", sched_status="hetsched: placed by planner (plan p1)")
        return st.ClusterSummary(supervisors=[supervisor(h, capacity=c) for h, (*_, c) in HOSTS.items()],
                                 topologies=[topology], nimbuses=[self.getLeader()])

    def getNimbusConf(self):
        return json.dumps(self.nimbus_conf)

    def getTopologyInfo(self, topology_id):
        if topology_id != "linear-1-1":
            raise st.NotAliveException(msg=topology_id)
        return st.TopologyInfo(id=topology_id, name=self.name, uptime_secs=20, status="ACTIVE",
                               executors=[executor(*e, *(self.spout_recent if e[0] == "spout" and self.spout_recent
                                                         else ())) for e in LINEAR_PLACEMENT], errors={},
                               sched_status="hetsched: placed by planner (plan p1)")

    def getTopologyConf(self, topology_id):
        return json.dumps(self.topology_conf)

    def getUserTopology(self, topology_id):
        return linear_storm_topology()

    def close(self):
        pass


@pytest.fixture
def fake_nimbus(monkeypatch):
    fake = FakeThriftNimbus()
    monkeypatch.setattr(observe.nimbus, "make_client", lambda *a, **k: fake)
    return fake


@pytest.fixture
def supervisor_files(tmp_path) -> list[str]:
    """The storm.yaml of each fake supervisor, as an operator would pass them."""
    args = []
    for host, (machine_id, machine_type, cores, _) in HOSTS.items():
        path = tmp_path / f"{machine_id}.yaml"
        path.write_text(yaml.safe_dump({"storm.local.hostname": host, "supervisor.scheduler.meta": {
            "machine-type": machine_type, "machine-id": machine_id, "cores": cores}}))
        args += ["--storm-yaml", str(path)]
    return args


# --- scheduler meta -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("meta, fault", [
    (None, "no supervisor.scheduler.meta: planned as machine type 'default'"),
    (["small"], "is not a map"),
    ({"machine-type": "small", "machine-id": "s1", "cores": 0.2}, "values of cores are not strings, so Storm 2.8 refuses"),
    ({"machine-id": "s1"}, "no machine-type: planned as machine type 'default'"),
    ({"machine-type": "small"}, "no machine-id: plans name it by its supervisor id"),
    ({"machine-type": "small", "machine-id": "s1", "cores": "a fifth"}, "cores 'a fifth' is not a positive number"),
])
def test_each_fault_of_a_scheduler_meta_is_named(meta, fault):
    assert any(fault in f for f in meta_faults(meta, MetaKeys())), meta_faults(meta, MetaKeys())


def test_a_good_meta_has_no_fault_and_the_keys_follow_nimbus_s_settings():
    assert meta_faults({"machine-type": "small", "machine-id": "small-1", "cores": "0.2"}, MetaKeys()) == []
    keys = MetaKeys.from_nimbus_conf({"hetsched.machine.type.key": "kind", "hetsched.machine.type.default": "any"})
    assert (keys.machine_type, keys.machine_id, keys.default_type) == ("kind", "machine-id", "any")
    assert meta_faults({"kind": "small", "machine-id": "x"}, keys) == []


def test_duplicate_ids_and_a_capacity_other_than_the_cores_are_faults():
    summary = cluster_summary(FakeThriftNimbus().getClusterInfo())
    declarations = [Declaration(h, {"machine-type": "small", "machine-id": "m", "cores": "0.2"}, f"{h}.yaml") for h in HOSTS]
    rows = {r.host: r for r in supervisor_rows(summary, declarations, MetaKeys())}
    assert any("'m' is also declared by 127.0.0.3" in f for f in rows["127.0.0.2"].faults)
    assert any("cores 0.2 but supervisor.cpu.capacity 100" in f for f in rows["127.0.0.3"].faults)
    assert not any("capacity" in f for f in rows["127.0.0.2"].faults)


def test_a_blacklisted_supervisor_is_a_fault_and_no_plan_names_it():
    from dataclasses import replace

    from hetsched.inventory import declared_cluster
    from hetsched.replan import planner_cluster

    summary = cluster_summary(FakeThriftNimbus().getClusterInfo())
    summary = replace(summary, supervisors=[replace(summary.supervisors[0], blacklisted=True), *summary.supervisors[1:]])
    declarations = [Declaration(h, {"machine-type": "small", "machine-id": f"m{i}", "cores": "1"}, f"{h}.yaml")
                    for i, h in enumerate(HOSTS)]
    rows = supervisor_rows(summary, declarations, MetaKeys())
    assert rows[0].blacklisted and any("blacklisted by Storm's BlacklistScheduler" in f for f in rows[0].faults)
    assert not rows[1].blacklisted
    assert [m.id for m in planner_cluster(rows, {}).machines] == [r.machine_id for r in rows[1:]]
    assert [m.id for m in declared_cluster(rows).machines] == [r.machine_id for r in rows[1:]]


# --- hetsched supervisors ------------------------------------------------------------------------------------

def test_supervisors_without_their_files_say_the_meta_is_unknown(fake_nimbus):
    result = runner.invoke(app, ["supervisors", "--nimbus", "127.0.0.1:6627", "--json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    assert [(s["host"], s["slots"], s["used_slots"], s["free_slots"], s["cpu_capacity_cores"]) for s in answer["supervisors"]] == [
        ("127.0.0.2", 2, 1, 1, 0.2), ("127.0.0.3", 2, 1, 1, 1.0)]
    assert all("Nimbus does not report it" in s["faults"][0] for s in answer["supervisors"])


def test_supervisors_with_their_files(fake_nimbus, supervisor_files):
    result = runner.invoke(app, ["supervisors", "--nimbus", "127.0.0.1:6627", "--json", *supervisor_files])
    assert result.exit_code == 0, result.output
    answer = {s["host"]: s for s in json.loads(result.output)["supervisors"]}
    assert (answer["127.0.0.2"]["machine_id"], answer["127.0.0.2"]["machine_type"], answer["127.0.0.2"]["cores"]) == (
        "small-1", "small", 0.2)
    assert answer["127.0.0.3"]["faults"] == [] and answer["127.0.0.2"]["faults"] == []
    table = runner.invoke(app, ["supervisors", "--nimbus", "127.0.0.1:6627", *supervisor_files])
    assert table.exit_code == 0 and "small-1" in table.output and "large-1" in table.output


def test_supervisors_refuse_a_file_that_is_not_a_supervisor_s(fake_nimbus, tmp_path):
    path = tmp_path / "nimbus.yaml"
    path.write_text("nimbus.seeds: [a]\n")
    result = runner.invoke(app, ["supervisors", "--nimbus", "127.0.0.1:6627", "--storm-yaml", str(path)])
    assert result.exit_code == 1
    assert f"{path} has no storm.local.hostname" in result.output and "Traceback" not in result.output


def test_supervisors_when_nimbus_does_not_answer():
    result = runner.invoke(app, ["supervisors", "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1
    assert "cannot reach Nimbus at 127.0.0.1:1 (from --nimbus)" in result.output


# --- hetsched placement -----------------------------------------------------------------------------------------

def test_placement_lists_each_executor_with_its_worker_and_machine(fake_nimbus, supervisor_files):
    result = runner.invoke(app, ["placement", "linear", "--nimbus", "127.0.0.1:6627", "--measure", "0", "--json",
                                 *supervisor_files])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    assert [(e["component"], e["host"], e["port"], e["machine"]) for e in answer["executors"]] == [
        ("__acker", "127.0.0.2", 6700, "small-1"), ("high", "127.0.0.3", 6700, "large-1"),
        ("low", "127.0.0.3", 6700, "large-1"), ("mid", "127.0.0.2", 6700, "small-1"),
        ("spout", "127.0.0.3", 6700, "large-1")]
    assert [(m["machine"], m["executors"], m["predicted_percent"]) for m in answer["machines"]] == [
        ("large-1", 3, None), ("small-1", 2, None)]
    assert answer["notes"] == ["no predicted load: no planner (give --planner)",
                               "no measured rate: no spout reports its counts of Nimbus's last 10 minutes yet",
                               "no contingencies or events: no planner (give --planner)"]
    assert answer["rate"] == {"measured": None, "measured_window_s": None, "predicted": None}
    assert (answer["contingencies"], answer["events"]) == (None, [])


def test_placement_asks_the_planner_for_the_predicted_load(fake_nimbus, supervisor_files, planner_service):
    profiles = json.loads((EXAMPLES / "micro-profiles.json").read_text())
    with planner_service.http() as http:
        assert http.put(f"/v1/profiles/{profiles['name']}", json=profiles).status_code in (200, 201)
    fake_nimbus.topology_conf = {"hetsched.profiles": profiles["name"], "hetsched.topology": "linear"}
    result = runner.invoke(app, ["placement", "linear", "--nimbus", "127.0.0.1:6627", "--measure", "0", "--json",
                                 "--planner", planner_service.url, *supervisor_files])
    assert result.exit_code == 0, result.output
    machines = {m["machine"]: m for m in json.loads(result.output)["machines"]}
    with planner_service.http() as http:
        evaluation = http.post("/v1/evaluations", json={
            "topology": {"name": "linear", "components": [
                {"id": c, "kind": "spout" if c == "spout" else "bolt", "profile": p, "parallelism": 1}
                for c, p in (("spout", "spout"), ("low", "lowCompute"), ("mid", "midCompute"), ("high", "highCompute"))],
                "streams": [{"from": "spout", "to": "low"}, {"from": "low", "to": "mid"}, {"from": "mid", "to": "high"}]},
            "cluster": {"machine_types": [{"name": "small", "cores": 0.2, "slots": 2}, {"name": "large", "cores": 1, "slots": 2}],
                        "machines": [{"id": "small-1", "type": "small"}, {"id": "large-1", "type": "large"}]},
            "profiles": {"name": profiles["name"]},
            "assignments": [{"component": c, "machine": m} for c, m in (("spout", "large-1"), ("low", "large-1"),
                                                                        ("mid", "small-1"), ("high", "large-1"))],
        }).json()
    assert {m["id"]: m["utilization"] for m in evaluation["machines"]} == pytest.approx(
        {k: m["predicted_percent"] for k, m in machines.items()})


def test_placement_of_a_topology_outside_the_catalog_is_predicted_from_the_structure_nimbus_keeps(
        fake_nimbus, supervisor_files, planner_service):
    """A Java or Flux topology: no hetsched.topology; its profile keys from hetsched.component.profiles."""
    profiles = json.loads((EXAMPLES / "micro-profiles.json").read_text())
    with planner_service.http() as http:
        assert http.put(f"/v1/profiles/{profiles['name']}", json=profiles).status_code in (200, 201)
    args = ["placement", "linear", "--nimbus", "127.0.0.1:6627", "--measure", "0", "--json",
            "--planner", planner_service.url, *supervisor_files]
    fake_nimbus.topology_conf = {"hetsched.profiles": profiles["name"], "hetsched.topology": "linear"}
    from_catalog = json.loads(runner.invoke(app, args).output)["machines"]
    fake_nimbus.topology_conf = {"hetsched.profiles": profiles["name"], "hetsched.component.profiles": {
        "low": "lowCompute", "mid": "midCompute", "high": "highCompute"}}
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    from_nimbus = json.loads(result.output)["machines"]
    assert all(m["predicted_percent"] is not None for m in from_nimbus), from_nimbus
    assert [m["predicted_percent"] for m in from_nimbus] == pytest.approx([m["predicted_percent"] for m in from_catalog])


def test_placement_of_a_topology_that_does_not_run(fake_nimbus):
    result = runner.invoke(app, ["placement", "diamond", "--nimbus", "127.0.0.1:6627"])
    assert result.exit_code == 1
    assert "no topology named 'diamond' is running on Nimbus 127.0.0.1:6627 (running: linear)" in result.output


def test_placement_table(fake_nimbus, supervisor_files):
    result = runner.invoke(app, ["placement", "linear", "--nimbus", "127.0.0.1:6627", "--measure", "0", *supervisor_files])
    assert result.exit_code == 0, result.output
    assert "127.0.0.2:6700" in result.output and "scheduler status: hetsched: placed by planner (plan p1)" in result.output


def test_placement_measures_the_rate_over_nimbus_last_ten_minutes(fake_nimbus, supervisor_files):
    args = ["placement", "linear", "--nimbus", "127.0.0.1:6627", "--measure", "0", *supervisor_files]
    fake_nimbus.spout_recent = (6000, 900)  # running for 15 minutes: the whole window, 600 s
    answer = json.loads(runner.invoke(app, [*args, "--json"]).output)
    assert answer["rate"]["measured"] == pytest.approx(10.0) and answer["rate"]["measured_window_s"] == 600
    fake_nimbus.spout_recent = (600, 120)  # started 2 minutes ago: its window is its uptime
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "input rate R: measured 5.00 tuples/s (its spouts' emits over Nimbus's last 120 s); predicted unknown" in (
        " ".join(result.output.split()))


def _surviving_linear_plan(service, fake_nimbus, supervisor_files) -> tuple[dict, list[str]]:
    """A plan of linear with contingencies, stored on ``service`` but not bound (each test binds it its own way),
    and the arguments of ``hetsched placement`` that read it there."""
    profiles = json.loads((EXAMPLES / "micro-profiles.json").read_text())
    request = json.loads((EXAMPLES / "linear-plan.json").read_text())
    request["options"] = {"survive_loss": {"objective": "nominal"}}
    with service.http() as http:
        http.put(f"/v1/profiles/{profiles['name']}", json=profiles).raise_for_status()
        plan = http.post("/v1/plans", json=request).json()
    fake_nimbus.topology_conf = {"hetsched.profiles": profiles["name"], "hetsched.topology": "linear"}
    args = ["placement", "linear", "--nimbus", "127.0.0.1:6627", "--measure", "0", "--planner", service.url,
            *supervisor_files]
    return plan, args


def test_placement_shows_the_contingency_of_each_machine_and_the_last_events(fake_nimbus, supervisor_files,
                                                                               start_planner_service):
    service = start_planner_service()
    plan, args = _surviving_linear_plan(service, fake_nimbus, supervisor_files)
    with service.http() as http:
        for n in range(7):
            http.put("/v1/assignments/linear", json={"plan_id": plan["id"], "reason": f"bind {n}"}).raise_for_status()
    answer = json.loads(runner.invoke(app, [*args, "--json", "--events", "3"]).output)
    assert answer["plan"] == {"id": plan["id"], "source": "bound"}
    assert answer["contingencies"] == plan["contingencies"]
    assert [e["sentence"] for e in answer["events"]] == [f"Plan {plan['id']} bound: bind {n}." for n in (6, 5, 4)]
    assert answer["rate"]["predicted"] > 0
    result = runner.invoke(app, [*args, "--events", "2"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert (f"if a machine is lost: plan {plan['id']} (bound to it; {plan['input_rate']:.2f} tuples/s with every "
            "machine) moves its instances so") in text
    large = next(c for c in plan["contingencies"] if c["machine"] == "large-1")
    assert f"large-1 │ {large['input_rate']:.2f}" in text
    assert "events, newest first" in text and "bind 6" in text and "bind 5" in text and "bind 4" not in text


def test_placement_after_a_contingency_shows_it_running_and_not_the_plan_s_contingencies(
        fake_nimbus, supervisor_files, start_planner_service):
    service = start_planner_service()
    plan, args = _surviving_linear_plan(service, fake_nimbus, supervisor_files)
    large = next(c for c in plan["contingencies"] if c["machine"] == "large-1")
    with service.http() as http:
        bound = http.put("/v1/assignments/linear", json={"plan_id": plan["id"], "reason": (
            f"hetsched plugin, contingency for large-1 lost: kept 2 executors where they run, moved {large['moved']}, "
            f"predicted {large['input_rate']:.2f} tuples/s")}).json()
    answer = json.loads(runner.invoke(app, [*args, "--json"]).output)
    assert answer["plan"] == {"id": plan["id"], "source": "bound"}
    assert answer["contingencies"] is None, "the plan's contingencies are for its placement before the loss"
    assert answer["running_contingency"] == {
        "machine": "large-1", "lost_at": bound["created_at"], "plan_id": plan["id"], "input_rate": large["input_rate"],
        "bottleneck": large["bottleneck"], "moved": large["moved"], "moves": large["moves"]}
    note = (f"Plan {plan['id']}'s contingencies are not shown: they are for its placement before large-1 was lost, "
            "which no longer runs, so the plugin applies none of them; the next loss is repaired by the planner.")
    assert note in answer["notes"]
    assert [e["kind"] for e in answer["events"]] == ["contingency-applied", "machine-lost"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    moved = "; ".join(f"{', '.join(f'{m[0]} #{m[1]}' for m in group)} -> {target}" for target, group in _by_target(
        large["moves"]).items())
    assert (f"running: plan {plan['id']}'s contingency for machine large-1, lost at "
            f"{bound['created_at'][:19].replace('T', ' ')} UTC (the plugin applied it, not the plan's placement): "
            f"predicted {large['input_rate']:.2f} tuples/s (bottleneck {large['bottleneck']}); moved "
            f"{large['moved']}: {moved}") in text
    assert "if a machine is lost" not in text and note in text


def _by_target(moves: list[dict]) -> dict[str, list[tuple[str, int]]]:
    grouped: dict[str, list[tuple[str, int]]] = {}
    for m in moves:
        grouped.setdefault(m["machine"], []).append((m["component"], m["index"]))
    return grouped


def test_placement_without_a_plan_bound_or_in_its_conf_says_so(fake_nimbus, supervisor_files, planner_service):
    """Runs under a name of its own: other tests bind plans to "linear" on the session's planner service."""
    fake_nimbus.name = "linear-unbound"
    fake_nimbus.topology_conf = {"hetsched.topology": "linear"}
    result = runner.invoke(app, ["placement", "linear-unbound", "--nimbus", "127.0.0.1:6627", "--measure", "0",
                                 "--json", "--planner", planner_service.url, *supervisor_files])
    notes = json.loads(result.output)["notes"]
    assert "no contingencies: no plan is bound to linear-unbound and its conf names none (hetsched.plan.id)" in notes


# --- hetsched counts: the window ---------------------------------------------------------------------------------

def test_the_stats_frequency_comes_from_the_topology_then_nimbus_then_storm_s_default():
    assert stats_frequency_s({"executor.metrics.frequency.secs": 10}, {"executor.metrics.frequency.secs": 60}) == 10
    assert stats_frequency_s({}, {"executor.metrics.frequency.secs": 30}) == 30
    assert stats_frequency_s({}, {}) == STORM_STATS_FREQUENCY_S == 60


def test_the_window_spans_more_than_two_stats_reports():
    assert count_window(None, 10).seconds == 30 and not count_window(None, 10).too_short
    assert count_window(None, 60).seconds > 120 and not count_window(None, 60).too_short
    assert count_window(30, 60).too_short and not count_window(30, 60).chosen


# --- hetsched submit ---------------------------------------------------------------------------------------------

def test_an_unknown_profile_set_is_refused_at_submit(planner_service):
    with pytest.raises(TopologyError, match=f"the planner at {planner_service.url} has no profile set 'nosuchset'"):
        check_profile_set("nosuchset", planner_service.url)
    result = runner.invoke(app, ["submit", "linear", "--profiles", "nosuchset", "--planner", planner_service.url,
                                 "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1 and "has no profile set 'nosuchset'" in result.output


def test_a_relative_multilang_command_is_refused_before_nimbus():
    result = runner.invoke(app, ["submit", "linear", "--multilang-command", "venv/bin/streamparse_run", "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1 and "is a relative path" in result.output


def test_the_planner_logs_each_stored_plan_read(planner_service):
    """The plugin's GET of a stored plan leaves a line in the planner's log, as plugin.md says."""
    with planner_service.http() as http:
        assert http.get("/v1/plans/no-such-plan").status_code == 404
    assert "read plan id=no-such-plan failed: no such plan" in planner_service.log()


def test_counts_warns_of_a_window_shorter_than_two_stats_reports(fake_nimbus):
    fake_nimbus.topology_conf = {"hetsched.topology": "linear", "executor.metrics.frequency.secs": 60}
    result = runner.invoke(app, ["counts", "linear", "--window", "1", "--nimbus", "127.0.0.1:6627"])
    assert result.exit_code == 0, result.output
    assert "executors report counts every 60 s" in result.output and "use --window 130 or more" in result.output
    assert "stats every 60 s" in result.output


def test_counts_of_a_topology_hetsched_did_not_submit_reads_its_components_from_nimbus(fake_nimbus):
    fake_nimbus.topology_conf = {"executor.metrics.frequency.secs": 10}
    result = runner.invoke(app, ["counts", "linear", "--window", "1", "--nimbus", "127.0.0.1:6627"])
    assert result.exit_code == 0, result.output
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in result.output.splitlines() if line.startswith("│")]
    rows = {c[0]: c[1] for c in cells if c and c[0] in ("spout", "low", "mid", "high")}
    assert rows == {"spout": "spout", "low": "bolt", "mid": "bolt", "high": "sink"}, result.output


def test_the_default_database_is_in_the_user_s_data_folder_not_the_checkout(monkeypatch, tmp_path):
    from planner.storage import DB_ENV, default_db_path

    monkeypatch.delenv(DB_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_db_path() == tmp_path / "data" / "hetsched" / "hetsched.db"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_db_path() == Path.home() / ".local" / "share" / "hetsched" / "hetsched.db"
    assert not default_db_path().is_relative_to(Path(__file__).resolve().parents[1])
    monkeypatch.setenv(DB_ENV, str(tmp_path / "mine.db"))
    assert default_db_path() == tmp_path / "mine.db"


def test_a_compose_cluster_s_machines_are_read_from_the_files_its_compose_file_mounts(tmp_path, monkeypatch):
    """Seen live: `hetsched tune` on the compose cluster stopped with 'the machine of supervisor-small-1 is unknown'."""
    from hetsched.ops_cmd import read_declarations
    from observe.nimbus import NimbusAddress

    home = tmp_path / "compose-home"
    home.mkdir()
    (home / "compose-state.json").write_text(json.dumps({"port_base": 26000}))
    monkeypatch.setenv("HETSCHED_CLUSTER_HOME", str(home))
    found = read_declarations([], None, NimbusAddress("127.0.0.1", 26000))
    assert {d.host for d in found} == {"supervisor-small-1", "supervisor-medium-1", "supervisor-large-1"}
    assert {d.meta["machine-id"] for d in found} == {"small-1", "medium-1", "large-1"}
    assert read_declarations([], None, NimbusAddress("127.0.0.1", 27000)) == []


def test_the_planner_of_a_compose_cluster_is_the_one_it_publishes_here(tmp_path, monkeypatch):
    """The topology's hetsched.planner.url on compose is the service name, which only the cluster's network resolves."""
    from cluster import compose
    from hetsched.ops_cmd import planner_of
    from observe.nimbus import NimbusAddress

    home = tmp_path / "compose-home"
    (home / "secrets").mkdir(parents=True)
    (home / "compose-state.json").write_text(json.dumps({"port_base": 26000}))
    (home / "secrets" / compose.PLANNER_TOKEN.file_name).write_text("tok\n")
    monkeypatch.setenv("HETSCHED_CLUSTER_HOME", str(home))
    monkeypatch.delenv("HETSCHED_PLANNER_TOKEN", raising=False)
    conf = {"hetsched.planner.url": "http://planner:8765"}
    assert planner_of(NimbusAddress("127.0.0.1", 26000), conf, None) == ("http://127.0.0.1:26001", "tok")
    assert planner_of(NimbusAddress("127.0.0.1", 26000), conf, "http://elsewhere:1") == ("http://elsewhere:1", None)
    assert planner_of(NimbusAddress("127.0.0.1", 27000), conf, None) == ("http://planner:8765", None)


def test_placement_scores_a_weighted_topology_with_the_shares_its_workers_run():
    """Seen live: after a re-plan that moved executors and sent new weights, `hetsched placement` predicted 14.7
    tuples/s for a placement running at 29.5, scoring it with Storm's even split instead of the conf's shares."""
    from hetsched.inventory import ExecutorPlace
    from hetsched.ops_cmd import running_shares
    from planner.api import evaluate_assignments, make_plan
    from planner.model import InstanceAssignment, PlanOptions
    from planner.stream_shares import machine_shares
    from cluster.spec import load_spec
    from topologies.catalog import lookup, planner_topology
    from tests.test_bench import profile_set

    topology, cluster, entries = planner_topology(lookup("linear")), load_spec().planner_cluster(), profile_set().entries
    plan = make_plan(topology, cluster, entries, options=PlanOptions(weighted_shares=True))
    host = {m: f"127.0.0.{n}" for n, m in enumerate(sorted({a.machine for a in plan.assignments}), 2)}
    ordered = sorted(plan.assignments, key=lambda a: (a.component, a.index))
    places = [ExecutorPlace(a.component, n, n, host[a.machine], 6700, a.machine, 60) for n, a in enumerate(ordered)]
    by_host = {s: {host[m]: v for m, v in per.items()} for s, per in machine_shares(plan).items()}
    shares = running_shares(places, by_host)
    assert {s.stream for s in shares} == set(machine_shares(plan))
    assignments = [InstanceAssignment(component=p.component, machine=p.machine) for p in places]
    weighted = evaluate_assignments(topology, cluster, entries, assignments, shares=shares)
    even = evaluate_assignments(topology, cluster, entries, assignments)
    assert weighted.input_rate == pytest.approx(plan.input_rate, rel=1e-6), "the plan's own prediction"
    assert weighted.input_rate > even.input_rate
    assert running_shares(places, None) == [] and running_shares(places, {"high": {"x": 1}}) == []
