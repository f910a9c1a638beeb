"""The topologies one can submit, by name, and their graphs in the planner's model."""
from __future__ import annotations

from dataclasses import dataclass

from streamparse import Topology

from planner.model import Component, Stream, Topology as PlannerTopology
from topologies.errors import TopologyError
from topologies.micro import Diamond, Linear, Star
from topologies.storm_benchmark import RollingCount, UniqueVisitor


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    topology: type[Topology]
    summary: str

    @property
    def component_ids(self) -> list[str]:
        return [spec.name for spec in self.topology.specs]

    @property
    def spout_ids(self) -> list[str]:
        return sorted(self.topology.thrift_spouts)

    def profiles(self) -> dict[str, str]:
        """Component id -> profile key (the kind of work of its class)."""
        return {spec.name: spec.component_cls.profile for spec in self.topology.specs}

    def component_class(self, component_id: str) -> type:
        for spec in self.topology.specs:
            if spec.name == component_id:
                return spec.component_cls
        raise KeyError(component_id)


CATALOG: dict[str, CatalogEntry] = {
    entry.name: entry
    for entry in (
        CatalogEntry("linear", Linear, "spout -> low -> mid -> high"),
        CatalogEntry("diamond", Diamond, "spout -> low, mid -> high"),
        CatalogEntry("star", Star, "spout1, spout2 -> high -> low, mid"),
        CatalogEntry("rolling_count", RollingCount, "spout -> split -> rolling_count (storm-benchmark)"),
        CatalogEntry("unique_visitor", UniqueVisitor, "spout -> view -> uniquer (storm-benchmark)"),
    )
}


def _key(name: str) -> str:
    return name.strip().lower().replace("-", "").replace("_", "")


def lookup(name: str) -> CatalogEntry:
    """The topology of this name (case, '-' and '_' do not matter: RollingCount, rolling-count)."""
    for entry in CATALOG.values():
        if _key(entry.name) == _key(name):
            return entry
    raise TopologyError(f"unknown topology {name!r}; known topologies: {', '.join(CATALOG)}")


def grouping_name(grouping) -> str:
    """The planner's name of a Storm Thrift grouping."""
    if grouping.fields is not None:
        return "fields" if grouping.fields else "global"
    for name in ("shuffle", "local_or_shuffle", "all", "none", "direct"):
        if getattr(grouping, name, None) is not None:
            return name
    return "shuffle"


def planner_topology(entry: CatalogEntry, parallelism: dict[str, int] | None = None) -> PlannerTopology:
    """The graph in the planner's model, with profile keys and, where given, fixed instance counts."""
    parallelism = parallelism or {}
    profiles = entry.profiles()
    components = [
        Component(
            id=spec.name,
            kind="spout" if spec.name in entry.topology.thrift_spouts else "bolt",
            profile=profiles[spec.name],
            parallelism=parallelism.get(spec.name),
        )
        for spec in entry.topology.specs
    ]
    streams = [
        Stream(source=stream_id.componentId, target=spec.name, grouping=grouping_name(grouping))
        for spec in entry.topology.specs
        for stream_id, grouping in spec.inputs.items()
    ]
    return PlannerTopology(name=entry.name, components=components, streams=streams)
