"""Where everything of one cluster lives: ports, hosts, folders, cgroups, derived from its spec and home.

Pure: nothing here touches the machine. Two clusters with different homes
and port bases (a developer's and the test suite's) get disjoint ports,
folders, pid files and cgroup names. The layout is saved as
``<home>/state.json`` when the cluster starts, so ``down`` and ``status``
work from the home alone.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from cluster.errors import ClusterError
from cluster.spec import MAX_MACHINES, MAX_SLOTS_PER_MACHINE, ClusterSpec

REPO_ROOT = Path(__file__).resolve().parents[1]
CGROUP_ROOT_NAME = "hetsched"

ZOOKEEPER, NIMBUS, UI = "zookeeper", "nimbus", "ui"
NIMBUS_STANDBY = "nimbus-standby"
NIMBUSES = (NIMBUS, NIMBUS_STANDBY)
"""The daemons that run ``org.apache.storm.daemon.nimbus.Nimbus``: the first, and the standby where the spec asks for one."""
NON_MACHINE_DAEMONS = (ZOOKEEPER, *NIMBUSES, UI)
STANDBY_NIMBUS_HOST = f"127.0.0.{2 + MAX_MACHINES}"
"""The standby Nimbus's own loopback address: the first past every machine's (127.0.0.2 on), so no supervisor has it."""
_SUPERVISOR_THRIFT_OFFSET = 10
_SLOT_OFFSET = 60
_HIGHEST_PORT = 65535


class MachineLayout(BaseModel):
    """One supervisor: a machine of the heterogeneous cluster."""

    model_config = ConfigDict(frozen=True)

    id: str
    type: str
    cpu_cores: float
    slots: int
    memory_mb: int
    memory_limit_mb: int | None = None
    host: str
    thrift_port: int
    slot_ports: list[int]
    cgroup: str

    @property
    def cpu_capacity(self) -> float:
        return round(self.cpu_cores * 100, 6)


class ClusterLayout(BaseModel):
    """Every name, port and folder of one cluster."""

    model_config = ConfigDict(frozen=True)

    name: str
    home: Path
    key: str
    port_base: int
    zookeeper_port: int
    nimbus_port: int
    ui_port: int
    other_ports: dict[str, int]
    nimbus_host: str = "127.0.0.1"
    standby_nimbus_host: str | None = None
    """Where the standby Nimbus listens, on the same ``nimbus_port``; None: one Nimbus."""
    daemons_cgroup: str
    machines: list[MachineLayout]

    @property
    def cluster_cgroup(self) -> str:
        return f"{CGROUP_ROOT_NAME}/{self.key}"

    def machine(self, machine_id: str) -> MachineLayout:
        for m in self.machines:
            if m.id == machine_id:
                return m
        known = ", ".join(m.id for m in self.machines)
        raise ClusterError(f"No machine {machine_id!r} in cluster {self.name!r}; its machines are {known}.")

    def daemon_names(self) -> list[str]:
        """ZooKeeper, Nimbus (and its standby), the UI, then one supervisor per machine."""
        return [ZOOKEEPER, *self.nimbus_daemons(), UI] + [m.id for m in self.machines]

    def nimbus_daemons(self) -> list[str]:
        return [NIMBUS, NIMBUS_STANDBY] if self.standby_nimbus_host is not None else [NIMBUS]

    def nimbus_hosts(self) -> list[str]:
        """``nimbus.seeds``: every Nimbus's address, so clients find whichever leads."""
        return [self.nimbus_host_of(daemon) for daemon in self.nimbus_daemons()]

    def nimbus_host_of(self, daemon: str) -> str:
        """The loopback address a Nimbus daemon listens on and names itself by (``storm.local.hostname``)."""
        if daemon == NIMBUS_STANDBY and self.standby_nimbus_host is not None:
            return self.standby_nimbus_host
        if daemon == NIMBUS:
            return self.nimbus_host
        raise ClusterError(f"{daemon!r} is no Nimbus of cluster {self.name!r}; its Nimbus daemons are "
                           f"{', '.join(self.nimbus_daemons())}.")

    def daemon_of_nimbus(self, host_port: str) -> str | None:
        """The Nimbus daemon that Nimbus names ``host:port`` (as its leader), or None if it is none of this cluster's."""
        return next((d for d in self.nimbus_daemons() if f"{self.nimbus_host_of(d)}:{self.nimbus_port}" == host_port), None)

    def conf_file(self, daemon: str) -> Path:
        return self.home / "conf" / f"{daemon}.yaml"

    def pid_file(self, daemon: str) -> Path:
        return self.home / "run" / f"{daemon}.pid"

    def local_dir(self, daemon: str) -> Path:
        return self.home / "data" / daemon

    def log_dir(self, daemon: str) -> Path:
        """storm.log.dir of a daemon; a supervisor's workers write under ``<log_dir>/workers-artifacts``."""
        return self.home / "logs" / daemon

    def log_file(self, daemon: str) -> Path:
        return self.log_dir(daemon) / f"{daemon}.log"

    def console_file(self, daemon: str) -> Path:
        """The daemon's stdout and stderr (JVM crashes and early failures land here)."""
        return self.log_dir(daemon) / f"{daemon}.out"

    @property
    def extlib_daemon(self) -> Path:
        """Jars put on the daemons' class path for this cluster only (the scheduler plugin)."""
        return self.home / "extlib-daemon"

    @property
    def state_file(self) -> Path:
        return self.home / "state.json"

    def all_ports(self) -> dict[int, str]:
        """Every port this cluster listens on, with what it is for."""
        ports = {self.zookeeper_port: "ZooKeeper", self.nimbus_port: "Nimbus Thrift", self.ui_port: "Storm UI"}
        for m in self.machines:
            ports[m.thrift_port] = f"supervisor {m.id} Thrift"
            for p in m.slot_ports:
                ports[p] = f"worker slot of {m.id}"
        return ports


def default_home(name: str) -> Path:
    return REPO_ROOT / "var" / "clusters" / name


def resolve_home(spec: ClusterSpec, home: str | Path | None = None) -> Path:
    """The cluster's state directory: ``home`` argument, else ``HETSCHED_CLUSTER_HOME``, else the spec's, else the default."""
    chosen = home or os.environ.get("HETSCHED_CLUSTER_HOME") or spec.home or default_home(spec.name)
    path = Path(chosen).expanduser().resolve()
    for folder in (path, *path.parents):
        if folder.exists() and not folder.is_dir():
            raise ClusterError(f"the cluster home {path} cannot be used: {folder} is a file, not a folder.")
    return path


def resolve_port_base(spec: ClusterSpec, port_base: int | None = None) -> int:
    """The first port: ``port_base`` argument, else ``HETSCHED_CLUSTER_PORT_BASE``, else the spec's."""
    if port_base is not None:
        return port_base
    env = os.environ.get("HETSCHED_CLUSTER_PORT_BASE")
    if env:
        try:
            return int(env)
        except ValueError:
            raise ClusterError(f"HETSCHED_CLUSTER_PORT_BASE must be a port number, not {env!r}.") from None
    return spec.port_base


def cluster_key(name: str, home: Path) -> str:
    """Name plus a short hash of the home: unique per cluster, stable across restarts."""
    return f"{name}-{hashlib.sha1(str(home).encode()).hexdigest()[:8]}"


def port_span(machine_count: int) -> int:
    """How many consecutive ports from the base a cluster of this many machines uses."""
    return _SLOT_OFFSET + machine_count * MAX_SLOTS_PER_MACHINE


def make_layout(spec: ClusterSpec, home: Path, port_base: int) -> ClusterLayout:
    machines_of_spec = spec.machine_ids()
    if not 1024 <= port_base or port_base + port_span(len(machines_of_spec)) - 1 > _HIGHEST_PORT:
        raise ClusterError(
            f"Port base {port_base} does not leave room for {port_span(len(machines_of_spec))} ports "
            f"below {_HIGHEST_PORT + 1}; choose a base between 1024 and {_HIGHEST_PORT + 1 - port_span(len(machines_of_spec))}."
        )
    key = cluster_key(spec.name, home)
    machines = [
        MachineLayout(
            id=machine_id,
            type=t.name,
            cpu_cores=t.cpu_cores,
            slots=t.slots,
            memory_mb=t.memory_mb,
            memory_limit_mb=t.memory_limit_mb,
            host=f"127.0.0.{2 + i}",
            thrift_port=port_base + _SUPERVISOR_THRIFT_OFFSET + i,
            slot_ports=[port_base + _SLOT_OFFSET + i * MAX_SLOTS_PER_MACHINE + j for j in range(t.slots)],
            cgroup=f"{CGROUP_ROOT_NAME}/{key}/{machine_id}",
        )
        for i, (machine_id, t) in enumerate(machines_of_spec)
    ]
    return ClusterLayout(
        name=spec.name,
        home=home,
        key=key,
        port_base=port_base,
        zookeeper_port=port_base,
        nimbus_port=port_base + 1,
        ui_port=port_base + 2,
        other_ports={
            "logviewer.port": port_base + 3,
            "drpc.port": port_base + 4,
            "drpc.invocations.port": port_base + 5,
            "drpc.http.port": port_base + 6,
            "pacemaker.port": port_base + 7,
        },
        standby_nimbus_host=STANDBY_NIMBUS_HOST if spec.nimbus_standby else None,
        daemons_cgroup=f"{CGROUP_ROOT_NAME}/{key}/daemons",
        machines=machines,
    )
