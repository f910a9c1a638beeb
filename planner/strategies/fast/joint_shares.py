"""Step 7 of ``fast`` with ``options.weighted_shares``: instance counts and placement chosen for what shares reach.

Steps 1-6 choose counts and a placement for Storm's even split; with weighted shares a placement is worth the R of
the shares LP (planner.stream_shares), which can use every machine to its limit whatever the counts, and then an
instance that only balanced the even split costs its MET for nothing. So from fast's placement a local search scores
every candidate as the plan will be scored (``weighted_score``: the LP, then the closed form of its shares, remote
costs included) and takes the best of: one instance fewer of a component, one moved to another machine, one more.
The LP's R bounds what a candidate can score, so a candidate that cannot win costs one LP. It stops when no move
raises R, when its budget of LP solves is spent, or before the request's time limit; it keeps the best it found,
which is fast's placement when nothing beats it, so the plan never scores below fast's placement with shares chosen
after it.
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from planner.errors import PlanningError
from planner.simulator import RATE_REL_TOL, HostedModel, instance_cpu_pct, linear_loads
from planner.stream_shares import WeightedScore, weighted_score, weightable_streams
from planner.strategies.base import Deadline
from planner.strategies.fast.polish import Layout, move_fits_memory
from planner.strategies.fast.tuning import FastTuning


ROOM_FRACTION = 0.01
"""A machine has room when more than this fraction of its limit is left; an instance is at its thread cap within it."""


@dataclass(frozen=True)
class JointResult:
    """The layout the search ends on and what ``stats.joint_shares`` says of it."""

    layout: Layout
    stats: dict


def joint_search(model: HostedModel, start: Layout, free: np.ndarray, deadline: Deadline,
                 tuning: FastTuning) -> JointResult:
    """The best layout for weighted shares the local search reaches from ``start`` (see the module docstring).

    ``free``: components whose instance count may change. Never raises for time: past the budget it keeps the best
    layout found.
    """
    problem = model.problem
    if not weightable_streams(problem):
        return JointResult(start, {"searched": False, "reason": "no stream the weighted groupings split"})
    clock = time.perf_counter()
    search = _Search(model, start, free, deadline, tuning)
    first = search.score(start)
    if first is None:
        return JointResult(start, {"searched": False, "reason": "the placement sustains no rate"})
    best, best_score = start, first
    for layout in (start, *search.extra_starts(start)):
        if search.out_of_budget():
            break
        score = best_score if layout is start else search.score(layout, beat=None)
        if score is None:
            continue
        end, end_score = search.climb(layout, score)
        if end_score.rate > best_score.rate * (1.0 + RATE_REL_TOL):
            best, best_score = end, end_score
    stats = {
        "searched": True,
        "start_rate": first.rate,
        "rate": best_score.rate,
        "steps": search.steps,
        "lp_solves": search.evaluations,
        "stopped_by": search.stopped_by,
        "elapsed_ms": (time.perf_counter() - clock) * 1000.0,
    }
    return JointResult(best, stats)


class _Search:
    def __init__(self, model: HostedModel, start: Layout, free: np.ndarray, deadline: Deadline, tuning: FastTuning):
        problem = model.problem
        self.model = model
        self.problem = problem
        self.tuning = tuning
        self.deadline = deadline
        cost_any = (problem.cost > 0).any(axis=1)
        self.resizable = free & cost_any
        """Components whose count the search changes: free, and doing some work per tuple."""
        self.movable = cost_any | (problem.met > 0).any(axis=1)
        per_solve = tuning.joint_unit_cells + int(start.hosts.sum()) + problem.n_machines  # an LP's rows, roughly
        self.budget = tuning.joint_work_cells // per_solve
        if problem.n_components * problem.n_machines <= tuning.polish_all_max_cells:
            self.budget = max(tuning.joint_min_solves, self.budget)
        self.evaluations = 0
        self.steps = 0
        self.stopped_by = "no better move"
        self.slowest_s = 0.0

    def out_of_budget(self) -> bool:
        """Whether the LP budget is spent or the time limit is near (kept for scoring the plan afterwards)."""
        if self.evaluations >= self.budget:
            self.stopped_by = "budget"
            return True
        left = self.deadline.remaining_s()
        if left is not None and left <= max(self.tuning.joint_reserve_s, 3.0 * self.slowest_s):
            self.stopped_by = "time limit"
            return True
        return False

    def score(self, layout: Layout, beat: float | None = None) -> WeightedScore | None:
        """``weighted_score`` of the layout (None: cannot beat ``beat``, or no finite rate)."""
        start = time.perf_counter()
        self.evaluations += 1
        try:
            return weighted_score(self.problem, layout.placement(self.problem), beat)
        except PlanningError:  # an unbounded rate: a layout of nothing but free components, not a plan
            return None
        finally:
            self.slowest_s = max(self.slowest_s, time.perf_counter() - start)

    def climb(self, layout: Layout, score: WeightedScore) -> tuple[Layout, WeightedScore]:
        """Steps from ``layout`` while one raises R: each the best of the first kind of move that has one (fewer
        instances, then moves, then more instances), so a step rarely scores every candidate."""
        while not self.out_of_budget():
            found: tuple[Layout, WeightedScore] | None = None
            for kind in self._moves(layout, score):
                for trial in kind:
                    if self.out_of_budget():
                        break
                    beat = score.rate if found is None else found[1].rate
                    scored = self.score(trial, beat)
                    if scored is not None and scored.rate > beat * (1.0 + RATE_REL_TOL):
                        found = (trial, scored)
                if found is not None:
                    break
            if found is None:
                if self.stopped_by not in ("budget", "time limit"):
                    self.stopped_by = "no better move"
                break
            layout, score = found
            self.steps += 1
        return layout, score

    def extra_starts(self, start: Layout) -> list[Layout]:
        """On small requests, ``start`` with every resizable component on every machine (one instance each where
        it had none): the search then drops what does not pay its MET, which reaches what single moves from
        ``start`` may not."""
        problem = self.problem
        if problem.n_components * problem.n_machines > self.tuning.joint_spread_max_cells:
            return []
        hosts = start.hosts.copy()
        for c in np.flatnonzero(self.resizable):
            hosts[c] = np.maximum(hosts[c], 1)
        if np.array_equal(hosts, start.hosts):
            return []
        return [Layout(hosts, start.first_machine.copy())]

    def _moves(self, layout: Layout, score: WeightedScore) -> list[Iterator[Layout]]:
        """Candidates by kind, those likeliest to raise R first: one instance fewer on the fullest machines (its MET
        saved), one moved from a full machine to one with room, one more where there is room. On many machines,
        where the budget rarely reaches the last kind: where a machine has room while some component's instances
        are all at their thread cap, one more of those is tried with the fewer, before the moves (no share can give
        them more)."""
        problem, hosts = self.problem, layout.hosts
        slack, capped = self._room(layout, score)
        counts = hosts.sum(axis=1)
        fits = move_fits_memory(self.model, hosts)
        memory = None if fits is None else fits[0]
        met = problem.met[:, problem.machine_type]
        by_fullness = np.argsort(slack, kind="stable")
        destinations = self._destinations(slack)
        fewer = (_changed(layout, int(c), int(w), None)
                 for w in by_fullness for c in np.argsort(-met[:, w], kind="stable")
                 if self.resizable[c] and hosts[c, w] > 0 and counts[c] > 1)
        moved = (_changed(layout, int(c), int(w), m)
                 for w in by_fullness for c in np.flatnonzero((hosts[:, w] > 0) & self.movable)
                 for m in destinations if m != w and (memory is None or memory[c, m]))
        growing = np.argsort(~capped, kind="stable")  # thread-capped components first
        more = (_changed(layout, int(c), None, m)
                for m in destinations for c in growing if self.resizable[c] and (memory is None or memory[c, m]))
        if problem.n_machines > self.tuning.joint_all_machines and (capped & self.resizable).any() \
                and (slack > ROOM_FRACTION * problem.limit).any():
            return [itertools.chain(more, fewer), moved]
        return [fewer, moved, more]

    def _room(self, layout: Layout, score: WeightedScore) -> tuple[np.ndarray, np.ndarray]:
        """(M,) CPU percent each machine has left at the layout's rate with its shares; (C,) whether every instance
        of a component is at its thread cap there."""
        problem = self.problem
        loads = linear_loads(problem, layout.placement(problem), score.shares)
        slack = problem.limit - instance_cpu_pct(loads.a_w, loads.b_w, score.rate)
        at_cap = instance_cpu_pct(loads.a_i, loads.b_i, score.rate) >= loads.thread_limit_i * (1.0 - ROOM_FRACTION)
        capped = np.ones(problem.n_components, dtype=bool)
        np.logical_and.at(capped, loads.comp, at_cap)
        return slack, capped

    def _destinations(self, slack: np.ndarray) -> list[int]:
        """Machines a move or an added instance may go to: every machine on small clusters, else the
        ``joint_destinations`` with the most room of each machine type."""
        problem = self.problem
        order = np.argsort(-slack, kind="stable")
        if problem.n_machines <= self.tuning.joint_all_machines:
            return [int(m) for m in order]
        chosen: list[int] = []
        taken = np.zeros(len(problem.type_names), dtype=np.int64)
        for m in order:
            t = problem.machine_type[m]
            if taken[t] < self.tuning.joint_destinations:
                chosen.append(int(m))
                taken[t] += 1
        return chosen


def _changed(layout: Layout, c: int, source: int | None, destination: int | None) -> Layout:
    """``layout`` with one instance of c taken off ``source`` and put on ``destination`` (either may be None).

    An instance 0 whose machine is left without an instance of c goes along to ``destination``, or, when removed,
    hands its role to c's first other machine.
    """
    hosts = layout.hosts.copy()
    first = layout.first_machine.copy()
    if source is not None:
        hosts[c, source] -= 1
    if destination is not None:
        hosts[c, destination] += 1
    if hosts[c, first[c]] == 0:
        first[c] = destination if destination is not None else int(np.argmax(hosts[c] > 0))
    return Layout(hosts, first)
