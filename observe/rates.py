"""Tuples per second per component from timed count samples: each executor between its own stats steps. Pure.

Nimbus's counts of an executor move in steps, once per stats report of its worker
(``executor.metrics.frequency.secs``), each worker at its own phase. Differencing a component's
counts summed over executors at two fixed moments mixes those phases: the window is off by up to
one report interval for every executor (with a 10 s interval and a 60 s window, up to a sixth).
So each executor's rate is the tuples between its own first and last step seen while sampling,
over the time between those steps, and a component's rate is the sum of its executors' rates.
A step is dated midway between the sample that showed it and the one before, so sampling every
``s`` seconds dates it within ``s / 2``.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass

from observe.counts import Count, ExecutorCounts, TopologyCounts


@dataclass(frozen=True)
class CountSample:
    """The counts of a topology read at one moment (seconds, on any one clock)."""

    at: float
    counts: TopologyCounts


@dataclass(frozen=True)
class Step:
    """An executor's counts right after they moved, and when."""

    at: float
    counts: ExecutorCounts


@dataclass(frozen=True)
class ExecutorWindow:
    """An executor's first and last step within the samples."""

    first: Step
    last: Step

    @property
    def seconds(self) -> float:
        return self.last.at - self.first.at

    def delta(self, count: Count) -> int:
        return count(self.last.counts) - count(self.first.counts)

    def per_second(self, count: Count) -> float:
        return self.delta(count) / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class ComponentRate:
    """What one component did in a window."""

    component: str
    role: str
    """spout, bolt or sink (a bolt nobody subscribes to)."""
    executors: int
    measured_executors: int
    """Executors whose counts stepped at least twice in the window; the others count nothing."""
    tuples: int
    """Tuples counted (spout: emitted, bolt: as asked) between each executor's first and last step, summed."""
    acked: int
    failed: int
    window_s: float
    """Mean time between first and last step over the measured executors (0: none measured)."""
    per_second: float
    """Sum over executors of (tuples between its first and last step) / (time between them)."""


def handled(e: ExecutorCounts) -> int:
    """The default count: a spout's emits, a bolt's executes."""
    return e.handled


def steps(samples: list[CountSample], count: Count = handled) -> dict[int, list[Step]]:
    """Each executor's steps (its ``count`` changed), by first task id, in sample order."""
    found: dict[int, list[Step]] = {}
    last: dict[int, tuple[float, ExecutorCounts]] = {}
    for sample in samples:
        for task, e in sample.counts.executors.items():
            before = last.get(task)
            if before is not None and count(e) != count(before[1]):
                found.setdefault(task, []).append(Step((before[0] + sample.at) / 2, e))
            last[task] = (sample.at, e)
    return found


def executor_windows(samples: list[CountSample], count: Count = handled) -> dict[int, ExecutorWindow]:
    """Executors that stepped at least twice, by first task id: their first and last step."""
    return {task: ExecutorWindow(seen[0], seen[-1]) for task, seen in steps(samples, count).items() if len(seen) >= 2}


def component_rates(samples: list[CountSample], roles: Mapping[str, str], count: Count = handled) -> list[ComponentRate]:
    """Per component of ``roles`` (component -> spout, bolt or sink), in that order: its rate in the samples."""
    windows = executor_windows(samples, count)
    executors: dict[str, set[int]] = {c: set() for c in roles}
    for sample in samples:
        for task, e in sample.counts.executors.items():
            if e.component in executors:
                executors[e.component].add(task)
    rates = []
    for component, role in roles.items():
        mine = [windows[t] for t in sorted(executors[component]) if t in windows]
        rates.append(ComponentRate(
            component=component,
            role=role,
            executors=len(executors[component]),
            measured_executors=len(mine),
            tuples=sum(w.delta(count) for w in mine),
            acked=sum(w.delta(lambda e: e.acked) for w in mine),
            failed=sum(w.delta(lambda e: e.failed) for w in mine),
            window_s=sum(w.seconds for w in mine) / len(mine) if mine else 0.0,
            per_second=sum(w.per_second(count) for w in mine),
        ))
    return rates


@dataclass(frozen=True)
class ExecutorRate:
    """What one executor did in a window: where a component's tuples really went (a held spout on a throttled machine
    emits less than its even share, a bolt whose queue grows handles less)."""

    component: str
    task_start: int
    host: str
    """Supervisor host of its worker at its last step."""
    tuples: int
    """Between its first and last step: a spout's emits, a bolt's executes (as :func:`component_rates` counts)."""
    acked: int
    failed: int
    window_s: float
    per_second: float


def executor_rates(samples: list[CountSample], roles: Mapping[str, str], count: Count = handled) -> list[ExecutorRate]:
    """Every executor of a component of ``roles`` that stepped twice in the samples, by component (``roles``' order)
    and first task id."""
    windows = executor_windows(samples, count)
    order = {c: i for i, c in enumerate(roles)}
    found = [ExecutorRate(component=w.last.counts.component, task_start=task, host=w.last.counts.host,
                          tuples=w.delta(count), acked=w.delta(lambda e: e.acked), failed=w.delta(lambda e: e.failed),
                          window_s=w.seconds, per_second=w.per_second(count))
             for task, w in windows.items() if w.last.counts.component in order]
    return sorted(found, key=lambda r: (order[r.component], r.task_start))


def unmeasured(rates: list[ComponentRate]) -> list[str]:
    """Components none of whose executors stepped twice."""
    return [r.component for r in rates if r.measured_executors == 0]


def interpolate(readings: list[tuple[float, float]], at: float) -> float:
    """A cumulative reading (e.g. CPU seconds) at ``at``, linear between the timed readings around it."""
    if not readings:
        raise ValueError("no readings to interpolate")
    times = [t for t, _ in readings]
    i = bisect_left(times, at)
    if i == 0:
        return readings[0][1]
    if i == len(readings):
        return readings[-1][1]
    (t0, v0), (t1, v1) = readings[i - 1], readings[i]
    return v0 if t1 == t0 else v0 + (v1 - v0) * (at - t0) / (t1 - t0)
