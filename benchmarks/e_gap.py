"""Why live ``e`` of a compute bolt comes out under the lab's: the records of a stepped-rate run, read three ways.

Offline, from runs already recorded (the workers' records and the run's rate steps): for each (profile,
machine type) pair,

- ``ms/tuple (bolt)``: the CPU the bolt is set to burn per tuple (``hetsched.cpu.ms.*``, its own thread clock);
- ``e x cores``: the live set's ``e`` (machine-seconds per tuple, as ``hetsched aggregate`` fits it on the
  5 s intervals) times the machine's cores, i.e. CPU-seconds per tuple, and the lab set's the same way;
- ``slope of step means``: a least-squares line through one point per rate step (the step's total CPU over
  its total tuples, per instance), which averages out how the executed count and the CPU of one 5 s
  interval straddle its edges differently (error in x flattens an ordinary least-squares slope);
- the same slope split into the executor's JVM thread and its Python subprocess (a multi-lang bolt's work is in
  the subprocess; an idle executor thread wakes every millisecond, ``IDLE_WAIT``, so its CPU falls as its rate
  rises, which a slope charges to the tuples with a minus sign);
- per step, each machine's worker CPU in percent of its quota (is the quota binding at the top step?).

    .venv/bin/python benchmarks/e_gap.py RUN_JSON RECORDS_DIR PROFILE_JSON [--lab profiles/default-cluster.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def intervals(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per executor, consecutive records' differences: seconds, tuples executed, CPU seconds, worker CPU seconds."""
    from worker_metrics import executor_series

    out = []
    for (component, task, _pid), series in executor_series(records).items():
        for a, b in zip(series, series[1:]):
            dt = b["ts"] - a["ts"]
            if dt <= 0:
                continue
            out.append({"profile": b["profile"], "machine_type": b["machine_type"], "machine": b["machine"],
                        "cores": b["machine_cores"], "task": task, "t0": a["ts"], "t1": b["ts"], "dt": dt,
                        "executed": b["executed"] - a["executed"], "cpu": b["cpu_seconds"] - a["cpu_seconds"],
                        "thread": b["thread_cpu_seconds"] - a["thread_cpu_seconds"],
                        "subprocess": (b.get("subprocess_cpu_seconds") or 0) - (a.get("subprocess_cpu_seconds") or 0),
                        "worker": b["worker_id"], "worker_cpu": b["worker_cpu_seconds"] - a["worker_cpu_seconds"]})
    return out


def line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares slope and intercept."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx


def main() -> int:
    from worker_metrics import records_of

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_json", type=Path)
    parser.add_argument("records", type=Path)
    parser.add_argument("profile_json", type=Path, help="the live set hetsched aggregate made of these records")
    parser.add_argument("--lab", type=Path, default=REPO / "profiles" / "default-cluster.json")
    args = parser.parse_args()
    from topologies.conf import DEFAULT_CPU_MS

    run = json.loads(args.run_json.read_text())
    run = run.get("run", run)
    steps = run["steps"]
    topology = run.get("topology") or run["topology_id"].rsplit("-", 2)[0]
    records = records_of(args.records, topology)
    profile_doc = json.loads(args.profile_json.read_text())
    live = {(e["profile"], e["machine_type"]): e for e in profile_doc.get("live", profile_doc)["entries"]}
    lab = {(e["profile"], e["machine_type"]): e for e in json.loads(args.lab.read_text())["entries"]}
    rows = [i for i in intervals(records) if i["dt"] > 0]

    def step_of(i: dict[str, Any]) -> int | None:
        for n, s in enumerate(steps):
            if s["start"] <= i["t0"] and i["t1"] <= s["end"]:
                return n
        return None

    print(f"# {args.run_json.name}: {topology}, {len(records)} records, steps "
          + ", ".join(f"{s['rate']:g}" for s in steps) + " tuples/s")
    print(f"{'profile':<12} {'type':<7} {'bolt ms':>7} {'lab e*c':>8} {'live e*c':>8} {'steps slope':>11} "
          f"{'lab':>6} {'live':>6} {'steps':>6} {'thread':>7} {'subproc':>7}   per step: rate/instance, ms CPU per tuple")
    for pair in sorted(live):
        profile, mtype = pair
        if profile not in DEFAULT_CPU_MS:
            continue
        mine = [i for i in rows if (i["profile"], i["machine_type"]) == pair and step_of(i) is not None]
        if not mine:
            continue
        cores = mine[0]["cores"]
        per_step = []
        for n in range(len(steps)):
            got = [i for i in mine if step_of(i) == n]
            if not got:
                continue
            instances = len({i["task"] for i in got})
            seconds = sum(i["dt"] for i in got) / instances
            tuples, cpu = sum(i["executed"] for i in got), sum(i["cpu"] for i in got)
            thread, sub = sum(i["thread"] for i in got), sum(i["subprocess"] for i in got)
            per_step.append((tuples / instances / seconds, cpu / instances / seconds, 1000 * cpu / tuples if tuples else 0,
                             thread / instances / seconds, sub / instances / seconds))
        slope, _ = line([p[0] for p in per_step], [p[1] for p in per_step])
        thread_slope, _ = line([p[0] for p in per_step], [p[3] for p in per_step])
        sub_slope, _ = line([p[0] for p in per_step], [p[4] for p in per_step])
        bolt = DEFAULT_CPU_MS[profile]
        lab_ms = 1000 * lab[pair]["e"] * cores if pair in lab else float("nan")
        live_ms = 1000 * live[pair]["e"] * cores
        print(f"{profile:<12} {mtype:<7} {bolt:>7.1f} {lab_ms:>8.2f} {live_ms:>8.2f} {1000 * slope:>11.2f} "
              f"{lab_ms / bolt - 1:>+6.0%} {live_ms / bolt - 1:>+6.0%} {1000 * slope / bolt - 1:>+6.0%} "
              f"{1000 * thread_slope:>7.2f} {1000 * sub_slope:>7.2f}   "
              + ", ".join(f"{p[0]:.2f}: {p[2]:.1f}" for p in per_step)
              + "; executor thread, ms of CPU per s: " + ", ".join(f"{1000 * p[3]:.1f}" for p in per_step))
    print("the worker JVM's CPU, and with its executors' Python subprocesses, in % of the machine's quota, per step "
          "(the supervisor's JVM besides):")
    workers: dict[str, dict[float, float]] = defaultdict(dict)
    machine_of: dict[str, tuple[str, float]] = {}
    for r in records:
        workers[r["worker_id"]][r["ts"]] = r["worker_cpu_seconds"]
        machine_of[r["worker_id"]] = (r["machine"], r["machine_cores"])
    for worker in sorted(workers, key=lambda w: machine_of[w]):
        machine, cores = machine_of[worker]
        samples = sorted(workers[worker].items())
        shares = []
        for s in steps:
            inside = [(t, c) for t, c in samples if s["start"] <= t <= s["end"]]
            if len(inside) < 2:
                shares.append((float("nan"), float("nan")))
                continue
            (t0, c0), (t1, c1) = inside[0], inside[-1]
            children = sum(i["subprocess"] for i in rows if i["worker"] == worker and t0 <= i["t0"] and i["t1"] <= t1)
            shares.append((100 * (c1 - c0) / (t1 - t0) / cores, 100 * (c1 - c0 + children) / (t1 - t0) / cores))
        print(f"  {machine:<9} ({cores:g} cores) {worker}: "
              + ", ".join(f"{s['rate']:g}/s {jvm:.0f}% / {total:.0f}%" for s, (jvm, total) in zip(steps, shares)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
