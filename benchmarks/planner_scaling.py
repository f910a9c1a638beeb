"""Planning time as the cluster grows: the paper's scenarios 1-3, then 1,000 and 5,000 machines.

The Linear topology with the Table 3 profiles on clusters of the paper's three
machine types (scenarios 1-3 as in Table 4; the large ones split evenly over
the types). For each cluster and strategy: machines, instances planned, the
input rate reached and its fraction of the LP upper bound (planner.bounds; the
exact search does not reach these sizes), and the planning time (``make_plan``: validation, strategy
and scoring), the median of ``--repeat`` runs, as wall-clock time and as the
process's CPU time (which other jobs on a shared machine inflate far less).
Targets: scenario 3 under 100 ms, 1,000 machines under 1 s. The load average
is printed with the table.

    .venv/bin/python -m benchmarks.planner_scaling [--repeat 3] [--strategies paper,fast] [--sizes 1000,5000]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

from rich.console import Console
from rich.table import Table

from planner.api import make_plan
from planner.bounds import lp_upper_bound
from planner.fixtures import load_cluster, load_profiles, load_topology, scaled_cluster
from planner.model import PlanOptions
from planner.profiles import ProfileTable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--strategies", default="paper,fast")
    parser.add_argument("--sizes", default="1000,5000", help="machine counts beyond the paper's scenarios")
    parser.add_argument("--topology", default="linear")
    args = parser.parse_args()
    console = Console(width=max(Console().width, 120))
    topology = load_topology(args.topology)
    profiles = load_profiles().entries
    clusters = [(f"scenario {n}", load_cluster(n)) for n in (1, 2, 3)]
    for size in (int(s) for s in args.sizes.split(",") if s):
        third = size // 3
        clusters.append((f"{size} machines", scaled_cluster((third, third, size - 2 * third))))
    table = Table(title=f"Planning time, {args.topology} topology (median of {args.repeat})")
    for col in ("cluster", "machines", "strategy", "instances", "input rate", "of LP bound", "wall ms", "CPU ms",
                "load avg"):
        table.add_column(col, justify="left" if col in ("cluster", "strategy") else "right")
    with console.status("planning") as status:
        for name, cluster in clusters:
            bound = lp_upper_bound(topology, cluster, ProfileTable.from_entries(profiles), PlanOptions())
            for strategy in args.strategies.split(","):
                status.update(f"{name}: {strategy}")
                times, cpu_times, plan = [], [], None
                for _ in range(args.repeat):
                    start, cpu_start = time.perf_counter(), time.process_time()
                    plan = make_plan(topology, cluster, profiles, strategy, PlanOptions())
                    times.append((time.perf_counter() - start) * 1000.0)
                    cpu_times.append((time.process_time() - cpu_start) * 1000.0)
                table.add_row(
                    name, str(len(cluster.machines)), strategy, str(sum(plan.instances.values())),
                    f"{plan.input_rate:.1f}", f"{plan.input_rate / bound:.3f}", f"{statistics.median(times):.0f}", f"{statistics.median(cpu_times):.0f}",
                    f"{os.getloadavg()[0]:.1f}",
                )
    console.print(table)


if __name__ == "__main__":
    main()
