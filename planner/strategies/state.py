"""A placement under construction, as a (component x machine) instance-count matrix.

Strategies that grow a placement one instance at a time need the machine
loads after every step; this keeps them as ``a_w * R + b_w`` (planner.simulator)
in arrays, so a step costs O(components x machines) numpy work, not a rescore.
Instance 0 of a component is the first one placed (it alone gets ``global`` streams).
"""
from __future__ import annotations

import numpy as np

from planner.model import Placement
from planner.problem import Problem

EPS = 1e-9
"""Slack in percent under which a load counts as within its limit (floating point noise)."""


class PlacementState:
    def __init__(self, problem: Problem):
        self.problem = problem
        c, m = problem.n_components, problem.n_machines
        self.hosts = np.zeros((c, m), dtype=np.int64)
        self.machines_of: list[list[int]] = [[] for _ in range(c)]
        self.counts = np.zeros(c, dtype=np.int64)
        # Per (component, machine): CPU percent per tuple/s and fixed percent of one instance there.
        self.coef = problem.cost[:, problem.machine_type]
        self.met = problem.met[:, problem.machine_type]
        self.thread_limit = problem.thread_limit[problem.machine_type]

    def copy(self) -> "PlacementState":
        other = object.__new__(PlacementState)
        other.problem = self.problem
        other.hosts = self.hosts.copy()
        other.machines_of = [list(ms) for ms in self.machines_of]
        other.counts = self.counts.copy()
        other.coef, other.met, other.thread_limit = self.coef, self.met, self.thread_limit
        return other

    def add(self, component: int, machine: int) -> None:
        self.hosts[component, machine] += 1
        self.machines_of[component].append(machine)
        self.counts[component] += 1

    def instance_rates(self, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rate of any instance, extra rate of instance 0) per component, per unit R."""
        counts = self.counts if counts is None else counts
        split, each, first = self.problem.shares(counts)
        return split / np.maximum(counts, 1) + each, first

    def linear_loads(self, counts: np.ndarray | None = None, hosts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(a_w, b_w): machine load = a_w * R + b_w percent."""
        hosts = self.hosts if hosts is None else hosts
        rate, first = self.instance_rates(counts)
        a = np.einsum("cm,cm,c->m", self.coef, hosts, rate)
        for c, machines in enumerate(self.machines_of):
            if first[c] and machines:
                a[machines[0]] += self.coef[c, machines[0]] * first[c]
        b = np.einsum("cm,cm->m", self.met, hosts)
        return a, b

    def instance_cpu(self, rate: float) -> tuple[np.ndarray, np.ndarray]:
        """(CPU percent of one ordinary instance of c on w, CPU percent of instance 0 of c on its machine), at input rate ``rate``."""
        inst_rate, first = self.instance_rates()
        cpu = self.coef * (inst_rate * rate)[:, None] + self.met
        cpu0 = np.array([
            cpu[c, ms[0]] + self.coef[c, ms[0]] * first[c] * rate if ms else 0.0
            for c, ms in enumerate(self.machines_of)
        ])
        return cpu, cpu0

    def placement(self) -> Placement:
        ids = self.problem.machine_ids
        return {cid: [ids[w] for w in self.machines_of[c]] for c, cid in enumerate(self.problem.component_ids)}


def machine_rank(problem: Problem, key_primary: np.ndarray, key_secondary: np.ndarray, allowed: np.ndarray) -> int | None:
    """The allowed machine with the least primary key, then the least secondary key, then the least machine id."""
    candidates = np.flatnonzero(allowed)
    if candidates.size == 0:
        return None
    p = key_primary[candidates]
    best = candidates[np.isclose(p, p.min(), rtol=1e-12, atol=1e-12)]
    s = key_secondary[best]
    best = best[np.isclose(s, s.min(), rtol=1e-12, atol=1e-12)]
    if best.size == 1:
        return int(best[0])
    ids = problem.machine_ids
    return int(min(best, key=lambda w: ids[w]))
