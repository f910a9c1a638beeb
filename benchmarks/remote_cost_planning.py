"""Does ``fast`` weigh co-location against balance once tuples crossing workers cost CPU? (issue #18 part 2)

On seeded random requests (planner.random_requests) given random remote costs (each entry's ``remote_send`` and
``remote_receive`` a fraction of its ``e``, ``--share``), every plan scored by the simulator with those costs:

- ``fast`` against the brute force (every placement with up to 3 instances per component) on tiny requests,
  and ``optimal``, whose MILP leaves the remote cost out;
- ``fast`` against the plan it makes when blind to the remote cost, on the usual small requests: what weighing
  the cost gains.

    .venv/bin/python benchmarks/remote_cost_planning.py [--instances 40] [--share 0.1,0.6] [--out file.txt]
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from planner.api import make_plan
from planner.brute_force import brute_force
from planner.errors import PlanningError
from planner.problem import Problem
from planner.profiles import ProfileTable
from planner.random_requests import random_request, with_remote_cost
from planner.simulator import evaluate_problem
from planner.strategies.fast import plan as fast_plan

TINY = dict(components=(2, 3), machine_types=(1, 2), machines=(2, 3))


def _row(table: Table, label: str, values: list[float]) -> None:
    table.add_row(label, str(len(values)), f"{min(values):.3f}", f"{statistics.median(values):.3f}",
                  f"{statistics.mean(values):.3f}", f"{max(values):.3f}",
                  str(sum(v < 1 - 1e-3 for v in values)), str(sum(v > 1 + 1e-3 for v in values)))


def _table(title: str) -> Table:
    table = Table(title=title)
    for column in ("", "requests", "min", "median", "mean", "max", "below 1", "above 1"):
        table.add_column(column, justify="right")
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=40)
    parser.add_argument("--share", default="0.1,0.6", help="Remote costs as a fraction of e: low,high.")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    share = tuple(float(x) for x in args.share.split(","))
    console = Console(width=140, record=True, highlight=False)
    console.print(f"remote cost planning; {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; seeds "
                  f"0-{args.instances - 1}; remote_send and remote_receive each uniform in {share} times e")

    fast_bf, optimal_bf, skipped = [], [], 0
    for seed in range(args.instances):
        request = with_remote_cost(random_request(seed, **TINY), seed, share)
        problem = Problem.build(request.topology, request.cluster, ProfileTable.from_entries(request.entries),
                                request.options)
        try:
            exact = brute_force(problem, 3).input_rate
        except PlanningError:
            skipped += 1
            continue
        if exact <= 0:
            skipped += 1
            continue
        for strategy, out in (("fast", fast_bf), ("optimal", optimal_bf)):
            out.append(make_plan(request.topology, request.cluster, request.entries, strategy,
                                 request.options).input_rate / exact)
    table = _table("tiny requests: R of the plan / R of the brute force (up to 3 instances each, so above 1 is "
                   "possible), remote costs included")
    _row(table, "fast", fast_bf)
    _row(table, "optimal (MILP without the remote cost)", optimal_bf)
    console.print(table)
    console.print(f"{skipped} requests the brute force could not plan or enumerate were skipped")

    gains, times_aware, times_blind = [], [], []
    for seed in range(args.instances):
        request = with_remote_cost(random_request(seed), seed, share)
        problem = Problem.build(request.topology, request.cluster, ProfileTable.from_entries(request.entries),
                                request.options)
        started = time.perf_counter()
        aware = evaluate_problem(problem, fast_plan(problem).placement).input_rate
        times_aware.append(time.perf_counter() - started)
        started = time.perf_counter()
        blind = fast_plan(dataclasses.replace(problem, has_remote_cost=False)).placement
        times_blind.append(time.perf_counter() - started)
        gains.append(aware / evaluate_problem(problem, blind).input_rate)
    table = _table("small requests (2-6 components, 2-8 machines): R of fast / R of fast's remote-blind plan, both "
                   "scored with the remote costs")
    _row(table, "fast", gains)
    console.print(table)
    console.print(f"planning time, median: remote-aware {statistics.median(times_aware) * 1000:.0f} ms, remote-blind "
                  f"{statistics.median(times_blind) * 1000:.0f} ms")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(console.export_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
