"""Step 3 of ``fast``: instances for a target rate, spread over the machines of each type as the LP flows say.

Biggest first onto the least loaded machines; a bisection on the target
rate keeps the packing with the highest closed-form rate.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from planner.problem import Problem
from planner.simulator import MEMORY_SLACK_MB, HostedModel, fits_within, instance_cpu_pct
from planner.strategies.base import Deadline
from planner.strategies.fast.fluid_lp import FluidInput
from planner.strategies.fast.polish import Layout, first_instances
from planner.strategies.fast.sizing import Counts
from planner.strategies.fast.tuning import FastTuning


@dataclass(frozen=True)
class Packing:
    """A packed layout and its closed-form R_max."""

    rate: float
    """R_max, tuples/s."""
    layout: Layout


def largest_remainder(weights: np.ndarray, total: int) -> np.ndarray:
    """Integers proportional to ``weights`` summing to ``total``."""
    if total <= 0 or weights.sum() <= 0:
        out = np.zeros(len(weights), dtype=np.int64)
        if total > 0:
            out[int(np.argmax(weights))] = total
        return out
    exact = weights / weights.sum() * total
    out = np.floor(exact).astype(np.int64)
    short = total - int(out.sum())
    if short > 0:
        out[np.argsort(-(exact - out), kind="stable")[:short]] += 1
    return out


def pack(problem: Problem, fluid: FluidInput, counts: Counts, flows: np.ndarray, size: np.ndarray, rate: float,
         deadline: Deadline) -> tuple[np.ndarray, bool]:
    """Instances for input rate ``rate`` (tuples/s), placed type by type as the LP flows say, least loaded machine first.

    ``size`` (C, T): instance sizes, tuples/s. Returns (instances per component
    and machine, whether some instance had to overload a machine). Where memory is full, a component whose
    count is free gets fewer instances (at least one) rather than overload a machine's memory.
    """
    types, unit_input = fluid.types, fluid.unit_input
    n_components, n_machines = problem.n_components, problem.n_machines
    instances = np.ones(n_components, dtype=np.int64)
    for c in range(n_components):
        if problem.fixed[c]:
            instances[c] = problem.fixed[c]
        elif not counts.one_only[c] and unit_input[c] > 0 and np.isfinite(size[c]).any() and (size[c] > 0).any():
            x = size[c][size[c] > 0].min()
            instances[c] = max(1, int(np.ceil(unit_input[c] * rate / x - 1e-9)))
    per_instance = unit_input * rate / instances
    inst_load = instance_cpu_pct(types.cost, types.met, per_instance[:, None])  # (C, T) percent
    allowed = fits_within(inst_load, np.minimum(types.thread_cap, types.capacity)[None, :])
    hosts = np.zeros((n_components, n_machines), dtype=np.int64)
    load = np.zeros(n_machines)
    overflow = False
    memory = _MemoryRoom(problem) if problem.memory_bound else None
    difficulty = np.where(allowed, inst_load / types.capacity[None, :], np.inf).min(axis=1)
    for c in np.argsort(-np.where(np.isfinite(difficulty), difficulty, 0.0), kind="stable"):
        deadline.check()
        weights = np.where(allowed[c], flows[c], 0.0)
        if weights.sum() <= 0:
            weights = np.where(allowed[c], types.capacity * types.count, 0.0)
        quota = largest_remainder(weights, int(instances[c]))
        left = int(instances[c])
        for t in np.argsort(-quota, kind="stable"):
            k = min(int(quota[t]), left)
            machines = types.machines[t]
            while k > 0:
                room = machines[fits_within(load[machines] + inst_load[c, t], types.capacity[t])]
                if memory is not None:
                    room = room[memory.fits(c, room)]
                if room.size == 0:
                    break
                take = min(k, room.size)
                pick = room if take == room.size else room[np.argpartition(load[room], take - 1)[:take]]
                hosts[c, pick] += 1
                load[pick] += inst_load[c, t]
                if memory is not None:
                    memory.add(c, pick)
                k -= take
                left -= take
        if left > 0:
            # what the quotas could not take: wherever it fills a machine least, overloading only if it must
            cand_t = np.flatnonzero(allowed[c]) if allowed[c].any() else np.arange(len(types.used))
            machines = np.concatenate([types.machines[t] for t in cand_t])
            item = np.concatenate([np.full(len(types.machines[t]), inst_load[c, t]) for t in cand_t])
            while left > 0:
                frac = (load[machines] + item) / problem.limit[machines]
                fits = fits_within(frac, 1.0)
                if memory is not None:
                    room = memory.fits(c, machines)
                    if not room.any() and not problem.fixed[c] and hosts[c].sum() > 0:
                        overflow = True  # memory is full: fewer instances of c than the target rate wants
                        break
                    fits &= room
                pool = np.flatnonzero(fits) if fits.any() else np.arange(len(machines))
                overflow |= not fits.any()
                take = min(left, pool.size)
                pick = pool if take == pool.size else pool[np.argpartition(frac[pool], take - 1)[:take]]
                hosts[c, machines[pick]] += 1
                load[machines[pick]] += item[pick]
                if memory is not None:
                    memory.add(c, machines[pick])
                left -= take
    return hosts, overflow


class _MemoryRoom:
    """Memory left on each machine while ``pack`` places instances (only where memory can bind)."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self.free = problem.memory_limit.copy()
        self.occupied = np.zeros(problem.n_machines, dtype=bool)

    def fits(self, c: int, machines: np.ndarray) -> np.ndarray:
        """Whether one more instance of c fits each of ``machines`` (distinct) now."""
        need = self.problem.memory[c] + self.problem.worker_memory * ~self.occupied[machines]
        return need <= self.free[machines] + MEMORY_SLACK_MB

    def add(self, c: int, machines: np.ndarray) -> None:
        self.free[machines] -= self.problem.memory[c] + self.problem.worker_memory * ~self.occupied[machines]
        self.occupied[machines] = True


def best_packing(model: HostedModel, fluid: FluidInput, counts: Counts, flows: np.ndarray, lp_rate: float,
                 sizes_at: Callable[[float], np.ndarray], tuning: FastTuning, deadline: Deadline) -> Packing:
    """The packing with the highest closed-form rate over a bisection on the target rate (see ``pack``)."""
    first_extra = model.problem.one_each_shares.first
    packed: Packing | None = None
    low, high = tuning.packing_low * lp_rate, lp_rate
    target = high
    for _ in range(tuning.packing_steps):
        deadline.check()
        hosts, overflow = pack(model.problem, fluid, counts, flows * (target / lp_rate), sizes_at(target), target,
                               deadline)
        layout = Layout(hosts, first_instances(hosts, first_extra, model.thread_room))
        rate = model.max_rate(layout.hosts, layout.first_machine).rate
        if packed is None or rate > packed.rate:
            packed = Packing(rate, layout)
        if not overflow:
            if target == high:
                break
            low = target
        else:
            high = target
        target = 0.5 * (low + high)
    assert packed is not None, "packing_steps must be at least 1"
    return packed
