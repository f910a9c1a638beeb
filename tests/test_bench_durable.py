"""Results that survive a crash: written whole or not at all, as the bench goes, owner-only; a bench cut short
is still reported (its finished runs, and which runs are missing); a plot that fails costs only the plots.

The cluster is the stand-in of test_bench_faults (these tests are about what reaches the disk), the planner
is the real service.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench import experiment, measure, plots, report
from planner import durable as files
from bench.errors import BenchError
from bench.run import RunResult
from bench.schedulers import RunSpec
from hetsched.cli import _register, app
from spark_profiling.collector.recorder import RecordWriter
from tests.fixtures.bench import StandInCluster, bench

_register()
runner = CliRunner()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def loose_umask():
    """The usual umask (022), under which plain writes would be world-readable."""
    old = os.umask(0o022)
    yield
    os.umask(old)


# ---- atomic, private writes ---------------------------------------------------------------------------


def test_a_write_that_fails_half_way_leaves_the_old_file_and_no_debris(tmp_path, monkeypatch):
    path = files.write_json_atomic(tmp_path / "bench.json", {"runs": ["first"]})

    def disk_full(_fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        files.write_json_atomic(path, {"runs": ["first", "second"]})
    assert json.loads(path.read_text()) == {"runs": ["first"]}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json"]


def test_an_interrupt_during_a_write_leaves_the_old_file(tmp_path, monkeypatch):
    path = files.write_atomic(tmp_path / "result.json", "old\n")

    def interrupted(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        files.write_atomic(path, "new\n")
    assert path.read_text() == "old\n" and len(list(tmp_path.iterdir())) == 1


_REWRITER = """
import sys
from planner.durable import write_json_atomic
n = 0
while True:
    n += 1
    write_json_atomic(sys.argv[1], {"version": n, "runs": [{"n": n, "pad": "x" * 200} for _ in range(5000)]})
"""


def test_a_process_killed_while_it_rewrites_leaves_a_whole_file(tmp_path):
    """SIGKILL a process that rewrites a 1 MB result in a loop: the file is always one whole version."""
    path = tmp_path / "bench.json"
    child = subprocess.Popen([sys.executable, "-c", _REWRITER, str(path)], cwd=Path(__file__).resolve().parents[1],
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not path.exists() or json.loads(path.read_text())["version"] < 3):
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    data = json.loads(path.read_text())
    assert data["version"] >= 3 and len(data["runs"]) == 5000
    assert all(r["n"] == data["version"] for r in data["runs"])


def test_results_are_owner_only_whatever_the_umask(tmp_path, loose_umask):
    written = files.write_atomic(tmp_path / "made" / "deeper" / "bench.json", "{}")
    assert mode(written) == 0o600 and mode(written.parent) == 0o700
    with files.open_private_append(tmp_path / "made" / "runs.log") as log:
        log.write("one line\n")
    assert mode(tmp_path / "made" / "runs.log") == 0o600
    existing = tmp_path / "shared"
    existing.mkdir()
    existing.chmod(0o755)
    files.write_atomic(existing / "x.json", "{}")
    assert mode(existing) == 0o755, "a folder the user made keeps the mode they gave it"


def test_profiling_records_are_owner_only_and_kept_line_by_line(tmp_path, loose_umask):
    from spark_profiling.collector.recorder import TaskSample

    sample = TaskSample(ts=1.0, topology="t", component="c", profile="p", task_id=1, pid=2, worker_id=None,
                        machine="small-1", machine_type="small", machine_cores=0.2, rate_step=5.0, executed=10,
                        emitted=10, cpu_seconds=0.5, machine_cpu_seconds=0.5, machine_quota_cores=0.2,
                        process_cpu_seconds=0.4, cpu_basis="machine", round=0, step=0)
    writer = RecordWriter(tmp_path / "profiling" / "records-x.jsonl", "x")
    writer.write(sample)
    assert json.loads((tmp_path / "profiling" / "records-x.jsonl").read_text())["run_id"] == "x", "flushed per line"
    writer.close()
    assert mode(tmp_path / "profiling" / "records-x.jsonl") == 0o600 and mode(tmp_path / "profiling") == 0o700


def test_plots_are_owner_only(tmp_path, loose_umask):
    data = report.read_json(Path(__file__).resolve().parent / "fixtures" / "benches" / "star-bench-settle-1.json")
    paths = plots.all_plots(data, tmp_path / "plots")
    assert [mode(p) for p in paths] == [0o600] * 3 and mode(tmp_path / "plots") == 0o700


# ---- the bench writes as it goes ------------------------------------------------------------------------


def measured_run(spec: RunSpec, sink: float) -> RunResult:
    result = RunResult(spec.topology, spec.scheduler, spec.name, spec.note, dict(spec.parallelism), spec.plan_id)
    result.status = "ok"
    result.measured = measure.Throughputs(input_rate=sink, spout_emit_rate=sink, sink_throughput=sink,
                                          bolt_throughput=3 * sink, total_throughput=4 * sink)
    return result


def test_a_bench_killed_after_its_third_run_keeps_three_and_the_report_names_the_missing(
        tmp_path, profiles_file, stand_in, monkeypatch, loose_umask):
    """What is on disk when run 4 starts is what a SIGKILL then would leave: it is kept aside and reported."""
    out = tmp_path / "out"
    killed = tmp_path / "killed"
    calls = []

    def fake_run(spec, ctx, plan=None):
        calls.append(spec)
        if len(calls) == 4:
            shutil.copytree(out, killed, ignore=shutil.ignore_patterns("cluster"))
        return measured_run(spec, 10.0 * len(calls))

    monkeypatch.setattr(experiment, "run", fake_run)
    result = experiment.run_bench(bench(tmp_path, profiles_file, schedulers=("default", "planned")))
    assert result.complete and result.saved_to == out / "bench.json" and len(result.runs) == 4
    assert mode(out) == 0o700 and mode(out / "bench.json") == 0o600 and mode(out / "planner.log") == 0o600

    partial = report.read_json(killed)
    assert partial["complete"] is False and len(partial["runs"]) == 3
    assert report.missing_runs(partial) == ["star/planned"]
    assert report.cut_short_line(partial) == ("the bench did not finish (killed, or still running): 3 of 4 runs "
                                              "recorded; missing star/planned")
    assert report.cut_short_line(report.read_json(out)) is None

    shown = runner.invoke(app, ["bench", "--report", str(killed)])
    assert shown.exit_code == 0, shown.output
    assert "3 of 4 runs recorded; missing star/planned" in shown.output
    runs_table = shown.output.split("targets (sink throughput")[0]
    rows = [line for line in runs_table.splitlines() if line.startswith("│ ")]
    cells = [[cell.strip() for cell in row.split("│")[1:-1]] for row in rows]
    assert [c[:4] for c in cells] == [["linear", "default", "10.00", "10.00"], ["linear", "planned", "20.00", "20.00"],
                                      ["star", "default", "30.00", "30.00"]], runs_table
    assert cells[1][-2] == "2.00", "planned over default on Linear"


def test_a_bench_cut_short_before_its_runs_were_laid_out_says_so(tmp_path, profiles_file, stand_in):
    stand_in.fail_up = "Supervisor small-1 did not register within 420 s."
    on_disk = {}
    real_up = StandInCluster.up

    def up_reading_the_disk(self, *args, **kwargs):
        on_disk.update(report.read_json(tmp_path / "out"))
        return real_up(self, *args, **kwargs)

    StandInCluster.up = up_reading_the_disk
    try:
        experiment.run_bench(bench(tmp_path, profiles_file))
    finally:
        StandInCluster.up = real_up
    assert on_disk["runs"] == [] and report.cut_short_line(on_disk) == (
        "the bench did not finish (killed, or still running) before it laid out its runs; 0 runs recorded")
    assert report.read_json(tmp_path / "out")["complete"] is True


def test_a_result_that_cannot_be_written_stops_the_bench_and_keeps_the_last_good_version(
        tmp_path, profiles_file, stand_in, monkeypatch):
    monkeypatch.setattr(experiment, "run", lambda spec, ctx, plan=None: measured_run(spec, 5.0))
    written = []
    real_write = report.write_json

    def fails_after_the_first_run(data, path):
        if len(data["runs"]) >= 2:
            raise BenchError(f"cannot write the bench result {path}: No space left on device")
        written.append(len(data["runs"]))
        return real_write(data, path)

    monkeypatch.setattr(report, "write_json", fails_after_the_first_run)
    result = experiment.run_bench(bench(tmp_path, profiles_file, schedulers=("default", "planned")))
    assert result.error.startswith("cannot write the bench result") and "No space left" in result.error
    assert result.saved_to is None and stand_in.instances[0].calls == ["up plugin", "down"]
    kept = report.read_json(tmp_path / "out")
    assert kept["complete"] is False and [r["scheduler"] for r in kept["runs"]] == ["default"]


def test_a_plotting_error_of_any_kind_keeps_the_result(tmp_path, profiles_file, stand_in, monkeypatch):
    monkeypatch.setattr(experiment, "run", lambda spec, ctx, plan=None: measured_run(spec, 7.0))

    def broken_renderer(data, out_dir):
        raise RuntimeError("the Agg renderer lost its font cache")

    monkeypatch.setattr(plots, "all_plots", broken_renderer)
    out = tmp_path / "out"
    shown = runner.invoke(app, ["bench", "--topologies", "linear", "--schedulers", "default,planned", "--window", "20",
                                "--warmup", "0", "--profiles", profiles_file, "--port-base", "17000", "--out", str(out)])
    assert shown.exit_code == 0, shown.output
    assert "plots not drawn (RuntimeError: the Agg renderer lost its font cache); the results are kept in" in shown.output
    assert "Traceback" not in shown.output
    data = report.read_json(out)
    assert data["complete"] is True and [r["scheduler"] for r in data["runs"]] == ["default", "planned"]
    assert data["plots"] == []


def test_the_plots_paths_are_added_once_they_are_drawn(tmp_path, profiles_file, stand_in, monkeypatch):
    monkeypatch.setattr(experiment, "run", lambda spec, ctx, plan=None: measured_run(spec, 7.0))
    out = tmp_path / "out"
    shown = runner.invoke(app, ["bench", "--topologies", "linear", "--schedulers", "default,planned", "--window", "20",
                                "--warmup", "0", "--profiles", profiles_file, "--port-base", "17000", "--out", str(out)])
    assert shown.exit_code == 0, shown.output
    assert report.read_json(out / "bench.json")["plots"] == [str(out / n) for n in
                                                            ("throughput.png", "cpu.png", "predicted-vs-measured.png")]
