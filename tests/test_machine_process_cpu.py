"""``benchmarks/machine_process_cpu.py``: a machine's CPU by kind of process over a bench run's window."""
from __future__ import annotations

import pytest

from benchmarks.machine_process_cpu import KINDS, cpu_by_kind, kind_of, main, split


def test_storm_processes_are_told_apart_by_their_command_line():
    assert kind_of("java -server -Ddaemon.name=small-1 -Dstorm.home=/s org.apache.storm.daemon.supervisor.Supervisor") == "supervisor"
    assert kind_of("java -cp /s/lib-worker/* org.apache.storm.LogWriter java -Dlogfile.name=worker.log ...") == "logwriter"
    assert kind_of("java -server -Dlogging.sensitivity=S3 -Dlogfile.name=worker.log -Dstorm.home=/s ...") == "worker"
    assert kind_of("/venv/bin/python -m streamparse.run topologies.bolts.ComputeBolt") == "python"
    assert kind_of("sleep 5") == "other"


def _machine(processes: dict[str, tuple[str, float]], usage_s: float, throttled_s: float = 0.0) -> dict:
    return {"processes": processes, "usage_s": usage_s, "throttled_s": throttled_s}


def test_a_process_that_ended_counts_nothing_and_one_that_started_all_it_used():
    before = _machine({"1": ("worker", 10.0), "2": ("python", 5.0), "3": ("python", 7.0)}, 30.0)
    after = _machine({"1": ("worker", 12.0), "2": ("python", 6.5), "4": ("python", 0.5)}, 40.0)
    assert cpu_by_kind(before, after) == {**dict.fromkeys(KINDS, 0.0), "worker": 2.0, "python": 2.0}


def test_each_run_s_window_is_split_by_kind_in_percent_of_the_quota():
    bench = {"settings": {"warmup_s": 30.0, "window_s": 60.0}, "runs": [{
        "topology": "linear", "scheduler": "planned", "status": "ok", "measured": {"input_rate": 30.0},
        "relative_error": {"input_rate": 0.02}, "window_utc": ["2026-11-26T20:00:00+00:00", "2026-11-26T20:01:00+00:00"],
        "machines": [{"machine": "small-1", "cores": 0.2}]}]}
    start = 1795723200.0  # 2026-11-26T20:00:00Z
    readings = [
        {"t": start - 1, "machines": {"c/small-1": _machine({"1": ("worker", 1.0), "2": ("python", 1.0)}, 2.0, 0.0)}},
        {"t": start + 60, "machines": {"c/small-1": _machine({"1": ("worker", 4.0), "2": ("python", 10.0)}, 14.0, 61.0)}},
    ]
    [row] = split(bench, readings, [])
    quota_s = 0.2 * 61 / 100  # CPU seconds in one percent of small's quota over the 61 s between the readings
    assert row["total"] == pytest.approx(12.0 / quota_s) and row["worker"] == pytest.approx(3.0 / quota_s)
    assert row["python"] == pytest.approx(9.0 / quota_s) and row["throttled_s_per_s"] == pytest.approx(1.0)


def test_a_bench_without_window_times_takes_them_from_its_timed_log():
    bench = {"settings": {"warmup_s": 30.0, "window_s": 60.0}, "runs": [{
        "topology": "star", "scheduler": "default", "status": "ok", "settle_s": 60.0, "measured": {"input_rate": 5.0},
        "machines": [{"machine": "large-1", "cores": 0.8}]}]}
    readings = [{"t": t, "machines": {"c/large-1": _machine({"1": ("worker", t / 100)}, t / 10)}} for t in (1095.0, 1140.0)]
    [row] = split(bench, readings, [(1000.0, "star/default: running after 40 s on large-1 (3 executors)")])
    assert row["total"] == pytest.approx(4.5 / (0.8 * 45 / 100)), "from 5 s in to 10 s before the end"


def test_split_names_a_file_it_cannot_read(tmp_path):
    (tmp_path / "samples.jsonl").write_text("{}\n")
    with pytest.raises(SystemExit, match="cannot read the bench result, the samples or the timed log"):
        main(["split", str(tmp_path / "missing.json"), str(tmp_path / "samples.jsonl")])
    (tmp_path / "bench.json").write_text("[]")
    with pytest.raises(SystemExit, match="is not a bench result"):
        main(["split", str(tmp_path / "bench.json"), str(tmp_path / "samples.jsonl")])
