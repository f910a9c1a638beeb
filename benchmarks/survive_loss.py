"""The worst-case-loss objective on the paper's scenarios: nominal R_max given up against worst-case rate gained.

For each paper scenario (planner.fixtures) the default strategy plans twice: with ``survive_loss: {objective:
nominal}`` (its own plan and its contingencies) and with ``survive_loss: {}`` (the worst-case objective). Each row
gives both plans' nominal R_max and their rate after the loss of their worst machine (its instances re-placed, the
others kept), and the planning time. ``python -m benchmarks.survive_loss [--time-limit-s 10] [--json]``.
"""
from __future__ import annotations

import argparse
import json
import time

from planner.api import make_plan
from planner.fixtures import SCENARIOS, TOPOLOGIES, load_scenario
from planner.model import PlanOptions, SurviveLoss


def row(topology: str, scenario: int, time_limit_s: float) -> dict:
    s = load_scenario(topology, scenario)
    out: dict = {"scenario": f"{topology}-s{scenario}", "machines": len(s.cluster.machines)}
    for name, rule in (("nominal", SurviveLoss(objective="nominal")), ("worst_case", SurviveLoss())):
        started = time.perf_counter()
        plan = make_plan(s.topology, s.cluster, s.profiles.entries, None,
                         PlanOptions(survive_loss=rule, time_limit_s=time_limit_s))
        out[name] = {"rate": plan.input_rate, "worst_case_rate": plan.stats["survive_loss"]["worst_case_rate"],
                     "search": plan.stats["survive_loss"].get("search"), "seconds": time.perf_counter() - started}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit-s", type=float, default=10.0, help="options.time_limit_s of each plan (the service's default)")
    parser.add_argument("--json", action="store_true", help="one JSON object per scenario instead of the table")
    args = parser.parse_args()
    if not args.json:
        print("| scenario | machines | nominal R | its worst-case R | worst-case objective: R | its worst-case R | nominal given up | worst case gained | search | s |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    for topology in TOPOLOGIES:
        for scenario in SCENARIOS:
            r = row(topology, scenario, args.time_limit_s)
            if args.json:
                print(json.dumps(r))
                continue
            n, w = r["nominal"], r["worst_case"]
            print(f"| {r['scenario']} | {r['machines']} | {n['rate']:.2f} | {n['worst_case_rate']:.2f} | {w['rate']:.2f} | "
                  f"{w['worst_case_rate']:.2f} | {1 - w['rate'] / n['rate']:+.1%} | "
                  f"{w['worst_case_rate'] / n['worst_case_rate'] - 1:+.1%} | {w['search']} | {w['seconds']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
