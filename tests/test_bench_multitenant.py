"""The multi-tenant scenario and the baseline schedulers' bench entries, without a cluster."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from streamparse.thrift import Nimbus as NimbusService
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.thrift import TPayload, TType
from thriftpy2.transport import TMemoryBuffer
from typer.testing import CliRunner

from bench import multitenant, multitenant_report
from bench.errors import BenchError
from bench.schedulers import (CLUSTER_SCHEDULER, CPU_POINTS, DPS_NODES, PHASES, POOLS_FILE, PRIORITY, SPS_MIN_NODES,
                              SPS_NODES, USER_POOLS, nimbus_setup, run_specs, tenant_spec, user_pools)
from bench.settings import BenchSettings
from cluster.layout import NIMBUS
from cluster.storm_config import SCHEDULERS as NIMBUS_SCHEDULERS
from cluster.storm_config import class_path
from hetsched.cli import _register, app
from observe.counts import ExecutorCounts, TopologyCounts
from observe.nimbus import RebalanceOptionsWithConf
from observe.rates import CountSample
from planner.api import make_plan
from cluster.spec import load_spec
from topologies import conf as keys
from topologies.catalog import lookup, planner_topology
from tests.test_bench import profile_set

_register()
runner = CliRunner()


@pytest.fixture(scope="module")
def plans():
    return {t: make_plan(planner_topology(lookup(t)), load_spec().planner_cluster(), profile_set().entries)
            for t, _ in multitenant.TENANTS}


def _spec(scheduler, plans, topology="linear", priority=0, min_rate=5.0, tmp_path=Path("/tmp")):
    return tenant_spec(scheduler, lookup(topology), plans[topology], priority, min_rate,
                       BenchSettings(out_dir=tmp_path), profile_set().entries, "small", 0.2, "test-profiles")


def test_every_tenant_carries_its_priority_and_minimum_and_what_its_scheduler_needs(plans):
    by = {s: _spec(s, plans, priority=1, min_rate=4.0) for s in multitenant.SCHEDULERS}
    for spec in by.values():
        assert spec.conf[PRIORITY] == 1 and spec.conf[keys.MIN_RATE] == 4.0
    assert by["default"].conf[keys.WORKERS] == 2
    assert by["sps"].conf[SPS_NODES] == 2 and by["sps"].conf[SPS_MIN_NODES] == 1
    assert by["dps"].conf[DPS_NODES] == 2 and SPS_NODES not in by["dps"].conf
    assert by["planned"].conf[keys.PROFILES] == "test-profiles" and by["planned"].plan_id is None
    assert by["planned-strict"].conf == by["planned"].conf and "strict" in by["planned-strict"].note
    assert {s: by[s].cluster_scheduler for s in by} == {
        "default": "plugin", "resource_aware": "resource_aware", "ras-priority": "resource_aware-pool",
        "sps": "sps", "dps": "dps", "planned": "plugin", "planned-strict": "plugin"}


def test_ras_tenants_declare_the_cpu_of_their_minimum_not_of_the_whole_cluster(plans):
    full = _spec("resource_aware", plans, min_rate=plans["linear"].input_rate)
    quarter = _spec("resource_aware", plans, min_rate=plans["linear"].input_rate / 4)
    for component, extra in quarter.component_conf.items():
        assert extra[CPU_POINTS] < full.component_conf[component][CPU_POINTS] or extra[CPU_POINTS] == 0.5


def test_single_topology_bench_runs_sps_dps_and_ras_priority_when_named(tmp_path, plans):
    settings = BenchSettings(out_dir=tmp_path, schedulers=("sps", "dps", "ras-priority"))
    specs = run_specs(settings, lookup("linear"), plans["linear"], profile_set().entries, 3, "small", 0.2,
                      "http://127.0.0.1:1", "test-profiles")
    by = {s.scheduler: s for s in specs}
    assert by["sps"].conf[SPS_NODES] == 3 and by["dps"].conf[DPS_NODES] == 3
    assert by["ras-priority"].cluster_scheduler == "resource_aware-pool" and by["ras-priority"].fallback_scales
    assert set(CLUSTER_SCHEDULER.values()) == set(PHASES)


def test_each_phase_sets_nimbus_up_as_its_scheduler_needs(tmp_path):
    pools = user_pools("alice", 140.0, 7168.0)
    assert nimbus_setup("plugin", "http://127.0.0.1:9").conf == {"hetsched.planner.url": "http://127.0.0.1:9"}
    dps = nimbus_setup("dps", None, tmp_path / "p.json")
    assert dps.scheduler == "dps" and dps.conf == {"hetsched.dps.priorities.file": str(tmp_path / "p.json")}
    ras = nimbus_setup("resource_aware-pool", None, pools=pools)
    assert ras.scheduler == "resource_aware" and ras.conf[USER_POOLS]["alice"] == {"cpu": 140.0, "memory": 7168.0}
    assert yaml.safe_load(ras.conf_files[POOLS_FILE]) == pools
    with pytest.raises(BenchError, match="needs a user pool"):
        nimbus_setup("resource_aware-pool", None)
    assert {"sps", "dps"} <= set(NIMBUS_SCHEDULERS)


def test_nimbus_reads_the_clusters_own_conf_folder_before_storm_homes(tmp_path):
    from cluster.layout import make_layout

    layout = make_layout(load_spec(), tmp_path / "home", 28000)
    parts = class_path(tmp_path / "storm", layout, NIMBUS).split(":")
    assert parts.index(str(layout.conf_file(NIMBUS).parent)) < parts.index(str(tmp_path / "storm" / "conf"))
    assert str(layout.conf_file(NIMBUS).parent) not in class_path(tmp_path / "storm", layout, "small-1")


def _counts(emitted: int, failed: int = 0, port: int = 6700, placed: bool = True) -> TopologyCounts:
    spout = ExecutorCounts("spout", 1, 1, "127.0.0.2" if placed else "", port, 10, True, emitted, emitted, 0,
                           emitted - failed, failed)
    sink = ExecutorCounts("sink", 2, 2, "127.0.0.2" if placed else "", port, 10, False, 0, 0, emitted, emitted, 0)
    return TopologyCounts("", {1: spout, 2: sink}, {})


def test_rate_over_time_is_the_trailing_span_every_step():
    samples = [CountSample(float(t), _counts(10 * t)) for t in range(0, 41)]
    series = multitenant.rate_series(samples, origin=0.0)
    assert series[0] == (20.0, 10.0) and series[-1] == (40.0, 10.0)
    doubled = [CountSample(float(t), TopologyCounts("", {
        1: _counts(10 * t).executors[1],
        3: ExecutorCounts("spout2", 3, 3, "h", 1, 1, True, 10 * t, 0, 0, 0, 0)}, {})) for t in range(0, 21)]
    assert multitenant.rate_series(doubled, 0.0) == [(20.0, 10.0)], "per spout component, as the window's input rate"
    assert [x for x, _ in series] == [20.0, 25.0, 30.0, 35.0, 40.0]


def test_replacement_is_the_first_fully_placed_new_placement_and_when_spouts_move_again():
    samples = ([CountSample(float(t), _counts(100)) for t in range(0, 5)]
               + [CountSample(5.0, _counts(100, placed=False)), CountSample(7.0, _counts(100, port=6701)),
                  CountSample(9.0, _counts(100, port=6701)), CountSample(12.0, _counts(130, failed=4, port=6701))])
    assert multitenant.replacement(samples, changed_at=4.0) == {
        "moved": True, "replaced_s": 3.0, "running_again_s": 8.0, "unplaced_s": 1.0}
    assert multitenant.failed_since(samples, 4.0) == 4
    assert multitenant.replacement(samples[:5], changed_at=4.0)["moved"] is False
    gone = samples[:5] + [CountSample(6.0, TopologyCounts("share 0", {}, {}))]
    assert multitenant.replacement(gone, 4.0)["unplaced_s"] == 2.0 and multitenant.failed_since(gone, 4.0) == 0


def test_weighted_throughput_weighs_each_tenant_by_its_priority():
    assert multitenant.weighted_throughput({"a": 10.0, "b": 10.0, "c": 9.0}, {"a": 0, "b": 1, "c": 2}) == 18.0


def test_rebalance_options_carry_the_topology_conf_overrides_as_field_5():
    class Storm2Options(TPayload):
        thrift_spec = {1: (TType.I32, "wait_secs", False), 5: (TType.STRING, "topology_conf_overrides", False)}
        default_spec = [("wait_secs", None), ("topology_conf_overrides", None)]

    buffer = TMemoryBuffer()
    args = NimbusService.rebalance_args(name="mt-star-dps", options=RebalanceOptionsWithConf(
        wait_secs=0, topology_conf_overrides=json.dumps({"topology.priority": 0})))
    args.write(TBinaryProtocolFactory().get_protocol(buffer))

    class Storm2Args(TPayload):
        thrift_spec = {1: (TType.STRING, "name", False), 2: (TType.STRUCT, "options", Storm2Options, False)}
        default_spec = [("name", None), ("options", None)]

    read = Storm2Args()
    read.read(TBinaryProtocolFactory().get_protocol(TMemoryBuffer(buffer.getvalue())))
    assert read.name == "mt-star-dps" and json.loads(read.options.topology_conf_overrides) == {"topology.priority": 0}


def test_sps_and_default_say_the_change_does_nothing_and_dps_writes_its_trigger_file(tmp_path):
    assert "static" in multitenant.change_priority("sps", "mt-star-sps", 0, None, "", tmp_path / "p.json")
    assert "no priorities" in multitenant.change_priority("default", "mt-star-default", 0, None, "", tmp_path / "p.json")
    (tmp_path / "p.json").write_text('{"mt-linear-dps": 0}')
    multitenant.change_priority("dps", "mt-star-dps", 0, None, "", tmp_path / "p.json")
    assert json.loads((tmp_path / "p.json").read_text()) == {"mt-linear-dps": 0, "mt-star-dps": 0}


@pytest.mark.parametrize("kw, message", [
    ({"schedulers": ("default", "fifo")}, "not fifo"),
    ({"window_s": 5.0}, "--window must be at least 15 s"),
    ({"after_s": 20.0}, "--after must be at least 30 s"),
    ({"min_rates": {"tree": 3.0}}, "tree=3.0 is not a positive rate"),
])
def test_scenario_settings_refuse_what_cannot_be_measured(tmp_path, kw, message):
    with pytest.raises(BenchError, match=message):
        multitenant.ScenarioSettings(out_dir=tmp_path, **kw)


def test_min_rates_parse_and_refuse_other_text():
    assert multitenant.parse_min_rates("linear=8, star=2.5") == {"linear": 8.0, "star": 2.5}
    for bad in ("linear", "linear=fast"):
        with pytest.raises(BenchError, match="topology=tuples/s pairs"):
            multitenant.parse_min_rates(bad)


def _recorded() -> dict:
    def tenant(topology, priority, rate, minimum, replaced):
        return {"topology": topology, "name": f"mt-{topology}", "priority": priority,
                "priority_after": 0 if topology == "star" else priority, "min_rate": minimum, "input_rate": rate,
                "sink_throughput": rate, "min_met": rate >= minimum, "cpu_share": 0.2, "sched_status": "",
                "after": {"input_rate": rate, "min_met": rate >= minimum, "moved": replaced is not None,
                          "replaced_s": replaced, "running_again_s": None, "failed_since_change": 3},
                "series": [(20.0, rate), (25.0, rate)]}

    def run(scheduler, rates):
        tenants = [tenant("linear", 0, rates[0], 8.0, None), tenant("diamond", 1, rates[1], 3.0, None),
                   tenant("star", 2, rates[2], 3.0, 12.0)]
        return {"scheduler": scheduler, "tenants": tenants, "minimums_met": sum(t["min_met"] for t in tenants),
                "weighted_throughput": 10.0 if scheduler == "sps" else 14.0, "weighted_throughput_after": 9.0,
                "failed_since_change": 9, "change": {"topology": "star", "priority": 0, "how": "x", "at_s": 22.0},
                "error": None}

    return {"scenario": "multi-tenant", "runs": {"sps": run("sps", (9.0, 2.0, 4.0)),
                                                 "planned": run("planned", (9.0, 4.0, 4.0))}}


def test_tables_headlines_and_plots_come_from_the_json(tmp_path):
    data = _recorded()
    lines = multitenant_report.headline_lines(data)
    assert "sps: misses the minimum of diamond" in lines and "planned: every minimum held" in lines
    assert any("1.40x the best baseline's (sps, 10.00)" in line for line in lines)
    assert multitenant_report.tenants_table(data).row_count == 6
    assert multitenant_report.summary_table(data).row_count == 2
    strict = copy.deepcopy(data["runs"]["planned"])
    data["runs"]["planned-strict"] = {**strict, "scheduler": "planned-strict", "weighted_throughput": 16.0,
                                      "machine_cpu": {"window": {"large-1": 97.0, "small-1": 88.04}}}
    data["runs"]["planned-strict"]["tenants"][2].update(input_rate=0.0, status="not placed",
                                                       sched_status="hetsched: not admitted (its minimum ...)")
    lines = multitenant_report.headline_lines(data)
    assert any("planned-strict's weighted throughput 16.00 is 1.60x the best baseline's (sps, 10.00)" in line
               for line in lines), "planned entries are never a baseline"
    markdown = multitenant_report.markdown_lines(data)
    assert markdown[0].startswith("| scheduler | linear | diamond | star |")
    assert any(line.startswith("| planned-strict | 9.00 | 4.00 | not admitted | 3/3 | 16.00 |")
               and "large-1 97%, small-1 88%" in line for line in markdown)
    assert len([line for line in markdown if line.startswith("| planned-strict | ")]) == 4  # 1 summary + 3 tenants
    data["runs"]["planned-strict"]["ledger"] = {"window": {"machines": [
        {"id": "large-1", "loads": {"mt-linear": 50.0, "mt-diamond": 40.5}}]}}
    assert multitenant_report.machine_lines(data)[2] == "| planned-strict | large-1 | 90.5 | 97.0 | mt-diamond 40.5, mt-linear 50.0 |"
    drawn = multitenant_report.plots(data, tmp_path)
    assert [p.name for p in drawn] == [multitenant_report.STACKED_PLOT, multitenant_report.SERIES_PLOT]
    assert all(p.stat().st_size > 1000 for p in drawn)


def test_the_command_prints_a_recorded_scenario_and_refuses_other_files(tmp_path):
    (tmp_path / multitenant.RESULT_FILE).write_text(json.dumps(_recorded()))
    result = runner.invoke(app, ["bench", "--scenario", "multi-tenant", "--report", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "misses the minimum of diamond" in result.output
    (tmp_path / "other.json").write_text("{}")
    result = runner.invoke(app, ["bench", "--scenario", "multi-tenant", "--report", str(tmp_path / "other.json")])
    assert result.exit_code == 1 and "is not a multi-tenant scenario result" in result.output


def test_repeated_rounds_summarize_to_median_and_range():
    from benchmarks.multi_tenant_summary import summarize

    first, second = _recorded(), _recorded()
    second["runs"]["sps"]["weighted_throughput"] = 12.0
    summary = summarize([first, second, {"runs": {}}])
    assert summary["sps"]["weighted_throughput"] == {"median": 11.0, "low": 10.0, "high": 12.0, "n": 2}
    assert summary["planned"]["star.replaced_s"]["n"] == 2


def test_a_planner_started_again_in_the_same_folder_answers_at_its_own_address(tmp_path):
    from bench.planner_service import PlannerService

    urls = []
    for _ in range(2):
        service = PlannerService(tmp_path / "planner.db", tmp_path / "planner.log")
        try:
            urls.append(service.start())
        finally:
            service.stop()
    assert len(set(urls)) == 2, "the second start must not take the first one's address from the shared log"


def test_planned_tenants_are_paced_at_their_ledger_rate_refused_ones_paused():
    ledger = {"tenants": [{"topology": "mt-linear-planned", "status": "admitted", "rate": 17.9},
                          {"topology": "mt-diamond-planned", "status": "admitted", "rate": None},
                          {"topology": "mt-star-planned", "status": "refused", "rate": 0.0},
                          {"topology": "someone-else", "status": "admitted", "rate": 3.0}]}
    names = ["mt-linear-planned", "mt-diamond-planned", "mt-star-planned"]
    assert multitenant.ledger_rates(ledger, names) == {"mt-linear-planned": 17.9, "mt-star-planned": 0.0}
    assert multitenant.ledger_rates({}, names) == {}


def test_a_tenant_is_left_unpaced_only_where_no_other_tenant_uses_its_machines():
    ledger = {"machines": [{"id": "large-1", "loads": {"a": 90.0}},
                           {"id": "medium-1", "loads": {"b": 50.0, "c": 20.0}},
                           {"id": "small-1", "loads": {"b": 10.0, "d": 0.0}}],
              "tenants": [{"topology": t, "status": "admitted"} for t in "abc"]
              + [{"topology": "d", "status": "refused"}]}
    assert multitenant.isolated_tenants(ledger) == {"a"}
    assert multitenant.isolated_tenants({}) == set()


def test_the_scenario_gives_every_machine_three_slots(tmp_path):
    spec = multitenant.with_slots(load_spec(), multitenant.DEFAULT_SLOTS)
    assert {t.slots for t in spec.machine_types} == {3}
    with pytest.raises(BenchError, match="slots"):
        multitenant.ScenarioSettings(out_dir=tmp_path, slots=0)


def test_a_refused_planned_tenant_gets_its_new_priority_through_storm(monkeypatch, tmp_path):
    import httpx

    rebalanced = []
    monkeypatch.setattr(multitenant, "rebalance_conf", lambda nimbus, name, overrides: rebalanced.append((name, overrides)))
    monkeypatch.setattr(multitenant.httpx, "put", lambda *a, **k: httpx.Response(404))
    note = multitenant.change_priority("planned-strict", "mt-star-planned-strict", 0, None, "http://x", tmp_path / "p")
    assert rebalanced == [("mt-star-planned-strict", {"topology.priority": 0})] and "refused at admission" in note
    monkeypatch.setattr(multitenant.httpx, "put", lambda *a, **k: httpx.Response(200))
    assert "answered 200" in multitenant.change_priority("planned", "mt-star-planned", 0, None, "http://x", tmp_path / "p")
    assert len(rebalanced) == 1, "a tenant in the ledger is not rebalanced (its workers would restart)"


def test_a_joint_replan_is_followed_from_the_plugins_status_until_the_new_plan_placed_it():
    t = multitenant.TenantRun("linear", 0, 5.0, "mt-linear-planned", "")
    statuses = [(1.0, "hetsched: placed by planner (plan p-1, strategy fast) on 3 supervisors in 3 workers", True),
                (2.0, multitenant.JOINT_STATUS + "mt-diamond-planned at 05:55:40 UTC (plan p-9, 15.17 -> 20.33 "
                 "tuples/s): re-placing it drained (rebalanced after 30 s)", True),
                (3.0, multitenant.JOINT_STATUS + "mt-diamond-planned at 05:55:40 UTC (plan p-9, 15.17 -> 20.33 "
                 "tuples/s): re-placing it drained (rebalanced after 30 s)", False),
                (40.0, "hetsched: placed by planner (bound plan p-9, strategy fast) on 3 supervisors in 3 workers", False),
                (41.0, "hetsched: placed by planner (bound plan p-9, strategy fast) on 3 supervisors in 3 workers", True)]
    for at, status, placed in statuses:
        t.samples.append(CountSample(at, _counts(10, placed=placed)))
        t.sched_status = status
        multitenant._follow_joint(t, at)
    assert len(t.joint) == 1, "one re-plan, however many rounds its status is shown"
    assert t.joint[0]["seen_at"] == 2.0 and t.joint[0]["placed_at"] == 41.0, "placed: every executor, by the bound plan"
