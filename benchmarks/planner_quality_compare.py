"""Compare ``fast`` between ``planner_quality.py --json`` runs: of the optimum, CPU, and which requests moved.

    .venv/bin/python -m benchmarks.planner_quality_compare --before b1.json,b2.json --after a1.json,a2.json

Each run's summary (min, median, mean of fast's rate over the proven optimum, how many at it, CPU per request);
then, first before run against first after run, every request whose rate went up or down; then the CPU per
request after over before (per request, the median over the runs of each side; the median of those ratios).
The rates are deterministic, so one pair names the moved requests; the CPU is a shared machine's, so repeat.
"""
from __future__ import annotations

import argparse
import json
import statistics

AT_OPTIMUM = 0.999
SAME = 1e-9
"""Relative difference under which two rates count as the same."""


def load(path: str) -> dict[int, dict]:
    with open(path) as source:
        return {row["seed"]: row for row in json.load(source)}


def summary(rows: dict[int, dict]) -> str:
    """One line: fast of the optimum (min, median, mean, at optimum) and its CPU per request."""
    of = sorted(r["rates"]["fast"] / r["optimal"] for r in rows.values()
                if "optimal" in r and r["rates"].get("fast") is not None)
    cpu = sorted(r["cpu_ms"]["fast"] for r in rows.values() if "fast" in r.get("cpu_ms", {}))
    if not of or not cpu:
        raise SystemExit("a run holds no request with both a proven optimum and fast's rate and CPU")
    return (f"min {of[0]:.4f}, median {statistics.median(of):.3f}, mean {statistics.fmean(of):.4f}, "
            f"at optimum {sum(v >= AT_OPTIMUM for v in of)}/{len(of)}; CPU ms median {statistics.median(cpu):.0f}, "
            f"p90 {cpu[int(0.9 * (len(cpu) - 1))]:.0f}, max {cpu[-1]:.0f}, total {sum(cpu) / 1000:.0f} s")


def moved(before: dict[int, dict], after: dict[int, dict]) -> list[tuple[int, float, float, float | None]]:
    """(seed, before, after, optimum) of every request whose rate changed, lowest after/before first."""
    rows = []
    for seed in sorted(set(before) & set(after)):
        x, y = before[seed]["rates"].get("fast"), after[seed]["rates"].get("fast")
        if x and y and abs(y - x) > SAME * x:
            rows.append((seed, x, y, after[seed].get("optimal")))
    return sorted(rows, key=lambda row: row[2] / row[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="comma-separated --json files of the before runs")
    parser.add_argument("--after", required=True, help="comma-separated --json files of the after runs")
    args = parser.parse_args()
    sides = {"before": [load(p) for p in args.before.split(",")], "after": [load(p) for p in args.after.split(",")]}
    for name, runs in sides.items():
        for k, rows in enumerate(runs, 1):
            print(f"{name} run {k}: {summary(rows)}")
    before, after = sides["before"], sides["after"]
    changes = moved(before[0], after[0])
    print(f"before run 1 against after run 1: higher on {sum(y > x for _, x, y, _ in changes)}, "
          f"lower on {sum(y < x for _, x, y, _ in changes)} of {len(set(before[0]) & set(after[0]))}")
    for seed, x, y, optimum in changes:
        share = f", of the optimum {x / optimum:.3f} -> {y / optimum:.3f}" if optimum else ", no proven optimum"
        print(f"  seed {seed}: {x:.2f} -> {y:.2f} ({100 * (y / x - 1):+.2f}%){share}")
    seeds = sorted(set.intersection(*(set(rows) for rows in before + after)))
    ratios = sorted(statistics.median(r[s]["cpu_ms"]["fast"] for r in after)
                    / statistics.median(r[s]["cpu_ms"]["fast"] for r in before) for s in seeds)
    print(f"CPU per request, after / before: median {statistics.median(ratios):.2f}x, "
          f"p90 {ratios[int(0.9 * (len(ratios) - 1))]:.2f}x over {len(ratios)} requests")
    worst = sorted((r["rates"]["fast"] / r["optimal"], s) for s, r in after[0].items()
                   if "optimal" in r and r["rates"].get("fast") is not None)[:5]
    print("after's worst of the optimum: " + ", ".join(f"seed {s} ({v:.4f})" for v, s in worst))


if __name__ == "__main__":
    main()
