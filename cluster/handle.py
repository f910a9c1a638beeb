"""The local cgroup cluster as an :class:`observe.machines.ClusterHandle`.

- CPU: the machine cgroup's ``cpuacct.usage`` and CFS quota.
- Processes: worker JVMs (``org.apache.storm.daemon.worker.Worker``) in the machine's cgroup (or
  below its supervisor), and their children.
- Task processes: the worker log line ``Launched subprocess with pid N`` of each executor thread
  gives pid -> task; the worker's pid folder (``storm.local.dir/workers/<id>/pids``) the worker id.
"""
from __future__ import annotations

import re
from dataclasses import replace

import psutil

from cluster import cgroups
from cluster.local import LocalCluster
from observe.machines import Machine, TaskProcess
from observe.nimbus import NimbusAddress

WORKER_CLASS = "org.apache.storm.daemon.worker.Worker"
LOG_WRITER_CLASS = "org.apache.storm.LogWriter"
_LAUNCHED = re.compile(
    r"^(?P<when>\S+ \S+) .*Thread-\d+-(?P<component>.+)-executor\[(?P<start>\d+), (?P<end>\d+)\] "
    r"\[INFO\] Launched subprocess with pid (?P<pid>\d+)"
)


class LocalClusterHandle:
    """A :class:`cluster.local.LocalCluster` seen through the observer's protocol."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster

    @property
    def name(self) -> str:
        return f"the local cluster at {self.cluster.layout.home}"

    @property
    def nimbus(self) -> NimbusAddress:
        """The first Nimbus, with the standby (where there is one) as a seed, so readers follow a leader change."""
        return replace(self.cluster.nimbus_address, source=self.name)

    def machines(self) -> list[Machine]:
        return [Machine(m.id, m.type, m.cpu_cores, m.host) for m in self.cluster.layout.machines]

    def cpu_seconds(self, machine_id: str) -> float:
        return self.cluster.machine_cpu_seconds(machine_id)

    def cpu_quota_cores(self, machine_id: str) -> float | None:
        if self.cluster.hierarchies is None or not self.cluster.status().heterogeneous:
            return None
        return cgroups.quota_cores(self.cluster.hierarchies, self.cluster.layout.machine(machine_id).cgroup)

    def processes(self, machine_id: str) -> list[int]:
        found: set[int] = set()
        for process in psutil.process_iter(["pid", "cmdline"]):
            cmdline = " ".join(process.info["cmdline"] or [])
            if WORKER_CLASS not in cmdline or LOG_WRITER_CLASS in cmdline:
                continue
            if self.cluster.machine_of_pid(process.info["pid"]) != machine_id:
                continue
            found.add(process.info["pid"])
            try:
                found.update(child.pid for child in process.children(recursive=True))
            except psutil.Error:
                continue
        return sorted(found)

    def task_processes(self, machine_id: str, topology_id: str) -> dict[int, TaskProcess]:
        found = {}
        for task, (component, pid) in self._launched(machine_id, topology_id).items():
            if not psutil.pid_exists(pid) or self.cluster.machine_of_pid(pid) not in (machine_id, None):
                continue
            found[task] = TaskProcess(task, component, pid, self._worker_of_pid(machine_id, pid))
        return found

    def stopped_daemons(self) -> list[str]:
        return self.cluster.status().stopped_daemons

    def _launched(self, machine_id: str, topology_id: str) -> dict[int, tuple[str, int]]:
        """Task id -> (component, pid) of the Python processes the machine's workers launched (latest wins)."""
        root = self.cluster.layout.log_dir(machine_id) / "workers-artifacts" / topology_id
        launched: list[tuple[str, int, str, int]] = []
        for log in sorted(root.glob("*/worker.log*")):
            try:
                lines = log.read_text(errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                found = _LAUNCHED.match(line)
                if found:
                    launched.append((found["when"], int(found["start"]), found["component"], int(found["pid"])))
        return {task: (component, pid) for _when, task, component, pid in sorted(launched)}

    def _worker_of_pid(self, machine_id: str, pid: int) -> str | None:
        """The worker whose pid folder lists ``pid`` (Storm's ShellProcess has each subprocess write one)."""
        for pid_file in (self.cluster.layout.local_dir(machine_id) / "workers").glob(f"*/pids/{pid}"):
            return pid_file.parent.parent.name
        return None
