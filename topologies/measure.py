"""What each component of a catalog topology does in a window, measured with :mod:`observe`."""
from __future__ import annotations

from collections.abc import Callable

from observe.nimbus import Nimbus
from observe.rates import ComponentRate, CountSample, component_rates
from observe.window import sample_window
from topologies.catalog import CatalogEntry
from topologies.errors import TopologyError


def roles(entry: CatalogEntry) -> dict[str, str]:
    """Each component's role: spout, bolt, or sink (no stream leaves it)."""
    thrift = entry.topology.thrift_topology
    sources = {stream.componentId for bolt in thrift.bolts.values() for stream in bolt.common.inputs}
    return {
        c: "spout" if c in thrift.spouts else ("bolt" if c in sources else "sink")
        for c in entry.component_ids
    }


def window_rates(nimbus: Nimbus, name: str, entry: CatalogEntry, window_s: float,
                 on_sample: Callable[[CountSample, float, float], None] | None = None) -> list[ComponentRate]:
    """What every component of a running topology did during the next ``window_s`` seconds."""
    running = nimbus.find(name)
    if running is None:
        raise TopologyError(f"no topology named {name!r} is running")
    component_roles = roles(entry)
    samples = sample_window(nimbus, running.id, window_s, component_roles, on_sample=on_sample)
    return component_rates(samples, component_roles)
