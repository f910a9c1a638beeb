"""The profiling collector's pure parts: experiment design, pinning plans, CPU attribution, rate steps, records."""
from __future__ import annotations

import json
import time
from collections import Counter

import pytest
from typer.testing import CliRunner

from planner.api import make_plan
from spark_profiling.collector.attribution import attribute
from spark_profiling.collector.design import ACKER, Round, ClusterMachine, design
from spark_profiling.collector.pinning import check_pinned, pin_request
from spark_profiling.collector.recorder import RecordWriter, TaskSample
from spark_profiling.collector.steps import (
    SATURATED_CPU_PERCENT, StepObservation, fractions, next_rate, predicted_capacity, refined_capacity, saturation,
)
from spark_profiling.errors import ProfilingError
from spark_profiling.records import FIELDS
from topologies.catalog import lookup, planner_topology
from topologies.conf import DEFAULT_CPU_MS
from topologies.rate_control import RateFile, write_rate

MACHINES = [ClusterMachine("small-1", "small", 0.2), ClusterMachine("medium-1", "medium", 0.4),
            ClusterMachine("large-1", "large", 0.8)]


def linear():
    return planner_topology(lookup("linear"))


def test_bolts_take_three_rounds_and_spouts_three_of_their_own_measuring_every_pair_once():
    plan = design(linear(), MACHINES, cpu_ms=DEFAULT_CPU_MS)
    assert [r.idle_helpers for r in plan.rounds] == [False] * 3 + [True] * 3
    pairs = Counter(plan.pairs())
    kinds = {"spout", "lowCompute", "midCompute", "highCompute"}
    assert set(pairs) == {(k, t) for k in kinds for t in ("small", "medium", "large")}
    measured = Counter((plan.profiles[c], plan.machines[m].type) for r in plan.rounds for c, m in r.measured.items())
    assert all(n == 1 for n in measured.values()), measured
    for r in plan.rounds[:3]:
        assert r.components_on(r.measured["high"]) == ["high"], "highCompute runs alone in the bolts' rounds"
    for r in plan.rounds[3:]:
        assert list(r.measured) == ["spout"] and r.components_on(r.measured["spout"]) == ["spout"]


def test_each_round_keeps_a_component_apart_from_its_upstream():
    graph = linear()
    for r in design(graph, MACHINES).rounds:
        for s in graph.streams:
            assert r.placement[s.source] != r.placement[s.target], (r.index, s)
        assert r.system == {ACKER: r.placement["spout"]}, "the acker runs beside the spout"
        assert len(set(r.placement.values())) == 3, "each round uses every machine"


def test_one_pair_puts_the_other_components_on_other_machines():
    plan = design(linear(), MACHINES, kinds=["highCompute"], types=["small"], cpu_ms=DEFAULT_CPU_MS)
    (only,) = plan.rounds
    assert only.measured == {"high": "small-1"}
    assert only.components_on("small-1") == ["high"]
    assert plan.pairs() == [("highCompute", "small")]


def test_one_kind_on_every_type_takes_one_round_per_type():
    plan = design(linear(), MACHINES, kinds=["highCompute"])
    assert [r.measured for r in plan.rounds] == [{"high": "small-1"}, {"high": "medium-1"}, {"high": "large-1"}]
    for r in plan.rounds:
        assert r.components_on(r.measured["high"]) == ["high"]


@pytest.mark.parametrize("kinds, types, fault", [
    (["heavy"], None, "no kind 'heavy'"),
    (None, ["huge"], "no machine type 'huge'"),
])
def test_unknown_kinds_and_types_are_named(kinds, types, fault):
    with pytest.raises(ProfilingError, match=fault):
        design(linear(), MACHINES, kinds=kinds, types=types)


def test_the_planner_stores_exactly_the_pinned_placement():
    graph = linear()
    for plan in (design(graph, MACHINES), design(graph, MACHINES, kinds=["highCompute"])):
        for r in plan.rounds:
            request = pin_request(graph, r)
            made = make_plan(request.topology, request.cluster, request.profiles.entries, request.strategy,
                             request.options)
            check_pinned(made, r)
            assert {a.component: a.machine for a in made.assignments} == {**r.placement, **r.system}


def test_a_plan_that_does_not_pin_is_refused():
    graph = linear()
    r = design(graph, MACHINES).rounds[0]
    request = pin_request(graph, r)
    made = make_plan(request.topology, request.cluster, request.profiles.entries, request.strategy, request.options)
    moved = [a.model_copy(update={"machine": "small-1" if a.machine != "small-1" else "large-1"}) if a.component == "high"
             else a for a in made.assignments]
    with pytest.raises(ProfilingError, match="does not pin the components: high on"):
        check_pinned(made.model_copy(update={"assignments": moved}), r)


def test_a_task_alone_is_charged_its_whole_machine():
    assert attribute(2.0, {7: 1.2}, {7: 30}) == {7: 2.0}


def test_shared_machine_cpu_goes_by_tuples_moved_and_adds_up():
    shares = attribute(3.0, {1: 1.0, 2: 0.5}, {1: 30, 2: 10})
    assert shares[1] == pytest.approx(1.0 + 1.5 * 0.75)
    assert shares[2] == pytest.approx(0.5 + 1.5 * 0.25)
    assert sum(shares.values()) == pytest.approx(3.0)
    assert attribute(1.0, {1: 0.2, 2: 0.2}, {}) == pytest.approx({1: 0.5, 2: 0.5})


def test_steps_rise_to_past_the_saturating_rate():
    steps = fractions(5)
    assert steps == sorted(steps) and steps[-1] > 1.0 and len(steps) == 5
    rates = []
    for k in range(5):
        rates.append(next_rate(k, steps, 10.0, rates[-1] if rates else None))
    assert rates == sorted(rates) and rates[-1] >= 10.0
    assert next_rate(1, steps, 1.0, 50.0) > 50.0, "a step never offers less than the one before"
    with pytest.raises(ValueError):
        fractions(0)


def test_capacity_is_first_guessed_from_configured_cost_then_from_measured_lines():
    graph = linear()
    plan = design(graph, MACHINES, kinds=["highCompute"], types=["small"], cpu_ms=DEFAULT_CPU_MS)
    r = plan.rounds[0]
    guess = predicted_capacity(plan, r, DEFAULT_CPU_MS)
    assert 0 < guess < 0.2 / (DEFAULT_CPU_MS["highCompute"] / 1000), "small's 0.2 cores bound highCompute"
    # small-1 uses 20 % + 8 % per tuple/s: it fills up at (100 - 20) / 8 = 10 tuples/s
    history = [StepObservation(offered=x, delivered=x, handled={}, emitted={},
                               machine_cpu={"small-1": 20 + 8 * x, "large-1": 5 + 1 * x}) for x in (2.0, 5.0)]
    assert refined_capacity(plan, r, history, guess) == pytest.approx(10.0)


def test_saturation_says_which_machine_or_component_stopped_keeping_up():
    r = Round(index=1, placement={"spout": "large-1", "low": "large-1", "mid": "medium-1", "high": "small-1"},
              measured={"high": "small-1"})
    inputs = {"low": ["spout"], "mid": ["low"], "high": ["mid"]}
    calm = StepObservation(offered=10, delivered=10, handled={"spout": 10, "low": 10, "mid": 10, "high": 10},
                           emitted={"spout": 10, "low": 10, "mid": 10}, machine_cpu={"small-1": 60.0})
    assert saturation(calm, inputs, ["spout"], r) == []
    full = StepObservation(offered=20, delivered=15, handled={"spout": 15, "low": 15, "mid": 15, "high": 11},
                           emitted={"spout": 15, "low": 15, "mid": 15}, machine_cpu={"small-1": SATURATED_CPU_PERCENT + 1})
    reasons = saturation(full, inputs, ["spout"], r)
    assert any(reason.startswith("small-1 used") for reason in reasons)
    assert any("the spouts emitted 15.0 of the 20.0" in reason for reason in reasons)
    assert any(reason.startswith("high on small-1 executed 11.0 of the 15.0") for reason in reasons)


def test_records_have_every_required_field(tmp_path):
    path = tmp_path / "records.jsonl"
    with RecordWriter(path, "run-1") as writer:
        writer.write(TaskSample(
            ts=1.5, topology="t", component="high", profile="highCompute", task_id=3, pid=42, worker_id=None,
            machine="small-1", machine_type="small", machine_cores=0.2, rate_step=5.0, executed=10, emitted=0,
            cpu_seconds=0.4, machine_cpu_seconds=9.0, machine_quota_cores=0.2, process_cpu_seconds=0.2,
            cpu_basis="machine", round=1, step=2,
        ))
    (row,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(row.get(f.name) not in (None, "") for f in FIELDS if f.required)
    assert "worker_id" not in row, "an unknown optional field is left out, not null"
    assert row["run_id"] == "run-1" and row["cpu_basis"] == "machine"


def test_a_spout_rate_file_is_read_once_per_change(tmp_path):
    path = tmp_path / "rate.json"
    write_rate(path, 12.0)
    reader = RateFile(str(path), instances=3)
    assert reader.poll(100.0) == pytest.approx(4.0)
    assert reader.poll(101.0) is None, "unchanged file"
    time.sleep(0.01)
    write_rate(path, 0)
    assert reader.poll(100.2) is None, "not looked at again within half a second"
    assert reader.poll(102.0) == 0.0
    missing = RateFile(str(tmp_path / "none.json"), 1)
    assert missing.poll(0.0) is None


def test_a_null_rate_leaves_the_spout_unpaced(tmp_path):
    from topologies.rate_control import UNPACED

    path = tmp_path / "rate.json"
    write_rate(path, UNPACED)
    assert json.loads(path.read_text()) == {"rate": None}
    assert RateFile(str(path), instances=2).poll(0.0) == UNPACED


@pytest.mark.parametrize("args, fault", [
    (["--steps", "0"], "--steps must be from 1 to 50"),
    (["--steps", "a,b"], "neither a number of steps nor a list of rates"),
    (["--steps", "5,-1"], "above 0"),
    ([], "no local cluster is running"),
])
def test_profile_command_refuses_with_one_sentence(tmp_path, args, fault):
    from hetsched.cli import _register, app

    _register()
    result = CliRunner().invoke(app, ["profile", "linear", "--home", str(tmp_path / "nothing-here"), *args])
    assert result.exit_code == 1
    assert "error:" in result.output and fault in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_prediction_errors_are_summarised_per_machine_type():
    from planner.model import ProfileEntry
    from spark_profiling.collector.prediction import by_machine_type, point, predicted_cpu

    small = ProfileEntry(profile="highCompute", machine_type="small", e=0.08, met=20.0)
    large = ProfileEntry(profile="highCompute", machine_type="large", e=0.02, met=5.0)
    assert predicted_cpu(small, 5.0) == pytest.approx(60.0)
    points = [point(small, 5, 5.0, 50.0), point(small, 10, 9.0, 100.0), point(large, 20, 20.0, 45.0)]
    assert [p.error_points for p in points] == pytest.approx([10.0, -8.0, 0.0])
    per_type = {s.machine_type: s for s in by_machine_type(points)}
    assert per_type["small"].mean_abs_points == pytest.approx(9.0)
    assert per_type["small"].worst_abs_points == pytest.approx(10.0)
    assert per_type["small"].worst_ratio == pytest.approx(0.2)
    assert per_type["large"].accuracy == pytest.approx(1.0)
    assert per_type["all"].points == 3


def test_two_close_steps_do_not_throw_the_next_far_past_saturation():
    plan = design(linear(), MACHINES, kinds=["highCompute"], types=["small"], cpu_ms=DEFAULT_CPU_MS)
    r = plan.rounds[0]
    close = [StepObservation(offered=x, delivered=x, handled={}, emitted={}, machine_cpu={"small-1": y})
             for x, y in ((3.3, 75.0), (3.6, 74.0))]
    capacity = refined_capacity(plan, r, close, 13.0)
    assert capacity < 6.0, "the line through two nearly equal rates is not trusted"
    assert next_rate(2, fractions(5), 1000.0, 3.6) <= 3.6 * 2.5


def test_a_lag_with_every_machine_idle_is_a_queue_draining_not_saturation():
    r = Round(index=1, placement={"spout": "medium-1", "low": "small-1", "mid": "medium-1", "high": "large-1"},
              measured={})
    draining = StepObservation(offered=6, delivered=5.9, handled={"spout": 5.9, "low": 9.2, "mid": 6.6, "high": 9.8},
                               emitted={"spout": 5.9, "low": 9.2, "mid": 6.6},
                               machine_cpu={"small-1": 50.0, "medium-1": 37.0, "large-1": 28.0})
    assert saturation(draining, {"low": ["spout"], "mid": ["low"], "high": ["mid"]}, ["spout"], r) == []


def test_a_signal_stops_a_run_with_one_sentence():
    import os
    import signal

    from spark_profiling.collector.workflow import stop_on_signals

    with pytest.raises(ProfilingError, match="stopped by signal SIGTERM"):
        with stop_on_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL or callable(signal.getsignal(signal.SIGTERM))
