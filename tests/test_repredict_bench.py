"""``bench/repredict.py``: stored bench runs predicted again offline, and each machine's charge at the rate
a run measured (issue 18: where the model is off, machine by machine)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from rich.console import Console

from bench.profiles import fill_pass_through_alphas
from bench.repredict import AT_QUOTA, charged_at_measured_rate, main, predict
from cluster.spec import ClusterSpec
from planner.model import ProfileSet

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "tests/fixtures/benches/star-bench-settle-2.json"
PROFILES = REPO / "profiles/default-cluster.json"


@pytest.fixture(scope="module")
def stored():
    bench = json.loads(BENCH.read_text())
    profile_set, _ = fill_pass_through_alphas(ProfileSet.model_validate_json(PROFILES.read_text()),
                                              sorted({r["topology"] for r in bench["runs"]}))
    return bench, profile_set, ClusterSpec.model_validate(bench["cluster"]["spec"])


def test_a_run_predicted_again_with_its_own_profiles_is_its_stored_prediction(stored):
    bench, profile_set, spec = stored
    for run in bench["runs"]:
        assert predict(run, profile_set, spec).input_rate == pytest.approx(run["predicted"]["input_rate"], rel=1e-3)


def test_the_charge_at_the_predicted_rate_is_the_stored_predicted_utilization(stored):
    """At the rate the bench predicted, each machine is charged what the bench stored (base load in)."""
    bench, profile_set, spec = stored
    for run in bench["runs"]:
        at_prediction = copy.deepcopy(run)
        at_prediction["measured"]["input_rate"] = run["predicted"]["input_rate"]
        charged = charged_at_measured_rate(at_prediction, profile_set, spec)
        assert charged == pytest.approx({m["machine"]: m["predicted_utilization"] for m in run["machines"]}, abs=0.01)
        assert max(charged.values()) == pytest.approx(100.0, abs=0.01)


def test_the_machines_table_sets_each_measured_cpu_against_its_charge(tmp_path):
    out = tmp_path / "repredicted.txt"
    assert main([str(BENCH), "--profiles", str(PROFILES), "--machines", "--out", str(out)]) == 0
    text = out.read_text()
    assert "machine CPU, measured / charged" in " ".join(text.split())
    # Linear under default-naive measured 10.64 tuples/s against 10.88: small-1 at its quota, charged a little less.
    assert "99.8 / 98.8 (+1.1, at quota)" in text
    assert f"below {AT_QUOTA:g} % of its quota: measured - charged at the measured R" in text


def test_a_machines_work_is_its_bolts_rates_times_their_cpu_ms(stored):
    """Linear under default-naive: one executor of each component per machine, each a third of its component's rate."""
    from benchmarks.machine_overhead import work_ms_per_s

    bench, _, _ = stored
    run = next(r for r in bench["runs"] if r["topology"] == "linear" and r["scheduler"] == "default-naive")
    rate = {c["component"]: c["per_second"] for c in run["components"]}
    work, tuples = work_ms_per_s(run)
    expected = (rate["low"] * 5.0 + rate["mid"] * 9.0 + rate["high"] * 16.5) / 3
    assert work == pytest.approx({"small-1": expected, "medium-1": expected, "large-1": expected})
    assert tuples["small-1"] == pytest.approx(sum(rate.values()) / 3)


def test_the_overhead_is_the_machine_cpu_beyond_the_work_measured_and_charged(stored, tmp_path):
    from benchmarks.machine_overhead import main, overheads

    bench, _, _ = stored
    rows = overheads(BENCH, ProfileSet.model_validate_json(PROFILES.read_text()))
    assert {(r.run, r.machine) for r in rows} == {(f"{x['topology']}-{x['scheduler']}", m["machine"])
                                                  for x in bench["runs"] for m in x["machines"]}
    small = next(r for r in rows if r.run == "linear-default-naive" and r.machine == "small-1")
    assert small.at_quota and small.measured_ms_per_s == pytest.approx(99.84 * 2.0 - small.work_ms_per_s, abs=0.1)
    assert 0 < small.measured_ms_per_s < small.measured_ms_per_s + small.work_ms_per_s
    out = tmp_path / "overhead.txt"
    assert main([str(BENCH), "--runs", "--out", str(out)]) == 0
    assert "measured - charged overhead" in out.read_text()


def test_one_placement_measured_in_several_benches_shows_whether_any_prediction_can_hold_them_all():
    """A prediction is one rate per placement: measured rates spread over more than 1.15 / 0.85 cannot all be within
    15 % of it, whatever the model."""
    from bench.repredict import placement_key, repeated, spread_bound

    assert spread_bound() == pytest.approx(1.15 / 0.85) and spread_bound(0.05) == pytest.approx(1.05 / 0.95)
    bench = json.loads(BENCH.read_text())
    run = bench["runs"][0]
    shuffled = copy.deepcopy(run)
    shuffled["placement"]["executors"] = {c: list(reversed(m)) for c, m in reversed(run["placement"]["executors"].items())}
    assert placement_key(shuffled) == placement_key(run), "executor order does not make another placement"
    key = placement_key(run)
    table = repeated({key: [6.62, 10.02], (run["topology"], "planned", ()): [21.95, 24.08], ("x", "y", ()): [1.0]})
    console = Console(record=True, width=200)
    console.print(table)
    text = console.export_text()
    assert "1.514" in text and "1.097" in text and "x-y" not in text, "a placement measured once is left out"
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert "no" in rows[0].split("│")[5] and "yes" in rows[1].split("│")[5]
