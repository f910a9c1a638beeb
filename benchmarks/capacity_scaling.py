"""Capacity planning as the answer grows: Linear + Diamond + Star with targets on 10 machine types, up to 1,000 machines.

Ten machine types made from the paper's three (Table 3 profiles): type k runs every tuple at a speed that
grows with k and costs a price that grows a little slower, so cheaper-per-tuple machines are the large ones
but not by much. The three topologies' target rates are set so that the fluid bound's cheapest set holds about
each of ``--sizes`` machines (the fluid LP bound of an even cluster of that size, scaled by the machines the buy
MILP answers for it). For each size,
``planner.capacity.plan_capacity`` answers the purchase alone, then with the next machine (one plan per type),
then with the loss of each type's most loaded machine: machines bought, cost and its lower bound, whether
proven, the scale reached, its gap to the LP bound, wall-clock and CPU time (the CPU time is what other jobs
on a shared host inflate least). The load average is printed with the table.

    .venv/bin/python -m benchmarks.capacity_scaling [--sizes 10,100,1000] [--types 10] [--time-limit 120]
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from planner.bounds import lp_upper_bound
from planner.capacity import Offer, cheapest_buy, combined_topology, plan_capacity, probe_cluster
from planner.capacity_model import CapacityAnswer, CapacityRequest, CapacityTopology, OfferedType
from planner.fixtures import load_cluster, load_profiles, load_topology
from planner.model import Cluster, Machine, PlanOptions, ProfileEntry, ProfileRef
from planner.problem import compile_problem
from planner.profiles import ProfileTable

TOPOLOGIES = ("linear", "diamond", "star")
SPEED_STEP = 0.15
"""Type k of the offer runs (1 + SPEED_STEP * k) times as fast as the paper's type it is made from."""
PRICE_STEP = 0.12
"""Type k costs (1 + PRICE_STEP * k) times its paper type's price: faster types are cheaper per tuple, a little."""
PAPER_PRICE = {"m1": 1.0, "m2": 0.6, "m3": 0.7}
"""The paper's three types priced by what they do per tuple of Linear (m1 is the fastest)."""


def offer(n_types: int) -> tuple[list[OfferedType], list[ProfileEntry]]:
    """``n_types`` machine types derived from the paper's three, with their profile entries."""
    paper_types = load_cluster(1).machine_types
    entries = load_profiles().entries
    types: list[OfferedType] = []
    derived: list[ProfileEntry] = []
    for k in range(n_types):
        base = paper_types[k % len(paper_types)]
        name = f"{base.name}-x{k}"
        speed = 1.0 + SPEED_STEP * k
        types.append(OfferedType(**base.model_dump(exclude={"name"}), name=name,
                                 price=round(PAPER_PRICE[base.name] * (1.0 + PRICE_STEP * k), 3)))
        derived += [e.model_copy(update={"machine_type": name, "e": e.e / speed})
                    for e in entries if e.machine_type == base.name]
    return types, derived


def request_for(machines: int, n_types: int, time_limit_s: float, add_next: bool,
                losses: bool) -> CapacityRequest:
    """Targets for which the buy MILP buys about ``machines`` machines (equal for the three topologies)."""
    types, entries = offer(n_types)
    topologies = [CapacityTopology(topology=load_topology(name), target_rate=1.0) for name in TOPOLOGIES]
    even = Cluster(machine_types=[t.model_dump(exclude={"price", "available"}) for t in types],
                   machines=[Machine(id=f"even-{i}", type=types[i % n_types].name) for i in range(machines)])
    combined, table = combined_topology(topologies), ProfileTable.from_entries(entries)
    bound = lp_upper_bound(combined, even, table, PlanOptions())
    probe = compile_problem(combined_topology([t.model_copy(update={"target_rate": bound}) for t in topologies]),
                            probe_cluster(types), table, PlanOptions())
    bought = cheapest_buy(probe, Offer(tuple(types), np.array([t.price for t in types]), np.zeros(len(types), dtype=np.int64),
                                       np.full(len(types), np.inf)), 1.0, None)
    rescale = machines / max(1, int(bought.sum())) if bought is not None else 1.0
    for t in topologies:
        t.target_rate = round(bound * rescale, 3)
    return CapacityRequest(topologies=topologies, machine_types=types, profiles=ProfileRef(entries=entries),
                           options=PlanOptions(time_limit_s=time_limit_s), add_next=add_next,
                           lose=None if losses else [])


def row(answer: CapacityAnswer, wall_s: float, cpu_s: float) -> dict:
    p = answer.purchase
    return {"machines": len(p.cluster.machines), "types bought": len(p.buy), "cost": round(p.cost, 3),
            "cost lower bound": round(p.cost_lower_bound, 3), "proven": p.proven, "scale": round(p.scale, 4),
            "gap to LP bound": round(p.lp_gap, 4), "next": answer.add_next[0].machine_type if answer.add_next else "-",
            "losses": len(answer.losses), "placements": answer.stats.get("placements"),
            "stopped by": answer.stats.get("stopped_by", "-"), "wall s": round(wall_s, 2), "CPU s": round(cpu_s, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000", help="machines the cheapest set should hold, about")
    parser.add_argument("--types", type=int, default=10)
    parser.add_argument("--time-limit", type=float, default=120.0, help="options.time_limit_s of every request")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    args = parser.parse_args()
    rows = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        for what, add_next, losses in (("purchase", False, False), ("+ next machine", True, False),
                                       ("+ losses", False, True)):
            request = request_for(size, args.types, args.time_limit, add_next, losses)
            start, cpu_start = time.perf_counter(), time.process_time()
            answer = plan_capacity(request, request.profiles.entries or [])
            rows.append({"size": size, "asked": what, **row(answer, time.perf_counter() - start,
                                                             time.process_time() - cpu_start)})
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    table = Table(title=f"Capacity planning, {' + '.join(TOPOLOGIES)} on {args.types} machine types "
                        f"(load average {os.getloadavg()[0]:.1f})")
    for col in rows[0]:
        table.add_column(col, justify="left" if col in ("asked", "next", "stopped by") else "right")
    for r in rows:
        table.add_row(*(str(v) for v in r.values()))
    Console(width=max(Console().width, 200)).print(table)


if __name__ == "__main__":
    main()
