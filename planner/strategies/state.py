"""A placement under construction, as a (component x machine) instance-count matrix.

Strategies that grow a placement one instance at a time need the machine
loads after every step; this keeps them as ``a_w * R + b_w`` in arrays (the
simulator's closed form on an instance-count matrix, planner.simulator), so a
step costs O(components x machines) numpy work, not a rescore. Instance 0 of a
component is the first one placed (it alone gets ``global`` streams).
"""
from __future__ import annotations

import numpy as np

from planner.model import Placement
from planner.problem import Problem
from planner.simulator import (
    MEMORY_SLACK_MB,
    HostedModel,
    InstanceRates,
    hosted_loads,
    instance_cpu_pct,
    instance_rates,
)


class PlacementState:
    """Instances placed so far: how many of each component on each machine, and which one is instance 0."""

    def __init__(self, problem: Problem, model: HostedModel | None = None):
        self.problem = problem
        self.model = model or HostedModel.of(problem)
        c, m = problem.n_components, problem.n_machines
        self.hosts = np.zeros((c, m), dtype=np.int64)
        self.machines_of: list[list[int]] = [[] for _ in range(c)]
        self.counts = np.zeros(c, dtype=np.int64)

    @property
    def cost(self) -> np.ndarray:
        """(C, M) percent per tuple/s of an instance of c on w."""
        return self.model.cost

    @property
    def met(self) -> np.ndarray:
        """(C, M) fixed percent of an instance of c on w."""
        return self.model.met

    @property
    def thread_limit(self) -> np.ndarray:
        """(M,) thread cap percent of every machine."""
        return self.model.thread_limit

    def copy(self) -> PlacementState:
        other = PlacementState.__new__(PlacementState)
        other.problem, other.model = self.problem, self.model
        other.hosts = self.hosts.copy()
        other.machines_of = [list(ms) for ms in self.machines_of]
        other.counts = self.counts.copy()
        return other

    def add(self, component: int, machine: int) -> None:
        self.hosts[component, machine] += 1
        self.machines_of[component].append(machine)
        self.counts[component] += 1

    def memory_fits(self, component: int) -> np.ndarray:
        """(M,) whether one more instance of ``component`` fits each machine's memory (with a worker where none is yet).

        All True when memory cannot bind (``problem.memory_bound``), at no cost.
        """
        problem = self.problem
        if not problem.memory_bound:
            return np.ones(problem.n_machines, dtype=bool)
        occupied = self.hosts.sum(axis=0) > 0
        extra = problem.memory[component] + problem.worker_memory * ~occupied
        return problem.memory_used(self.hosts) + extra <= problem.memory_limit + MEMORY_SLACK_MB

    def first_machines(self) -> np.ndarray:
        """Machine of instance 0 per component, -1 where none is placed yet."""
        return np.array([ms[0] if ms else -1 for ms in self.machines_of], dtype=np.int64)

    def instance_rates(self, counts: np.ndarray | None = None) -> InstanceRates:
        """Input per unit R of any instance and the extra of instance 0, per component."""
        return instance_rates(self.problem, self.counts if counts is None else counts)

    def linear_loads(self, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(a_w, b_w): machine load = a_w * R + b_w percent."""
        return hosted_loads(self.cost, self.met, self.hosts, self.instance_rates(counts), self.first_machines())

    def instance_cpu(self, rate: float) -> tuple[np.ndarray, np.ndarray]:
        """(CPU percent of one ordinary instance of c on w, CPU percent of instance 0 of c on its machine), at input rate ``rate``."""
        rates = self.instance_rates()
        cpu = instance_cpu_pct(self.cost, self.met, (rates.each_instance * rate)[:, None])
        cpu0 = np.array([
            instance_cpu_pct(self.cost[c, ms[0]], cpu[c, ms[0]], rates.first_extra[c] * rate) if ms else 0.0
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
