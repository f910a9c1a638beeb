"""Tuple rates over a window from per-executor Nimbus counts.

Each executor's counts reach Nimbus in steps, once per stats heartbeat
(``executor.metrics.frequency.secs``, 10 s on the local cluster), each
executor at its own phase. Differencing a component's summed counts would
mix those phases (an error up to one step over the window), so each executor's
rate is taken between its own first and last step seen in the window, and a
component's rate is the sum of its executors' rates.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from planner.model import SYSTEM_PREFIX

ALL_TIME = ":all-time"


@dataclass(frozen=True)
class ExecutorCount:
    """One executor's all-time counts at one moment: tuples handled (spout: emitted, bolt: executed), acked, failed."""

    tuples: int
    acked: int
    failed: int


@dataclass(frozen=True)
class ComponentRate:
    component: str
    role: str
    """spout, bolt or sink (a bolt nobody subscribes to)."""
    executors: int
    measured_executors: int
    """Executors whose counts stepped at least twice in the window."""
    tuples: int
    acked: int
    failed: int
    window_s: float
    """Mean time between first and last step over the measured executors."""
    per_second: float
    """Sum over executors of (tuples between its first and last step) / (time between them)."""


def _user_sum(counts: dict | None, key) -> int:
    """Sum of a Thrift ``window -> stream -> count`` map at all-time, system streams left out."""
    if not counts:
        return 0
    streams = counts.get(ALL_TIME) or {}
    return int(sum(n for stream, n in streams.items() if not key(stream).startswith(SYSTEM_PREFIX)))


def executor_counts(info, roles: dict[str, str]) -> dict[tuple[str, int], ExecutorCount]:
    """(component, first task) -> counts, for the user components of a Thrift TopologyInfo."""
    found: dict[tuple[str, int], ExecutorCount] = {}
    for executor in info.executors or []:
        component = executor.component_id
        if component not in roles:
            continue
        stats = executor.stats
        specific = stats.specific if stats else None
        if roles[component] == "spout":
            spout = specific.spout if specific else None
            count = ExecutorCount(
                _user_sum(stats.emitted if stats else None, str),
                _user_sum(spout.acked if spout else None, str),
                _user_sum(spout.failed if spout else None, str),
            )
        else:
            bolt = specific.bolt if specific else None
            source = lambda stream: stream.componentId  # noqa: E731  GlobalStreamId keys
            count = ExecutorCount(
                _user_sum(bolt.executed if bolt else None, source),
                _user_sum(bolt.acked if bolt else None, source),
                _user_sum(bolt.failed if bolt else None, source),
            )
        found[(component, executor.executor_info.task_start)] = count
    return found


def window_rates(samples: list[tuple[float, dict[tuple[str, int], ExecutorCount]]], roles: dict[str, str]) -> list[ComponentRate]:
    """Rates per component from timed samples (seconds, executor counts), taken often within one window."""
    steps: dict[tuple[str, int], list[tuple[float, ExecutorCount]]] = defaultdict(list)
    last: dict[tuple[str, int], ExecutorCount] = {}
    for at, counts in samples:
        for executor, count in counts.items():
            if executor in last and count.tuples != last[executor].tuples:
                steps[executor].append((at, count))
            last[executor] = count
    rates = []
    for component, role in roles.items():
        executors = sorted(e for e in last if e[0] == component)
        tuples = acked = failed = 0
        per_second = window = 0.0
        measured = 0
        for executor in executors:
            seen = steps.get(executor, [])
            if len(seen) < 2:
                continue
            (t0, first), (t1, final) = seen[0], seen[-1]
            measured += 1
            tuples += final.tuples - first.tuples
            acked += final.acked - first.acked
            failed += final.failed - first.failed
            per_second += (final.tuples - first.tuples) / (t1 - t0)
            window += t1 - t0
        rates.append(ComponentRate(component, role, len(executors), measured, tuples, acked, failed,
                                   window / measured if measured else 0.0, per_second))
    return rates
