"""Tuples per component over a window, from Nimbus's all-time counts.

Nimbus's counts move in steps, once per worker stats heartbeat
(``executor.metrics.frequency.secs``, 60 s by Storm's default). Taking two
readings a fixed time apart would be off by up to a whole step, so each
component's window runs from the first to the last step seen while polling,
and the rate is the tuples between those steps over the time between them.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from topologies.catalog import CatalogEntry
from topologies.errors import TopologyError
from topologies.nimbus import ComponentCounts, Nimbus

POLL_S = 0.5


@dataclass(frozen=True)
class Step:
    """A component's counts right after they moved, and anything read at that moment (e.g. CPU seconds)."""

    at: float
    tuples: int
    acked: int
    failed: int
    extra: float = 0.0


@dataclass(frozen=True)
class ComponentRate:
    component: str
    role: str
    """spout, bolt or sink (a bolt nobody subscribes to)."""
    tuples: int
    """Executed (bolts) or emitted (spouts) between the first and last step of the window."""
    acked: int
    failed: int
    window_s: float
    """Time between those steps (0 when the counts moved less than twice)."""
    extra: float = 0.0
    """Change of the extra reading between the steps."""

    @property
    def per_second(self) -> float:
        return self.tuples / self.window_s if self.window_s > 0 else 0.0


def roles(entry: CatalogEntry) -> dict[str, str]:
    """Each component's role: spout, bolt, or sink (no stream leaves it)."""
    thrift = entry.topology.thrift_topology
    sources = {stream.componentId for bolt in thrift.bolts.values() for stream in bolt.common.inputs}
    return {
        c: "spout" if c in thrift.spouts else ("bolt" if c in sources else "sink")
        for c in entry.component_ids
    }


def handled(counts: ComponentCounts, role: str) -> int:
    """Tuples a component handled: emitted by a spout, executed by a bolt."""
    return counts.emitted if role == "spout" else counts.executed


def stepped_rates(
    nimbus: Nimbus,
    topology_id: str,
    component_roles: dict[str, str],
    window_s: float,
    read_extra: Callable[[str], float] | None = None,
    tick: Callable[[float], None] | None = None,
) -> list[ComponentRate]:
    """Poll the counts for ``window_s`` seconds; per component, what happened between its first and last step."""
    last: dict[str, int] = {}
    first_step: dict[str, Step] = {}
    last_step: dict[str, Step] = {}
    start = time.monotonic()
    while (elapsed := time.monotonic() - start) < window_s:
        for component, role in component_roles.items():
            counts = nimbus.component_counts(topology_id, component)
            tuples = handled(counts, role)
            if component in last and tuples != last[component]:
                step = Step(time.monotonic(), tuples, counts.acked, counts.failed,
                            read_extra(component) if read_extra else 0.0)
                first_step.setdefault(component, step)
                last_step[component] = step
            last[component] = tuples
        if tick:
            tick(elapsed)
        time.sleep(POLL_S)
    rates = []
    for component, role in component_roles.items():
        first, final = first_step.get(component), last_step.get(component)
        if first is None or final is None or first is final:
            rates.append(ComponentRate(component, role, 0, 0, 0, 0.0))
            continue
        rates.append(ComponentRate(component, role, final.tuples - first.tuples, final.acked - first.acked,
                                   final.failed - first.failed, final.at - first.at, final.extra - first.extra))
    return rates


def window_rates(nimbus: Nimbus, name: str, entry: CatalogEntry, window_s: float,
                 tick: Callable[[float], None] | None = None) -> list[ComponentRate]:
    """What every component of a running topology did during the next ``window_s`` seconds."""
    running = nimbus.find(name)
    if running is None:
        raise TopologyError(f"no topology named {name!r} is running")
    return stepped_rates(nimbus, running.id, roles(entry), window_s, tick=tick)
