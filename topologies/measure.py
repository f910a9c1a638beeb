"""Tuples per component over a fixed window, from Nimbus's all-time counts."""
from __future__ import annotations

import time
from dataclasses import dataclass

from topologies.catalog import CatalogEntry
from topologies.errors import TopologyError
from topologies.nimbus import ComponentCounts, Nimbus


@dataclass(frozen=True)
class ComponentRate:
    component: str
    role: str
    """spout, bolt or sink (a bolt nobody subscribes to)."""
    tuples: int
    """Executed (bolts) or emitted (spouts) within the window."""
    acked: int
    failed: int
    window_s: float

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


def counts(nimbus: Nimbus, topology_id: str, components: list[str]) -> dict[str, ComponentCounts]:
    return {c: nimbus.component_counts(topology_id, c) for c in components}


def window_rates(nimbus: Nimbus, name: str, entry: CatalogEntry, window_s: float) -> list[ComponentRate]:
    """Count what every component did during the next ``window_s`` seconds."""
    running = nimbus.find(name)
    if running is None:
        raise TopologyError(f"no topology named {name!r} is running")
    kinds = roles(entry)
    started = time.monotonic()
    before = counts(nimbus, running.id, entry.component_ids)
    time.sleep(window_s)
    after = counts(nimbus, running.id, entry.component_ids)
    elapsed = time.monotonic() - started
    rates = []
    for c in entry.component_ids:
        done = (after[c].emitted - before[c].emitted) if kinds[c] == "spout" else (after[c].executed - before[c].executed)
        rates.append(ComponentRate(c, kinds[c], done, after[c].acked - before[c].acked,
                                   after[c].failed - before[c].failed, elapsed))
    return rates
