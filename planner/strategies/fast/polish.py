"""Step 4 of ``fast``: a local search on the closed-form R_max of an instance-count matrix.

While it helps, add an instance of a component on the bottleneck, or move or
swap one off the bottleneck machine (on small requests also with a ``global``-fed
instance 0, scored by the closed form), whichever raises the closed-form R_max
most; on a plateau (several machines tied) take the move that relieves the
bottleneck without making a new one. Where the bottleneck is the thread cap of
an instance 0 that a ``global`` stream feeds whole, first move that instance to
the type where R rises most. Every step is checked with the exact closed form
(planner.simulator), so R_max never goes down; the best placement seen is returned.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from planner.model import Placement
from planner.problem import Problem
from planner.simulator import MEMORY_SLACK_MB, RATE_REL_TOL, HostedModel, HostedRate, rate_limits
from planner.strategies.base import Deadline
from planner.strategies.fast.tuning import FastTuning


ROLE_CANDIDATES = 4
"""Instances of a component tried for instance 0's role: those on the machines with the most room, and those with
the largest thread, this many of each (each costs a full scoring)."""


@dataclass(frozen=True)
class Layout:
    """Instances per component and machine, and the machine of each component's instance 0."""

    hosts: np.ndarray
    """(C, M) instances of c on w."""
    first_machine: np.ndarray
    """(C,) machine of instance 0 (the one ``global`` streams feed)."""

    @classmethod
    def of(cls, problem: Problem, placement: Placement) -> Layout:
        """The layout of a placement (instance 0 of each component first in its list)."""
        comp, inst, mach = problem.placement_arrays(placement)
        hosts = np.zeros((problem.n_components, problem.n_machines), dtype=np.int64)
        np.add.at(hosts, (comp, mach), 1)
        first = np.zeros(problem.n_components, dtype=np.int64)
        first[comp[inst == 0]] = mach[inst == 0]
        return cls(hosts, first)

    def placement(self, problem: Problem) -> Placement:
        """Machine ids per component, instance 0 first."""
        ids = problem.machine_ids
        placement: Placement = {}
        for c, cid in enumerate(problem.component_ids):
            first = self.first_machine[c]
            rest = [w for w in np.flatnonzero(self.hosts[c])
                    for _ in range(int(self.hosts[c, w]) - (1 if w == first else 0))]
            placement[cid] = [ids[w] for w in [first, *rest]]
        return placement


@dataclass(frozen=True)
class InstanceChange:
    """One more (+1) or one less (-1) instance of a component on a machine."""

    component: int
    machine: int
    delta: int
    first: bool = False
    """The instance added here becomes instance 0 of its component (it takes the ``global`` streams along)."""


Move = list[InstanceChange]


def first_instances(hosts: np.ndarray, first_extra: np.ndarray, thread_room: np.ndarray) -> np.ndarray:
    """Machine of instance 0 per component: where a ``global`` stream lands, the host whose thread takes the most
    tuples/s; else the first host."""
    first_machine = np.argmax(hosts > 0, axis=1)
    for c in np.flatnonzero(first_extra > 0):
        on = np.flatnonzero(hosts[c])
        first_machine[c] = on[int(np.argmax(thread_room[c, on]))]
    return first_machine


def move_fits_memory(model: HostedModel, hosts: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(C, M) whether one more instance of c fits machine m's memory, and (M,) each machine's free memory, MB.

    None where memory cannot bind (every move fits).
    """
    problem = model.problem
    if not problem.memory_bound:
        return None
    free_mb = problem.memory_limit - problem.memory_used(hosts)
    empty = hosts.sum(axis=0) == 0
    need = problem.memory[:, None] + problem.worker_memory * empty[None, :]
    return need <= free_mb[None, :] + MEMORY_SLACK_MB, free_mb


def polish(model: HostedModel, start: Layout, free: np.ndarray, move_first: bool, deadline: Deadline,
           max_iterations: int, tuning: FastTuning) -> tuple[Layout, int]:
    """The best layout the local search finds from ``start``, and the steps it took.

    ``free``: components whose instance count may grow. ``move_first``: may move a
    component's instance 0 off its thread cap (see ``_first_instance_move``).
    """
    small = model.problem.n_components * model.problem.n_machines <= tuning.polish_all_max_cells
    return _LocalSearch(model, free, move_first, deadline, small).run(start, max_iterations, tuning)


class _LocalSearch:
    def __init__(self, model: HostedModel, free: np.ndarray, move_first: bool, deadline: Deadline,
                 swap_first: bool = False):
        self.model = model
        self.problem = model.problem
        self.free = free
        self.move_first = move_first
        self.deadline = deadline
        self.swap_first = swap_first
        """Small requests: also swap an instance off the bottleneck with a ``global``-fed instance 0 (scored exactly)."""

    def run(self, start: Layout, max_iterations: int, tuning: FastTuning) -> tuple[Layout, int]:
        problem = self.problem
        hosts, first_machine = start.hosts.copy(), start.first_machine.copy()
        current = self.model.max_rate(hosts, first_machine)
        best_rate, best = current.rate, Layout(hosts.copy(), first_machine.copy())
        iterations = 0
        stall = 0
        stall_limit = problem.n_machines + problem.n_components + 10
        budget = max(tuning.min_polish_steps, tuning.polish_work_cells // (problem.n_components * problem.n_machines))
        max_iterations = min(max_iterations, budget)
        while iterations < max_iterations and stall < stall_limit:
            iterations += 1
            self.deadline.check(iterations)
            moved_first = self._first_instance_move(hosts, first_machine, current) if self.move_first else None
            if moved_first is not None:
                trial, trial_first = moved_first.hosts, moved_first.first_machine
            else:
                move = self._best_move(hosts, first_machine, current)
                if move is None:
                    break
                trial, trial_first = _applied(move, hosts, first_machine)
            scored = self.model.max_rate(trial, trial_first)
            if scored.rate < current.rate * (1 - RATE_REL_TOL):
                break
            hosts, first_machine, current = trial, trial_first, scored
            if scored.rate > best_rate * (1 + RATE_REL_TOL):
                best_rate, best = scored.rate, Layout(hosts.copy(), first_machine.copy())
                stall = 0
            else:
                stall += 1
        return best, iterations

    def _first_instance_move(self, hosts: np.ndarray, first_machine: np.ndarray, current: HostedRate) -> Layout | None:
        """When R is held by an instance 0 that a ``global`` stream feeds whole (its thread cap, or the machine it
        loads), that instance moved, or its role given to another instance of its component, where R rises most;
        else None.

        Adding instances never relieves it, and the moves of ``_best_move`` keep instance 0 where it is.
        """
        problem, room = self.problem, self.model.thread_room
        machine_limits, thread_limits = current.machine_limits, current.thread_limits
        first_extra = current.rates.first_extra
        bottleneck = int(np.argmin(machine_limits))
        if thread_limits.min() < machine_limits.min():
            held = [int(np.argmin(thread_limits))]
        else:
            held = [int(c) for c in np.flatnonzero(first_machine == bottleneck)]
        best: tuple[float, Layout] | None = None
        for c in held:
            if first_extra[c] <= 0:
                continue
            here = int(first_machine[c])
            trials = []
            for t in np.unique(problem.machine_type):
                machines = np.flatnonzero(problem.machine_type == t)
                m = int(machines[np.argmax(machine_limits[machines])])
                if m != here and (room[c, m] > room[c, here] or here == bottleneck):
                    trial = hosts.copy()
                    trial[c, here] -= 1
                    trial[c, m] += 1
                    trials.append((trial, m))
            on = np.flatnonzero(hosts[c])
            on = on[on != here]
            roomiest = on[np.argsort(-machine_limits[on], kind="stable")[:ROLE_CANDIDATES]]
            fastest = on[np.argsort(-room[c, on], kind="stable")[:ROLE_CANDIDATES]]
            for m in np.union1d(roomiest, fastest):
                trials.append((hosts, int(m)))  # instance 0's role to an instance already on m
            for trial, m in trials:
                trial_first = first_machine.copy()
                trial_first[c] = m
                rate = self.model.max_rate(trial, trial_first).rate
                if rate > current.rate * (1 + RATE_REL_TOL) and (best is None or rate > best[0]):
                    best = (rate, Layout(trial.copy(), trial_first))
        return None if best is None else best[1]

    def _best_move(self, hosts: np.ndarray, first_machine: np.ndarray, current: HostedRate) -> Move | None:
        """The change that raises R the most, else a plateau move, else None.

        Candidates: one more instance of a component on the bottleneck (anywhere);
        one instance moved off the bottleneck machine (anywhere); one swapped
        with an instance of another component on another machine; on small requests, one swapped with the
        instance 0 a ``global`` stream feeds (its load is not its component's per-instance share, so it is
        scored with the closed form: a few candidates a step).

        A plateau move keeps R, strictly relieves the bottleneck and does not
        make its destination a new bottleneck, so a run of them ends.
        """
        problem, model = self.problem, self.model
        cost, met, room, limit = model.cost, model.met, model.thread_room, problem.limit
        machine_limits, thread_limits = current.machine_limits, current.thread_limits
        a, b, counts = current.a, current.b, current.counts
        unit = current.rates.each_instance  # input of one instance per unit R
        n_machines = problem.n_machines
        idx = np.arange(n_machines)
        choice = _MoveChoice(current.rate)
        bottleneck_machine = int(np.argmin(machine_limits))
        thread_bound = thread_limits.min() < machine_limits.min()
        bottleneck_comp = int(np.argmin(thread_limits)) if thread_bound else -1
        order = np.argsort(machine_limits, kind="stable")[:3]
        smallest = [machine_limits[order[k]] if k < len(order) else np.inf for k in range(3)]
        shares = problem.shares(counts)
        memory = move_fits_memory(self.model, hosts)
        for c in range(problem.n_components):
            self.deadline.check()
            th_others = np.delete(thread_limits, c).min() if len(thread_limits) > 1 else np.inf
            if self.free[c] and unit[c] > 0 and (bottleneck_comp == c or hosts[c, bottleneck_machine] > 0):
                # one more instance of c: every instance of c gets a smaller share
                unit_new = shares.split[c] / (counts[c] + 1) + shares.each[c]
                a_resplit = a - cost[c] * hosts[c] * (unit[c] - unit_new)
                r_resplit = rate_limits(limit, a_resplit, b)
                two = np.argsort(r_resplit, kind="stable")[:2]
                others = np.where(idx == two[0], r_resplit[two[1]] if n_machines > 1 else np.inf, r_resplit[two[0]])
                r_dst = rate_limits(limit, a_resplit + cost[c] * unit_new, b + met[c])
                with np.errstate(divide="ignore", invalid="ignore"):
                    th_c = np.minimum(np.where(hosts[c] > 0, room[c], np.inf).min(), room[c]) / unit_new
                new_rate = np.minimum.reduce([others, r_dst, th_c, np.full(n_machines, th_others)])
                if bottleneck_comp == c:
                    relieved = th_c
                else:
                    relieved = np.where(idx == bottleneck_machine, r_dst, r_resplit[bottleneck_machine])
                if memory is not None:
                    new_rate = np.where(memory[0][c], new_rate, -np.inf)
                choice.offer(_one_more(c), new_rate, r_dst, relieved, extra_met=True)
            w = bottleneck_machine
            if thread_bound or hosts[c, w] == 0 or unit[c] == 0:
                continue
            # one instance of c off the bottleneck machine w
            r_src = rate_limits(limit[w:w + 1], a[w:w + 1] - cost[c, w] * unit[c], b[w:w + 1] - met[c, w])[0]
            r_dst = rate_limits(limit, a + cost[c] * unit[c], b + met[c])
            rest = _min_excluding(order, smallest, w, idx)
            hosted = hosts[c] > 0
            if hosts[c, w] == 1:
                hosted = hosted.copy()
                hosted[w] = False
            with np.errstate(divide="ignore", invalid="ignore"):
                th_c = np.minimum(np.where(hosted, room[c], np.inf).min(), room[c]) / unit[c]
            th_dst = th_c
            new_rate = np.minimum.reduce([rest, np.full(n_machines, r_src), r_dst, th_c, np.full(n_machines, th_others)])
            new_rate[w] = -np.inf
            if memory is not None:
                new_rate = np.where(memory[0][c], new_rate, -np.inf)
            choice.offer(_moved(c, w), new_rate, r_dst, np.full(n_machines, r_src))
            # swap it with one instance of another component on another machine
            for c2 in range(problem.n_components):
                if c2 == c or unit[c2] == 0 or not (hosts[c2] > 0).any():
                    continue
                a_src = a[w] - cost[c, w] * unit[c] + cost[c2, w] * unit[c2]
                b_src = b[w] - met[c, w] + met[c2, w]
                r_src2 = rate_limits(limit[w:w + 1], np.array([a_src]), np.array([b_src]))[0]
                r_dst2 = rate_limits(limit, a + cost[c] * unit[c] - cost[c2] * unit[c2], b + met[c] - met[c2])
                with np.errstate(divide="ignore", invalid="ignore"):
                    th_c2 = min(np.where(hosts[c2] > 0, room[c2], np.inf).min(), room[c2, w]) / unit[c2]
                th_rest = np.delete(thread_limits, [c, c2]).min() if len(thread_limits) > 2 else np.inf
                new_rate = np.minimum.reduce(
                    [rest, np.full(n_machines, r_src2), r_dst2, th_dst, np.full(n_machines, min(th_c2, th_rest))]
                )
                new_rate[(hosts[c2] == 0) | (idx == w)] = -np.inf
                if memory is not None:
                    free_mb, mem = memory[1], problem.memory
                    fits = free_mb + mem[c2] - mem[c] >= -MEMORY_SLACK_MB
                    if free_mb[w] + mem[c] - mem[c2] < -MEMORY_SLACK_MB:
                        fits[:] = False
                    new_rate = np.where(fits, new_rate, -np.inf)
                choice.offer(_swapped(c, c2, w), new_rate, r_dst2, np.full(n_machines, r_src2))
            if self.swap_first:
                self._offer_first_swaps(choice, hosts, first_machine, current, c, w)
        return choice.best()

    def _offer_first_swaps(self, choice: _MoveChoice, hosts: np.ndarray, first_machine: np.ndarray,
                           current: HostedRate, c: int, w: int) -> None:
        """Offer each swap of one instance of c off the bottleneck machine w with the instance 0 of a component
        that a ``global`` stream feeds, which takes its role (and the stream) to w.

        The per-instance estimates of ``_best_move`` see such an instance as idle (a component fed only by
        ``global`` has no per-instance share), so they never offer it; seed 19 of benchmarks/planner_quality.py
        needs it, after a count jump (one instance fewer of another component) has moved the bottleneck.
        """
        carried = bool(first_machine[c] == w and hosts[c, w] == 1)  # c's instance 0 leaves w: it keeps its role
        for c2 in np.flatnonzero(current.rates.first_extra > 0):
            m = int(first_machine[c2])
            if c2 == c or m == w:
                continue
            swap = _swapped_first(c, int(c2), w, m, carried)
            scored = self.model.max_rate(*_applied(swap(m), hosts, first_machine))
            new_rate = np.full(self.problem.n_machines, -np.inf)
            new_rate[m] = scored.rate
            choice.offer(swap, new_rate, scored.machine_limits, np.full(self.problem.n_machines, scored.machine_limits[w]))


def _one_more(c: int) -> Callable[[int], Move]:
    """One more instance of c, on the destination machine."""
    return lambda m: [InstanceChange(c, m, 1)]


def _moved(c: int, w: int) -> Callable[[int], Move]:
    """One instance of c from w to the destination machine."""
    return lambda m: [InstanceChange(c, w, -1), InstanceChange(c, m, 1)]


def _swapped(c: int, c2: int, w: int) -> Callable[[int], Move]:
    """One instance of c from w to the destination machine, one of c2 from there to w."""
    return lambda m: [InstanceChange(c, w, -1), InstanceChange(c, m, 1), InstanceChange(c2, m, -1), InstanceChange(c2, w, 1)]


def _applied(move: Move, hosts: np.ndarray, first_machine: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The instance counts and instance-0 machines after ``move``; a component whose instance 0's machine is left
    empty gets its first machine with an instance as instance 0's."""
    trial = hosts.copy()
    trial_first = first_machine.copy()
    for change in move:
        trial[change.component, change.machine] += change.delta
        if change.first:
            trial_first[change.component] = change.machine
    lost = trial[np.arange(len(trial_first)), trial_first] == 0
    trial_first[lost] = np.argmax(trial[lost] > 0, axis=1)
    return trial, trial_first


def _swapped_first(c: int, c2: int, w: int, m: int, carried: bool) -> Callable[[int], Move]:
    """One instance of c from w to m (``carried``: it is c's instance 0 and stays so), the instance 0 of c2 from m
    to w (still instance 0 there)."""
    return lambda _: [InstanceChange(c, w, -1), InstanceChange(c, m, 1, first=carried), InstanceChange(c2, m, -1),
                      InstanceChange(c2, w, 1, first=True)]


def _min_excluding(order: np.ndarray, smallest: list[float], w: int, idx: np.ndarray) -> np.ndarray:
    """For every machine m: the least limit over machines other than w and m (from the three smallest)."""
    rest = [s for o, s in zip(order, smallest) if o != w] + [np.inf, np.inf]
    rest_idx = [o for o in order if o != w] + [-1, -1]
    return np.where(idx == rest_idx[0], rest[1], rest[0])


class _MoveChoice:
    """Keeps the best strict improvement and the best plateau move offered."""

    def __init__(self, rate: float):
        self.rate = rate
        self.strict: tuple[float, Move] | None = None
        self.plateau: tuple[float, Move] | None = None

    def offer(self, change: Callable[[int], Move], new_rate: np.ndarray, dst_limit: np.ndarray,
              relieved: np.ndarray, extra_met: bool = False) -> None:
        """``change(m)``: the move with destination machine m; the arrays are per destination."""
        m = int(np.argmax(new_rate))
        if new_rate[m] > self.rate * (1 + RATE_REL_TOL):
            if self.strict is None or new_rate[m] > self.strict[0]:
                self.strict = (float(new_rate[m]), change(m))
            return
        ok = ((new_rate >= self.rate * (1 - RATE_REL_TOL)) & (dst_limit > self.rate * (1 + 1e-7))
              & (relieved > self.rate * (1 + RATE_REL_TOL)))
        if ok.any():
            score = np.where(ok, relieved, -np.inf)
            m = int(np.argmax(score))
            key = float(score[m]) * (1 - 1e-12 if extra_met else 1.0)  # on a tie prefer no extra MET
            if self.plateau is None or key > self.plateau[0]:
                self.plateau = (key, change(m))

    def best(self) -> Move | None:
        if self.strict is not None:
            return self.strict[1]
        return None if self.plateau is None else self.plateau[1]
