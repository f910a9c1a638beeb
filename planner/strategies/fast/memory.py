"""Memory in ``fast``: a layout over some machine's memory is repaired before the local search starts.

Memory is a hard limit that does not depend on the rate (docs/concepts/model.md, "Memory"),
so the closed form scores a layout over it at no rate, and a local search that
only takes steps raising R cannot leave it. So every starting layout is first
made to fit: while a machine is over, one instance on the machine most over is
moved to a machine whose memory has room (the one where the CPU rate stays
highest), or dropped where its component has other instances and a free count,
whichever keeps the higher CPU-only R_max. The polish and the jumps then only
take steps that keep every machine within its memory.
"""
from __future__ import annotations

import numpy as np

from planner.simulator import MEMORY_SLACK_MB, HostedModel, memory_over, rate_limits
from planner.strategies.fast.polish import Layout


def _moved_first(first_machine: np.ndarray, trial: np.ndarray, c: int, to: int | None) -> np.ndarray:
    """Instance 0 of c follows a moved instance, or goes to another host of c when its machine has none left."""
    first = first_machine.copy()
    if trial[c, first[c]] == 0:
        first[c] = to if to is not None else int(np.argmax(trial[c] > 0))
    return first


def repair_memory(model: HostedModel, layout: Layout, free: np.ndarray) -> Layout | None:
    """``layout`` changed until every machine is within its memory, or None when no move or drop gets there.

    ``free``: components whose instance count may change. Unchanged where memory cannot bind.
    """
    problem = model.problem
    if not problem.memory_bound:
        return layout
    hosts, first = layout.hosts.copy(), layout.first_machine.copy()
    worker, memory, limit = problem.worker_memory, problem.memory, problem.memory_limit
    for _ in range(int(hosts.sum()) + 1):
        used = problem.memory_used(hosts)
        if not memory_over(problem, used).any():
            return Layout(hosts, first)
        w = int(np.argmax(used - limit))
        scored = model.max_rate(hosts, first, memory=False)
        unit = scored.rates.each_instance
        occupied = hosts.sum(axis=0) > 0
        alone = hosts[:, w].sum() == 1
        best: tuple[float, np.ndarray, np.ndarray] | None = None
        for c in map(int, np.flatnonzero(hosts[:, w])):
            if memory[c] + (worker if alone else 0.0) <= 0:
                continue
            trials = []
            if free[c] and hosts[c].sum() > 1:
                trial = hosts.copy()
                trial[c, w] -= 1
                trials.append((trial, _moved_first(first, trial, c, None)))
            room = limit - used - memory[c] - worker * ~occupied >= -MEMORY_SLACK_MB
            room[w] = False
            if room.any():
                r_dst = rate_limits(problem.limit, scored.a + model.cost[c] * unit[c], scored.b + model.met[c])
                m = int(np.flatnonzero(room)[np.argmax(r_dst[room])])
                trial = hosts.copy()
                trial[c, w] -= 1
                trial[c, m] += 1
                trials.append((trial, _moved_first(first, trial, c, m)))
            for trial, trial_first in trials:
                rate = model.max_rate(trial, trial_first, memory=False).rate
                if best is None or rate > best[0]:
                    best = (rate, trial, trial_first)
        if best is None:
            return None
        _, hosts, first = best
    return None


def memory_first(model: HostedModel, counts: np.ndarray) -> Layout | None:
    """A layout made for memory first: ``counts`` instances, the largest first, each where the CPU rate stays highest
    among the machines whose memory still has room for it (and its worker); None if one fits nowhere.

    A start for the polish where packing for CPU leaves no layout that repairs into memory (tight memory).
    """
    problem = model.problem
    hosts = np.zeros((problem.n_components, problem.n_machines), dtype=np.int64)
    first = np.full(problem.n_components, -1, dtype=np.int64)
    unit = model.loads(hosts, first, counts)[2].each_instance
    a = np.zeros(problem.n_machines)
    b = np.zeros(problem.n_machines)
    used = np.zeros(problem.n_machines)
    order = np.argsort(-problem.memory, kind="stable")
    for c in order:
        for _ in range(int(counts[c])):
            occupied = hosts.sum(axis=0) > 0
            need = problem.memory[c] + problem.worker_memory * ~occupied
            room = used + need <= problem.memory_limit + MEMORY_SLACK_MB
            if not room.any():
                return None
            r_dst = np.minimum(rate_limits(problem.limit, a + model.cost[c] * unit[c], b + model.met[c]),
                               model.thread_room[c] / unit[c] if unit[c] > 0 else np.inf)
            score = np.where(room, r_dst, -np.inf)
            best = np.flatnonzero(score == score.max())
            m = int(best[np.argmax(occupied[best])])
            hosts[c, m] += 1
            if first[c] < 0:
                first[c] = m
            a[m] += model.cost[c, m] * unit[c]
            b[m] += model.met[c, m]
            used[m] += need[m]
    return Layout(hosts, first)
