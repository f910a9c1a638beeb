"""The paper's section 6.3 rerun in our model: every strategy on every paper scenario, side by side.

For Linear, Diamond and Star on the clusters of Table 4 (scenarios 1-3) with the
profiles of Table 3: the input rate each strategy's placement sustains (closed
form), the total and sink throughput, and the ratios paper/even (the paper
reports +26 % to +49 % over Storm's default scheduler in simulation) and
paper/best, fast/best, where best is the exact optimum when ``optimal`` proves
it within its time limit and the LP upper bound (planner.bounds) otherwise.

    .venv/bin/python -m benchmarks.planner_scenarios [--optimal-time-limit 60] [--no-thread-caps] [--json out.json]

``--no-thread-caps`` drops the machine types' cores (no per-thread cap), the
setting of the paper's own simulator.
"""
from __future__ import annotations

import argparse
import json
import os

from rich.console import Console

from planner import report
from planner.model import Plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--optimal-time-limit", type=float, default=60.0,
                        help="seconds the exact optimal strategy may take per scenario (0: skip it)")
    parser.add_argument("--no-thread-caps", action="store_true", help="drop the per-thread cap (cores) of the machine types")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    console = Console(width=max(Console().width, 150))
    console.print(f"load average before: {os.getloadavg()[0]:.1f} (2 cores, shared)")
    with console.status("planning") as status:
        results = report.compare_scenarios(
            optimal_time_limit_s=args.optimal_time_limit or None,
            progress=lambda what: status.update(f"planning {what}"),
            thread_caps=not args.no_thread_caps,
        )
    console.print(report.rate_table(results))
    console.print(report.throughput_table(results))
    console.print(report.instances_table(results))
    for line in report.errors(results):
        console.print(f"note: {line}")
    for r in results:
        console.print(f"{r.name}: bound/optimal took {r.yardstick_s:.1f} s; "
                      + ", ".join(f"{s} {p.stats['elapsed_ms']:.0f} ms" for s, p in r.plans.items() if isinstance(p, Plan)))
    if args.json:
        with open(args.json, "w") as out:
            json.dump([
                {
                    "scenario": r.name, "machines": r.machines,
                    "lp_bound": r.yardstick.lp_bound, "optimal": r.yardstick.optimal, "optimal_note": r.yardstick.optimal_note,
                    "plans": {s: (p.model_dump() if isinstance(p, Plan) else {"error": p}) for s, p in r.plans.items()},
                }
                for r in results
            ], out, indent=1)


if __name__ == "__main__":
    main()
