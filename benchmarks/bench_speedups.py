"""Planned against each other scheduler over repeated ``hetsched bench`` results: median (range) of the speed-ups.

One bench is one sample on a shared host (the same placement measures up to a third apart from bench to bench), so
a headline figure is the median over several benches of each bench's own ratio: the planned run's sink throughput
over the other scheduler's run of the same topology in the same bench, where both ran. ``--base`` compares another
scheduler (``planned-weighted``) instead; ``--runs`` adds each scheduler's own medians: sink throughput, R against
the LP fluid and compute bounds (bench.bounds), and each machine's CPU as a share of its quota.

    .venv/bin/python -m benchmarks.bench_speedups BENCH_JSON [BENCH_JSON ...] [--against default,resource_aware]
        [--base planned] [--runs]
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from bench.bounds import compute_bounds_of


def sink_throughputs(bench: dict[str, Any]) -> dict[tuple[str, str], float]:
    """(topology, scheduler) -> measured sink throughput of the bench's runs that finished."""
    return {(r["topology"], r["scheduler"]): float(r["measured"]["sink_throughput"])
            for r in bench["runs"] if r.get("status") == "ok" and r.get("measured")}


def speedups(benches: list[dict[str, Any]], against: list[str],
             base: str = "planned") -> dict[tuple[str, str], list[float]]:
    """(topology, other scheduler) -> base / other, one ratio per bench where both ran."""
    ratios: dict[tuple[str, str], list[float]] = {}
    for bench in benches:
        sinks = sink_throughputs(bench)
        for (topology, scheduler), sink in sinks.items():
            if scheduler != base:
                continue
            for other in against:
                theirs = sinks.get((topology, other))
                if theirs:
                    ratios.setdefault((topology, other), []).append(sink / theirs)
    return ratios


def run_summaries(benches: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, list[float]]]:
    """(topology, scheduler) -> per bench: sink throughput, R as a share of the fluid and the compute bound, and
    per machine its CPU as a share of its quota (percent), of every run that finished."""
    rows: dict[tuple[str, str], dict[str, list[float]]] = {}
    for bench in benches:
        fluid, compute = bench.get("fluid_bounds") or {}, compute_bounds_of(bench)
        for run in bench["runs"]:
            if run.get("status") != "ok" or not run.get("measured"):
                continue
            row = rows.setdefault((run["topology"], run["scheduler"]), {})
            rate = float(run["measured"]["input_rate"])
            row.setdefault("sink", []).append(float(run["measured"]["sink_throughput"]))
            for key, bounds in (("of_fluid", fluid), ("of_compute", compute)):
                if bound := bounds.get(run["topology"]):
                    row.setdefault(key, []).append(100 * rate / bound)
            for machine in run.get("machines") or []:
                row.setdefault(f"cpu {machine['machine']}", []).append(float(machine["utilization"]))
    return rows


def _median_range(values: list[float], fmt: str = "{:.1f}") -> str:
    if not values:
        return "-"
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def print_runs(rows: dict[tuple[str, str], dict[str, list[float]]]) -> None:
    machines = sorted({k for row in rows.values() for k in row if k.startswith("cpu ")})
    print("per scheduler, median (range) over the benches: sink tuples/s; R as % of the LP fluid bound and of the "
          "compute bound; CPU % of quota per machine")
    for (topology, scheduler), row in sorted(rows.items()):
        cpu = ", ".join(f"{m[4:]} {_median_range(row.get(m, []), '{:.0f}')}" for m in machines if row.get(m))
        print(f"{topology:8} {scheduler:16} sink {_median_range(row['sink'])}, fluid "
              f"{_median_range(row.get('of_fluid', []), '{:.0f}')}%, compute "
              f"{_median_range(row.get('of_compute', []), '{:.0f}')}%, n={len(row['sink'])}; CPU {cpu}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_speedups", description=__doc__.split("\n")[0])
    parser.add_argument("bench", type=Path, nargs="+", help="bench.json files of hetsched bench")
    parser.add_argument("--against", default="default,resource_aware", help="schedulers to compare the base with")
    parser.add_argument("--base", default="planned", help="the scheduler compared with the others (planned)")
    parser.add_argument("--runs", action="store_true", help="also each scheduler's medians, bounds and machine CPU")
    args = parser.parse_args(argv)
    try:
        benches = [json.loads(path.read_text()) for path in args.bench]
    except (OSError, ValueError) as exc:
        parser.error(f"cannot read a bench result: {str(exc).splitlines()[0]}")
    ratios = speedups(benches, [s for s in args.against.split(",") if s], args.base)
    if args.runs:
        print_runs(run_summaries(benches))
    if not ratios:
        print(f"no bench has a {args.base} run and one of theirs for the same topology")
        return 1
    print(f"{args.base} / other, sink throughput: median (range) over the benches where both ran")
    for (topology, other), values in sorted(ratios.items()):
        print(f"{topology:8} vs {other:15} {statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f}), "
              f"{len(values)} benches")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
