"""The idle-executor cost of benchmarks/idle_executor_model.py (issue 18, part 0): its linear form against the
per-instance formula, the closed form on a one-machine topology by hand, and the data it derives ``c`` from."""
from __future__ import annotations

import json

import pytest

from benchmarks.idle_executor_model import (
    Variant,
    error_summary,
    idle_entries,
    idle_fixed_pct,
    instance_idle_pct,
    median_by_type,
    predict,
    saturated_thread_levels,
    step_thread_levels,
)
from cluster.spec import ClusterSpec
from planner.api import evaluate_assignments
from planner.model import (
    Cluster,
    Component,
    InstanceAssignment,
    Machine,
    MachineType,
    PlanOptions,
    ProfileEntry,
    ProfileSet,
    Stream,
    Topology,
)

CORES = {"small": 0.2, "large": 0.8}
ENTRIES = [
    ProfileEntry(profile="spout", machine_type="small", e=0.005, met=23.9),
    ProfileEntry(profile="work", machine_type="small", e=0.08, met=3.8),
    ProfileEntry(profile="work", machine_type="large", e=0.02, met=0.5),
]


@pytest.mark.parametrize("busy_scaled, of_machine", [(True, False), (True, True), (False, False)])
@pytest.mark.parametrize("rate", [0.0, 0.7, 3.0])
def test_the_linear_entries_charge_each_instance_its_idle_cost(busy_scaled, of_machine, rate):
    c = {"small": 1.1, "large": 0.6}
    charged = {(e.profile, e.machine_type): e for e in idle_entries(ENTRIES, c, CORES, {"spout"}, busy_scaled, of_machine)}
    for entry in ENTRIES:
        k = CORES[entry.machine_type]
        new = charged[(entry.profile, entry.machine_type)]
        met = 0.0 if entry.profile == "spout" else entry.met
        idle = instance_idle_pct(c[entry.machine_type], k, entry.e, rate, of_machine) if busy_scaled else c[entry.machine_type] / k
        assert new.met + 100 * new.e * rate == pytest.approx(met + 100 * entry.e * rate + idle)


def test_net_of_met_charges_only_what_a_met_lacks_of_the_idle_thread():
    charged = {(e.profile, e.machine_type): e.met
               for e in idle_entries(ENTRIES, {"small": 1.1, "large": 1.1}, CORES, {"spout"}, net_of_met=True)}
    assert charged == {("spout", "small"): pytest.approx(5.5), ("work", "small"): pytest.approx(5.5),
                       ("work", "large"): pytest.approx(1.375)}
    high_met = [e.model_copy(update={"met": 9.0}) for e in ENTRIES if e.profile == "work" and e.machine_type == "small"]
    assert idle_entries(high_met, {"small": 1.1}, CORES, set(), net_of_met=True)[0].met == 9.0


def test_an_idle_thread_costs_c_percent_of_a_core_and_a_busy_one_less():
    assert instance_idle_pct(1.1, 0.2, e=0.08, rate=0.0) == pytest.approx(5.5)  # 1.1% of a core on a 0.2-core machine
    assert instance_idle_pct(1.1, 0.2, e=0.08, rate=2.5) == pytest.approx(5.5 * (1 - 0.08 * 2.5 * 0.2))
    assert instance_idle_pct(1.1, 2.0, e=0.5, rate=10.0) == 0.0  # busy is capped at one core
    assert instance_idle_pct(1.1, 0.2, e=0.08, rate=2.5, of_machine=True) == pytest.approx(5.5 * (1 - 0.08 * 2.5))


def test_no_idle_cost_predicts_as_the_bench_does_with_spouts_held():
    topology = Topology(name="t", components=[Component(id="s", kind="spout", profile="spout"),
                                              Component(id="b", kind="bolt", profile="work")],
                        streams=[Stream(**{"from": "s", "to": "b"})])
    cluster = Cluster(machine_types=[MachineType(name="small", capacity=74.0, cores=0.2)],
                      machines=[Machine(id="small-1", type="small")])
    small = [e for e in ENTRIES if e.machine_type == "small"]
    assignments = [InstanceAssignment(component="s", machine="small-1")] + 2 * [InstanceAssignment(component="b", machine="small-1")]
    held = evaluate_assignments(topology, cluster, small, assignments, PlanOptions(spouts_held=True))
    zero = evaluate_assignments(topology, cluster, idle_entries(small, {}, CORES, {"spout"}), assignments)
    assert zero.input_rate == pytest.approx(held.input_rate)
    # with c: the machine's limit by hand, three threads at c / k each, every e scaled by (1 - c / 100)
    c = 1.1
    charged = evaluate_assignments(topology, cluster, idle_entries(small, {"small": c}, CORES, {"spout"}), assignments)
    fixed = 2 * 3.8 + 3 * c / 0.2
    per_rate = (100 * 0.005 + 2 * 100 * 0.08 / 2) * (1 - c / 100)
    assert charged.input_rate == pytest.approx((74.0 - fixed) / per_rate)
    assert charged.input_rate < held.input_rate


def test_ackers_are_charged_and_the_base_loads_own_thread_credited():
    assert idle_fixed_pct(1.1, 0.4, ackers=3, in_base=1) == pytest.approx(2 * 1.1 / 0.4)
    assert idle_fixed_pct(1.1, 0.4, ackers=0, in_base=1) == pytest.approx(-1.1 / 0.4)
    assert idle_fixed_pct(0.4, 0.2, ackers=1, in_base=1, credit_core_pct=1.0) == pytest.approx((0.4 - 1.0) / 0.2)


def test_the_saturated_level_takes_only_the_component_on_busy_machines():
    runs = [{"machines": [{"machine": "small-1", "measured_pct": 99.7}, {"machine": "large-1", "measured_pct": 40.0}],
             "executors": [
                 {"component": "high", "machine": "small-1", "machine_type": "small", "thread_pct": 1.1, "cores": 0.2},
                 {"component": "high", "machine": "large-1", "machine_type": "large", "thread_pct": 1.7, "cores": 0.8},
                 {"component": "low", "machine": "small-1", "machine_type": "small", "thread_pct": 9.0, "cores": 0.2},
                 {"component": "high", "machine": "small-1", "machine_type": "small", "thread_pct": 1.9, "cores": 0.2}]}]
    levels = saturated_thread_levels(runs)
    assert [t for t, _ in levels] == ["small", "small"]
    assert median_by_type(levels) == {"small": pytest.approx((0.22 + 0.38) / 2)}


def test_a_steps_thread_level_is_percent_of_a_core_over_the_step():
    def interval(t0, thread, cpu, task=1, profile="highCompute"):
        return {"profile": profile, "machine_type": "large", "task": task, "t0": t0, "t1": t0 + 5, "dt": 5.0,
                "thread": thread, "cpu": cpu}

    rows = [interval(0, 0.06, 0.2), interval(5, 0.05, 0.3), interval(10, 0.5, 1.0),  # the last one outside the step
            interval(0, 0.5, 0.5, profile="lowCompute")]
    assert step_thread_levels(rows, 0, 10) == [("large", pytest.approx(1.1), pytest.approx(5.0))]


def test_the_summary_counts_runs_within_the_issues_bounds():
    summary = error_summary([("default", -0.2), ("planned", 0.04), ("planned", -0.06), ("resource_aware", 0.1)])
    assert summary["max_abs"] == pytest.approx(0.2)
    assert (summary["within"], summary["runs"]) == (3, 4)
    assert summary["planned_max_abs"] == pytest.approx(0.06)
    assert (summary["planned_within"], summary["planned"]) == (1, 2)


def test_without_idle_cost_the_script_predicts_every_stored_run_as_the_bench_did():
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    bench = json.loads((repo / "docs/results/measurements/issue18/bench-spouts-held-20261126/bench.json").read_text())
    profile_set = ProfileSet.model_validate_json((repo / "profiles/default-cluster.json").read_text())
    from bench.profiles import fill_pass_through_alphas

    profile_set, _ = fill_pass_through_alphas(profile_set, ["linear", "diamond", "star"])
    spec = ClusterSpec.model_validate(bench["cluster"]["spec"])
    for run in bench["runs"]:
        assert predict(run, profile_set, spec, Variant("now")).input_rate == pytest.approx(run["predicted"]["input_rate"], rel=1e-3)
