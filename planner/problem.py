"""A planning request compiled to arrays, shared by the simulator and the strategies.

Index conventions: components ``c`` in topological order, machines ``w`` in
cluster order, machine types ``t`` in cluster declaration order. CPU figures
are percent of one machine; ``cost[c, t]`` is ``100 * e`` (percent per tuple/s),
so an instance fed ``r`` tuples/s uses ``cost * r + met`` percent.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from planner.errors import PlanningError
from planner.model import Cluster, Component, PlanOptions, Placement, Topology
from planner.profiles import ProfileTable
from planner.rates import input_shares, topological_order


@dataclass
class Problem:
    topology: Topology
    cluster: Cluster
    profiles: ProfileTable
    options: PlanOptions
    component_ids: list[str]
    components: list[Component]
    component_index: dict[str, int]
    machine_ids: list[str]
    machine_index: dict[str, int]
    type_names: list[str]
    machine_type: np.ndarray  # (M,) int: type index of each machine
    limit: np.ndarray  # (M,) capacity * u_max, percent
    thread_limit: np.ndarray  # (T,) 100/cores * u_max, inf where cores is not declared
    cost: np.ndarray  # (C, T) 100 * e, percent per tuple/s; 0 where no profile
    met: np.ndarray  # (C, T) percent; 0 where no profile
    is_spout: np.ndarray  # (C,) bool
    is_sink: np.ndarray  # (C,) bool: no output stream
    fixed: np.ndarray  # (C,) int: fixed parallelism, 0 where free
    has_all_grouping: bool
    _shares_cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    @classmethod
    def build(cls, topology: Topology, cluster: Cluster, profiles: ProfileTable, options: PlanOptions) -> "Problem":
        """Compile a request that has passed planner.validation."""
        order = topological_order(topology)
        by_id = {c.id: c for c in topology.components}
        components = [by_id[c] for c in order]
        type_names = [t.name for t in cluster.machine_types]
        type_index = {n: i for i, n in enumerate(type_names)}
        u_max = options.max_utilization
        cost = np.zeros((len(order), len(type_names)))
        met = np.zeros_like(cost)
        for ci, comp in enumerate(components):
            if comp.profile is None:
                continue
            for ti, tname in enumerate(type_names):
                entry = profiles.get(comp.profile, tname)
                if entry is not None:
                    cost[ci, ti] = 100.0 * entry.e
                    met[ci, ti] = entry.met
        sources = {s.source for s in topology.streams}
        mtypes = {t.name: t for t in cluster.machine_types}
        return cls(
            topology=topology,
            cluster=cluster,
            profiles=profiles,
            options=options,
            component_ids=order,
            components=components,
            component_index={c: i for i, c in enumerate(order)},
            machine_ids=[m.id for m in cluster.machines],
            machine_index={m.id: i for i, m in enumerate(cluster.machines)},
            type_names=type_names,
            machine_type=np.array([type_index[m.type] for m in cluster.machines], dtype=np.int64),
            limit=np.array([mtypes[m.type].capacity * u_max for m in cluster.machines]),
            thread_limit=np.array(
                [np.inf if t.thread_cap is None else t.thread_cap * u_max for t in cluster.machine_types]
            ),
            cost=cost,
            met=met,
            is_spout=np.array([c.kind == "spout" for c in components]),
            is_sink=np.array([c.id not in sources for c in components]),
            fixed=np.array([c.parallelism or 0 for c in components], dtype=np.int64),
            has_all_grouping=any(s.grouping == "all" for s in topology.streams),
        )

    @property
    def n_components(self) -> int:
        return len(self.component_ids)

    @property
    def n_machines(self) -> int:
        return len(self.machine_ids)

    def shares(self, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(split, each, first) input per unit R of every component (see planner.rates.InputShares).

        Only ``all`` groupings make them depend on the instance counts; without
        them the result is computed once and cached.
        """
        if not self.has_all_grouping and self._shares_cache is not None:
            return self._shares_cache
        counts_map: Mapping[str, int] | None = None
        if counts is not None:
            counts_map = {cid: int(n) for cid, n in zip(self.component_ids, counts)}
        shares = input_shares(self.topology, self.profiles, counts_map)
        result = (
            np.array([shares[c].split for c in self.component_ids]),
            np.array([shares[c].each for c in self.component_ids]),
            np.array([shares[c].first for c in self.component_ids]),
        )
        if not self.has_all_grouping:
            self._shares_cache = result
        return result

    def component_rates(self, counts: np.ndarray) -> np.ndarray:
        """IR_c per unit R of every component for these instance counts."""
        split, each, first = self.shares(counts)
        return split + counts * each + first

    def placement_arrays(self, placement: Placement) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(component index, instance index, machine index) of every instance; checks the placement's names."""
        comp_idx: list[int] = []
        inst_idx: list[int] = []
        mach_idx: list[int] = []
        for cid, machines in placement.items():
            ci = self.component_index.get(cid)
            if ci is None:
                raise PlanningError(f"the placement names unknown component {cid}")
            for i, mid in enumerate(machines):
                wi = self.machine_index.get(mid)
                if wi is None:
                    raise PlanningError(f"the placement puts component {cid} on unknown machine {mid}")
                comp_idx.append(ci)
                inst_idx.append(i)
                mach_idx.append(wi)
        for cid in self.component_ids:
            if not placement.get(cid):
                raise PlanningError(f"the placement has no instance of component {cid}")
        return np.array(comp_idx, dtype=np.int64), np.array(inst_idx, dtype=np.int64), np.array(mach_idx, dtype=np.int64)

    def counts_of(self, placement: Placement) -> np.ndarray:
        return np.array([len(placement.get(c, ())) for c in self.component_ids], dtype=np.int64)
