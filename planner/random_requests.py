"""Seeded random planning requests, for checking strategies against the exact optimum.

Each request is a random DAG of components (one or two spouts, bolts with one
to three parents), a few machine types of different capacity and speed, a
handful of machines, and random profiles in which a faster machine type costs
fewer CPU seconds per tuple. Figures are drawn so that a handful of instances
fill a machine: tuples/s stay in the tens to hundreds.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.model import (
    Cluster,
    Component,
    Machine,
    MachineType,
    PlanOptions,
    ProfileEntry,
    Stream,
    Topology,
)


@dataclass(frozen=True)
class RandomRequest:
    topology: Topology
    cluster: Cluster
    entries: list[ProfileEntry]
    options: PlanOptions


def random_request(
    seed: int,
    components: tuple[int, int] = (2, 6),
    machine_types: tuple[int, int] = (2, 4),
    machines: tuple[int, int] = (2, 8),
    cores: bool = True,
    groupings: tuple[str, ...] = ("shuffle", "shuffle", "shuffle", "fields", "global"),
    fixed_parallelism_share: float = 0.0,
) -> RandomRequest:
    """A random request; ranges are inclusive (least, most)."""
    rng = np.random.default_rng(seed)
    n_comp = int(rng.integers(components[0], components[1] + 1))
    n_spouts = 1 if n_comp < 4 or rng.random() < 0.7 else 2
    comps: list[Component] = []
    streams: list[Stream] = []
    for i in range(n_comp):
        kind = "spout" if i < n_spouts else "bolt"
        parallelism = None
        if kind == "bolt" and rng.random() < fixed_parallelism_share:
            parallelism = int(rng.integers(1, 4))
        comps.append(Component(id=f"c{i}", kind=kind, profile=f"p{i}", parallelism=parallelism))
        if kind == "bolt":
            n_parents = int(rng.integers(1, min(3, i) + 1))
            for parent in sorted(rng.choice(i, size=n_parents, replace=False)):
                streams.append(Stream(source=f"c{parent}", target=f"c{i}", grouping=str(rng.choice(groupings))))
    topology = Topology(name=f"random-{seed}", components=comps, streams=streams)

    n_types = int(rng.integers(machine_types[0], machine_types[1] + 1))
    type_list: list[MachineType] = []
    speed = rng.uniform(0.5, 3.0, size=n_types)
    for t in range(n_types):
        n_cores = int(rng.choice([1, 2, 4])) if cores else None
        type_list.append(
            MachineType(name=f"t{t}", capacity=float(rng.choice([50.0, 100.0, 100.0, 200.0])), cores=n_cores, slots=4)
        )
    n_machines = int(rng.integers(max(machines[0], 1), machines[1] + 1))
    machine_list = [Machine(id=f"m{w}", type=f"t{int(rng.integers(n_types))}") for w in range(n_machines)]
    cluster = Cluster(machine_types=type_list, machines=machine_list)

    entries: list[ProfileEntry] = []
    for i in range(n_comp):
        work = rng.uniform(0.5e-3, 5e-3)
        alpha = float(rng.choice([0.5, 1.0, 1.0, 2.0]))
        for t in range(n_types):
            e = work / speed[t] * rng.uniform(0.8, 1.25)
            met = float(rng.uniform(0.5, 8.0))
            entries.append(ProfileEntry(profile=f"p{i}", machine_type=f"t{t}", e=e, met=met, alpha=alpha))
    return RandomRequest(topology=topology, cluster=cluster, entries=entries, options=PlanOptions())


def tree_request(components: int, machines: int, machine_types: int = 3, seed: int = 11) -> RandomRequest:
    """A tree of ``components`` (every bolt fed by one earlier component, alpha 1, so every input is R) on
    ``machines`` of ``machine_types`` types, with random profiles: large requests for time and memory limits."""
    rng = np.random.default_rng(seed)
    comps = [Component(id="c0", kind="spout", profile="p0")]
    streams = []
    for i in range(1, components):
        comps.append(Component(id=f"c{i}", kind="bolt", profile=f"p{i}"))
        streams.append(Stream(source=f"c{int(rng.integers(i))}", target=f"c{i}"))
    types = [MachineType(name=f"t{t}", capacity=100.0, cores=2) for t in range(machine_types)]
    cluster = Cluster(machine_types=types,
                      machines=[Machine(id=f"m{w}", type=f"t{w % machine_types}") for w in range(machines)])
    entries = [ProfileEntry(profile=f"p{i}", machine_type=f"t{t}", e=float(rng.uniform(0.5e-3, 5e-3)) / (t + 1),
                            met=float(rng.uniform(0.5, 8.0))) for i in range(components) for t in range(machine_types)]
    return RandomRequest(Topology(name="tree", components=comps, streams=streams), cluster, entries, PlanOptions())


def with_memory(request: RandomRequest, seed: int, tight: float = 1.0) -> RandomRequest:
    """The request with random memory: per instance 100-400 MB, a 150-400 MB worker, machines of 500-1500 MB * ``tight``.

    Drawn so that memory binds on some requests (a machine holds two to ten instances), to check every strategy
    and the exact solver against brute force with memory as a hard limit.
    """
    rng = np.random.default_rng(seed + 7_000_000)
    comps = [c.model_copy(update={"memory_mb": float(rng.integers(100, 401))}) for c in request.topology.components]
    topology = request.topology.model_copy(
        update={"components": comps, "worker_memory_mb": float(rng.integers(150, 401))}
    )
    types = [t.model_copy(update={"memory_mb": float(rng.integers(500, 1501)) * tight})
             for t in request.cluster.machine_types]
    cluster = request.cluster.model_copy(update={"machine_types": types})
    return RandomRequest(topology, cluster, request.entries, request.options)


def with_remote_cost(request: RandomRequest, seed: int, share: tuple[float, float] = (0.1, 0.6)) -> RandomRequest:
    """The request with a random CPU cost for tuples crossing workers: each entry's ``remote_send`` and
    ``remote_receive`` a fraction ``share`` of its own ``e``, so that co-location and balance trade off."""
    rng = np.random.default_rng(seed + 9_000_000)
    entries = [e.model_copy(update={"remote_send": e.e * float(rng.uniform(*share)),
                                    "remote_receive": e.e * float(rng.uniform(*share))}) for e in request.entries]
    return RandomRequest(request.topology, request.cluster, entries, request.options)
