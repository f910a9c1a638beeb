"""A planning request compiled once to read-only arrays, shared by the simulator and the strategies.

Index conventions: components ``c`` in topological order, machines ``w`` in
cluster order, machine types ``t`` in cluster declaration order. CPU figures
are percent of one machine; ``cost[c, t]`` is ``100 * e`` (percent per tuple/s),
so an instance fed ``r`` tuples/s uses ``cost * r + met`` percent
(planner.simulator.instance_cpu_pct).
"""
from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from planner.errors import PlanningError
from planner.model import Cluster, Component, Placement, PlanOptions, Topology
from planner.profiles import ProfileTable
from planner.rates import component_alpha, input_shares, topological_order


@dataclass(frozen=True)
class Shares:
    """Input per unit R of every component (arrays over components; see planner.rates.InputShares).

    ``split`` is divided evenly over a component's instances, every instance gets
    all of ``each`` (``all`` grouping), instance 0 alone gets ``first`` (``global``).
    """

    split: np.ndarray
    each: np.ndarray
    first: np.ndarray

    def total(self, counts: np.ndarray) -> np.ndarray:
        """IR_c per unit R of every component with these instance counts."""
        return self.split + counts * self.each + self.first


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def compute_shares(topology: Topology, profiles: ProfileTable, component_ids: tuple[str, ...],
                   counts: np.ndarray | None) -> Shares:
    """The shares for these instance counts (None: one instance each); a pure function of its arguments."""
    counts_map: Mapping[str, int] | None = None
    if counts is not None:
        counts_map = {cid: int(n) for cid, n in zip(component_ids, counts)}
    shares = input_shares(topology, profiles, counts_map)
    return Shares(
        split=_read_only(np.array([shares[c].split for c in component_ids])),
        each=_read_only(np.array([shares[c].each for c in component_ids])),
        first=_read_only(np.array([shares[c].first for c in component_ids])),
    )


SPLIT, ALL, GLOBAL = 0, 1, 2
"""Stream kinds by how the receiver's instances share a stream (docs/concepts/model.md, "Groupings")."""


def stream_kind(grouping: str) -> int:
    return ALL if grouping == "all" else GLOBAL if grouping == "global" else SPLIT


@dataclass(frozen=True, eq=False)
class Problem:
    """A validated request as arrays; immutable (every array is read-only), so strategies can share it."""

    topology: Topology
    cluster: Cluster
    profiles: ProfileTable
    options: PlanOptions
    component_ids: tuple[str, ...]
    components: tuple[Component, ...]
    component_index: Mapping[str, int]
    machine_ids: tuple[str, ...]
    machine_index: Mapping[str, int]
    type_names: tuple[str, ...]
    machine_type: np.ndarray
    """(M,) int: type index of each machine."""
    limit: np.ndarray
    """(M,) capacity * u_max, percent."""
    thread_limit: np.ndarray
    """(T,) 100/cores * u_max percent, inf where cores is not declared."""
    cost: np.ndarray
    """(C, T) 100 * e, percent per tuple/s; 0 where no profile."""
    met: np.ndarray
    """(C, T) percent; 0 where no profile."""
    is_spout: np.ndarray
    """(C,) bool."""
    is_sink: np.ndarray
    """(C,) bool: no output stream."""
    fixed: np.ndarray
    """(C,) int: fixed parallelism, 0 where free."""
    has_all_grouping: bool
    memory: np.ndarray
    """(C,) MB one instance needs; 0 where undeclared."""
    worker_memory: float
    """MB of the topology's worker on every machine that hosts an instance of it."""
    memory_limit: np.ndarray
    """(M,) MB each machine holds; inf where its type declares none."""
    memory_bound: bool
    """Whether memory can bind at all: some machine has a limit and something needs memory. When False every
    memory check is skipped, so requests without memory plan as fast as before."""
    one_each_shares: Shares
    """The shares with one instance per component: the only shares when no stream has an ``all`` grouping."""
    remote_send: np.ndarray
    """(C, T) 100 * remote_send: percent per tuple/s an instance emits to another worker; 0 where no profile."""
    remote_receive: np.ndarray
    """(C, T) 100 * remote_receive: percent per tuple/s an instance receives from another worker."""
    output_per_input: np.ndarray
    """(C,) output tuples per input tuple: alpha for a bolt, 1 for a spout (its input rate is its emit rate)."""
    stream_source: np.ndarray
    """(S,) component index of each stream's sender."""
    stream_target: np.ndarray
    """(S,) component index of each stream's receiver."""
    stream_kind: np.ndarray
    """(S,) how the receiver's instances share the stream: SPLIT, ALL or GLOBAL."""
    has_remote_cost: bool
    """Whether some stream's ends have a remote cost; when False the remote terms are skipped (they are 0)."""

    @classmethod
    def build(cls, topology: Topology, cluster: Cluster, profiles: ProfileTable, options: PlanOptions) -> Problem:
        """Compile a request that has passed planner.validation."""
        return compile_problem(topology, cluster, profiles, options)

    @property
    def n_components(self) -> int:
        return len(self.component_ids)

    @property
    def n_machines(self) -> int:
        return len(self.machine_ids)

    def shares(self, counts: np.ndarray | None = None) -> Shares:
        """Input per unit R of every component with these instance counts (they matter only for ``all`` groupings)."""
        if not self.has_all_grouping or counts is None:
            return self.one_each_shares
        return compute_shares(self.topology, self.profiles, self.component_ids, counts)

    def component_rates(self, counts: np.ndarray) -> np.ndarray:
        """IR_c per unit R of every component for these instance counts."""
        return self.shares(counts).total(counts)

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

    def memory_used(self, hosts: np.ndarray) -> np.ndarray:
        """(M,) MB the topology takes on each machine: its instances (``hosts`` is C x M) plus one worker where any."""
        return self.memory @ hosts + self.worker_memory * (hosts.sum(axis=0) > 0)


def compile_problem(topology: Topology, cluster: Cluster, profiles: ProfileTable, options: PlanOptions) -> Problem:
    """Compile a request that has passed planner.validation into a read-only Problem."""
    order = tuple(topological_order(topology))
    by_id = {c.id: c for c in topology.components}
    components = tuple(by_id[c] for c in order)
    type_names = tuple(t.name for t in cluster.machine_types)
    type_index = {n: i for i, n in enumerate(type_names)}
    u_max = options.max_utilization
    cost = np.zeros((len(order), len(type_names)))
    met = np.zeros_like(cost)
    remote_send = np.zeros_like(cost)
    remote_receive = np.zeros_like(cost)
    for ci, comp in enumerate(components):
        if comp.profile is None:  # a system executor (validated): its thread's idle wake-ups, nothing per tuple
            met[ci] = [profiles.idle_met(tname) for tname in type_names]
            continue
        for ti, tname in enumerate(type_names):
            entry = profiles.get(comp.profile, tname)
            if entry is not None:
                cost[ci, ti] = 100.0 * entry.e
                met[ci, ti] = entry.charged_met(held=options.spouts_held and comp.kind == "spout")
                remote_send[ci, ti] = 100.0 * entry.remote_send
                remote_receive[ci, ti] = 100.0 * entry.remote_receive
    sources = {s.source for s in topology.streams}
    index = {c: i for i, c in enumerate(order)}
    stream_source = np.array([index[s.source] for s in topology.streams], dtype=np.int64)
    stream_target = np.array([index[s.target] for s in topology.streams], dtype=np.int64)
    output_per_input = np.array([1.0 if c.kind == "spout" else component_alpha(c, profiles) for c in components])
    has_remote_cost = bool(stream_source.size) and bool(
        remote_send[stream_source].any() or remote_receive[stream_target].any())
    mtypes = {t.name: t for t in cluster.machine_types}
    memory = np.array([c.memory_mb or 0.0 for c in components])
    worker_memory = float(topology.worker_memory_mb or 0.0)
    type_memory = {name: np.inf if t.memory_mb is None else float(t.memory_mb) for name, t in mtypes.items()}
    memory_limit = np.array([type_memory[m.type] for m in cluster.machines])
    return Problem(
        topology=topology,
        cluster=cluster,
        profiles=profiles,
        options=options,
        component_ids=order,
        components=components,
        component_index=MappingProxyType({c: i for i, c in enumerate(order)}),
        machine_ids=tuple(m.id for m in cluster.machines),
        machine_index=MappingProxyType({m.id: i for i, m in enumerate(cluster.machines)}),
        type_names=type_names,
        machine_type=_read_only(np.array([type_index[m.type] for m in cluster.machines], dtype=np.int64)),
        limit=_read_only(np.array([mtypes[m.type].capacity * u_max for m in cluster.machines])),
        thread_limit=_read_only(np.array(
            [np.inf if t.thread_cap is None else t.thread_cap * u_max for t in cluster.machine_types]
        )),
        cost=_read_only(cost),
        met=_read_only(met),
        is_spout=_read_only(np.array([c.kind == "spout" for c in components])),
        is_sink=_read_only(np.array([c.id not in sources for c in components])),
        fixed=_read_only(np.array([c.parallelism or 0 for c in components], dtype=np.int64)),
        has_all_grouping=any(s.grouping == "all" for s in topology.streams),
        memory=_read_only(memory),
        worker_memory=worker_memory,
        memory_limit=_read_only(memory_limit),
        memory_bound=bool(np.isfinite(memory_limit).any() and (worker_memory > 0 or (memory > 0).any())),
        one_each_shares=compute_shares(topology, profiles, order, None),
        remote_send=_read_only(remote_send),
        remote_receive=_read_only(remote_receive),
        output_per_input=_read_only(output_per_input),
        stream_source=_read_only(stream_source),
        stream_target=_read_only(stream_target),
        stream_kind=_read_only(np.array([stream_kind(s.grouping) for s in topology.streams], dtype=np.int64)),
        has_remote_cost=has_remote_cost,
    )


def machine_strength(problem: Problem) -> np.ndarray:
    """(M,) the input rate R, tuples/s, each machine would carry with the whole topology on it alone, one instance
    of each component: its limit (the free share a tenant is planned on) less the instances' MET, over what one tuple/s
    of R costs on its type. Ranks the machines a worker budget keeps; thread caps and memory are left to the plan."""
    shares = problem.one_each_shares.total(np.ones(problem.n_components))
    per_rate = shares @ problem.cost  # (T,) percent per tuple/s of R
    fixed = problem.met.sum(axis=0)  # (T,) percent at any rate
    t = problem.machine_type
    room = np.maximum(0.0, problem.limit - fixed[t])
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(per_rate[t] > 0, room / per_rate[t], np.where(room > 0, np.inf, 0.0))


def budget_machines(problem: Problem, budget: int, first: Collection[str] = ()) -> tuple[str, ...]:
    """The ``budget`` machines a topology's workers may use: those in ``first`` (where its instances run already),
    then the strongest for it (``machine_strength``), ties in cluster order; in cluster order."""
    strength = machine_strength(problem)
    ranked = sorted(range(problem.n_machines),
                    key=lambda w: (problem.machine_ids[w] not in first, -strength[w], w))
    kept = sorted(ranked[:max(budget, sum(1 for m in problem.machine_ids if m in first))])
    return tuple(problem.machine_ids[w] for w in kept)


def within_worker_budget(problem: Problem, first: Collection[str] = ()) -> tuple[Problem, dict | None]:
    """The problem on only the machines the topology's worker budget (``topology.max_workers``) keeps, so every
    strategy, the simulator and the ledger see those alone, and what ``stats.max_workers`` says of it; the problem
    itself and None without a budget. ``first`` are machines kept whatever their strength (a repair's survivors)."""
    budget = problem.topology.max_workers
    if budget is None:
        return problem, None
    if budget >= problem.n_machines:
        return problem, {"budget": budget, "restricted": False}
    kept = budget_machines(problem, budget, first)
    kept_set = set(kept)
    machines = [m for m in problem.cluster.machines if m.id in kept_set]
    used_types = {m.type for m in machines}
    cluster = Cluster(machine_types=[t for t in problem.cluster.machine_types if t.name in used_types],
                      machines=machines)
    restricted = compile_problem(problem.topology, cluster, problem.profiles, problem.options)
    return restricted, {"budget": budget, "restricted": True, "machines": list(kept),
                        "of_machines": problem.n_machines}
