"""The scheduler's status line of each topology, as ``hetsched topologies`` and ``hetsched cluster status`` print it.

Storm's UI shows it as "Scheduler Info"; the local cluster has no UI (storm-webapp is not on
Maven Central), so the command line shows it, a line per topology below the table (too long for a column).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from rich.console import Console


class _HasSchedulerStatus(Protocol):
    """Read-only, so that frozen dataclasses (observe.nimbus.TopologySummary) match."""

    @property
    def name(self) -> str: ...

    @property
    def scheduler_status(self) -> str: ...


def print_scheduler_status(out: Console, topologies: Iterable[_HasSchedulerStatus]) -> None:
    """What the scheduler said of each placement (the Storm UI's "Scheduler Info"), a line per topology below the table."""
    said = [t for t in sorted(topologies, key=lambda t: t.name) if t.scheduler_status]
    if said:
        out.print("scheduler status:", highlight=False)
    for t in said:
        out.print(f"  {t.name}: {t.scheduler_status}", markup=False, highlight=False, soft_wrap=True)
