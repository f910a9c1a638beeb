"""The bench's pure parts on recorded data: measurement maths, run specs, placement, report, plots, settings, CLI refusals."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from bench import measure, plots, report
from bench.errors import BenchError
from bench.placement import from_topology_info, plan_mismatches
from bench.profiles import fill_pass_through_alphas, load_profile_set, missing_pairs, require_pairs
from bench.schedulers import CPU_POINTS, DISABLE_LOAD_AWARE, ras_cpu_points, run_specs
from bench.settings import KNOWN_TOPOLOGIES, SCHEDULERS, TOPOLOGIES, BenchSettings, parse_names
from cluster.spec import load_spec
from hetsched.cli import _register, app
from observe.rates import ComponentRate
from planner.api import evaluate_assignments, make_plan
from planner.model import InstanceAssignment, ProfileEntry, ProfileSet
from topologies import conf as keys
from topologies.catalog import lookup, planner_topology

_register()
runner = CliRunner()



def rate(component: str, role: str, tuples: int, window_s: float, acked: int | None = None, failed: int = 0) -> ComponentRate:
    return ComponentRate(component, role, 1, 1 if window_s else 0, tuples, tuples if acked is None else acked, failed,
                         window_s, tuples / window_s if window_s else 0.0)


# Recorded by `hetsched bench --topologies linear --schedulers default,planned` on the default local cluster
# (window 40 s): Nimbus counts between the first and last stats step each component showed.
LINEAR_DEFAULT = [
    rate("spout", "spout", 296, 29.46),
    rate("low", "bolt", 296, 29.47),
    rate("mid", "bolt", 350, 35.85, acked=407),
    rate("high", "sink", 403, 35.85, acked=347),
]
STAR_WITH_A_FAILURE = [
    rate("spout1", "spout", 300, 30.0, acked=290, failed=10),
    rate("spout2", "spout", 240, 30.0),
    rate("high", "bolt", 1080, 40.0),
    rate("low", "sink", 500, 20.0),
    rate("mid", "sink", 0, 0.0),
]
CORES = {"small": 0.2, "medium": 0.4, "large": 0.8}
CPU_MS = {"spout": 2.0, "lowCompute": 7.0, "midCompute": 11.0, "highCompute": 18.5}


def profile_set(name: str = "test-profiles") -> ProfileSet:
    """CPU seconds per tuple the same on every machine type, so e scales with 1/cores (as on the local cluster)."""
    return ProfileSet(name=name, entries=[
        ProfileEntry(profile=k, machine_type=t, e=ms / 1000 / c, met=2.0 / c, alpha=1.0)
        for k, ms in CPU_MS.items() for t, c in CORES.items()
    ], source={"test": __name__})


def settings(tmp_path: Path, **kw) -> BenchSettings:
    return BenchSettings(out_dir=tmp_path, **kw)


# ---- measurement maths ------------------------------------------------------------------------------


def test_throughputs_follow_their_definitions():
    t = measure.measured_throughputs(LINEAR_DEFAULT)
    spout, low, mid, high = (r.tuples / r.window_s for r in LINEAR_DEFAULT)
    assert t.input_rate == pytest.approx(spout)
    assert t.sink_throughput == pytest.approx(high)
    assert t.bolt_throughput == pytest.approx(low + mid + high)
    assert t.total_throughput == pytest.approx(low + mid + high + spout), "the planner's total counts the spout's emits"


def test_input_rate_is_the_mean_over_spout_components_and_idle_components_count_zero():
    t = measure.measured_throughputs(STAR_WITH_A_FAILURE)
    assert t.spout_emit_rate == pytest.approx(300 / 30 + 240 / 30)
    assert t.input_rate == pytest.approx((300 / 30 + 240 / 30) / 2)
    assert t.sink_throughput == pytest.approx(500 / 20)
    assert measure.failed_share(STAR_WITH_A_FAILURE) == pytest.approx(10 / 540)


def test_predicted_throughputs_compare_like_with_like():
    entry = lookup("star")
    profiles = profile_set()
    cluster = load_spec().planner_cluster()
    plan = make_plan(planner_topology(entry), cluster, profiles.entries)
    predicted = measure.predicted_throughputs(plan, entry.spout_ids)
    assert predicted.spout_emit_rate == pytest.approx(2 * plan.input_rate)
    assert predicted.bolt_throughput == pytest.approx(plan.total_throughput - 2 * plan.input_rate)
    assert predicted.sink_throughput == pytest.approx(plan.sink_throughput)


def test_machine_utilisation_is_cpu_over_window_over_quota():
    before = {"small-1": 10.0, "medium-1": 20.0}
    after = {"small-1": 18.0, "medium-1": 26.0}
    cpu = measure.machine_cpu(before, after, 40.0, {"small-1": ("small", 0.2), "medium-1": ("medium", 0.4)})
    assert [round(m.utilization, 6) for m in cpu] == [100.0, 37.5]


def test_a_window_is_steady_when_the_sinks_take_the_share_of_the_spouts_the_placement_gives():
    predicted = measure.Throughputs(input_rate=5.0, spout_emit_rate=10.0, sink_throughput=20.0, bolt_throughput=30.0,
                                    total_throughput=40.0)
    steady = measure.Throughputs(6.0, 12.0, 24.3, 36.0, 48.0)
    assert measure.flow_imbalance(steady, predicted) == pytest.approx(0.0125)
    # Star under default-naive (issue18/bench-s11-idle-met): the spouts emit into a backlog the sinks never see
    piling_up = measure.Throughputs(7.19, 14.38, 24.48, 38.75, 53.13)
    assert measure.flow_imbalance(piling_up, predicted) == pytest.approx(24.48 / 14.38 / 2 - 1)
    assert measure.flow_imbalance(piling_up, measure.Throughputs(0.0, 0.0, 0.0, 0.0, 0.0)) is None
    run = {"topology": "star", "scheduler": "default-naive", "status": "ok",
           "flow_imbalance": round(measure.flow_imbalance(piling_up, predicted), 4)}
    assert report.unsteady_line(run).startswith("star/default-naive was not steady: its sinks ran 15% below what its spouts")
    assert report.unsteady_line({**run, "flow_imbalance": 0.04}) is None
    assert report.unsteady_line({**run, "flow_imbalance": None}) is None


def test_a_window_in_which_trees_failed_is_not_steady_whatever_its_flow():
    """Star under default-naive (issue18/bench-s14-20261126/bench-a): 88 trees timed out while the sinks' share of
    the spouts' tuples looked steady (+2.8 %); the timeouts had freed pending slots, so its spouts emitted past what
    the placement sustains."""
    assert measure.steady(0.028, 0) and not measure.steady(0.028, 88) and not measure.steady(0.06, 0)
    assert measure.steady(None, 0) and not measure.steady(None, 1)
    assert measure.failed_trees(STAR_WITH_A_FAILURE) == 10
    run = {"topology": "star", "scheduler": "default-naive", "status": "ok", "flow_imbalance": 0.028,
           "components": [{"component": "spout1", "role": "spout", "failed": 45},
                          {"component": "spout2", "role": "spout", "failed": 43},
                          {"component": "high", "role": "bolt", "failed": 3}]}
    assert report.failed_trees(run) == 88
    assert report.unsteady_line(run).startswith("star/default-naive was not steady: 88 of its spouts' tuple trees "
                                                "failed (timed out)")
    assert report.unsteady_line({**run, "components": []}) is None


def test_the_base_load_is_charged_only_where_a_worker_runs():
    """RAS leaves small-1 empty: only its supervisor runs there, not the idle worker JVM the base load holds."""
    from bench.placement import ActualPlacement
    from bench.run import predicted_machine_cpu

    cluster = load_spec().planner_cluster()
    placement = {"spout": ["medium-1"], "low": ["medium-1"], "mid": ["large-1"], "high": ["large-1", "medium-1"]}
    evaluation = evaluate_assignments(planner_topology(lookup("linear")), cluster, profile_set().entries,
                                      [InstanceAssignment(component=c, machine=m) for c, ms in placement.items() for m in ms])
    load = {m.id: m.utilization for m in evaluation.machines}
    charged = predicted_machine_cpu(evaluation, ActualPlacement(executors=placement), {"small": 26.0, "large": 6.0})
    assert charged == pytest.approx({"small-1": 0.0, "medium-1": load["medium-1"], "large-1": load["large-1"] + 6.0},
                                    abs=0.01)


def test_errors_and_speedups_without_a_baseline_are_none():
    assert measure.relative_error(9.0, 10.0) == pytest.approx(-0.1)
    assert measure.relative_error(9.0, 0.0) is None
    assert measure.speedup(13.0, 10.0) == pytest.approx(1.3)
    assert measure.speedup(13.0, 0.0) is None


# ---- what each scheduler submits ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def linear_plan():
    return make_plan(planner_topology(lookup("linear")), load_spec().planner_cluster(), profile_set().entries)


def test_run_specs_share_one_topology_conf_and_differ_where_the_scheduler_does(tmp_path, linear_plan):
    entry = lookup("linear")
    specs = run_specs(settings(tmp_path), entry, linear_plan, profile_set().entries, 3, "small", 0.2,
                      "http://127.0.0.1:1", "test-profiles")
    by = {s.scheduler: s for s in specs}
    assert list(by) == list(SCHEDULERS)
    planned_counts = {c: n for c, n in linear_plan.instances.items()}
    assert by["default"].parallelism == planned_counts and by["resource_aware"].parallelism == planned_counts
    assert by["default-naive"].parallelism == {c: 3 for c in entry.component_ids}
    assert by["default"].conf[keys.WORKERS] == 3 and by["default-naive"].conf[keys.WORKERS] == 3
    assert by["planned"].plan_id == linear_plan.id and by["planned"].profiles == "test-profiles"
    for s in specs:
        assert s.conf[keys.MAX_SPOUT_PENDING] == 100 and s.conf[DISABLE_LOAD_AWARE] is True
        assert s.conf[keys.STATS_SAMPLE_RATE] == 1.0
    assert {s.cluster_scheduler for s in specs} == {"plugin", "resource_aware"}
    assert set(by["resource_aware"].component_conf) == set(entry.component_ids)


def test_ras_points_are_the_profiles_cpu_on_the_reference_type_at_the_plans_rate(linear_plan):
    entry = lookup("linear")
    points = ras_cpu_points(linear_plan, entry, profile_set().entries, "small", 0.2)
    for component in entry.component_ids:
        instances = [a for a in linear_plan.assignments if a.component == component]
        rate = sum(a.input_rate for a in instances) / len(instances)
        kind = entry.profiles()[component]
        percent_of_small = 100 * CPU_MS[kind] / 1000 / 0.2 * rate + 2.0 / 0.2
        assert points[component] == pytest.approx(percent_of_small * 0.2, abs=0.01)
    assert points["high"] > points["low"], "more CPU per tuple, more points"


def test_ras_points_need_the_reference_type_in_the_profiles(linear_plan):
    entries = [e for e in profile_set().entries if e.machine_type != "small"]
    with pytest.raises(BenchError, match="no spout on the reference machine type small"):
        ras_cpu_points(linear_plan, lookup("linear"), entries, "small", 0.2)


# ---- placement read back from Nimbus --------------------------------------------------------------------


def _executor(component: str, task: int, host: str, port: int):
    return SimpleNamespace(component_id=component, executor_info=SimpleNamespace(task_start=task), host=host, port=port)


def test_placement_is_in_task_order_by_machine(linear_plan):
    info = SimpleNamespace(sched_status="placed", executors=[
        _executor("high", 5, "127.0.0.4", 7001), _executor("high", 4, "127.0.0.2", 6001),
        _executor("__acker", 1, "127.0.0.4", 7001), _executor("spout", 9, "127.0.0.3", 6501),
    ])
    placement = from_topology_info(info, {"127.0.0.2": "small-1", "127.0.0.3": "medium-1", "127.0.0.4": "large-1"})
    assert placement.executors["high"] == ["small-1", "large-1"]
    assert placement.user_placement() == {"high": ["small-1", "large-1"], "spout": ["medium-1"]}
    assert placement.workers == {"large-1": 1, "medium-1": 1, "small-1": 1}
    assert [a.machine for a in placement.assignments()] == ["small-1", "large-1", "medium-1"]
    assert from_topology_info(SimpleNamespace(executors=[], sched_status=""), {}) is None


def test_plan_mismatches_name_each_misplaced_instance(linear_plan):
    from bench.placement import ActualPlacement

    exact = ActualPlacement({c: [a.machine for a in linear_plan.assignments if a.component == c]
                             for c in linear_plan.instances})
    assert plan_mismatches(exact, linear_plan) == []
    moved = ActualPlacement({**exact.executors, "spout": ["nowhere-1"] + exact.executors["spout"][1:]})
    assert plan_mismatches(moved, linear_plan) == [
        f"spout[0] on nowhere-1, planned {next(a.machine for a in linear_plan.assignments if a.component == 'spout')}"]


# ---- report and plots on a recorded result -------------------------------------------------------------


def recorded_result(plan) -> dict:
    """A bench.json as the bench writes it, with the recorded Linear runs (default measured, planned a second one)."""
    cluster = load_spec().planner_cluster()
    entries = profile_set().entries
    runs = []
    for scheduler, rates, placement in (
        ("default", LINEAR_DEFAULT, {"spout": ["medium-1"], "low": ["medium-1"], "mid": ["small-1", "large-1"],
                                     "high": ["small-1", "large-1"]}),
        ("planned", [rate(r.component, r.role, r.tuples * 2, r.window_s, acked=r.acked * 2) for r in LINEAR_DEFAULT],
         {a.component: [] for a in plan.assignments}),
    ):
        if scheduler == "planned":
            for a in plan.assignments:
                placement[a.component].append(a.machine)
        evaluation = evaluate_assignments(planner_topology(lookup("linear")), cluster, entries,
                                          [InstanceAssignment(component=c, machine=m) for c, ms in placement.items() for m in ms])
        m = measure.measured_throughputs(rates)
        p = measure.predicted_throughputs(evaluation, ["spout"])
        runs.append({
            "topology": "linear", "scheduler": scheduler, "status": "ok", "reason": None,
            "measured": m.as_dict(), "predicted": p.as_dict(), "failed_share": measure.failed_share(rates),
            "machines": [{"machine": x.id, "utilization": 80.0, "predicted_utilization": x.utilization}
                         for x in evaluation.machines],
        })
    runs.append({"topology": "linear", "scheduler": "resource_aware", "status": "failed",
                 "reason": "Storm placed no executor within 300 s", "measured": None, "machines": []})
    data = {"runs": runs, "settings": {"window_s": 40, "warmup_s": 15, "max_spout_pending": 100,
                                       "load_aware_shuffle": False, "message_timeout_s": 120},
            "plans": {"linear": plan.model_dump(mode="json")}, "load_average": {"start": [1.0, 2.0, 3.0]},
            "versions": {"cpus": "2"}, "profile_set": {"name": "test-profiles", "origin": "test"}}
    data["comparison"] = report.comparisons(data)
    return data


def test_comparison_is_planned_over_each_baseline_and_errors_are_against_the_prediction(linear_plan):
    data = recorded_result(linear_plan)
    [row] = data["comparison"]
    assert row["planned_vs_default"] == pytest.approx(2.0, abs=0.001)
    assert row["planned_vs_resource_aware"] is None, "a failed run is no baseline"
    default = data["runs"][0]
    expected = (default["measured"]["sink_throughput"] - default["predicted"]["sink_throughput"]) / default["predicted"]["sink_throughput"]
    assert row["prediction_error"]["default"] == pytest.approx(expected, abs=1e-4)


def test_tables_show_every_run_and_failures_with_their_reason(linear_plan):
    from rich.console import Console

    data = recorded_result(linear_plan)
    console = Console(width=250, record=True)
    console.print(report.runs_table(data))
    console.print(report.targets_table(data))
    text = console.export_text()
    assert "failed (below)" in text
    assert report.failure_lines(data) == ["linear/resource_aware failed: Storm placed no executor within 300 s"]
    data["runs"][0]["flow_imbalance"] = 0.11
    assert report.failure_lines(data)[0].startswith("linear/default was not steady: its sinks ran 11% above")
    assert "2.00" in text and "planned" in text and "default" in text
    assert any("load average" in line for line in report.settings_lines(data))


def test_plots_are_written_from_the_json(tmp_path, linear_plan):
    data = json.loads(json.dumps(recorded_result(linear_plan)))
    paths = plots.all_plots(data, tmp_path)
    assert [p.name for p in paths] == ["throughput.png", "cpu.png", "predicted-vs-measured.png"]
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000


def test_report_reads_back_what_it_wrote_and_refuses_other_files(tmp_path, linear_plan):
    path = report.write_json(recorded_result(linear_plan), tmp_path / "bench.json")
    assert report.read_json(path)["runs"][0]["scheduler"] == "default"
    (tmp_path / "other.json").write_text('{"a": 1}')
    with pytest.raises(BenchError, match="not a bench result"):
        report.read_json(tmp_path / "other.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(BenchError, match="is not JSON"):
        report.read_json(tmp_path / "broken.json")


# ---- settings, profiles and the command line -------------------------------------------------------------


def test_names_parse_and_unknown_ones_are_refused():
    assert parse_names("Linear, star,linear", TOPOLOGIES, "topology") == ("linear", "star")
    assert parse_names("planned,resource-aware", SCHEDULERS, "scheduler") == ("planned", "resource_aware")
    assert parse_names(None, TOPOLOGIES, "topology") == TOPOLOGIES
    with pytest.raises(BenchError, match="unknown scheduler 'fifo'"):
        parse_names("planned,fifo", SCHEDULERS, "scheduler")
    with pytest.raises(BenchError, match="no topology given"):
        parse_names(" , ", TOPOLOGIES, "topology")
    assert parse_names("rolling_count", KNOWN_TOPOLOGIES, "topology") == ("rolling_count",)


@pytest.mark.parametrize("kw, message", [
    ({"window_s": 10.0}, "too short: Nimbus' counts move every 10 s"),
    ({"window_s": float("nan")}, "--window must be a number of seconds"),
    ({"warmup_s": -1.0}, "--warmup must be a number of seconds of at least 0"),
    ({"settle_max_s": -1.0}, "--settle-max must be a number of seconds of at least 0"),
    ({"max_spout_pending": 0}, "--max-spout-pending must be a whole number of at least 1"),
    ({"schedulers": ()}, "no scheduler to run"),
])
def test_settings_refuse_what_cannot_measure(tmp_path, kw, message):
    with pytest.raises(BenchError, match=message):
        settings(tmp_path, **kw)


def test_profile_sets_load_from_files_and_say_what_is_missing(tmp_path):
    path = tmp_path / "measured.json"
    path.write_text(profile_set("measured").model_dump_json())
    loaded, where = load_profile_set(str(path))
    assert loaded.name == "measured" and where == path and len(loaded.entries) == 12
    only_small = ProfileSet(name="x", entries=[e for e in loaded.entries if e.machine_type == "small"])
    assert missing_pairs(only_small, {"spout"}, {"small", "large"}) == ["spout on large"]
    with pytest.raises(BenchError, match="lacks spout on large"):
        require_pairs(only_small, {"spout"}, {"small", "large"}, "test")
    with pytest.raises(BenchError, match="no profile set 'no-such-set'"):
        load_profile_set("no-such-set")
    (tmp_path / "bad.json").write_text('{"entries": [{"profile": "spout", "machine_type": "small", "e": -1}]}')
    with pytest.raises(BenchError, match="bad.json"):
        load_profile_set(str(tmp_path / "bad.json"))


@pytest.mark.parametrize("args, message", [
    (["bench", "--window", "-5"], "--window must be a number of seconds of at least 0"),
    (["bench", "--window", "12"], "too short"),
    (["bench", "--schedulers", "planned,fifo"], "unknown scheduler 'fifo'"),
    (["bench", "--topologies", "ring"], "unknown topology 'ring'"),
    (["bench", "--report", "/nonexistent/bench.json"], "cannot read the bench result"),
])
def test_the_command_refuses_bad_input_with_one_sentence(args, message):
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "error:" in result.output and message in result.output
    assert "Traceback" not in result.output


def test_the_command_prints_a_recorded_result(tmp_path, linear_plan):
    path = report.write_json(recorded_result(linear_plan), tmp_path / "bench.json")
    result = runner.invoke(app, ["bench", "--report", str(path)])
    assert result.exit_code == 0, result.output
    assert "targets" in result.output and (tmp_path / "throughput.png").is_file()


def test_ras_fallback_scales_every_components_points_once(tmp_path, linear_plan):
    specs = run_specs(settings(tmp_path), lookup("linear"), linear_plan, profile_set().entries, 3, "small", 0.2,
                      "http://127.0.0.1:1", "test-profiles")
    ras = next(s for s in specs if s.scheduler == "resource_aware")
    assert ras.fallback_scales and all(0 < f < 1 for f in ras.fallback_scales)
    smaller = ras.scaled(0.8)
    for component, extra in ras.component_conf.items():
        assert smaller.component_conf[component][CPU_POINTS] == pytest.approx(extra[CPU_POINTS] * 0.8, abs=0.01)
    assert smaller.fallback_scales == () and "x0.8" in smaller.note and smaller.parallelism == ras.parallelism


def test_headline_puts_planned_against_each_baseline(linear_plan):
    data = recorded_result(linear_plan)
    [line] = report.headline_lines(data)
    planned = data["runs"][1]["measured"]["sink_throughput"]
    assert line.startswith(f"Linear: planned {planned:.1f} tuples/s") and "2.00x default" in line
    assert "resource_aware" not in line, "a failed baseline is left out"


def test_demo_simulate_is_the_planner_comparison():
    result = runner.invoke(app, ["demo", "--simulate"])
    assert result.exit_code == 0, result.output
    assert "linear-s1" in result.output and "LP bound" in result.output


def test_bench_with_an_unknown_profile_set_or_demo_with_a_bad_window_starts_nothing(tmp_path):
    result = runner.invoke(app, ["bench", "--profiles", "no-such-set", "--out", str(tmp_path / "bench")])
    assert result.exit_code == 1 and "error: no profile set 'no-such-set'" in result.output, result.output
    assert "--profile-now" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "bench").exists(), "nothing started"
    result = runner.invoke(app, ["demo", "--window", "3", "--out", str(tmp_path / "demo")])
    assert result.exit_code == 1 and "too short" in result.output
    assert not (tmp_path / "demo").exists(), "nothing started"


def test_a_pass_through_kind_profiled_only_as_a_sink_gets_alpha_one_where_it_feeds_others():
    measured_in_linear = profile_set().model_copy(update={"entries": [
        e.model_copy(update={"alpha": 0.0}) if e.profile == "highCompute" else e for e in profile_set().entries]})
    same, notes = fill_pass_through_alphas(measured_in_linear, ["linear"])
    assert same is measured_in_linear and notes == [], "in Linear high is a sink: alpha 0 is right"
    adjusted, notes = fill_pass_through_alphas(measured_in_linear, ["linear", "star"])
    assert {e.alpha for e in adjusted.entries if e.profile == "highCompute"} == {1.0}
    assert [e.e for e in adjusted.entries] == [e.e for e in measured_in_linear.entries]
    assert len(notes) == 1 and notes[0].startswith("highCompute") and adjusted.source["bench_adjustments"] == notes


def test_a_kind_of_unknown_alpha_that_feeds_others_is_refused():
    kinds = lookup("rolling_count").profiles().values()
    entries = [ProfileEntry(profile=k, machine_type="small", e=0.01, alpha=0.0) for k in kinds]
    with pytest.raises(BenchError, match="says splitSentence emits nothing"):
        fill_pass_through_alphas(ProfileSet(name="x", entries=entries), ["rolling_count"])
