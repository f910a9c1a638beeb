"""Rate propagation through the topology graph (docs/concepts/model.md, "Rates").

All rates here are *per unit of the topology input rate R*: multiply by R for
tuples per second. Every subscriber of a stream receives the whole stream, and
a bolt with several parents receives the sum of their streams.

Per-instance split by grouping (Storm semantics, one worker per machine):

- ``shuffle``, ``local_or_shuffle``, ``fields``, ``partial_key``, ``none``,
  ``direct``: the stream is split evenly over the component's instances
  (``fields`` even in expectation, no key skew modelled yet; ``local_or_shuffle``
  as shuffle because its preference for same-worker targets depends on the
  placement, which the linear model leaves out).
- ``global``: the whole stream goes to instance 0 (Storm's lowest task id).
- ``all``: every instance receives the whole stream, so the component as a
  whole processes ``N_c`` times the stream.
"""
from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass

from planner.errors import PlanningError
from planner.model import Component, Topology
from planner.profiles import ProfileTable

SPLIT_GROUPINGS = frozenset({"shuffle", "local_or_shuffle", "fields", "partial_key", "none", "direct"})


def find_cycle(topology: Topology) -> list[str] | None:
    """One cycle of the stream graph as ``[a, b, ..., a]``, or None if it is a DAG.

    Streams to unknown components are ignored here (validation reports them).
    """
    ids = [c.id for c in topology.components]
    known = set(ids)
    children: dict[str, list[str]] = {i: [] for i in ids}
    for s in topology.streams:
        if s.source in known and s.target in known:
            children[s.source].append(s.target)
    state: dict[str, int] = {i: 0 for i in ids}  # 0 new, 1 on the current path, 2 done
    for root in ids:
        if state[root]:
            continue
        path: list[str] = [root]
        iters = [iter(children[root])]
        state[root] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iters.pop()
            elif state[nxt] == 1:
                return path[path.index(nxt):] + [nxt]
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(children[nxt]))
    return None


def topological_order(topology: Topology) -> list[str]:
    """Component ids, parents before children; ties keep declaration order."""
    ids = [c.id for c in topology.components]
    known = set(ids)
    indegree = {i: 0 for i in ids}
    children: dict[str, list[str]] = {i: [] for i in ids}
    for s in topology.streams:
        if s.source in known and s.target in known:
            children[s.source].append(s.target)
            indegree[s.target] += 1
    position = {cid: n for n, cid in enumerate(ids)}
    ready = [(position[i], i) for i in ids if indegree[i] == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, cid = heapq.heappop(ready)
        order.append(cid)
        for child in children[cid]:
            indegree[child] -= 1
            if indegree[child] == 0:
                heapq.heappush(ready, (position[child], child))
    if len(order) != len(ids):
        cycle = find_cycle(topology) or []
        raise PlanningError("the topology has a cycle: " + " -> ".join(cycle))
    return order


def component_alpha(component: Component, profiles: ProfileTable) -> float:
    """Output tuples per input tuple; a component without a profile (a system component) passes tuples 1:1."""
    if component.profile is not None and profiles.has_profile(component.profile):
        return profiles.alpha(component.profile)
    return 1.0


@dataclass(frozen=True)
class InputShares:
    """How a component's input (per unit R) reaches its instances.

    ``split`` is divided evenly over the instances, every instance gets all of
    ``each`` (``all`` grouping), and instance 0 alone gets ``first`` (``global``).
    """

    split: float = 0.0
    each: float = 0.0
    first: float = 0.0

    def total(self, instances: int) -> float:
        return self.split + instances * self.each + self.first

    def instance(self, index: int, instances: int) -> float:
        return self.split / instances + self.each + (self.first if index == 0 else 0.0)


def input_shares(
    topology: Topology, profiles: ProfileTable, instances: Mapping[str, int] | None = None
) -> dict[str, InputShares]:
    """Each component's input per unit R, by how it is split over instances.

    For a spout, ``split`` is its emit rate per unit R (its weight ``w_s``).
    ``instances`` matters only for ``all`` groupings (default: 1 instance each).
    """
    by_id = {c.id: c for c in topology.components}
    counts = instances or {}
    parents: dict[str, list[tuple[str, str]]] = {c.id: [] for c in topology.components}
    for s in topology.streams:
        parents[s.target].append((s.source, s.grouping))
    shares: dict[str, InputShares] = {}
    output: dict[str, float] = {}
    for cid in topological_order(topology):
        comp = by_id[cid]
        if comp.kind == "spout":
            shares[cid] = InputShares(split=comp.spout_weight)
            output[cid] = comp.spout_weight
            continue
        split = each = first = 0.0
        for parent, grouping in parents[cid]:
            if grouping == "all":
                each += output[parent]
            elif grouping == "global":
                first += output[parent]
            else:
                split += output[parent]
        share = InputShares(split, each, first)
        shares[cid] = share
        output[cid] = share.total(counts.get(cid, 1)) * component_alpha(comp, profiles)
    return shares


def unit_rates(
    topology: Topology, profiles: ProfileTable, instances: Mapping[str, int] | None = None
) -> dict[str, float]:
    """IR_c per unit of R (beta_c): spouts their weight w_s, bolts the sum of their parents' OR."""
    counts = instances or {}
    return {cid: s.total(counts.get(cid, 1)) for cid, s in input_shares(topology, profiles, instances).items()}


def instance_unit_rates(
    topology: Topology, profiles: ProfileTable, instances: Mapping[str, int]
) -> dict[str, list[float]]:
    """Input rate per unit R of every instance of every component, by grouping."""
    shares = input_shares(topology, profiles, instances)
    return {cid: [s.instance(i, instances[cid]) for i in range(instances[cid])] for cid, s in shares.items()}
