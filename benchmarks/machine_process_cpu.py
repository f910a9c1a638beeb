"""Each machine's CPU by kind of process (supervisor, worker JVM, its log writer, multi-lang Python), beside a bench.

``sample`` reads, every ``--every`` seconds, every machine cgroup of every local cluster on this host (cgroup v1,
``hetsched/<cluster>/<machine>``): each process's kind and CPU seconds so far, the cgroup's own usage and its
throttled time, one JSON line per reading. Cheap enough to run beside a measurement (a few dozen processes).

``split`` lines a bench's runs up with the readings: for every run, each machine's CPU over its measurement
window, by kind, in percent of its quota. The window is the run's ``window_utc`` in bench.json; a bench written
before that field existed needs its log with the epoch second in front of every line (``--timed-log``); its window
is then taken from 5 s after the run's warm-up and wait for a steady flow to 10 s before the window's length is up,
so that an estimate a few seconds off does not reach past the kill of the topology.

    .venv/bin/python -m benchmarks.machine_process_cpu sample SAMPLES.jsonl [--every 10]
    .venv/bin/python -m benchmarks.machine_process_cpu split BENCH_JSON SAMPLES.jsonl[.gz] [--timed-log LOG] [--out FILE]
"""
from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import time
from pathlib import Path
from typing import Any

import psutil

from cluster.cgroups import find_hierarchies
from cluster.layout import CGROUP_ROOT_NAME
from observe.machines import process_cpu_seconds


KINDS = ("supervisor", "worker", "logwriter", "python", "other")


def kind_of(command_line: str) -> str:
    """Which of :data:`KINDS` a machine's process is, by its command line (Storm 2.8's daemons and workers)."""
    if "org.apache.storm.LogWriter" in command_line:
        return "logwriter"
    if "-Dlogfile.name=worker.log" in command_line:
        return "worker"
    if "-Ddaemon.name=" in command_line or "org.apache.storm.daemon.supervisor" in command_line:
        return "supervisor"
    if "python" in command_line:
        return "python"
    return "other"


def reading(cpu_root: Path, cpuacct_root: Path) -> dict[str, Any]:
    """One reading of every machine cgroup under ``cpu_root``: each process's kind and CPU seconds so far, the
    cgroup's usage and throttled time."""
    machines: dict[str, Any] = {}
    for folder in sorted(p for p in cpu_root.glob(f"{CGROUP_ROOT_NAME}/*/*") if p.is_dir()):
        processes: dict[str, tuple[str, float]] = {}
        try:
            pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
            usage_s = int((cpuacct_root / folder.relative_to(cpu_root) / "cpuacct.usage").read_text()) / 1e9
            stat = dict(line.split() for line in (folder / "cpu.stat").read_text().splitlines())
        except (OSError, ValueError):
            continue  # the cluster went down meanwhile
        for pid in pids:
            try:
                kind = kind_of(" ".join(psutil.Process(pid).cmdline()))
            except psutil.Error:
                continue
            cpu_s = process_cpu_seconds(pid)
            if cpu_s is not None:
                processes[str(pid)] = (kind, cpu_s)
        machines[f"{folder.parent.name}/{folder.name}"] = {
            "processes": processes, "usage_s": usage_s, "throttled_s": int(stat.get("throttled_time", 0)) / 1e9}
    return {"t": time.time(), "machines": machines}


def sample(out: Path, every_s: float) -> None:
    hierarchies = find_hierarchies()
    if hierarchies is None:
        raise SystemExit("the cgroup v1 cpu and cpuacct controllers are not mounted: no machine to read")
    with out.open("a") as handle:
        while True:
            handle.write(json.dumps(reading(hierarchies.cpu, hierarchies.cpuacct)) + "\n")
            handle.flush()
            time.sleep(every_s)


def window_of(run: dict[str, Any], timed_log: list[tuple[float, str]], warmup_s: float, window_s: float) -> tuple[float, float] | None:
    """The run's measurement window, epoch seconds: from bench.json, else from the timed log."""
    if run.get("window_utc"):
        start, end = (dt.datetime.fromisoformat(t).timestamp() for t in run["window_utc"])
        return start, end
    running = [t for t, line in timed_log if line.startswith(f"{run['topology']}/{run['scheduler']}: running after")]
    if not running:
        return None
    start = running[-1] + warmup_s + run.get("settle_s", 0.0)
    return start + 5.0, start + window_s - 10.0


def cpu_by_kind(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    """CPU seconds by kind between two readings of one machine: per process, so one that ended in between counts
    nothing and one that started counts all it used. Readings that hold only sums by kind (``cpu_s``) are
    subtracted as they are."""
    if "processes" not in after:
        return {k: after["cpu_s"].get(k, 0.0) - before["cpu_s"].get(k, 0.0) for k in KINDS}
    used = dict.fromkeys(KINDS, 0.0)
    earlier = before.get("processes", {})
    for pid, (kind, cpu_s) in after["processes"].items():
        used[kind] += cpu_s - (earlier[pid][1] if pid in earlier else 0.0)
    return used


def split(bench: dict[str, Any], readings: list[dict[str, Any]], timed_log: list[tuple[float, str]]) -> list[dict[str, Any]]:
    """Per run and machine: percent of its quota by kind of process over the run's window (the nearest readings)."""
    settings = bench.get("settings", {})
    cores = {m["machine"]: m["cores"] for r in bench["runs"] for m in r.get("machines", [])}
    rows = []
    for run in bench["runs"]:
        if run.get("status") != "ok":
            continue
        window = window_of(run, timed_log, settings.get("warmup_s", 30.0), settings.get("window_s", 60.0))
        if window is None or not readings:
            continue
        first = min(readings, key=lambda r: abs(r["t"] - window[0]))
        last = min(readings, key=lambda r: abs(r["t"] - window[1]))
        seconds = last["t"] - first["t"]
        if seconds <= 0:
            continue
        for key, after in last["machines"].items():
            machine = key.split("/", 1)[1]
            before = first["machines"].get(key)
            if before is None or machine not in cores or ("processes" in before) != ("processes" in after):
                continue
            quota = cores[machine] * seconds / 100.0  # CPU seconds in one percent of the quota
            used = cpu_by_kind(before, after)
            rows.append({
                "run": f"{run['topology']}-{run['scheduler']}", "machine": machine,
                "measured_R": run["measured"]["input_rate"],
                "error": (run.get("relative_error") or {}).get("input_rate"),
                "total": (after["usage_s"] - before["usage_s"]) / quota,
                **{k: used[k] / quota for k in KINDS},
                "throttled_s_per_s": (after["throttled_s"] - before["throttled_s"]) / seconds,
            })
    return rows


def _split_main(args: argparse.Namespace) -> None:
    from rich.console import Console
    from rich.table import Table

    try:
        bench = json.loads(args.bench.read_text())
        text = gzip.decompress(args.samples.read_bytes()).decode() if args.samples.suffix == ".gz" else args.samples.read_text()
        readings = [json.loads(line) for line in text.splitlines() if line.strip()]
        log_lines = args.timed_log.read_text().splitlines() if args.timed_log else []
    except (OSError, ValueError) as exc:
        raise SystemExit(f"error: cannot read the bench result, the samples or the timed log: {str(exc).splitlines()[0]}") from None
    if not isinstance(bench, dict) or not isinstance(bench.get("runs"), list):
        raise SystemExit(f"error: {args.bench} is not a bench result (no 'runs')")
    timed = []
    if log_lines:
        for line in log_lines:
            stamp, _, text = line.partition(" ")
            try:
                timed.append((float(stamp), text))
            except ValueError:
                continue
    table = Table(title=f"{args.bench}: machine CPU by process over each run's window, % of its quota", title_justify="left")
    for column in ("run", "R", "error", "machine", "total", *KINDS, "throttled s/s"):
        table.add_column(column, justify="right")
    for row in split(bench, readings, timed):
        error = "-" if row["error"] is None else f"{row['error']:+.1%}"
        table.add_row(row["run"], f"{row['measured_R']:.2f}", error, row["machine"], f"{row['total']:.1f}",
                      *[f"{row[k]:.1f}" for k in KINDS], f"{row['throttled_s_per_s']:.2f}")
    console = Console(record=True, width=170)
    console.print(table)
    if args.out:
        args.out.write_text(console.export_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    sampler = commands.add_parser("sample", help="read every machine cgroup every --every seconds, until stopped")
    sampler.add_argument("out", type=Path)
    sampler.add_argument("--every", type=float, default=10.0)
    splitter = commands.add_parser("split", help="each bench run's machines by kind of process")
    splitter.add_argument("bench", type=Path)
    splitter.add_argument("samples", type=Path)
    splitter.add_argument("--timed-log", type=Path)
    splitter.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.command == "sample":
        if not args.every >= 1.0:
            parser.error(f"--every must be at least 1 second, not {args.every}")
        try:
            sample(args.out, args.every)
        except KeyboardInterrupt:
            pass  # Ctrl-C is how a sampling ends; every reading so far is on disk
    else:
        _split_main(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
