"""`hetsched replan`'s decisions (hetsched.replan): the running placement, the cluster, task caps, the gain."""
from __future__ import annotations

import json
import math

import pytest
import yaml

from hetsched.inventory import ExecutorPlace, SupervisorRow
from hetsched.replan import (
    ReplanError,
    RunningPlacement,
    current_evaluation_request,
    gain,
    task_count_caps,
    placement_of_plan,
    plan_request,
    plan_shares,
    plan_within_tasks,
    planner_cluster,
    runs_weighted,
    shares_line,
    shares_overrides,
)
from planner.api import make_plan
from planner.fixtures import load_scenario
from planner.model import PlanOptions
from planner.stream_shares import machine_shares


def _place(component, start, end, host, machine):
    return ExecutorPlace(component, start, end, host, 6700, machine, 5)


def _row(host, machine, mtype, cores=2.0, slots=4):
    return SupervisorRow(host, "sup-" + host, machine, mtype, cores, cores, slots, 0, "storm.yaml")


def test_running_placement_reads_executors_in_task_order_and_counts_tasks():
    places = [_place("high", 5, 6, "h2", "m2"), _place("high", 3, 4, "h1", "m1"), _place("__acker", 9, 9, "h1", "m1"),
              _place("spout", 1, 1, "h1", "m1")]
    running = RunningPlacement.of(places)
    assert running.machines == {"high": ["m1", "m2"], "spout": ["m1"]}
    assert running.tasks == {"high": 4, "spout": 1} and running.executors == {"high": 2, "spout": 1}


def test_an_executor_on_an_unknown_machine_is_one_sentence():
    with pytest.raises(ReplanError, match="the machine of h9 is unknown"):
        RunningPlacement.of([_place("spout", 1, 1, "h9", None)])


def test_the_cluster_takes_each_types_base_load_off_its_capacity_as_the_plugin_does():
    cluster = planner_cluster([_row("h1", "m1", "small"), _row("h2", "m2", "big", 4.0), _row("h3", None, None)],
                              {"small": 12.5})
    assert {t.name: t.capacity for t in cluster.machine_types} == {"small": 87.5, "big": 100.0}
    assert [m.id for m in cluster.machines] == ["m1", "m2"]
    with pytest.raises(ReplanError, match="no supervisor declares its machine"):
        planner_cluster([_row("h3", None, None)], {})


def test_a_plan_over_the_task_counts_is_capped_and_evaluations_use_the_running_counts():
    s = load_scenario("linear", 1)
    running = RunningPlacement({"spout": ["m1-01"], "low": ["m1-01"], "mid": ["m2-01"], "high": ["m3-01"]},
                               {"spout": 1, "low": 2, "mid": 2, "high": 2})
    request = current_evaluation_request(s.topology, s.cluster, "paper", running)
    assert {c.id: c.parallelism for c in request.topology.components} == running.executors
    free = make_plan(s.topology, s.cluster, s.profiles.entries, "paper")
    over = task_count_caps(free, running.tasks)
    assert over and all(free.instances[c] > running.tasks[c] == n for c, n in over.items())
    capped = plan_request(s.topology, s.cluster, "paper", over, "paper")
    replanned = make_plan(capped.topology, s.cluster, s.profiles.entries, "paper")
    assert all(replanned.instances[c] == n for c, n in over.items())
    assert sorted(placement_of_plan(replanned)) == sorted(replanned.instances)
    assert all(len(ms) == replanned.instances[c] for c, ms in placement_of_plan(replanned).items())


def test_a_count_that_does_not_divide_the_task_count_is_lowered_to_one_that_does():
    s = load_scenario("linear", 1)
    plan = make_plan(s.topology, s.cluster, s.profiles.entries, "paper")
    counts = dict(plan.instances)
    tasks = {c: n for c, n in counts.items()}  # each at its count: nothing to fix
    assert task_count_caps(plan, tasks) == {}
    c = next(iter(counts))
    uneven = plan.model_copy(update={"instances": {**counts, c: 6}})
    assert task_count_caps(uneven, {**tasks, c: 8}) == {c: 4}  # 8 tasks on 6 executors: two would get 2 tasks
    assert task_count_caps(uneven, {**tasks, c: 12}) == {}
    assert task_count_caps(uneven, {**tasks, c: 5}) == {c: 5}  # over the task count: the task count
    assert task_count_caps(uneven, {**tasks, c: 7}) == {c: 1}


def test_gain_is_relative_and_infinite_from_nothing():
    assert gain(10.0, 12.5) == pytest.approx(0.25)
    assert gain(0.0, 3.0) == math.inf and gain(0.0, 0.0) == 0.0


# --- weighted groupings (issue 33): the new weights go with the rebalance that applies a re-plan -----------------

def _weighted_plan():
    """The docs' Linear planned with weighted shares: shares are chosen for spout->low."""
    from tests.test_weighted_shares import docs_example

    topology, cluster, entries = docs_example()
    plan = make_plan(topology, cluster, entries, "paper", PlanOptions(weighted_shares=True))
    assert plan.shares, "the example's plan weights a stream"
    return plan


def test_a_plans_weights_are_named_by_host_and_a_plan_made_without_them_says_nothing():
    plan = _weighted_plan()
    by_id = machine_shares(plan)
    host_of = {m: f"host-{m}" for per in by_id.values() for m in per}
    by_host = plan_shares(plan, {h: m for m, h in host_of.items()})
    assert by_host == {s: {host_of[m]: v for m, v in per.items()} for s, per in by_id.items()}
    even = plan.model_copy(update={"shares": None})  # planned with weighted shares, every stream kept even
    assert plan_shares(even, {}) == {}
    unweighted = plan.model_copy(update={"shares": None, "stats": {}})
    assert plan_shares(unweighted, {}) is None


def test_weights_are_sent_only_to_a_weighted_topology_and_only_when_they_change():
    machine_of_host = {"host-s": "m-small-1", "host-l": "m-large-1"}
    running = {"spout->low": {"host-s": 0.25, "host-l": 0.75}}
    same_by_id = {"spout->low": {"m-small-1": 0.25, "m-large-1": 0.7500001}}
    moved = {"spout->low": {"host-s": 0.1, "host-l": 0.9}}
    assert shares_overrides(running, same_by_id, machine_of_host) == {}, "the same machines by id, within rounding"
    assert shares_overrides(running, moved, machine_of_host) == {"hetsched.grouping.shares": moved}
    assert shares_overrides(running, {}, machine_of_host) == {"hetsched.grouping.shares": {}}, "now even: said so"
    assert shares_overrides(None, moved, machine_of_host) == {}, "a topology without weighted groupings gets none"
    assert shares_overrides(running, None, machine_of_host) == {}, "a placement with no word on weights keeps them"
    assert shares_overrides({"spout->low": "bad"}, moved, machine_of_host) == {"hetsched.grouping.shares": moved}
    assert runs_weighted({"hetsched.grouping.shares": {}}) and not runs_weighted({"hetsched.profiles": "x"})
    line = shares_line("linear", moved)
    assert line == ("linear: the plan's weights change, so the rebalance sends them (hetsched.grouping.shares): "
                    "spout->low host-l 0.9, host-s 0.1")
    assert shares_line("linear", {}).endswith("every stream even")


def test_a_weighted_topology_is_planned_and_scored_with_weighted_shares():
    s = load_scenario("linear", 1)
    running = RunningPlacement({"spout": ["m1-01"], "low": ["m1-01"], "mid": ["m2-01"], "high": ["m3-01"]},
                               {"spout": 1, "low": 2, "mid": 2, "high": 2})
    assert current_evaluation_request(s.topology, s.cluster, "paper", running, True).options.weighted_shares
    assert not current_evaluation_request(s.topology, s.cluster, "paper", running).options.weighted_shares
    asked = []
    plan_within_tasks(lambda request: asked.append(request) or make_plan(request.topology, s.cluster, s.profiles.entries,
                                                                         "paper", request.options),
                      s.topology, s.cluster, "paper", {}, weighted_shares=True)
    assert asked and all(r.options.weighted_shares for r in asked)


def test_the_rebalance_carries_the_new_weights_as_storm_rebalance_t_does():
    """``storm rebalance linear -t '{"hetsched.grouping.shares": ...}'`` is RebalanceOptions.topology_conf_overrides:
    what the project's rebalance writes on the wire, read back with Storm 2's own field 5."""
    from streamparse.thrift import Nimbus as NimbusService
    from thriftpy2.protocol import TBinaryProtocolFactory
    from thriftpy2.thrift import TPayload, TType
    from thriftpy2.transport import TMemoryBuffer

    from observe.nimbus import Nimbus

    sent = []
    nimbus = Nimbus.__new__(Nimbus)
    nimbus.address, nimbus.retries = NimbusAddress("nimbus", 6627), 0
    nimbus._client = SimpleNamespace(rebalance=lambda name, options: sent.append((name, options)))
    overrides = shares_overrides({"spout->low": {"host-s": 0.5, "host-l": 0.5}},
                                 {"spout->low": {"host-s": 0.2, "host-l": 0.8}}, {})
    nimbus.rebalance("linear", 0, {"low": 2}, overrides)
    (name, options), = sent
    buffer = TMemoryBuffer()
    NimbusService.rebalance_args(name=name, options=options).write(TBinaryProtocolFactory().get_protocol(buffer))

    class Storm2Options(TPayload):
        thrift_spec = {1: (TType.I32, "wait_secs", False), 3: (TType.MAP, "num_executors", (TType.STRING, TType.I32), False),
                       5: (TType.STRING, "topology_conf_overrides", False)}
        default_spec = [("wait_secs", None), ("num_executors", None), ("topology_conf_overrides", None)]

    class Storm2Args(TPayload):
        thrift_spec = {1: (TType.STRING, "name", False), 2: (TType.STRUCT, "options", Storm2Options, False)}
        default_spec = [("name", None), ("options", None)]

    read = Storm2Args()
    read.read(TBinaryProtocolFactory().get_protocol(TMemoryBuffer(buffer.getvalue())))
    assert read.name == "linear" and read.options.wait_secs == 0 and read.options.num_executors == {"low": 2}
    assert json.loads(read.options.topology_conf_overrides) == {
        "hetsched.grouping.shares": {"spout->low": {"host-s": 0.2, "host-l": 0.8}}}


# --- the command, against the session's real planner and a scripted Nimbus -------------------------------------

from types import SimpleNamespace  # noqa: E402

from typer.testing import CliRunner  # noqa: E402

import hetsched.replan_cmd as replan_cmd  # noqa: E402
from hetsched.cli import _register, app  # noqa: E402
from observe.nimbus import ClusterSummary, NimbusAddress, SupervisorSummary, TopologySummary  # noqa: E402
from observe.replacement import ReplacementResult, SpoutTally  # noqa: E402

_register()  # every command, so that `replan` is a subcommand as in `hetsched replan`

_MACHINES = {"host-s": ("m-small-1", "small", 1), "host-m": ("m-medium-1", "medium", 2),
             "host-l": ("m-large-1", "large", 4)}


def _scripted(monkeypatch, tmp_path, profiles: str, conf: dict | None = None, executors_out: list | None = None):
    """Linear running with one executor per component (4 tasks each), all on the small machine; ``conf`` its
    topology conf (default: as hetsched submit gives it). ``executors_out`` receives the executors Nimbus reports,
    so a test can move them as a rebalance would."""
    yamls = []
    for host, (machine, mtype, cores) in _MACHINES.items():
        path = tmp_path / f"{machine}.yaml"
        path.write_text(yaml.safe_dump({"storm.local.hostname": host, "supervisor.scheduler.meta": {
            "machine-id": machine, "machine-type": mtype, "cores": str(cores)}}))
        yamls += ["--storm-yaml", str(path)]
    summary = ClusterSummary("nimbus:6627", [SupervisorSummary(f"sup-{h}", h, 4, 1, 10, None, None) for h in _MACHINES],
                             [TopologySummary("linear-1-1", "linear", "ACTIVE", 1, 5, 17, 60)])
    monkeypatch.setattr(replan_cmd, "_cluster_state",
                        lambda nimbus: (NimbusAddress("nimbus", 6627), summary, {}, None))
    executors = [SimpleNamespace(component_id=c, executor_info=SimpleNamespace(task_start=t, task_end=t + 3),
                                 host="host-s", port=6700, uptime_secs=60)
                 for c, t in (("spout", 1), ("low", 5), ("mid", 9), ("high", 13))]
    if executors_out is not None:
        executors_out.append(executors)

    class FakeNimbus:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def topology_info(self, topology_id):
            return SimpleNamespace(executors=executors, sched_status="hetsched: placed by planner")

        def topology_conf(self, topology_id):
            return conf if conf is not None else {"hetsched.profiles": profiles, "hetsched.topology": "linear"}

        def user_topology(self, topology_id):
            from tests.fixtures.storm_thrift import linear_storm_topology

            return linear_storm_topology()

    monkeypatch.setattr(replan_cmd, "connect", lambda address, timeout: FakeNimbus())
    return yamls


def _profiles(planner_service) -> str:
    from bench.profiles import load_profile_set

    profile_set, _ = load_profile_set("default-cluster")
    with planner_service.client() as client:
        client.put_profile_set(profile_set)
    return profile_set.name


def test_a_dry_run_prints_both_predictions_and_changes_nothing(monkeypatch, tmp_path, planner_service):
    profiles = _profiles(planner_service)
    yamls = _scripted(monkeypatch, tmp_path, profiles)
    monkeypatch.setattr(replan_cmd, "replace_drained", lambda *a, **k: pytest.fail("a dry run re-placed"))
    with planner_service.client() as client:
        bound_before = client.binding("linear")  # the session's planner: another test may have bound one
    result = CliRunner().invoke(app, ["replan", "linear", "--dry-run", "--json", "--planner", planner_service.url, *yamls])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["executors_now"] == {"spout": 1, "low": 1, "mid": 1, "high": 1}
    assert report["tasks"] == {"spout": 4, "low": 4, "mid": 4, "high": 4}
    assert all(n <= 4 for n in report["executors_planned"].values())
    assert report["planned_rate"] > report["current_rate"] > 0
    assert report["gain"] == pytest.approx(report["planned_rate"] / report["current_rate"] - 1)
    assert report["applied"] is False
    with planner_service.client() as client:
        assert client.binding("linear") == bound_before


def test_a_worthwhile_plan_is_bound_and_replaced_drained(monkeypatch, tmp_path, planner_service):
    profiles = _profiles(planner_service)
    yamls = _scripted(monkeypatch, tmp_path, profiles)
    asked = {}

    report = _replan_without_verify(monkeypatch, yamls, planner_service, asked)
    assert report["applied"] is True and report["replacement"]["failed_during_drain"] == 0
    assert asked["name"] == "linear" and asked["machine_of_host"]["host-l"] == "m-large-1"
    assert {c: len(m) for c, m in asked["wanted"].items()} == report["executors_planned"]
    with planner_service.client() as client:
        assert client.binding("linear")["plan_id"] == report["plan_id"]


def _replan_without_verify(monkeypatch, yamls, planner_service, asked: dict) -> dict:
    """`hetsched replan linear --no-verify --json` with the drained re-placement faked: ``asked`` gets what it was
    called with (name, wanted, machine_of_host and the keyword arguments); the report is returned."""

    def replaced(nimbus, name, wanted, machine_of_host, **kwargs):
        asked.update(name=name, wanted=wanted, machine_of_host=machine_of_host, **kwargs)
        return ReplacementResult(name, {"high": 1}, {c: len(m) for c, m in wanted.items()}, SpoutTally(100, 98, 0),
                                 SpoutTally(100, 100, 0), True, 3.0, 12.0, True, "hetsched: placed by planner (bound plan")

    monkeypatch.setattr(replan_cmd, "replace_drained", replaced)
    result = CliRunner().invoke(app, ["replan", "linear", "--json", "--min-gain", "0.10", "--no-verify", "--planner",
                                      planner_service.url, *yamls])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_weighted_topology_s_re_placement_sends_the_new_plan_s_weights(monkeypatch, tmp_path, planner_service):
    profiles = _profiles(planner_service)
    conf = {"hetsched.profiles": profiles, "hetsched.topology": "linear",
            "hetsched.grouping.shares": {"low->mid": {"host-s": 1.0}}}
    yamls = _scripted(monkeypatch, tmp_path, profiles, conf)
    asked = {}

    report = _replan_without_verify(monkeypatch, yamls, planner_service, asked)
    with planner_service.client() as client:
        plan = client.get_plan(report["plan_id"])
    sent = plan_shares(plan, {h: m for h, (m, _, _) in _MACHINES.items()})
    assert asked["conf_overrides"] == {"hetsched.grouping.shares": sent} and report["shares_sent"] == sent


def test_a_gain_below_the_minimum_is_not_applied(monkeypatch, tmp_path, planner_service):
    profiles = _profiles(planner_service)
    yamls = _scripted(monkeypatch, tmp_path, profiles)
    monkeypatch.setattr(replan_cmd, "replace_drained", lambda *a, **k: pytest.fail("re-placed below the minimum gain"))
    result = CliRunner().invoke(app, ["replan", "linear", "--json", "--min-gain", "1000", "--planner",
                                      planner_service.url, *yamls])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["applied"] is False and "below --min-gain" in report["why_not_applied"]


def test_a_topology_that_is_not_running_is_one_sentence(monkeypatch, tmp_path, planner_service):
    yamls = _scripted(monkeypatch, tmp_path, "default-cluster")
    result = CliRunner().invoke(app, ["replan", "nope", "--planner", planner_service.url, *yamls])
    assert result.exit_code == 1
    assert "no topology named 'nope' is running on Nimbus nimbus:6627 (running: linear)" in result.output


def test_a_topology_hetsched_did_not_submit_is_planned_from_the_structure_nimbus_keeps(
        monkeypatch, tmp_path, planner_service):
    """A Java or Flux topology: no hetsched.topology, its profile keys from hetsched.component.profiles; the same
    plan as for the catalog's Linear."""
    profiles = _profiles(planner_service)
    monkeypatch.setattr(replan_cmd, "replace_drained", lambda *a, **k: pytest.fail("a dry run re-placed"))
    args = ["replan", "linear", "--dry-run", "--json", "--planner", planner_service.url]
    catalog = json.loads(CliRunner().invoke(app, [*args, *_scripted(monkeypatch, tmp_path, profiles)]).output)
    java_conf = {"hetsched.profiles": profiles, "hetsched.component.profiles": {
        "low": "lowCompute", "mid": "midCompute", "high": "highCompute"}}
    result = CliRunner().invoke(app, [*args, *_scripted(monkeypatch, tmp_path, profiles, java_conf)])
    assert result.exit_code == 0, result.output
    java = json.loads(result.output)
    assert java["current_rate"] == pytest.approx(catalog["current_rate"])
    assert java["planned_rate"] == pytest.approx(catalog["planned_rate"])
    assert java["executors_planned"] == catalog["executors_planned"]


def test_a_topology_without_a_profile_set_is_one_sentence(monkeypatch, tmp_path, planner_service):
    yamls = _scripted(monkeypatch, tmp_path, "default-cluster", {"topology.workers": 3})
    result = CliRunner().invoke(app, ["replan", "linear", "--planner", planner_service.url, *yamls])
    assert result.exit_code == 1
    assert "its conf lacks hetsched.profiles" in result.output


@pytest.mark.parametrize("after, kept", [(12.0, True), (6.0, False)])
def test_a_plan_is_measured_and_undone_drained_when_it_runs_worse(monkeypatch, tmp_path, planner_service, after, kept):
    from tests.test_tune import Tuned

    profiles = _profiles(planner_service)
    executors: list = []
    yamls = _scripted(monkeypatch, tmp_path, profiles, None, executors)
    tuned = Tuned(monkeypatch, executors[0], [10.0, after, 10.0])
    result = CliRunner().invoke(app, ["replan", "linear", "--json", "--min-gain", "0.10", "--window", "20",
                                      "--planner", planner_service.url, *yamls])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["applied"] is True and report["kept"] is kept
    assert report["measured_before"]["sink_throughput"] == 10.0
    if kept:
        assert len(tuned.replaced) == 1
    else:
        assert len(tuned.replaced) == 2 and "measured_back" in report
        assert tuned.replaced[-1]["wanted"] == {c: ["m-small-1"] for c in ("spout", "low", "mid", "high")}
