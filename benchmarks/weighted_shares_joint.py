"""Weighted shares chosen with the placement (issue 33), offline: Linear, Diamond and Star on the default cluster.

Each topology is planned as ``hetsched bench`` plans it on the default local cluster (cluster/specs/default.yaml,
the shipped profile set profiles/default-cluster.json, capacity 100 less each type's base load, the default
strategy) and scored by the planner alone, no cluster: the input rate R of today's plan with Storm's even shares,
of the same plan with the shares chosen after it (post hoc), of the plan made with ``options.weighted_shares``
(shares chosen with the instance counts and the placement), and the LP fluid bound (any split); then planning
times, the median of ``--repeat`` runs.

    .venv/bin/python -m benchmarks.weighted_shares_joint [--topologies linear,diamond,star] [--repeat 3] [--json F]
        [--paper-scenarios 1,2] [--exhaustive]

``--exhaustive`` checks the joint plan against every placement with at most one instance of a component per machine
(the optimum where no thread cap binds, as on this cluster), a shares LP each: minutes.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cluster.spec import load_spec
from planner.fixtures import load_scenario
from planner.model import Cluster, ProfileEntry, ProfileSet, Topology
from planner.profiles import machine_base_load

REPO = Path(__file__).resolve().parents[1]
PROFILE_SET = REPO / "profiles" / "default-cluster.json"
TOPOLOGIES = ("linear", "diamond", "star")


def default_cluster_request(name: str) -> tuple[Topology, Cluster, list[ProfileEntry]]:
    """The topology, cluster and profiles ``hetsched bench`` plans ``name`` with on the default local cluster."""
    from bench.profiles import fill_pass_through_alphas
    from topologies.catalog import lookup, planner_topology

    profile_set = ProfileSet.model_validate_json(PROFILE_SET.read_text())
    profile_set, _ = fill_pass_through_alphas(profile_set, [name])
    cluster = load_spec().planner_cluster(machine_base_load(profile_set))
    return planner_topology(lookup(name)), cluster, list(profile_set.entries)


def measure(label: str, request: tuple[Topology, Cluster, list[ProfileEntry]], repeat: int) -> dict:
    """One request's figures: R of each plan, the bound, the joint plan's machines, planning times."""
    from planner.api import evaluate_assignments, make_plan
    from planner.bounds import lp_upper_bound
    from planner.model import InstanceAssignment, PlanOptions
    from planner.profiles import ProfileTable

    topology, cluster, entries = request
    timed: dict[str, list[tuple[float, float]]] = {"today": [], "joint": []}
    plans = {}
    for _ in range(repeat):
        for kind, options in (("today", PlanOptions()), ("joint", PlanOptions(weighted_shares=True))):
            start, cpu = time.perf_counter(), time.process_time()
            plans[kind] = make_plan(topology, cluster, entries, options=options)
            timed[kind].append((time.perf_counter() - start, time.process_time() - cpu))
    today, joint = plans["today"], plans["joint"]
    assignments = [InstanceAssignment(component=a.component, machine=a.machine)
                   for a in sorted(today.assignments, key=lambda a: (a.component, a.index))]
    post_hoc = evaluate_assignments(topology, cluster, entries, assignments, PlanOptions(weighted_shares=True))
    capacity = {t.name: t.capacity for t in cluster.machine_types}
    return {
        "topology": label,
        "bound": lp_upper_bound(topology, cluster, ProfileTable.from_entries(entries)),
        "today_even": today.input_rate,
        "today_post_hoc": post_hoc.input_rate,
        "joint": joint.input_rate,
        "today_instances": today.instances,
        "joint_instances": joint.instances,
        "joint_placement": {c: [a.machine for a in sorted(joint.assignments, key=lambda a: a.index) if a.component == c]
                            for c in joint.instances},
        "joint_shares": {s.stream: [round(x, 4) for x in s.shares] for s in joint.shares or []},
        "today_machines_of_quota": {m.id: m.utilization / capacity[m.type] for m in today.machines},
        "joint_machines_of_quota": {m.id: m.utilization / capacity[m.type] for m in joint.machines},
        "post_hoc_machines_of_quota": {m.id: m.utilization / capacity[m.type] for m in post_hoc.machines},
        "joint_search": joint.stats.get("joint_shares"),
        "plan_s": {kind: {"wall": statistics.median(t[0] for t in runs), "cpu": statistics.median(t[1] for t in runs)}
                   for kind, runs in timed.items()},
    }


def exhaustive(name: str) -> float:
    """The best R with weighted shares over every placement with at most one instance of a component per machine:
    the exact optimum where no thread cap binds (more instances on one machine then only add MET)."""
    from planner.model import PlanOptions
    from planner.problem import compile_problem
    from planner.profiles import ProfileTable
    from planner.stream_shares import weighted_score

    topology, cluster, entries = default_cluster_request(name)
    problem = compile_problem(topology, cluster, ProfileTable.from_entries(entries), PlanOptions(weighted_shares=True))
    machines = problem.machine_ids
    subsets = [list(s) for k in range(1, len(machines) + 1) for s in itertools.combinations(machines, k)]
    best = 0.0
    for choice in itertools.product(subsets, repeat=problem.n_components):
        score = weighted_score(problem, dict(zip(problem.component_ids, choice)), best)
        if score is not None:
            best = max(best, score.rate)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topologies", default=",".join(TOPOLOGIES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument("--paper-scenarios", default="",
                        help="also the paper's scenarios of these numbers (1,2,3: 6, 30, 180 machines, planner/fixtures)")
    parser.add_argument("--exhaustive", action="store_true",
                        help="also the best of every placement with at most one instance of a component per machine "
                        "(minutes: 7^components shares LPs on the three machines)")
    args = parser.parse_args()
    names = [name for name in args.topologies.split(",") if name]
    rows = [measure(name, default_cluster_request(name), args.repeat) for name in names]
    if args.exhaustive:
        for row in rows:
            row["exhaustive"] = exhaustive(row["topology"])
    for scenario in (int(n) for n in args.paper_scenarios.split(",") if n):
        for name in names:
            found = load_scenario(name, scenario)
            rows.append(measure(f"{name}, paper s{scenario}", (found.topology, found.cluster, found.profiles.entries),
                                args.repeat))
    console = Console(width=max(Console().width, 120))
    table = Table(title=f"R, tuples/s (of the LP bound), default cluster unless named; planning ms, median of "
                  f"{args.repeat}")
    for column in ("topology", "today, even", "today, shares after", "joint", "LP bound", "least machine",
                   "instances", "ms today", "ms joint"):
        table.add_column(column, justify="left" if column in ("topology", "instances") else "right")
    for row in rows:
        bound = row["bound"]

        def rate(r: float) -> str:
            return f"{r:.2f} ({r / bound:.1%})"

        def ms(kind: str) -> str:
            return f"{row['plan_s'][kind]['wall'] * 1000:.0f} ({row['plan_s'][kind]['cpu'] * 1000:.0f})"

        counts = f"{sum(row['today_instances'].values())} -> {sum(row['joint_instances'].values())}"
        least = " / ".join(f"{min(row[k + '_machines_of_quota'].values()):.0%}" for k in ("today", "post_hoc", "joint"))
        table.add_row(row["topology"], rate(row["today_even"]), rate(row["today_post_hoc"]), rate(row["joint"]),
                      f"{bound:.2f}", least, counts, ms("today"),
                      ms("joint"))
    console.print(table)
    console.print("least machine: the least loaded machine, percent of its quota (even / shares after / joint); "
                  "instances: today -> joint; ms: wall (CPU); "
                  f"load average {os.getloadavg()[0]:.1f}")
    for row in rows:
        if "paper" in row["topology"]:
            continue
        placed = "; ".join(f"{c} {','.join(ms)}" for c, ms in row["joint_placement"].items())
        shares = "; ".join(f"{s} {'/'.join(f'{x:.3f}' for x in xs)}" for s, xs in row["joint_shares"].items())
        console.print(f"{row['topology']} joint: {placed}; shares {shares}", soft_wrap=True)
        if "exhaustive" in row:
            console.print(f"{row['topology']}: best of every placement with at most one instance of a component per "
                          f"machine {row['exhaustive']:.2f} (joint {row['joint']:.2f})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
