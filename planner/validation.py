"""Faults that need the whole request to see (single values are checked by planner.model).

``validate`` raises PlanningError with one plain sentence naming the first
fault found, in the order a person would fix them: ids, streams, graph shape,
profiles, cluster, then whether the cluster can host the topology at all.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable

from planner.errors import MissingProfile, PlanningError, ProfilesMissing
from planner.model import Cluster, PlanOptions, ProfileEntry, Topology
from planner.problem import Problem, within_worker_budget
from planner.profiles import ProfileTable
from planner.rates import find_cycle, unit_rates
from planner.simulator import entry_cpu_pct, fits_within


def first_duplicate(values: Iterable[str]) -> str | None:
    """The first value seen twice (ids, names), for a refusal that names it."""
    seen: set[str] = set()
    for v in values:
        if v in seen:
            return v
        seen.add(v)
    return None


def validate_topology(topology: Topology) -> None:
    """The topology alone: ids, streams, a DAG with a spout."""
    dup = first_duplicate([c.id for c in topology.components])
    if dup is not None:
        raise PlanningError(f"the topology declares component {dup} twice")
    kinds = {c.id: c.kind for c in topology.components}
    for s in topology.streams:
        if s.source not in kinds:
            raise PlanningError(f"a stream comes from unknown component {s.source} (to {s.target})")
        if s.target not in kinds:
            raise PlanningError(f"a stream goes to unknown component {s.target} (from {s.source})")
        if kinds[s.target] == "spout":
            raise PlanningError(f"the stream {s.source} -> {s.target} goes into a spout; spouts take no input")
    pairs = Counter((s.source, s.target) for s in topology.streams)
    for (source, target), n in pairs.items():
        if n > 1:
            raise PlanningError(f"the stream {source} -> {target} is declared {n} times")
    if "spout" not in kinds.values():
        raise PlanningError("the topology has no spout")
    for c in topology.components:
        if c.kind == "bolt" and c.weight is not None:
            raise PlanningError(f"component {c.id} is a bolt but declares a weight; only spouts take a share of the input rate")
    cycle = find_cycle(topology)
    if cycle is not None:
        raise PlanningError("the topology has a cycle: " + " -> ".join(cycle))
    for c in topology.components:
        if c.profile is None and not c.is_system:
            raise PlanningError(f"component {c.id} has no profile key")


def validate_cluster(cluster: Cluster, options: PlanOptions) -> None:
    dup = first_duplicate([t.name for t in cluster.machine_types])
    if dup is not None:
        raise PlanningError(f"the cluster declares machine type {dup} twice")
    dup = first_duplicate([m.id for m in cluster.machines])
    if dup is not None:
        raise PlanningError(f"the cluster declares machine {dup} twice")
    types = {t.name for t in cluster.machine_types}
    for m in cluster.machines:
        if m.type not in types:
            raise PlanningError(f"machine {m.id} is of unknown machine type {m.type}")
    ref = options.reference_machine_type
    if ref is not None and ref not in types:
        raise PlanningError(f"the reference machine type {ref} is not a machine type of the cluster")


def used_machine_types(cluster: Cluster) -> list[str]:
    """Machine types that at least one machine has, in declaration order."""
    used = {m.type for m in cluster.machines}
    return [t.name for t in cluster.machine_types if t.name in used]


def missing_profiles(topology: Topology, cluster: Cluster, profiles: ProfileTable) -> list[MissingProfile]:
    """Every (profile key, machine type) pair a non-system component needs on a machine type a machine has, and
    the profiles lack; each pair once, named by the first component that needs it."""
    missing: dict[tuple[str, str], MissingProfile] = {}
    types = used_machine_types(cluster)
    for c in topology.components:
        if c.is_system or c.profile is None:
            continue
        for t in types:
            if profiles.get(c.profile, t) is None and (c.profile, t) not in missing:
                missing[(c.profile, t)] = MissingProfile(c.id, c.profile, t)
    return list(missing.values())


def validate_profiles(topology: Topology, cluster: Cluster, profiles: ProfileTable) -> None:
    """Every non-system component needs a profile on every machine type a machine has (ProfilesMissing names all)."""
    for c in topology.components:
        if not c.is_system and c.profile is None:
            raise PlanningError(f"component {c.id} has no profile key")
    missing = missing_profiles(topology, cluster, profiles)
    if missing:
        raise ProfilesMissing(missing)


def check_profiles(topology: Topology, cluster: Cluster, entries: list[ProfileEntry]) -> None:
    """The profile check alone, on the request's own cluster, before any planning.

    A tenant is planned on clusters derived from the request's (one machine type per machine,
    ``small@small-1``), where a missing pair would read as a cluster without room and be answered as
    an admission refusal; checked here first, it is answered as what it is.
    """
    validate_profiles(topology, cluster, ProfileTable.from_entries(entries))


def validate_capacity(topology: Topology, cluster: Cluster, profiles: ProfileTable, options: PlanOptions) -> None:
    """Can the cluster host one instance of every component at the initial rate R0?

    Necessary conditions only (each instance fits some machine on its own, and
    the least total, counting fixed parallelism, fits the cluster's total); the strategies say so too when
    their packing fails. Slots never limit: one worker per machine can host
    any number of executors of one topology.
    """
    types = {t.name: t for t in cluster.machine_types}
    used = used_machine_types(cluster)
    machines_per_type = Counter(m.type for m in cluster.machines)
    rates = unit_rates(topology, profiles)
    u_max = options.max_utilization
    least_total = 0.0
    for c in topology.components:
        count = c.parallelism or 1
        least = None
        for t in used:
            entry = profiles.get(c.profile, t) if c.profile is not None else None
            cpu = 0.0 if entry is None else entry_cpu_pct(entry, rates[c.id] / count * options.initial_rate)
            mtype = types[t]
            limit = mtype.capacity * u_max
            if mtype.thread_cap is not None:
                limit = min(limit, mtype.thread_cap * u_max)
            if fits_within(cpu, limit) and (least is None or cpu < least):
                least = cpu
        if least is None:
            raise PlanningError(
                f"the cluster cannot host one instance of component {c.id}: at the initial rate "
                f"{options.initial_rate:g} tuples/s it needs more CPU than any machine (or one thread) offers"
            )
        least_total += least * count
    capacity = sum(types[t].capacity * u_max * n for t, n in machines_per_type.items())
    if not fits_within(least_total, capacity):
        raise PlanningError(
            f"the cluster cannot host one instance of every component: they need at least {least_total:.1f}% CPU "
            f"at the initial rate and the machines offer {capacity:.1f}%"
        )


def validate_memory(topology: Topology, cluster: Cluster) -> None:
    """Can the machines' memory host one instance of every component (all of a fixed one) and their workers?

    Necessary conditions only: each instance with a worker fits some machine, and all the least instances
    with one worker fit the memory of the machines that can hold a worker at all.
    """
    types = {t.name: t for t in cluster.machine_types}
    declared = [types[m.type].memory_mb for m in cluster.machines]
    if all(limit is None for limit in declared):
        return
    limits = [float("inf") if limit is None else limit for limit in declared]
    worker = topology.worker_memory_mb or 0.0
    largest = max(limits)
    need = worker
    for c in topology.components:
        one = c.memory_mb or 0.0
        if one + worker > largest + 1e-6:
            raise PlanningError(
                f"the cluster cannot host one instance of component {c.id}: it needs {one:g} MB of memory "
                f"with its worker's {worker:g} MB and the largest machine holds {largest:g} MB"
            )
        need += one * (c.parallelism or 1)
    if any(limit is None for limit in declared):
        return
    offered = sum(limit - worker for limit in limits if limit >= worker)
    if need - worker > offered + 1e-6:
        raise PlanningError(
            f"the cluster cannot host one instance of every component: they need {need - worker:g} MB of memory "
            f"besides {worker:g} MB per worker and the machines hold {offered:g} MB besides their workers'"
        )


def validate(topology: Topology, cluster: Cluster, profiles: ProfileTable, options: PlanOptions) -> None:
    """Raise PlanningError naming the first fault of the request, or return None if it can be planned."""
    validate_topology(topology)
    validate_cluster(cluster, options)
    validate_profiles(topology, cluster, profiles)
    validate_capacity(topology, cluster, profiles, options)
    validate_memory(topology, cluster)


def budgeted(problem: Problem, first: Collection[str] = ()) -> tuple[Problem, dict | None]:
    """The problem on the machines the topology's worker budget keeps (``within_worker_budget``), checked that those
    can host it, so a budget too small is refused in one sentence that names it, before any strategy runs."""
    kept, budget = within_worker_budget(problem, first)
    if kept is not problem:
        try:
            validate_capacity(kept.topology, kept.cluster, kept.profiles, kept.options)
            validate_memory(kept.topology, kept.cluster)
        except PlanningError as exc:
            raise PlanningError(f"{exc} within the topology's worker budget, max_workers {kept.topology.max_workers} "
                                f"(the {kept.n_machines} machines with the most free capacity for it)") from None
    return kept, budget
