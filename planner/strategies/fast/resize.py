"""Step 5 of ``fast`` on small requests: jump a component's instance count, re-place, polish again.

The polish (step 4) changes one instance at a time and takes a step only if
R rises. Some optima lie several instances away, where every single step
lowers R first: a slower type becomes usable only once a component has
enough instances that each fits its thread cap (all instances of a component
share its input evenly, so three instances may not fit where five do), and an
instance 0 fed whole by a ``global`` stream is relieved of its part of the
shuffled input only by many more instances, or by moving to a machine where
it has a larger thread but which other instances fill. So, while it helps:
move such an instance 0 to each machine where its thread takes more; set each
free component's count to n + 1, n + 2, n + 4, ... (and n - 1, n / 2), the new
instances one by one where the most CPU is left at the current rate (within
their thread cap), the removed ones off the fullest machines; polish each, and
keep the first that ends higher by the exact closed form.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from planner.simulator import RATE_REL_TOL, HostedModel, fits_within, instance_rates, rate_limits
from planner.strategies.base import Deadline
from planner.strategies.fast.memory import repair_memory
from planner.strategies.fast.polish import Layout, polish
from planner.strategies.fast.tuning import FastTuning


def resize_search(model: HostedModel, start: Layout, free: np.ndarray, move_first: bool, bound: float,
                  deadline: Deadline, max_iterations: int, tuning: FastTuning) -> tuple[Layout, int]:
    """The best layout reached from ``start`` by jumps each followed by a polish, and the polish steps taken.

    A jump that ends higher is kept at once and the jumps start again from it,
    up to ``tuning.resize_rounds`` times, while R is more than ``tuning.resize_gap``
    (``resize_large_gap`` on large requests) below the fluid ``bound``. Large requests
    (over ``tuning.polish_all_max_cells``) get a smaller polish budget and no fresh
    packings: every step there scans every machine.
    """
    best = start
    best_rate = model.max_rate(start.hosts, start.first_machine).rate
    steps = 0
    cells = len(free) * model.problem.n_machines
    small = cells <= tuning.polish_all_max_cells
    if small:
        trial_steps = min(max_iterations, tuning.resize_polish_steps)
        total_steps = max(tuning.min_polish_steps, tuning.resize_work_cells // cells)
    else:
        trial_steps = min(max_iterations, tuning.resize_large_polish_steps)
        total_steps = tuning.resize_large_steps
    ceiling: float | None = bound if small else None
    for round_ in range(tuning.resize_rounds):
        if best_rate >= bound * (1 - (tuning.resize_gap if small else tuning.resize_large_gap)):
            break
        round_best: tuple[float, Layout] | None = None
        for trial in _jumps(model, best, free, best_rate, ceiling if round_ == 0 else None, tuning):
            if steps >= total_steps:
                break
            deadline.check()
            fitting = repair_memory(model, trial, free)
            if fitting is None:
                continue
            polished, taken = polish(model, fitting, free, move_first, deadline, trial_steps, tuning)
            steps += taken
            rate = model.max_rate(polished.hosts, polished.first_machine).rate
            if rate > best_rate * (1 + RATE_REL_TOL) and (round_best is None or rate > round_best[0]):
                round_best = (rate, polished)
        if round_best is None:
            break
        best_rate, best = round_best
    return best, steps


def _jumps(model: HostedModel, layout: Layout, free: np.ndarray, rate: float, ceiling: float | None,
           tuning: FastTuning) -> Iterator[Layout]:
    """Every jump from ``layout`` of a component that holds R (has an instance on the bottleneck machine, or is the
    instance at its thread cap): its instance 0, where a ``global`` stream feeds it, to each other machine (alone, or
    with its other instances kept), then its count to each of ``count_targets``."""
    counts = layout.hosts.sum(axis=1)
    if ceiling is not None:
        fresh = [repacked(model, counts, target) for target in np.geomspace(rate, max(ceiling, rate), tuning.repack_rates)]
        fresh += [repacked(model, fewest_instances(model, counts, free, target, divisor), target)
                  for target in np.geomspace(rate, max(ceiling, rate), tuning.repack_rates)
                  for divisor in tuning.size_divisors]
        # polishing a fresh packing takes many steps: only the few that start highest
        fresh.sort(key=lambda trial: -model.max_rate(trial.hosts, trial.first_machine).rate)
        yield from fresh[:tuning.repack_polished]
    scored = model.max_rate(layout.hosts, layout.first_machine)
    if scored.thread_limits.min() < scored.machine_limits.min():
        holding = np.zeros(len(free), dtype=bool)
        holding[int(np.argmin(scored.thread_limits))] = True
    else:
        holding = layout.hosts[:, int(np.argmin(scored.machine_limits))] > 0
    first_extra = model.problem.one_each_shares.first
    for c in np.flatnonzero((first_extra > 0) & holding):
        here = int(layout.first_machine[c])
        for m in range(model.problem.n_machines):
            if m != here and model.thread_room[c, m] > model.thread_room[c, here]:
                hosts = layout.hosts.copy()
                hosts[c, here] -= 1
                hosts[c, m] += 1
                first_machine = layout.first_machine.copy()
                first_machine[c] = m
                yield Layout(hosts, first_machine)
                if free[c] and hosts[c].sum() > 1:
                    alone = hosts.copy()
                    alone[c] = 0
                    alone[c, m] = 1
                    yield Layout(alone, first_machine)
    for c in np.flatnonzero(free & holding):
        n = int(layout.hosts[c].sum())
        for target in count_targets(n, tuning.resize_max_step):
            for respread in (False, True) if n > 1 and target > n else (False,):
                trial = with_count(model, layout, int(c), target, rate, respread)
                if trial is not None:
                    yield trial


def count_targets(n: int, max_step: int) -> list[int]:
    """Instance counts to try from n: n + 1, n + 2, n + 4, ... up to n + max_step, then n - 1 and n // 2."""
    ups = []
    step = 1
    while step <= max_step:
        ups.append(n + step)
        step *= 2
    downs = sorted({d for d in (n - 1, n // 2) if 1 <= d < n}, reverse=True)
    return ups + downs


def with_count(model: HostedModel, layout: Layout, c: int, target: int, rate: float,
               respread: bool = False) -> Layout | None:
    """``layout`` with ``target`` instances of component c, placed at input rate ``rate`` (None if unchanged).

    New instances go one by one to the machine with the most CPU left at ``rate``
    after taking it, among those where it fits its thread cap (anywhere if none);
    removed ones come off the machines with the least CPU left. Instance 0 stays
    where it is unless its machine loses every instance of c. ``respread``: all
    but instance 0 are placed anew.
    """
    hosts = layout.hosts.copy()
    if target == int(hosts[c].sum()) or target < 1:
        return None
    if respread:
        hosts[c] = 0
        hosts[c, layout.first_machine[c]] = 1
    n = int(hosts[c].sum())
    counts = hosts.sum(axis=1)
    counts[c] = target  # the instances already there take the new, smaller or larger, share
    a, b, rates = model.loads(hosts, layout.first_machine, counts)
    limit = model.problem.limit
    left = limit - (a * rate + b)
    unit = rates.each_instance[c]
    if target > n:
        item = model.cost[c] * unit * rate + model.met[c]
        in_thread = fits_within(unit * rate, model.thread_room[c])
        for _ in range(target - n):
            room = left - item
            m = int(np.argmax(np.where(in_thread, room, -np.inf))) if in_thread.any() else int(np.argmax(room))
            hosts[c, m] += 1
            left[m] -= item[m]
    else:
        for _ in range(n - target):
            on = np.flatnonzero(hosts[c])
            m = int(on[np.argmin(left[on])])
            hosts[c, m] -= 1
            left[m] += model.cost[c, m] * unit * rate + model.met[c, m]
    first_machine = layout.first_machine.copy()
    if hosts[c, first_machine[c]] == 0:
        first_machine[c] = int(np.argmax(hosts[c] > 0))
    return Layout(hosts, first_machine)


def repacked(model: HostedModel, counts: np.ndarray, rate: float) -> Layout:
    """Every instance placed anew for input rate ``rate``: the hardest to place first (the largest share of a
    machine, instance 0 of a ``global``-fed component before the others), each on the machine with the most CPU
    left after taking it, within its thread cap where it can."""
    problem = model.problem
    rates = instance_rates(problem, counts)
    limit = problem.limit
    items: list[tuple[float, int, bool]] = []
    for c in range(problem.n_components):
        for k in range(int(counts[c])):
            first = k == 0
            tuples = (rates.each_instance[c] + (rates.first_extra[c] if first else 0.0)) * rate
            load = model.cost[c] * tuples + model.met[c]
            items.append((float((load / limit).min()), c, first))
    items.sort(key=lambda item: -item[0])
    hosts = np.zeros((problem.n_components, problem.n_machines), dtype=np.int64)
    first_machine = np.zeros(problem.n_components, dtype=np.int64)
    used = np.zeros(problem.n_machines)
    for _, c, first in items:
        tuples = (rates.each_instance[c] + (rates.first_extra[c] if first else 0.0)) * rate
        load = model.cost[c] * tuples + model.met[c]
        left = (limit - used - load) / limit
        ok = fits_within(np.full(problem.n_machines, tuples), model.thread_room[c])
        m = int(np.argmax(np.where(ok, left, -np.inf))) if ok.any() else int(np.argmax(left))
        hosts[c, m] += 1
        used[m] += load[m]
        if first:
            first_machine[c] = m
    return Layout(hosts, first_machine)


def fewest_instances(model: HostedModel, counts: np.ndarray, free: np.ndarray, rate: float, divisor: int) -> np.ndarray:
    """Instance counts for input rate ``rate``: each free component the fewest instances that fit, on some machine,
    its thread cap and 1/divisor of the machine (its share split evenly, as shuffle does); the others as in
    ``counts``."""
    split = model.problem.one_each_shares.split
    cap = np.minimum(model.thread_limit, model.problem.limit / divisor)
    room = rate_limits(cap[None, :], model.cost, model.met).max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        fewest = np.where(np.isfinite(room) & (room > 0), np.ceil(split * rate / room - 1e-9), 1.0)
    return np.where(free, np.maximum(fewest, 1), counts).astype(np.int64)
