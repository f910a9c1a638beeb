"""Each machine's overhead in stored ``hetsched bench`` runs: its CPU beyond the bolts' own work, measured and charged.

A compute bolt of this project spends exactly ``hetsched.cpu.ms.<profile>`` ms of its thread's CPU per tuple
(topologies/cpu.py), so the work a machine did in a run is known from the rates its executors ran at. What its
cgroup used beyond that is overhead: the worker JVM (tuple transfer, acking, its idle threads), the multi-lang
pipes, the supervisor. The model charges overhead too (base load, METs and idle threads, and what the profiles'
per-tuple costs hold beyond the work). Set side by side per bench, the two show whether the model's errors follow
the overhead, and whether the same placement's overhead moves from bench to bench.

    .venv/bin/python -m benchmarks.machine_overhead BENCH_JSON [BENCH_JSON ...]
        [--profiles profiles/default-cluster.json] [--runs] [--out FILE.txt]
"""
from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.placement import ActualPlacement
from bench.profiles import fill_pass_through_alphas
from bench.repredict import AT_QUOTA, PROFILES, charged_at_measured_rate
from cluster.spec import ClusterSpec
from planner.model import ProfileSet
from topologies import conf as keys


@dataclass(frozen=True)
class MachineOverhead:
    bench: str
    run: str
    machine: str
    machine_type: str
    tuples_per_s: float
    """Tuples/s its executors handled (spouts: emitted)."""
    work_ms_per_s: float
    measured_ms_per_s: float
    """Its cgroup CPU beyond the work, core ms per second."""
    charged_ms_per_s: float
    """The model's charge at the run's measured rate beyond the same work."""
    at_quota: bool


def work_ms_per_s(run: dict[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """Machine -> core ms/s the bolts spent on their own work, and machine -> tuples/s its executors handled;
    a component's rate split evenly over its executors (shuffle)."""
    conf = run["topology_conf"]
    kinds = conf.get(keys.COMPONENT_PROFILES, {})
    rates = {c["component"]: (c["per_second"], c["role"]) for c in run["components"]}
    work: dict[str, float] = {}
    tuples: dict[str, float] = {}
    for component, machines in run["placement"]["executors"].items():
        if component not in rates:
            continue  # Storm's own executors (ackers): overhead
        rate, role = rates[component]
        ms = 0.0 if role == "spout" else float(conf.get(keys.cpu_ms_key(kinds.get(component, "")), 0.0))
        for machine in machines:
            work[machine] = work.get(machine, 0.0) + rate / len(machines) * ms
            tuples[machine] = tuples.get(machine, 0.0) + rate / len(machines)
    return work, tuples


def overheads(path: Path, profile_set: ProfileSet) -> list[MachineOverhead]:
    bench = json.loads(path.read_text())
    spec = ClusterSpec.model_validate(bench["cluster"]["spec"])
    sets, _ = fill_pass_through_alphas(profile_set, sorted({r["topology"] for r in bench["runs"]}))
    rows = []
    for run in bench["runs"]:
        if run.get("status") != "ok" or not run.get("placement") or not run.get("measured"):
            continue
        work, tuples = work_ms_per_s(run)
        charged = charged_at_measured_rate(run, sets, spec)
        used = ActualPlacement(executors=run["placement"]["executors"]).machines_used()
        for m in run["machines"]:
            if m["machine"] not in used:
                continue  # no worker there: its supervisor alone, against a base load that holds an idle worker too
            per_percent = m["cores"] * 10.0  # core ms per second in one percent of the machine
            done = work.get(m["machine"], 0.0)
            rows.append(MachineOverhead(
                bench=path.parent.name, run=f"{run['topology']}-{run['scheduler']}", machine=m["machine"],
                machine_type=m["type"], tuples_per_s=tuples.get(m["machine"], 0.0), work_ms_per_s=done,
                measured_ms_per_s=m["utilization"] * per_percent - done,
                charged_ms_per_s=charged[m["machine"]] * per_percent - done,
                at_quota=m["utilization"] >= AT_QUOTA))
    return rows


def runs_table(rows: list[MachineOverhead]) -> Table:
    table = Table(title="overhead per machine and run, core ms/s (beyond the bolts' own work)", title_justify="left")
    for column in ("bench", "run", "machine", "tuples/s", "work", "overhead measured", "charged", "measured - charged"):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(r.bench, r.run, r.machine, f"{r.tuples_per_s:.1f}", f"{r.work_ms_per_s:.0f}",
                      f"{r.measured_ms_per_s:.0f}" + (" (at quota)" if r.at_quota else ""), f"{r.charged_ms_per_s:.0f}",
                      f"{r.measured_ms_per_s - r.charged_ms_per_s:+.0f}")
    return table


def bench_table(rows: list[MachineOverhead]) -> Table:
    """Per bench and machine type, over the machines below their quota: overhead measured - charged, median."""
    table = Table(title=f"measured - charged overhead, core ms/s, machines below {AT_QUOTA:g} % of their quota: "
                        "median (range, runs)", title_justify="left")
    types = list(dict.fromkeys(r.machine_type for r in rows))
    table.add_column("bench")
    for t in types:
        table.add_column(t, justify="right")
    for bench in dict.fromkeys(r.bench for r in rows):
        cells = []
        for t in types:
            gaps = [r.measured_ms_per_s - r.charged_ms_per_s for r in rows
                    if r.bench == bench and r.machine_type == t and not r.at_quota]
            cells.append(f"{statistics.median(gaps):+.0f} ({min(gaps):+.0f} to {max(gaps):+.0f}, {len(gaps)})"
                         if gaps else "-")
        table.add_row(bench, *cells)
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bench", type=Path, nargs="+")
    parser.add_argument("--profiles", type=Path, default=PROFILES)
    parser.add_argument("--runs", action="store_true", help="also every run's machines")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    try:
        profile_set = ProfileSet.model_validate_json(args.profiles.read_text())
        rows = [row for path in args.bench for row in overheads(path, profile_set)]
    except (OSError, ValueError, KeyError) as exc:
        parser.error(f"cannot read the profile set {args.profiles} or a bench result: {str(exc).splitlines()[0]}")
    console = Console(record=True, width=160)
    if args.runs:
        console.print(runs_table(rows))
    console.print(bench_table(rows))
    if args.out:
        args.out.write_text(console.export_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
