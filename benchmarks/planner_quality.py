"""How close each heuristic strategy comes to the exact optimum, on seeded random small requests.

For every seed, planner.random_requests draws a request (a random DAG of 2-6
components, 2-4 machine types, 2-8 machines, random profiles with thread
caps and global/fields/shuffle groupings); every strategy plans it and the
simulator scores the plan (closed-form R_max). The table gives each
strategy's R as a fraction of the proven optimum (min, median, mean, and how
often it is within 0.1 %) and as a fraction of the LP upper bound, then the
time of the exact solves. Requests the random draw makes unplannable (the
cluster cannot host one instance of everything) are counted and skipped;
requests where ``optimal`` runs out of time are counted and left out of the
"of optimal" figures (they still count in "of LP bound").

    .venv/bin/python -m benchmarks.planner_quality [--instances 200] [--first-seed 0]
        [--optimal-time-limit 120] [--json out.json] [--skip-optimal] [--reuse-optimal earlier.json]
        [--machines 1000] [--heuristics fast]

``--reuse-optimal`` takes the exact solves of the seeds an earlier ``--json``
file holds (the ``optimal`` strategy is not what changed) and solves only the
others, so a heuristic's before and after cost one exact run. ``--json`` is
rewritten after every request, so a run cut short still leaves its rows.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from planner.api import make_plan
from planner.bounds import lp_upper_bound
from planner.errors import PlanningError, PlanningTimeout
from planner.model import PlanOptions
from planner.profiles import ProfileTable
from planner.random_requests import random_request
from planner.strategies import STRATEGIES
from planner.validation import validate

HEURISTICS = [name for name in ("paper", "fast", "even", "resource_aware") if name in STRATEGIES]
AT_OPTIMUM = 0.999


def _silence_solver_stdout() -> Console:
    """A console on the real stdout, with file descriptor 1 sent to /dev/null.

    HiGHS 1.12 (bundled with SciPy) prints a leftover debug line straight to
    the C stdout now and then (ERGO-Code/HiGHS#2783); it says nothing about
    the result and would break up the report.
    """
    report = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    return Console(file=report, width=max(Console(file=report).width, 120))


OPTIMAL_FIELDS = ("optimal", "optimal_timeout", "optimal_error", "optimal_s", "milp_solves", "capped_components",
                  "optimal_instances")


def run_one(seed: int, time_limit_s: float, exact: bool = True, earlier: dict | None = None,
            machines: int | None = None, heuristics: list[str] = HEURISTICS) -> dict:
    rq = random_request(seed) if machines is None else random_request(seed, machines=(machines, machines))
    profiles = ProfileTable.from_entries(rq.entries)
    row: dict = {
        "seed": seed,
        "components": len(rq.topology.components),
        "machine_types": len({m.type for m in rq.cluster.machines}),
        "machines": len(rq.cluster.machines),
    }
    try:
        validate(rq.topology, rq.cluster, profiles, rq.options)
    except PlanningError as err:
        row["invalid"] = str(err)
        return row
    row["lp_bound"] = lp_upper_bound(rq.topology, rq.cluster, profiles, rq.options)
    row["rates"] = {}
    for name in heuristics:
        try:
            started = time.process_time()
            row["rates"][name] = make_plan(rq.topology, rq.cluster, rq.entries, name, rq.options).input_rate
            row.setdefault("cpu_ms", {})[name] = round(1000 * (time.process_time() - started), 1)
        except PlanningError as err:
            row["rates"][name] = None
            row.setdefault("strategy_errors", {})[name] = str(err)
    if not exact:
        return row
    if earlier is not None and "optimal_s" in earlier:
        row.update({key: earlier[key] for key in OPTIMAL_FIELDS if key in earlier})
        return row
    options = PlanOptions(time_limit_s=time_limit_s)
    start = time.perf_counter()
    try:
        plan = make_plan(rq.topology, rq.cluster, rq.entries, "optimal", options)
    except PlanningTimeout as err:
        row["optimal_timeout"] = str(err)
    except PlanningError as err:
        row["optimal_error"] = str(err)
    else:
        row["optimal"] = plan.input_rate
        row["milp_solves"] = plan.stats["milp_solves"]
        row["capped_components"] = plan.stats["capped_components"]
        row["optimal_instances"] = sum(plan.instances.values())
    row["optimal_s"] = time.perf_counter() - start
    return row


def _stats(values: list[float]) -> tuple[str, str, str]:
    if not values:
        return ("n/a",) * 3
    return f"{min(values):.3f}", f"{statistics.median(values):.3f}", f"{statistics.fmean(values):.3f}"


def quality_table(rows: list[dict], heuristics: list[str] = HEURISTICS) -> Table:
    solved = [r for r in rows if "optimal" in r]
    bounded = [r for r in rows if "lp_bound" in r]
    table = Table(title=f"Strategies against the exact optimum ({len(solved)} requests proven) and the LP bound ({len(bounded)})")
    for col in ("strategy", "of optimal: min", "median", "mean", f"at optimum (>= {AT_OPTIMUM:g})",
                "of LP bound: min", "median", "mean", "failed"):
        table.add_column(col, justify="left" if col == "strategy" else "right")
    for name in [*heuristics, "optimal"]:
        of_opt = [r["rates"][name] / r["optimal"] for r in solved if r["rates"].get(name) is not None] if name != "optimal" else [1.0] * len(solved)
        source = bounded if name != "optimal" else solved
        of_lp = [
            (r["rates"].get(name) if name != "optimal" else r["optimal"]) / r["lp_bound"]
            for r in source
            if (r["rates"].get(name) if name != "optimal" else r["optimal"]) is not None
        ]
        failed = sum(1 for r in bounded if name != "optimal" and r["rates"].get(name) is None)
        at_opt = sum(1 for v in of_opt if v >= AT_OPTIMUM)
        table.add_row(name, *_stats(of_opt), f"{at_opt}/{len(of_opt)}", *_stats(of_lp), str(failed))
    return table


def timing_table(rows: list[dict], time_limit_s: float) -> Table:
    solved = [r for r in rows if "optimal" in r]
    times = sorted(r["optimal_s"] for r in solved)
    table = Table(title="Exact solves (optimal strategy, wall clock on a shared machine)")
    for col in ("proven", "timed out", "refused/error", "min s", "median s", "mean s", "p90 s", "max s",
                "MILP solves (median)", "capped searches"):
        table.add_column(col, justify="right")
    timeouts = sum(1 for r in rows if "optimal_timeout" in r)
    errors = sum(1 for r in rows if "optimal_error" in r)
    if times:
        p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
        table.add_row(
            str(len(solved)), f"{timeouts} (limit {time_limit_s:g} s)", str(errors),
            f"{times[0]:.2f}", f"{statistics.median(times):.2f}", f"{statistics.fmean(times):.2f}",
            f"{p90:.2f}", f"{times[-1]:.2f}",
            f"{statistics.median(r['milp_solves'] for r in solved):g}",
            str(sum(1 for r in solved if r["capped_components"])),
        )
    else:
        table.add_row("0", str(timeouts), str(errors), *["n/a"] * 7)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=200, help="number of seeds to draw (default 200)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--optimal-time-limit", type=float, default=120.0, help="seconds per exact solve")
    parser.add_argument("--json", help="also write every request's figures to this file")
    parser.add_argument("--skip-optimal", action="store_true",
                        help="no exact solves: every strategy against the LP bound only (minutes instead of most of an hour)")
    parser.add_argument("--machines", type=int,
                        help="draw every request with this many machines (default 2-8); with --skip-optimal beyond "
                             "what the exact search reaches, e.g. 1000")
    parser.add_argument("--heuristics", default=",".join(HEURISTICS),
                        help="strategies to compare (default all; paper and resource_aware are slow at 1,000 machines)")
    parser.add_argument("--reuse-optimal", help="an earlier --json file: take its exact solves for the seeds it holds")
    args = parser.parse_args()
    console = _silence_solver_stdout()
    heuristics = [name for name in args.heuristics.split(",") if name]
    earlier: dict[int, dict] = {}
    if args.reuse_optimal:
        with open(args.reuse_optimal) as source:
            earlier = {row["seed"]: row for row in json.load(source)}
        console.print(f"exact solves reused from {args.reuse_optimal} where it holds the seed")
    console.print(f"load average before: {os.getloadavg()[0]:.1f} (shared machine); heuristics: {', '.join(heuristics)}")
    rows: list[dict] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("random requests", total=args.instances)
        for seed in range(args.first_seed, args.first_seed + args.instances):
            progress.update(task, description=f"seed {seed}")
            rows.append(run_one(seed, args.optimal_time_limit, exact=not args.skip_optimal, earlier=earlier.get(seed),
                                machines=args.machines, heuristics=heuristics))
            progress.advance(task)
            if args.json:
                with open(args.json, "w") as out:
                    json.dump(rows, out, indent=1)
            done = len(rows)
            if not console.is_terminal and (done % 10 == 0 or done == args.instances):
                proven = sum(1 for r in rows if "optimal" in r)
                console.log(f"{done}/{args.instances} requests, {proven} proven optimal")
    invalid = sum(1 for r in rows if "invalid" in r)
    console.print(f"{len(rows)} seeds drawn, {invalid} unplannable draws skipped (the cluster cannot host one instance of each component)")
    console.print(quality_table(rows, heuristics))
    if args.skip_optimal:
        console.print("--skip-optimal: no exact solves, so only the LP bound columns are filled")
    else:
        console.print(timing_table(rows, args.optimal_time_limit))
    worst = sorted((r for r in rows if "optimal" in r and r["rates"].get("paper")), key=lambda r: r["rates"]["paper"] / r["optimal"])[:5]
    if worst:
        console.print("paper's worst requests: " + ", ".join(
            f"seed {r['seed']} ({r['rates']['paper'] / r['optimal']:.3f})" for r in worst))
    if "fast" in heuristics:
        for yardstick in ("optimal", "lp_bound"):
            scored = sorted((r["rates"]["fast"] / r[yardstick], r["seed"]) for r in rows
                            if yardstick in r and r["rates"].get("fast") is not None)[:5]
            if scored:
                console.print(f"fast's worst requests against {yardstick}: "
                              + ", ".join(f"seed {seed} ({share:.3f})" for share, seed in scored))
    for name in heuristics:
        times = sorted(r["cpu_ms"][name] for r in rows if name in r.get("cpu_ms", {}))
        if times:
            console.print(f"{name}'s CPU time per request (this process, shared machine): median "
                          f"{statistics.median(times):.0f} ms, p90 {times[int(0.9 * (len(times) - 1))]:.0f} ms, "
                          f"max {times[-1]:.0f} ms over {len(times)}")
    for r in rows:
        for key in ("optimal_timeout", "optimal_error"):
            if key in r:
                console.print(f"seed {r['seed']}: {r[key]}")
    console.print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
