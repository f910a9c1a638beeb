"""What each component of a running topology (a catalog one, or any as Nimbus keeps it) does in a window, measured with :mod:`observe`."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from observe.nimbus import Nimbus
from observe.rates import ComponentRate, CountSample, component_rates
from observe.window import sample_window
from topologies.catalog import CatalogEntry
from topologies.errors import TopologyError


def roles(entry: CatalogEntry) -> dict[str, str]:
    """Each component's role: spout, bolt, or sink (no stream leaves it)."""
    return roles_of(entry.topology.thrift_topology, entry.component_ids)


def roles_of(thrift: Any, component_ids: Iterable[str] | None = None) -> dict[str, str]:
    """Each component's role in a Thrift ``StormTopology`` (a catalog entry's, or the one Nimbus keeps of any
    running topology); ``component_ids`` default to its own spouts and bolts, Storm's ``__`` ones left out."""
    spouts, bolts = thrift.spouts or {}, thrift.bolts or {}
    sources = {stream.componentId for bolt in bolts.values() for stream in (bolt.common.inputs or {})}
    ids = component_ids if component_ids is not None else sorted(c for c in {*spouts, *bolts} if not c.startswith("__"))
    return {c: "spout" if c in spouts else ("bolt" if c in sources else "sink") for c in ids}


def window_rates(nimbus: Nimbus, name: str, entry: CatalogEntry | None, window_s: float,
                 on_sample: Callable[[CountSample, float, float], None] | None = None) -> list[ComponentRate]:
    """What every component of a running topology did during the next ``window_s`` seconds (``entry``: its catalog
    entry; None: its components as Nimbus keeps them)."""
    running = nimbus.find(name)
    if running is None:
        raise TopologyError(f"no topology named {name!r} is running")
    component_roles = roles(entry) if entry is not None else roles_of(nimbus.user_topology(running.id))
    samples = sample_window(nimbus, running.id, window_s, component_roles, on_sample=on_sample)
    return component_rates(samples, component_roles)
