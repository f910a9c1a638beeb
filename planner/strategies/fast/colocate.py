"""Step 6 of ``fast``, where tuples that cross workers cost CPU: move communicating instances together.

The fluid LP, the packing and the polish's move estimates see each instance's own CPU only, so they spread a
topology for balance; a tuple sent to another worker also costs both machines its serialising and moving
(docs/concepts/model.md, "Remote tuples"). This local search weighs one against the other through the closed form: each
step moves one instance, or all of a component's instances on one machine, onto a machine that hosts one of the
component's stream neighbours, and takes the move that raises R_max (remote costs included) the most, within a
budget of closed-form evaluations that shrinks with the request's size. A request whose profiles have no remote
cost skips it.
"""
from __future__ import annotations

import numpy as np

from planner.simulator import RATE_REL_TOL, HostedModel
from planner.strategies.base import Deadline
from planner.strategies.fast.polish import Layout
from planner.strategies.fast.tuning import FastTuning


def neighbours(model: HostedModel) -> list[np.ndarray]:
    """Per component, the components it sends a stream to or receives one from."""
    problem = model.problem
    linked: list[set[int]] = [set() for _ in range(problem.n_components)]
    for u, d in zip(problem.stream_source, problem.stream_target):
        linked[int(u)].add(int(d))
        linked[int(d)].add(int(u))
    return [np.array(sorted(s), dtype=np.int64) for s in linked]


def _moves(hosts: np.ndarray, linked: list[np.ndarray], machine_limits: np.ndarray, targets: int):
    """(component, from machine, to machine, instances moved): one instance or all of c's on w, onto the roomiest
    machines that host one of c's stream neighbours; moves off the machines that limit R most come first."""
    roomiest = np.argsort(-machine_limits, kind="stable")
    to: dict[int, list[int]] = {}
    sources = []
    for c, near_components in enumerate(linked):
        if near_components.size:
            near = hosts[near_components].sum(axis=0) > 0
            to[c] = [int(m) for m in roomiest[near[roomiest]][:targets]]
            sources += [(float(machine_limits[w]), c, int(w)) for w in np.flatnonzero(hosts[c])]
    for _, c, w in sorted(sources):
        for m in to[c]:
            if m != w:
                for k in sorted({1, int(hosts[c, w])}):
                    yield c, w, m, k


def colocate(model: HostedModel, start: Layout, deadline: Deadline, tuning: FastTuning) -> tuple[Layout, int]:
    """The best layout the co-location moves reach from ``start`` (``start`` itself when none raises R)."""
    problem = model.problem
    if not problem.has_remote_cost:
        return start, 0
    hosts, first = start.hosts.copy(), start.first_machine.copy()
    scored = model.max_rate(hosts, first)
    rate = scored.rate
    linked = neighbours(model)
    steps = 0
    trials_left = max(tuning.colocate_min_trials, tuning.colocate_work_cells
                      // ((problem.n_components + len(problem.stream_source)) * problem.n_machines))
    while steps < tuning.colocate_steps and trials_left > 0:
        deadline.check(steps)
        steps += 1
        best: tuple[float, np.ndarray, np.ndarray] | None = None
        for c, w, m, k in _moves(hosts, linked, scored.machine_limits, tuning.colocate_targets):
            if trials_left <= 0:
                break
            trials_left -= 1
            trial = hosts.copy()
            trial[c, w] -= k
            trial[c, m] += k
            trial_first = first.copy()
            if trial[c, first[c]] == 0:
                trial_first[c] = m
            r = model.max_rate(trial, trial_first).rate
            if r > rate * (1 + RATE_REL_TOL) and (best is None or r > best[0]):
                best = (r, trial, trial_first)
        if best is None:
            break
        rate, hosts, first = best
        scored = model.max_rate(hosts, first)
    return Layout(hosts, first), steps
