"""The machine-loss scenario's arithmetic over Nimbus readings, its settings, report and command line (no cluster)."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bench import machineloss, machineloss_report
from bench.errors import BenchError
from cluster.spec import load_spec
from hetsched.cli import _register, app
from observe.counts import ExecutorCounts, TopologyCounts
from observe.rates import CountSample


def _spout(host: str, emitted: int, acked: int, failed: int = 0, port: int = 6700, task: int = 1) -> ExecutorCounts:
    return ExecutorCounts("spout", task, task, host, port, 10, True, emitted, emitted, 0, acked, failed)


def _bolt(host: str, executed: int, task: int = 2) -> ExecutorCounts:
    return ExecutorCounts("high", task, task, host, 6701, 10, False, 0, 0, executed, executed, 0)


def _sample(at: float, *executors: ExecutorCounts) -> CountSample:
    return CountSample(at, TopologyCounts("", {e.task_start: e for e in executors}, {}))


def test_a_restarted_spout_counts_from_zero_and_never_makes_a_negative_rate():
    samples = [_sample(0, _spout("large", 1000, 990)), _sample(10, _spout("large", 1100, 1090)),
               # the spout's machine died: it runs again elsewhere, its counts start over
               _sample(20, _spout("small", 30, 20, failed=5, port=6701)), _sample(30, _spout("small", 80, 70, 5, 6701))]
    steps = machineloss.intervals(samples)
    assert [s.emitted for s in steps] == [100, 30, 50]
    assert [s.failed for s in steps] == [0, 5, 0]
    assert machineloss.rate_between(steps, 0, 30, 1) == pytest.approx(180 / 30)
    assert all(rate >= 0 for _, rate in machineloss.rate_series(steps, 0, 1))


def test_the_rate_series_is_the_trailing_rate_every_step_and_recovery_is_when_it_reaches_the_share():
    samples = [_sample(t, _spout("m", 10 * t, 10 * t)) for t in range(0, 41)]  # 10 tuples/s throughout
    series = machineloss.rate_series(machineloss.intervals(samples), 0, 1)
    assert series[0] == (20.0, 10.0) and series[-1] == (40.0, 10.0)
    assert machineloss.first_at(series, 22, 9.0) == 25.0
    assert machineloss.first_at(series, 22, 11.0) is None


def test_noticed_replaced_and_moved_back_read_where_the_executors_are():
    samples = [_sample(0, _spout("big", 1, 1), _bolt("big", 1)),
               _sample(5, _spout("big", 2, 2), _bolt("big", 2)),          # killed at 4: Nimbus has not noticed
               _sample(9, _spout("", 0, 0), _bolt("small", 3)),            # noticed: the spout waits for a slot
               _sample(12, _spout("small", 0, 0, port=6702), _bolt("small", 4)),  # re-placed
               _sample(30, _spout("small", 9, 9, port=6702), _bolt("big", 1))]    # returned at 20, moved back
    assert machineloss.noticed(samples, 4, "big") == 9
    assert machineloss.replaced(samples, 4, "big", 2) == 12
    # a scheduler that leaves lost executors unassigned: Nimbus lists only the spout, on a machine left
    assert machineloss.replaced([samples[0], _sample(12, _spout("small", 0, 0, port=6702))], 4, "big", 2) is None
    assert machineloss.moved_back(samples, 20, "big") == 30
    assert machineloss.moved_back(samples[:4], 20, "big") is None


def test_in_flight_is_what_the_live_spouts_emitted_without_an_ack_or_a_fail():
    counts = TopologyCounts("", {1: _spout("a", 100, 90, 4), 3: _spout("b", 50, 50, 0, task=3)}, {})
    assert machineloss.in_flight(counts) == 6


def test_the_summary_gives_median_and_range_of_finished_runs_only():
    runs = [{"scheduler": "planned", "rate_down": 10.0, "failed_after": 0},
            {"scheduler": "planned", "rate_down": 14.0, "failed_after": 0},
            {"scheduler": "planned", "rate_down": 99.0, "error": "cut short"},
            {"scheduler": "default", "rate_down": 5.0}]
    found = machineloss.summary(runs)
    assert found["planned"]["runs"] == 2
    assert found["planned"]["rate_down"] == {"median": 12.0, "min": 10.0, "max": 14.0, "n": 2}
    assert found["default"]["failed_after"] is None


def test_the_default_victim_is_the_largest_machine_of_the_spec():
    assert machineloss.default_victim(load_spec()) == "large-1"


@pytest.mark.parametrize("kwargs, message", [
    ({"schedulers": ("sps",)}, "runs planned, planned-contingency, default, resource_aware"),
    ({"repeats": 0}, "--repeats must be a whole number from 1 to 20"),
    ({"down_s": 30.0}, "--down must be at least 70 s"),
    ({"window_s": 5.0}, "--window must be at least 20 s"),
])
def test_bad_settings_are_one_sentence(tmp_path, kwargs, message):
    with pytest.raises(BenchError, match=message):
        machineloss.ScenarioSettings(out_dir=tmp_path, **kwargs)


def test_an_unknown_victim_is_refused_before_anything_starts(tmp_path):
    with pytest.raises(BenchError, match="--victim 'huge-9' is no machine of the cluster; its machines are"):
        machineloss.run_scenario(machineloss.ScenarioSettings(out_dir=tmp_path / "results", victim="huge-9"))
    assert not (tmp_path / "results").exists(), "a refused run leaves no results folder behind"


def _result(tmp_path) -> dict:
    series = [(float(t), 10.0 if t < 60 or t > 90 else 4.0) for t in range(20, 200, 5)]
    run = {"scheduler": "planned", "round": 1, "rate_before": 10.0, "predicted_before": 10.5, "rate_down": 4.0,
           "predicted_down": 4.2, "smaller_cluster_plan": 4.5, "noticed_s": 12.0, "replaced_s": 14.0,
           "recovered_s": 30.0, "rate_after": 10.1, "predicted_after": 10.5, "moved_back_s": 40.0, "failed_down": 120,
           "failed_after": 0, "gave_up": 0, "in_flight_end": 0, "killed_at_s": 60.0, "returned_at_s": 110.0,
           "series": series, "error": None}
    data = {"scenario": "machine-loss", "victim": "large-1", "runs": [run], "summary": {}}
    (tmp_path / machineloss.RESULT_FILE).write_text(json.dumps(data))
    return data


def test_the_report_prints_tables_and_draws_the_plot(tmp_path):
    data = _result(tmp_path)
    assert machineloss_report.runs_table(data).row_count == 1
    assert machineloss_report.summary_table(data).row_count == 1
    line = machineloss_report.headline_lines(data)[0]
    assert "4.00 on the smaller cluster (predicted 4.20)" in line and "moved back after 40 s" in line
    drawn = machineloss_report.plot(data, tmp_path)
    assert drawn == [tmp_path / machineloss_report.SERIES_PLOT] and drawn[0].stat().st_size > 10_000


def test_the_command_line_prints_a_result_again_and_refuses_a_foreign_file(tmp_path):
    _register()
    _result(tmp_path)
    shown = CliRunner().invoke(app, ["bench", "--scenario", "machine-loss", "--report", str(tmp_path)])
    assert shown.exit_code == 0, shown.output
    assert "machine-loss: median (min-max) per scheduler" in shown.output
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"scenario": "multi-tenant"}))
    refused = CliRunner().invoke(app, ["bench", "--scenario", "machine-loss", "--report", str(other)])
    assert refused.exit_code == 1 and "is not a machine-loss scenario result" in refused.output


def test_a_run_that_left_executors_unplaced_while_down_was_never_re_placed():
    run = {"scheduler": "resource_aware", "replaced_s": 16.5, "recovered_s": 21.4,
           "placements": {"before": {"spout": ["a"], "high": ["big", "a"], "mid": ["big"]}, "down": {"spout": ["a"],
                                                                                               "high": ["a"]}}}
    assert machineloss.unplaced_while_down(run) == 2
    assert machineloss.summary([run])["resource_aware"]["replaced_s"] is None
    assert machineloss.summary([run])["resource_aware"]["recovered_s"] is None
    table = machineloss_report.runs_table({"runs": [run]})
    assert "never (2 unplaced)" in str(table.columns[8]._cells)


@pytest.mark.parametrize("scenario", [["--scenario", "machine-loss"], ["--scenario", "multi-tenant"], []])
def test_a_spec_that_does_not_exist_is_one_sentence_and_leaves_no_results_folder(tmp_path, scenario):
    _register()
    out = tmp_path / "results"
    refused = CliRunner().invoke(app, ["bench", *scenario, "--spec", str(tmp_path / "none.yaml"), "--out", str(out)])
    assert refused.exit_code == 1, refused.output
    assert f"The cluster spec {tmp_path / 'none.yaml'} does not exist." in refused.output
    assert "Traceback" not in refused.output and not out.exists()
