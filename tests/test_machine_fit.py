"""``benchmarks/machine_fit.py``: a profile set fitted to whole machines of stored bench runs."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from benchmarks.machine_fit import ALL_TYPES, MachineObservation, errors, fit, main, observations, profile_set
from planner.model import ProfileSet
from planner.profiles import machine_base_load

REPO = Path(__file__).resolve().parents[1]
BENCHES = REPO / "tests/fixtures/benches"  # two stored benches of Storm's default-naive placements, trimmed to what is read
SETTLE_1, SETTLE_2 = BENCHES / "star-bench-settle-1.json", BENCHES / "star-bench-settle-2.json"
PROFILES = REPO / "profiles/default-cluster.json"
CORES = {"small": 0.2, "medium": 0.4, "large": 0.8}


def machine(machine_type: str, executors: int, **tuples_per_s: float) -> MachineObservation:
    """A machine whose CPU is exactly B + 9 ms/s per executor + 15 ms per high tuple + 5 per low (core ms)."""
    base = {"small": 40.0, "medium": 60.0, "large": 90.0}[machine_type]
    cpu = base + 9.0 * executors + 15.0 * tuples_per_s.get("high", 0.0) + 5.0 * tuples_per_s.get("low", 0.0)
    return MachineObservation(bench="b", run="r", machine_type=machine_type, cores=CORES[machine_type], cpu_ms_per_s=cpu,
                              utilization=cpu / (CORES[machine_type] * 10.0), executors=executors,
                              tuples_per_s=tuples_per_s)


SYNTHETIC = [machine(t, n, high=h, low=lo) for t in CORES for n, h, lo in ((1, 2.0, 0.0), (3, 1.0, 6.0), (2, 4.0, 3.0),
                                                                            (5, 0.5, 1.0), (4, 3.0, 8.0))]


def test_the_fit_gives_back_the_costs_the_machines_were_made_of():
    fitted = fit(SYNTHETIC)
    assert fitted.base_ms_per_s == pytest.approx({"small": 40.0, "medium": 60.0, "large": 90.0})
    assert fitted.executor_ms_per_s == pytest.approx({ALL_TYPES: 9.0})
    assert fitted.tuple_ms == pytest.approx({("high", ALL_TYPES): 15.0, ("low", ALL_TYPES): 5.0})
    assert fitted.rms_ms_per_s == pytest.approx(0.0, abs=1e-6) and fitted.observations == 15
    per_type = fit(SYNTHETIC, per_type=True)
    assert per_type.tuple_ms[("high", "small")] == pytest.approx(15.0) and per_type.executor_cost("large") == pytest.approx(9.0)


def test_no_cost_is_fitted_below_zero():
    """A machine that used less than its base load would pull a cost negative; the fit holds it at 0."""
    odd = [*SYNTHETIC, MachineObservation("b", "r", "small", 0.2, 5.0, 2.5, 30, {"low": 40.0})]
    fitted = fit(odd)
    assert min([*fitted.base_ms_per_s.values(), *fitted.executor_ms_per_s.values(), *fitted.tuple_ms.values()]) >= 0.0


def test_nothing_to_fit_is_said():
    with pytest.raises(ValueError, match="no machine with a worker"):
        fit([])


def test_the_set_holds_the_fit_in_the_models_units():
    """e in seconds of the machine per tuple (core ms / 1000 / cores), idle_met and the base load in percent of it."""
    template = ProfileSet.model_validate_json(PROFILES.read_text())
    fitted = fit([machine(t, n, highCompute=h, lowCompute=lo, midCompute=m, spout=s) for t in CORES
                  for n, h, lo, m, s in ((1, 2.0, 0.0, 1.0, 3.0), (3, 1.0, 6.0, 2.0, 1.0), (2, 4.0, 3.0, 0.0, 2.0),
                                         (5, 0.5, 1.0, 3.0, 5.0), (4, 3.0, 8.0, 1.5, 0.5), (2, 1.5, 2.0, 4.0, 4.0))])
    fitted_set = profile_set(fitted, template, CORES, "fitted")
    small_high = next(e for e in fitted_set.entries if (e.profile, e.machine_type) == ("highCompute", "small"))
    assert small_high.e == pytest.approx(fitted.tuple_cost("highCompute", "small") / 1000 / 0.2, rel=1e-4)
    assert small_high.met == 0.0 and small_high.idle_met == pytest.approx(fitted.executor_cost("small") / 2.0, abs=1e-3)
    assert machine_base_load(fitted_set) == pytest.approx({t: fitted.base_ms_per_s[t] / (CORES[t] * 10) for t in CORES},
                                                          abs=1e-3)
    assert small_high.alpha == next(e.alpha for e in template.entries if (e.profile, e.machine_type) == ("highCompute", "small"))
    assert fitted_set.source["machine_fit"]["observations"] == fitted.observations


def test_a_benchs_machines_are_observed_with_their_executors_and_rates():
    """Linear under default-naive (bench-settle-2): one executor of everything and an acker on each machine."""
    bench = json.loads(SETTLE_2.read_text())
    found = [o for o in observations(bench, "settle-2") if o.run == "linear-default-naive"]
    run = next(r for r in bench["runs"] if r["topology"] == "linear" and r["scheduler"] == "default-naive")
    assert len(found) == 3 and all(o.executors == 5 for o in found)
    high = next(c["per_second"] for c in run["components"] if c["component"] == "high")
    assert all(o.tuples_per_s["highCompute"] == pytest.approx(high / 3) for o in found)
    # where a bench kept each executor's own rate, that rate goes to its machine
    with_executors = copy.deepcopy(bench)
    run = next(r for r in with_executors["runs"] if r["topology"] == "linear" and r["scheduler"] == "default-naive")
    run["executors"] = [{"component": "high", "task": 1, "machine": "small-1", "per_second": 1.0},
                        {"component": "high", "task": 2, "machine": "large-1", "per_second": 9.0}]
    found = {o.machine_type: o for o in observations(with_executors, "x") if o.run == "linear-default-naive"}
    assert found["small"].tuples_per_s == {"highCompute": 1.0} and found["large"].tuples_per_s == {"highCompute": 9.0}


def test_a_bench_is_predicted_with_a_set_fitted_to_another(tmp_path):
    out, report = tmp_path / "fitted.json", tmp_path / "report.txt"
    assert main([str(SETTLE_1), str(SETTLE_2), "--out", str(out), "--cross-validate", "--report", str(report)]) == 0
    fitted_set = ProfileSet.model_validate_json(out.read_text())
    assert fitted_set.name == "machine-fit" and fitted_set.source["machine_fit"]["benches"]
    assert all(e > -1.0 for _, _, e in errors(json.loads(SETTLE_2.read_text()), fitted_set))
    text = " ".join(report.read_text().split())
    assert "fitted to the others" in text and "every single run" in text


def test_bad_input_is_one_sentence(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(SystemExit):
        main([str(bad)])
    assert "cannot read the template" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"runs": []}))
    with pytest.raises(SystemExit):
        main([str(empty)])
    assert "nothing to fit" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(SETTLE_2), "--cross-validate"])
    assert "two benches or more" in capsys.readouterr().err


def test_the_slowest_bolt_executor_is_the_rate_the_placement_kept_up_with(tmp_path):
    """``benchmarks/slowest_executor.py``: each bolt executor's rate over its share of the flow per unit R."""
    from benchmarks.slowest_executor import kept_up, main as slowest_main

    bench = json.loads(SETTLE_2.read_text())
    run = next(r for r in bench["runs"] if r["topology"] == "linear" and r["scheduler"] == "default-naive")
    run["executors"] = [{"component": "high", "task": 1, "machine": "small-1", "per_second": 2.0},
                        {"component": "high", "task": 2, "machine": "large-1", "per_second": 4.0},
                        {"component": "spout", "task": 3, "machine": "large-1", "per_second": 9.0}]
    found = kept_up(run, {"high": 1 / 3})
    assert [(k.machine, k.input_rate) for k in found] == [("small-1", pytest.approx(6.0)), ("large-1", pytest.approx(12.0))]
    path, out = tmp_path / "bench.json", tmp_path / "slowest.txt"
    path.write_text(json.dumps(bench))
    assert slowest_main([str(path), "--out", str(out)]) == 0
    text = " ".join(out.read_text().split())
    assert "small-1" in text and " 6.00 " in text and "slowest executor's R: 0/1 runs within 15%" in text
    assert slowest_main([str(SETTLE_1), "--out", str(out)]) == 0
    assert "no run keeps its executors' rates" in " ".join(out.read_text().split())
