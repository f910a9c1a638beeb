"""What any Storm cluster must tell an observer about its machines: :class:`ClusterHandle`.

The bench and the profiling collector read CPU and processes only through this protocol, so they
run on any cluster that implements it. ``cluster.handle.LocalClusterHandle`` is the local cgroup
cluster's; a compose deployment would be another. Machine ids are those of the cluster spec, and
each machine's supervisor registers with Nimbus under ``host``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import psutil

from observe.nimbus import NimbusAddress


@dataclass(frozen=True)
class Machine:
    id: str
    type: str
    """Machine type, as profiles and plans name it."""
    cores: float
    """CPU the machine may use, in cores (its quota): what 100 % of the machine means."""
    host: str
    """The host its supervisor registers with Nimbus (executors' ``host`` in ``TopologyInfo``)."""


@dataclass(frozen=True)
class TaskProcess:
    """The Python process of one task (a multi-lang executor's subprocess)."""

    task_id: int
    component: str
    pid: int
    worker_id: str | None
    """Storm's id of the worker that launched it, where known."""


class ClusterHandle(Protocol):
    """A running cluster as an observer sees it. Faults are raised as the implementation's own one-sentence error."""

    @property
    def name(self) -> str:
        """How messages name the cluster, e.g. "the local cluster at var/clusters/default"."""

    @property
    def nimbus(self) -> NimbusAddress:
        """Where its Nimbus answers Thrift."""

    def machines(self) -> list[Machine]:
        """Its machines, in spec order."""

    def cpu_seconds(self, machine_id: str) -> float:
        """CPU seconds everything on the machine used so far (cumulative: a window's CPU is a difference)."""

    def cpu_quota_cores(self, machine_id: str) -> float | None:
        """The quota the machine really enforces now, in cores; None where it is not limited."""

    def processes(self, machine_id: str) -> list[int]:
        """Pids (on this host) of the machine's worker JVMs and their children (the Python processes)."""

    def task_processes(self, machine_id: str, topology_id: str) -> dict[int, TaskProcess]:
        """The live Python process of each task the machine's workers launched for the topology, by task id."""

    def stopped_daemons(self) -> list[str]:
        """Daemons of the cluster that should run and do not (empty: healthy)."""


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far; None once it is gone."""
    try:
        times = psutil.Process(pid).cpu_times()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return None
    return times.user + times.system


def machine_of_host(handle: ClusterHandle) -> dict[str, str]:
    """Supervisor host -> machine id."""
    return {m.host: m.id for m in handle.machines()}


def load_average() -> list[float]:
    """The host's 1, 5 and 15 minute load averages: how busy the shared machine was."""
    return [round(x, 2) for x in psutil.getloadavg()]
