"""Any running topology as the planner sees it, from the structure Nimbus keeps (Java, Flux or Python alike).

The plugin builds its plan requests the same way (``TopologyGraph.java`` and ``PlanRequests.java``): every
spout and bolt, one stream per (from, to) pair with the planner's name for its grouping, each component's
profile key from ``hetsched.component.profiles`` (else its id), and its executor count as it runs, fixed.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.model import SYSTEM_PREFIX, Component, Stream, Topology
from topologies.conf import COMPONENT_PROFILES

PARTIAL_KEY_GROUPING = "org.apache.storm.grouping.PartialKeyGrouping"


class TopologyGraphError(ValueError):
    """Nimbus's structure cannot be read as a planner topology."""


def grouping_name(grouping: Any) -> str:
    """The planner's name for a Thrift ``Grouping`` (a custom grouping is split like shuffle, Storm's partial key
    grouping recognised by its class name; the object is never deserialized)."""
    if grouping is None:
        return "shuffle"
    if grouping.fields is not None:
        return "fields" if grouping.fields else "global"
    for name in ("shuffle", "all", "none", "direct", "local_or_shuffle"):
        if getattr(grouping, name, None) is not None:
            return name
    custom = getattr(grouping, "custom_serialized", None)
    if custom is not None and PARTIAL_KEY_GROUPING.encode() in bytes(custom):
        return "partial_key"
    return "shuffle"


def planner_topology(name: str, user_topology: Any, conf: Mapping[str, Any],
                     executors: Mapping[str, int], fixed: bool = True) -> Topology:
    """The planner's topology of a running one: ``user_topology`` is Nimbus's ``getUserTopology`` answer,
    ``conf`` its topology conf, ``executors`` each user component's executor count as it runs now, kept as
    its fixed parallelism (to predict the running placement) unless ``fixed`` is False (to plan new counts)."""
    profiles = conf.get(COMPONENT_PROFILES) or {}
    if not isinstance(profiles, Mapping):
        raise TopologyGraphError(f"{COMPONENT_PROFILES} of {name} must map component ids to profile keys, "
                                 f"got {type(profiles).__name__}")
    spouts = dict(user_topology.spouts or {})
    bolts = dict(user_topology.bolts or {})
    components = []
    for kind, specs in (("spout", spouts), ("bolt", bolts)):
        for cid in sorted(specs):
            if cid.startswith(SYSTEM_PREFIX):
                continue
            hint = specs[cid].common.parallelism_hint
            count = executors.get(cid) or int(hint or 1)
            components.append(Component(id=cid, kind=kind, profile=str(profiles.get(cid, cid)),
                                        parallelism=count if fixed else None))
    if not components:
        raise TopologyGraphError(f"{name} has no spout or bolt of its own")
    known = {c.id for c in components}
    streams: dict[tuple[str, str], Stream] = {}
    for target in sorted(bolts):
        if target not in known:
            continue
        inputs = bolts[target].common.inputs or {}
        for stream_id, grouping in sorted(inputs.items(), key=lambda kv: (kv[0].componentId, kv[0].streamId)):
            source = stream_id.componentId
            if source in known:
                streams.setdefault((source, target), Stream(source=source, target=target,
                                                            grouping=grouping_name(grouping)))  # type: ignore[arg-type]
    return Topology(name=name, components=components, streams=list(streams.values()))
