"""Which component runs on which machine in each round of a profiling experiment. Pure.

A *pair* is a kind of work (profile key) on a machine type. Pairs are measured in parallel where
they do not share a machine: with n machine types, the kinds under test take n slots, and in
round r the kinds of slot i run on the test machine of type ``(i + r) mod n``. So n rounds give
every kind every type (a cyclic Latin square). Kinds beyond n share a slot with a kind they
exchange no stream with, where one exists (the micro-benchmark's spout shares with ``mid``):
a component's upstream then stays on another machine, and its tuples cross the network as
they would in a real placement. Components of kinds not under test (helpers) go to the machines
no slot uses in that round, where there are any. The round's one acker (Storm's ``__acker``
executor) runs beside the spout: acking is work done per spout tuple.

Spouts are measured in rounds of their own, after the bolts' rounds (where they are helpers):
a spout's own cost per tuple is small next to the idle cost of the worker around it, and in the
bolts' rounds the busiest bolt caps the rate far below where that cost shows. In a spout round
the bolts do no work of their own (``hetsched.cpu.ms.* = 0``), so the rate can go much higher.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from planner.model import Topology
from planner.profiles import ProfileTable
from planner.rates import topological_order, unit_rates
from spark_profiling.errors import ProfilingError

ACKER = "__acker"
HELPER_OVERHEAD_MS = 1.0
"""Guess of a component's multi-lang and worker cost per tuple on top of its own work, CPU ms."""


@dataclass(frozen=True)
class ClusterMachine:
    """A machine of the cluster as the experiment sees it."""

    id: str
    type: str
    cores: float
    """The machine's CPU quota in cores: what 100 % of the machine is."""


@dataclass(frozen=True)
class Round:
    index: int
    """1, 2, ...: the round's number."""
    placement: dict[str, str]
    """Every component of the topology -> the machine id it runs on (one instance each)."""
    measured: dict[str, str]
    """Components whose records are kept (kind and type under test) -> machine id."""
    system: dict[str, str] = field(default_factory=dict)
    """Storm's system components of one executor each (``__acker``) -> machine id."""
    idle_helpers: bool = False
    """The helpers (components not measured) do no work of their own, only pass tuples on."""

    def components_on(self, machine_id: str) -> list[str]:
        return [c for c, m in self.placement.items() if m == machine_id]

    def machines(self) -> list[str]:
        """Machines this round uses, in first-use order."""
        return list(dict.fromkeys(self.placement.values()))


@dataclass(frozen=True)
class Design:
    topology: str
    """The catalog name of the topology (linear, diamond, ...)."""
    kinds: dict[str, list[str]]
    """Profile key -> its components, for the kinds under test."""
    profiles: dict[str, str]
    """Every component -> its profile key."""
    machines: dict[str, ClusterMachine]
    rounds: list[Round]
    unit_rates: dict[str, float] = field(default_factory=dict)
    """Input rate of each component per tuple/s of spout rate (alpha 1 assumed)."""

    def pairs(self) -> list[tuple[str, str]]:
        """Every (kind, machine type) measured by some round, in round order."""
        seen: dict[tuple[str, str], None] = {}
        for r in self.rounds:
            for component, machine in r.measured.items():
                seen[(self.profiles[component], self.machines[machine].type)] = None
        return list(seen)


def kinds_in_order(graph: Topology) -> dict[str, list[str]]:
    """Profile key -> components; bolt kinds first in topological order, then spout kinds."""
    order = topological_order(graph)
    by_id = {c.id: c for c in graph.components}
    kinds: dict[str, list[str]] = {}
    for spouts_last in (False, True):
        for cid in order:
            component = by_id[cid]
            if (component.kind == "spout") == spouts_last:
                kinds.setdefault(component.profile or cid, []).append(cid)
    return kinds


def design(
    graph: Topology,
    machines: list[ClusterMachine],
    kinds: list[str] | None = None,
    types: list[str] | None = None,
    cpu_ms: dict[str, float] | None = None,
    separate_spouts: bool = True,
) -> Design:
    """The rounds that measure every kind in ``kinds`` on every type in ``types`` (default: all of both).

    ``cpu_ms`` (profile key -> CPU ms per tuple) only guides where helpers go. With
    ``separate_spouts`` the spout kinds get rounds of their own after the bolts'.
    """
    all_kinds = kinds_in_order(graph)
    profiles = {cid: kind for kind, cids in all_kinds.items() for cid in cids}
    chosen_kinds = _chosen(kinds, list(all_kinds), "kind", f"topology {graph.name} has")
    if not machines:
        raise ProfilingError("the cluster has no machines to profile on.")
    by_type: dict[str, list[ClusterMachine]] = {}
    for m in sorted(machines, key=lambda m: m.id):
        by_type.setdefault(m.type, []).append(m)
    type_order = sorted(by_type, key=lambda t: (by_type[t][0].cores, t))
    chosen_types = _chosen(types, type_order, "machine type", "the cluster has")
    chosen_types = [t for t in type_order if t in chosen_types]
    test_machines = [by_type[t][0] for t in chosen_types]
    rates = unit_rates(graph, ProfileTable({}))
    spout_kinds = {profiles[c.id] for c in graph.components if c.kind == "spout"}
    groups = [[k for k in chosen_kinds if k not in spout_kinds], [k for k in chosen_kinds if k in spout_kinds]]
    if not separate_spouts:
        groups = [chosen_kinds, []]
    rounds: list[Round] = []
    for group, idle_helpers in zip(groups, (False, True)):
        if not group:
            continue
        # In the bolts' rounds the spouts keep a slot (beside a kind they exchange no stream with), unmeasured.
        slotted = group + (groups[1] if not idle_helpers else [])
        slots = _slots(graph, {k: all_kinds[k] for k in slotted}, len(test_machines))
        cost = {cid: (0.0 if idle_helpers and profiles[cid] not in group else (cpu_ms or {}).get(profiles[cid], 0.0))
                + HELPER_OVERHEAD_MS for cid in profiles}
        for r in range(len(test_machines)):
            placement: dict[str, str] = {}
            for i, slot in enumerate(slots):
                machine = test_machines[(i + r) % len(test_machines)]
                for kind in slot:
                    for cid in all_kinds[kind]:
                        placement[cid] = machine.id
            measured = {c: m for c, m in placement.items() if profiles[c] in group}
            helpers = [cid for cid in topological_order(graph) if cid not in placement]
            _place_helpers(graph, helpers, placement, machines, rates, cost)
            first_spout = next(c.id for c in graph.components if c.kind == "spout")
            rounds.append(Round(index=len(rounds) + 1, placement=placement, measured=measured,
                                system={ACKER: placement[first_spout]}, idle_helpers=idle_helpers))
    return Design(
        topology=graph.name,
        kinds={k: all_kinds[k] for k in chosen_kinds},
        profiles=profiles,
        machines={m.id: m for m in machines},
        rounds=rounds,
        unit_rates=rates,
    )


def _chosen(asked: list[str] | None, known: list[str], what: str, owner: str) -> list[str]:
    if not asked:
        return list(known)
    unknown = [a for a in asked if a not in known]
    if unknown:
        raise ProfilingError(
            f"{owner} no {what} {', '.join(repr(u) for u in unknown)}; choose from {', '.join(known)}."
        )
    return list(dict.fromkeys(asked))


def _slots(graph: Topology, kinds: dict[str, list[str]], n: int) -> list[list[str]]:
    """Kinds grouped into at most ``n`` slots; extra kinds join a slot they exchange no stream with."""
    names = list(kinds)
    slots = [[k] for k in names[:n]]
    neighbours: dict[str, set[str]] = {k: set() for k in names}
    kind_of = {cid: k for k, cids in kinds.items() for cid in cids}
    for s in graph.streams:
        a, b = kind_of.get(s.source), kind_of.get(s.target)
        if a and b and a != b:
            neighbours[a].add(b)
            neighbours[b].add(a)
    for extra in names[n:]:
        best = min(
            range(len(slots)),
            key=lambda i: (sum(k in neighbours[extra] for k in slots[i]), len(slots[i]), i),
        )
        slots[best].append(extra)
    return slots


def _place_helpers(
    graph: Topology,
    helpers: list[str],
    placement: dict[str, str],
    machines: list[ClusterMachine],
    rates: dict[str, float],
    cost_ms: dict[str, float],
) -> None:
    """Each helper on the machine left least loaded, relative to its cores; spare machines first, then
    machines that run none of its neighbours (so a measured component's upstream stays remote)."""
    neighbours: dict[str, set[str]] = {c.id: set() for c in graph.components}
    for st in graph.streams:
        neighbours[st.source].add(st.target)
        neighbours[st.target].add(st.source)
    load = {m.id: 0.0 for m in machines}
    for cid, mid in placement.items():
        load[mid] += rates[cid] * cost_ms[cid]
    used = set(placement.values())
    cores = {m.id: m.cores for m in machines}
    for cid in helpers:
        spare = [m.id for m in machines if m.id not in used] or [m.id for m in machines]
        target = min(spare, key=lambda mid: (
            any(placement.get(n) == mid for n in neighbours[cid]),
            (load[mid] + rates[cid] * cost_ms[cid]) / cores[mid], mid))
        placement[cid] = target
        load[target] += rates[cid] * cost_ms[cid]
