"""Exhaustive search over instance counts and placements, for tiny requests only.

It exists to check the exact MILP (planner.strategies.optimal): it tries every
instance count up to a cap and every way to put those instances on the
machines, scores each with the simulator's closed form, and keeps the best.
Instances of one component are interchangeable except instance 0, which alone
receives ``global`` streams, so counts per machine (plus where instance 0 is)
cover every distinct placement. Memory is checked by the same closed form (a
placement over some machine's memory sustains no rate), so it checks the MILP's
memory rows too (tests/test_planner_memory.py). Nothing clever, so it is easy to
trust and exponential in size.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from planner.errors import PlanningError
from planner.model import Placement
from planner.problem import Problem
from planner.simulator import linear_loads, max_rate

MAX_PLACEMENTS = 2_000_000


@dataclass(frozen=True)
class BruteForceResult:
    input_rate: float
    """The best closed-form R_max, tuples/s (0 if nothing fits)."""
    placement: Placement | None
    placements_tried: int


def _component_placements(n_machines: int, counts: range, has_first: bool):
    """Every distinct placement of one component: tuples of machine indices, instance 0 first."""
    for n in counts:
        if has_first:
            for host in range(n_machines):
                for rest in itertools.combinations_with_replacement(range(n_machines), n - 1):
                    yield (host, *rest)
        else:
            yield from itertools.combinations_with_replacement(range(n_machines), n)


def brute_force(problem: Problem, max_instances: int = 3) -> BruteForceResult:
    """The best plan with at most ``max_instances`` instances per component whose parallelism is free."""
    first = problem.shares(np.where(problem.fixed > 0, problem.fixed, max_instances)).first
    options = []
    for c in range(problem.n_components):
        fixed = int(problem.fixed[c])
        counts = range(fixed, fixed + 1) if fixed else range(1, max_instances + 1)
        options.append(list(_component_placements(problem.n_machines, counts, first[c] > 0)))
    total = int(np.prod([len(o) for o in options], dtype=float))
    if total > MAX_PLACEMENTS:
        raise PlanningError(f"brute force is limited to {MAX_PLACEMENTS} placements; this request has {total}")
    best_rate, best = 0.0, None
    tried = 0
    for choice in itertools.product(*options):
        placement = {
            cid: [problem.machine_ids[w] for w in machines] for cid, machines in zip(problem.component_ids, choice)
        }
        rate, _ = max_rate(problem, linear_loads(problem, placement))
        tried += 1
        if rate > best_rate:
            best_rate, best = rate, placement
    return BruteForceResult(input_rate=best_rate, placement=best, placements_tried=tried)
