"""The cluster spec: which machine types, how many of each, and where the cluster lives.

A spec is a small YAML file (``cluster/specs/default.yaml`` is the default)::

    name: default
    port_base: 16700
    machine_types:
      - {name: small,  cpu_cores: 0.2, slots: 2, memory_mb: 1024, count: 1}
      - {name: medium, cpu_cores: 0.4, slots: 2, memory_mb: 2048, count: 1}
    storm_conf: {topology.stats.sample.rate: 1.0}

``cpu_cores`` is the machine's CPU quota in cores; it becomes the cgroup's
``cpu.cfs_quota_us`` and Storm's ``supervisor.cpu.capacity`` (cores * 100).
``memory_mb`` is Storm's ``supervisor.memory.capacity.mb`` (and the planner's
machine type memory); an optional ``memory_limit_mb`` holds the machine's
cgroup (supervisor and workers) to that much memory, so a worker placed past
it is really OOM-killed. ``nimbus_standby: true`` runs a second Nimbus that
takes over when the leader dies, as on a highly available Storm cluster.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cluster.errors import ClusterError
from planner.model import Cluster, Machine, MachineType

DEFAULT_SPEC = Path(__file__).resolve().parent / "specs" / "default.yaml"
MAX_SLOTS_PER_MACHINE = 10
MAX_MACHINES = 50

Identifier = Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[a-z][a-z0-9-]*$")]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MachineTypeSpec(_Spec):
    """One kind of machine: its CPU quota, worker slots and memory, and how many there are."""

    name: Identifier
    cpu_cores: float = Field(gt=0, le=256, allow_inf_nan=False, description="CPU quota in cores (0.2 = a fifth of one core).")
    slots: int = Field(default=2, ge=1, le=MAX_SLOTS_PER_MACHINE, description="Storm worker slots (ports).")
    memory_mb: int = Field(default=2048, ge=128, le=1_048_576, description="Memory Storm may schedule, in MB.")
    memory_limit_mb: int | None = Field(
        default=None, ge=256, le=1_048_576,
        description="Hard memory limit of the whole machine (its supervisor and workers), MB: the cgroup's "
        "memory.limit_in_bytes, so a worker past it is OOM-killed. Above memory_mb by what the supervisor itself "
        "takes. None: no limit (memory_mb is then only what Storm's schedulers count).",
    )
    count: int = Field(default=1, ge=0, le=MAX_MACHINES, description="How many machines of this type.")

    @property
    def cpu_capacity(self) -> float:
        """Storm's ``supervisor.cpu.capacity``: 100 per core."""
        return round(self.cpu_cores * 100, 6)

    @model_validator(mode="after")
    def _limit_above_capacity(self) -> "MachineTypeSpec":
        if self.memory_limit_mb is not None and self.memory_limit_mb <= self.memory_mb:
            raise ValueError(f"memory_limit_mb ({self.memory_limit_mb}) must be above memory_mb ({self.memory_mb}): "
                             "the machine's supervisor lives within the limit too")
        return self


class DaemonHeaps(_Spec):
    """JVM heaps of the daemons in MB: modest, the host's cores are shared."""

    zookeeper: int = Field(default=192, ge=64, le=65536)
    nimbus: int = Field(default=384, ge=64, le=65536)
    supervisor: int = Field(default=192, ge=64, le=65536)
    ui: int = Field(default=256, ge=64, le=65536)


class ClusterSpec(_Spec):
    name: Identifier = "default"
    home: Path | None = Field(default=None, description="State directory; default <repo>/var/clusters/<name>.")
    port_base: int = Field(default=16700, ge=1024, le=65000, description="First of the ports this cluster uses.")
    machine_types: list[MachineTypeSpec] = Field(min_length=1, max_length=20)
    daemon_heap_mb: DaemonHeaps = Field(default_factory=DaemonHeaps)
    storm_conf: dict[str, Any] = Field(default_factory=dict, description="Extra storm.yaml settings for every daemon.")
    cpu_weight: int | None = Field(
        default=None, ge=2, le=262_144,
        description="cpu.shares of the cluster's cgroup against the host's other processes (1024 = one busy process). "
        "Default 32768: the machines get their quotas even on a busy host. Lower it to let other work on the host "
        "go first (the machines then get less than their quotas when the host is busy).",
    )
    nimbus_standby: bool = Field(
        default=False, strict=True,
        description="Run a second, standby Nimbus on its own loopback address beside the leader, both in nimbus.seeds, so "
        "killing the leader makes the standby lead, as on a highly available Storm cluster. Local cluster only.",
    )

    @field_validator("storm_conf")
    @classmethod
    def _conf_keys_are_strings(cls, conf: dict[str, Any]) -> dict[str, Any]:
        for key in conf:
            if not isinstance(key, str) or not key:
                raise ValueError(f"storm_conf keys must be non-empty strings, not {key!r}")
        return conf

    @model_validator(mode="after")
    def _consistent(self) -> "ClusterSpec":
        names = [t.name for t in self.machine_types]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"machine type names must be unique; repeated: {', '.join(duplicates)}")
        total = sum(t.count for t in self.machine_types)
        if total == 0:
            raise ValueError("the cluster has no machine: every machine type has count 0")
        if total > MAX_MACHINES:
            raise ValueError(f"at most {MAX_MACHINES} machines are supported, the spec asks for {total}")
        return self

    def machine_type(self, name: str) -> MachineTypeSpec:
        for t in self.machine_types:
            if t.name == name:
                return t
        raise KeyError(name)

    @property
    def total_cpu_cores(self) -> float:
        return sum(t.cpu_cores * t.count for t in self.machine_types)

    def machine_ids(self) -> list[tuple[str, MachineTypeSpec]]:
        """Machine ids in a fixed order, ``<type>-<n>`` counting from 1 within each type."""
        return [(f"{t.name}-{n}", t) for t in self.machine_types for n in range(1, t.count + 1)]

    def planner_cluster(self, base_load: Mapping[str, float] | None = None) -> Cluster:
        """The same cluster in the planner's model: a machine's capacity is its whole quota (100)
        less its type's base load, percent (planner.profiles.machine_base_load), where one is given; its memory
        Storm's ``supervisor.memory.capacity.mb`` where the type has a ``memory_limit_mb`` (its machines really
        hold no more), else none (unlimited)."""
        base_load = base_load or {}
        return Cluster(
            machine_types=[
                MachineType(name=t.name, capacity=100.0 - base_load.get(t.name, 0.0), cores=t.cpu_cores, slots=t.slots,
                            memory_mb=t.memory_mb if t.memory_limit_mb is not None else None)
                for t in self.machine_types
            ],
            machines=[Machine(id=machine_id, type=t.name) for machine_id, t in self.machine_ids()],
        )


def parse_spec(data: Any, source: str = "the cluster spec") -> ClusterSpec:
    """Validate already-parsed YAML/JSON data; faults become one ClusterError sentence."""
    if not isinstance(data, dict):
        raise ClusterError(f"{source} must be a mapping with 'machine_types', not {type(data).__name__}.")
    try:
        return ClusterSpec.model_validate(data)
    except ValidationError as invalid:
        raise ClusterError(f"{source} is invalid: {_describe(invalid)}") from None


def load_spec(path: str | Path | None = None) -> ClusterSpec:
    """Read a spec file (default: ``cluster/specs/default.yaml``)."""
    path = Path(path) if path is not None else DEFAULT_SPEC
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ClusterError(f"The cluster spec {path} does not exist.") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as fault:
        raise ClusterError(f"The cluster spec {path} cannot be read: {fault}.") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as fault:
        raise ClusterError(f"The cluster spec {path} is not valid YAML: {_one_line(str(fault))}.") from None
    return parse_spec(data, source=f"The cluster spec {path}")


def parse_conf_overrides(pairs: list[str]) -> dict[str, Any]:
    """Turn ``--conf key=value`` pairs into storm.yaml settings; values are read as YAML scalars/lists."""
    conf: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ClusterError(f"--conf expects key=value, got {pair!r}.")
        try:
            conf[key] = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            raise ClusterError(f"--conf {key}: the value {raw!r} is not valid YAML.") from None
    return conf


def _describe(invalid: ValidationError) -> str:
    faults = []
    for error in invalid.errors()[:3]:
        where = ".".join(str(p) for p in error["loc"]) or "top level"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        faults.append(f"{where}: {message}")
    more = len(invalid.errors()) - len(faults)
    return "; ".join(faults) + (f" (and {more} more)" if more > 0 else "") + "."


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
