"""What an operator checks on a running cluster: each supervisor's declared machine, and where a topology's executors run. Pure.

Nimbus's Thrift ``SupervisorSummary`` carries host, slots and ``total_resources`` (from
``supervisor.cpu.capacity`` and ``supervisor.memory.capacity.mb``) but not
``supervisor.scheduler.meta``, which the plugin reads inside Nimbus. So the machine each supervisor
declares is read from its storm.yaml where that file is at hand (``--storm-yaml``, or the local
cluster's own files), and matched to the supervisor by ``storm.local.hostname``.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from observe.nimbus import ClusterSummary

if TYPE_CHECKING:
    from planner.model import Cluster

META_KEY = "supervisor.scheduler.meta"
HOSTNAME_KEY = "storm.local.hostname"
CORES_KEY = "cores"
"""The plugin's scheduler-meta key for a machine's cores (Machine.CORES_KEY)."""


@dataclass(frozen=True)
class MetaKeys:
    """How Nimbus's plugin reads scheduler meta (``hetsched.machine.*`` of Nimbus's storm.yaml)."""

    machine_type: str = "machine-type"
    machine_id: str = "machine-id"
    default_type: str = "default"

    @classmethod
    def from_nimbus_conf(cls, conf: dict[str, Any]) -> "MetaKeys":
        def text(key: str, default: str) -> str:
            value = conf.get(key)
            return value.strip() if isinstance(value, str) and value.strip() else default

        return cls(text("hetsched.machine.type.key", cls.machine_type), text("hetsched.machine.id.key", cls.machine_id),
                   text("hetsched.machine.type.default", cls.default_type))


@dataclass(frozen=True)
class Declaration:
    """What one supervisor's storm.yaml declares."""

    host: str
    meta: Any
    """``supervisor.scheduler.meta`` as written (None where the file has none)."""
    source: str
    """The file it was read from."""


@dataclass(frozen=True)
class SupervisorRow:
    host: str
    supervisor_id: str
    machine_id: str | None
    machine_type: str | None
    cores: float | None
    """Declared in scheduler meta: what the plugin tells the planner."""
    cpu_capacity_cores: float | None
    """``supervisor.cpu.capacity`` / 100, as Nimbus reports it: only Storm's ResourceAwareScheduler reads it."""
    slots: int
    used_slots: int
    meta_source: str | None
    faults: list[str] = field(default_factory=list)
    blacklisted: bool = False
    """Storm's BlacklistScheduler keeps it out of scheduling: no plan should name it (the plugin cannot use it)."""

    @property
    def schedulable(self) -> bool:
        """It declares its machine (id and type) and Storm offers it to the scheduler (not blacklisted): plans may
        name it."""
        return bool(self.machine_id and self.machine_type) and not self.blacklisted

    @property
    def free_slots(self) -> int:
        return self.slots - self.used_slots

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "free_slots": self.free_slots}


def declared_cluster(rows: Iterable[SupervisorRow], base_load: Mapping[str, float] | None = None) -> Cluster:
    """The planner's cluster of the supervisors that declare their machine (id and type) and are not blacklisted, as the
    plugin describes it:
    each type's capacity the whole machine less its base load (percent), its declared cores and its most slots.

    Raises ValueError (pydantic's) where no supervisor declares its machine.
    """
    from planner.model import Cluster, Machine, MachineType

    base_load = base_load or {}
    types: dict[str, MachineType] = {}
    machines: list[Machine] = []
    for r in rows:
        if not r.schedulable:
            continue
        assert r.machine_id is not None and r.machine_type is not None  # schedulable
        known = types.get(r.machine_type)
        types[r.machine_type] = MachineType(
            name=r.machine_type, capacity=100.0 - float(base_load.get(r.machine_type, 0.0)),
            cores=r.cores if known is None else known.cores, slots=max(r.slots, known.slots if known else 1))
        machines.append(Machine(id=r.machine_id, type=r.machine_type))
    return Cluster(machine_types=list(types.values()), machines=machines)


def declaration_of(conf: Any, source: str) -> Declaration:
    """A supervisor's storm.yaml (parsed) as its declaration; a file that is not a supervisor's says so."""
    if not isinstance(conf, dict):
        raise ValueError(f"{source} is not a storm.yaml (not a YAML mapping)")
    host = conf.get(HOSTNAME_KEY)
    if not isinstance(host, str) or not host.strip():
        raise ValueError(f"{source} has no {HOSTNAME_KEY}, so it cannot be matched to a supervisor Nimbus lists")
    return Declaration(host.strip(), conf.get(META_KEY), source)


def meta_faults(meta: Any, keys: MetaKeys) -> list[str]:
    """What is wrong with one supervisor's scheduler meta, for the plugin or for Storm, as short phrases."""
    if meta is None:
        return [f"no {META_KEY}: planned as machine type {keys.default_type!r}, named by its supervisor id"]
    if not isinstance(meta, dict):
        return [f"{META_KEY} is not a map"]
    faults = []
    not_strings = sorted(str(k) for k, v in meta.items() if not isinstance(v, str))
    if not_strings:
        faults.append(f"values of {', '.join(not_strings)} are not strings, so Storm 2.8 refuses to start the supervisor "
                      "(quote them)")
    if not _text(meta.get(keys.machine_type)):
        faults.append(f"no {keys.machine_type}: planned as machine type {keys.default_type!r}")
    if not _text(meta.get(keys.machine_id)):
        faults.append(f"no {keys.machine_id}: plans name it by its supervisor id, so plans made beforehand do not fit")
    if CORES_KEY in meta and _positive(meta[CORES_KEY]) is None:
        faults.append(f"{CORES_KEY} {meta[CORES_KEY]!r} is not a positive number: the planner gets no per-thread cap")
    return faults


def supervisor_rows(summary: ClusterSummary, declarations: list[Declaration], keys: MetaKeys) -> list[SupervisorRow]:
    """Each supervisor Nimbus lists, with its declared machine and what is wrong with the declaration."""
    by_host = {d.host: d for d in declarations}
    declared_ids: dict[str, list[str]] = {}
    for s in summary.supervisors:
        d = by_host.get(s.host)
        if d is not None and isinstance(d.meta, dict) and _text(d.meta.get(keys.machine_id)):
            declared_ids.setdefault(_text(d.meta.get(keys.machine_id)), []).append(s.host)
    rows = []
    for s in sorted(summary.supervisors, key=lambda s: s.host):
        capacity = s.cpu_capacity / 100.0 if s.cpu_capacity else None
        d = by_host.get(s.host)
        if d is None:
            rows.append(SupervisorRow(s.host, s.supervisor_id, None, None, None, capacity, s.slots, s.used_slots, None,
                                      [f"its {META_KEY} is unknown: Nimbus does not report it; give its storm.yaml "
                                       "with --storm-yaml", *blacklist_faults(s.blacklisted)], s.blacklisted))
            continue
        meta = d.meta if isinstance(d.meta, dict) else {}
        machine_id = _text(meta.get(keys.machine_id))
        cores = _positive(meta.get(CORES_KEY))
        faults = meta_faults(d.meta, keys)
        if machine_id and len(declared_ids.get(machine_id, [])) > 1:
            others = [h for h in declared_ids[machine_id] if h != s.host]
            faults.append(f"{keys.machine_id} {machine_id!r} is also declared by {', '.join(others)}: plans name "
                          "these supervisors by their supervisor ids")
        if cores is not None and capacity is not None and not math.isclose(cores, capacity, rel_tol=0.01):
            faults.append(f"{CORES_KEY} {cores:g} but supervisor.cpu.capacity {capacity * 100:g} ({capacity:g} cores); "
                          "the plugin uses cores, only the ResourceAwareScheduler reads the capacity")
        rows.append(SupervisorRow(s.host, s.supervisor_id, machine_id, _text(meta.get(keys.machine_type)) or None,
                                  cores, capacity, s.slots, s.used_slots, d.source,
                                  faults + blacklist_faults(s.blacklisted), s.blacklisted))
    return rows


def blacklist_faults(blacklisted: bool) -> list[str]:
    return (["blacklisted by Storm's BlacklistScheduler (it missed heartbeats): no scheduler is offered its slots until "
             "blacklist.scheduler.resume.time.secs has passed (1800 s by default)"] if blacklisted else [])


def declarations_without_supervisor(summary: ClusterSummary, declarations: list[Declaration]) -> list[Declaration]:
    """Files given for hosts Nimbus lists no supervisor of (not running, or a different storm.local.hostname)."""
    hosts = {s.host for s in summary.supervisors}
    return [d for d in declarations if d.host not in hosts]


# --- where a topology's executors run ---------------------------------------------------------------------


@dataclass(frozen=True)
class ExecutorPlace:
    component: str
    task_start: int
    task_end: int
    host: str
    """Empty while not placed."""
    port: int
    machine: str | None
    """The declared machine id of the host's supervisor, where known."""
    uptime_s: int


@dataclass(frozen=True)
class MachineLoad:
    """One machine's share of a topology: its executors, and its CPU predicted and measured, in percent of the machine."""

    machine: str
    host: str
    machine_type: str | None
    executors: int
    workers: list[int]
    predicted_percent: float | None = None
    """The planner's prediction at R, the largest input rate the placement sustains."""
    measured_percent: float | None = None
    """What the whole machine used over the measurement, where the cluster can say (the local cluster)."""


def executor_places(info: Any, machine_of_host: dict[str, str]) -> list[ExecutorPlace]:
    """Every executor of a Thrift ``TopologyInfo`` (Storm's own ``__acker`` too) with its worker and machine."""
    places = [
        ExecutorPlace(e.component_id, e.executor_info.task_start, e.executor_info.task_end, e.host or "", e.port or 0,
                      machine_of_host.get(e.host or ""), e.uptime_secs or 0)
        for e in info.executors or []
    ]
    return sorted(places, key=lambda p: (p.component, p.task_start))


def machine_loads(places: list[ExecutorPlace], types: dict[str, str]) -> list[MachineLoad]:
    """Per machine (declared id, else host): its executors and worker ports. ``types``: machine id -> type."""
    found: dict[str, tuple[str, int, set[int]]] = {}
    for p in places:
        if not p.host:
            continue
        name = p.machine or p.host
        host, n, ports = found.get(name, (p.host, 0, set()))
        found[name] = (host, n + 1, ports | {p.port})
    return [MachineLoad(name, host, types.get(name), n, sorted(ports)) for name, (host, n, ports) in sorted(found.items())]


def user_parallelism(places: list[ExecutorPlace]) -> dict[str, int]:
    """Executors per user component (Storm's ``__`` components left out)."""
    counts: dict[str, int] = {}
    for p in places:
        if not p.component.startswith("__"):
            counts[p.component] = counts.get(p.component, 0) + 1
    return counts


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _positive(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number > 0 else None
