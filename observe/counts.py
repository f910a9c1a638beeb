"""Per-executor tuple counts from a Thrift ``TopologyInfo``. Pure.

Nimbus keeps each executor's counts as its worker last reported them (every
``executor.metrics.frequency.secs``): all-time sums per window and stream, exact only with
``topology.stats.sample.rate: 1.0``. Only user streams count here: Storm's own (``__ack_*``,
``__system``, ``__metrics``, tick tuples) are left out, and so are Storm's system components
(``__acker``), whose hosts are kept apart.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ALL_TIME = ":all-time"
RECENT = "600"
"""Nimbus's shortest rolling window of counts: the last 10 minutes."""
RECENT_S = 600.0
SYSTEM_PREFIX = "__"


@dataclass(frozen=True)
class ExecutorCounts:
    """One executor's all-time counts on user streams, and where it runs."""

    component: str
    task_start: int
    task_end: int
    host: str
    """Supervisor host of its worker; empty while not placed."""
    port: int
    uptime_s: int
    """The executor's uptime at its last stats report: it changes with each report, even when no tuple moved."""
    is_spout: bool
    emitted: int
    """Tuples emitted, once per emit."""
    transferred: int
    """Tuples sent to other tasks (an emit to two subscribers transfers two)."""
    executed: int
    """A bolt's ``executed``; a ShellBolt counts a tuple when it queues it to its subprocess."""
    acked: int
    """Spout: tuple trees completed; bolt: tuples acked (a Python bolt acks once it has processed a tuple)."""
    failed: int
    emitted_recent: int | None = None
    """Tuples emitted within Nimbus's last 10 minutes (its ``600`` window), all since it started where it ran for
    less; None where Nimbus reports no such window."""

    @property
    def handled(self) -> int:
        """Tuples handled: emitted by a spout, executed by a bolt (the bench's throughput)."""
        return self.emitted if self.is_spout else self.executed

    @property
    def processed(self) -> int:
        """Tuples done: emitted by a spout, acked by a bolt (a Python bolt has processed them; profiling)."""
        return self.emitted if self.is_spout else self.acked


Count = Callable[[ExecutorCounts], int]


@dataclass(frozen=True)
class TopologyCounts:
    """A topology's executors at one reading."""

    scheduler_status: str
    executors: dict[int, ExecutorCounts]
    """User executors by their first task id."""
    system: dict[str, list[str]]
    """Storm's system components (``__acker``) -> the hosts of their executors."""

    @property
    def placed(self) -> bool:
        """Every executor has a host."""
        return bool(self.executors) and all(e.host for e in self.executors.values())

    def totals(self, count: Count = lambda e: e.handled) -> dict[str, int]:
        """Component -> the sum of ``count`` over its executors."""
        found: dict[str, int] = {}
        for e in self.executors.values():
            found[e.component] = found.get(e.component, 0) + count(e)
        return found


def _is_user(stream: Any) -> bool:
    """A stream key (a stream id, or a bolt input's ``GlobalStreamId``) outside Storm's own streams."""
    if isinstance(stream, str):
        return not stream.startswith(SYSTEM_PREFIX)
    return not (stream.componentId.startswith(SYSTEM_PREFIX) or stream.streamId.startswith(SYSTEM_PREFIX))


def _user_sum(by_window: dict | None, window: str = ALL_TIME) -> int:
    """Sum of a Thrift ``window -> stream -> count`` map at one window (all-time) over user streams."""
    streams = (by_window or {}).get(window) or {}
    return int(sum(n for stream, n in streams.items() if _is_user(stream)))


def parse_topology_info(info: Any) -> TopologyCounts:
    """Every executor's counts from a Thrift ``TopologyInfo``."""
    executors: dict[int, ExecutorCounts] = {}
    system: dict[str, list[str]] = {}
    for e in info.executors or []:
        if e.component_id.startswith(SYSTEM_PREFIX):
            system.setdefault(e.component_id, []).append(e.host)
            continue
        stats = e.stats
        specific = stats.specific if stats is not None else None
        spout = specific.spout if specific is not None else None
        bolt = specific.bolt if specific is not None else None
        acks = spout or bolt
        executors[e.executor_info.task_start] = ExecutorCounts(
            component=e.component_id,
            task_start=e.executor_info.task_start,
            task_end=e.executor_info.task_end,
            host=e.host or "",
            port=e.port or 0,
            uptime_s=e.uptime_secs or 0,
            is_spout=spout is not None,
            emitted=_user_sum(stats.emitted) if stats else 0,
            transferred=_user_sum(stats.transferred) if stats else 0,
            executed=_user_sum(bolt.executed) if bolt else 0,
            acked=_user_sum(acks.acked) if acks else 0,
            failed=_user_sum(acks.failed) if acks else 0,
            emitted_recent=_user_sum(stats.emitted, RECENT) if stats and RECENT in (stats.emitted or {}) else None,
        )
    return TopologyCounts(scheduler_status=info.sched_status or "", executors=executors, system=system)


@dataclass(frozen=True)
class RecentRate:
    """The input rate R as Nimbus's last 10 minutes give it, and the seconds those minutes span."""

    input_rate: float
    window_s: float
    """The shortest span of any spout executor: 600, or its uptime where it started less than 10 minutes ago."""


def recent_input_rate(counts: TopologyCounts) -> RecentRate | None:
    """R over Nimbus's 10-minute window, read from one reading: no wait for a count window (``hetsched counts``).

    Each spout executor's emits in the window over the window's span (its uptime where shorter); a spout
    component's rate is the sum over its executors, and R the mean over spout components (the bench's
    ``input_rate``). None where no spout executor reports the window yet.
    """
    by_component: dict[str, float] = {}
    spans = []
    for e in counts.executors.values():
        if not e.is_spout or e.emitted_recent is None or e.uptime_s <= 0:
            continue
        span = min(RECENT_S, float(e.uptime_s))
        by_component[e.component] = by_component.get(e.component, 0.0) + e.emitted_recent / span
        spans.append(span)
    if not by_component:
        return None
    return RecentRate(sum(by_component.values()) / len(by_component), min(spans))
