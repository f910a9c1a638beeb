"""What the collector reads from the running cluster: task counts, Python processes, CPU.

- Counts: Nimbus Thrift ``getTopologyInfo``, every executor's all-time stats by stream, as its
  worker last reported them (every ``executor.metrics.frequency.secs``). Exact only with
  ``topology.stats.sample.rate: 1.0``. The executor's ``uptime_secs`` changes with each report,
  so a new report is seen even when no tuple moved.
- Python processes: the worker log line ``Launched subprocess with pid N`` of each executor
  thread gives pid -> task; the worker's pid folder (``storm.local.dir/workers/<id>/pids``)
  gives the worker id.
- CPU: psutil (user + system) of each Python process, and the machine cgroup's ``cpuacct.usage``
  and CFS quota.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass

import psutil

from cluster import cgroups
from cluster.local import LocalCluster
from cluster.nimbus import client as nimbus_client
from spark_profiling.errors import ProfilingError

ALL_TIME = ":all-time"
SYSTEM_PREFIX = "__"

_LAUNCHED = re.compile(
    r"^(?P<when>\S+ \S+) .*Thread-\d+-(?P<component>.+)-executor\[(?P<start>\d+), (?P<end>\d+)\] "
    r"\[INFO\] Launched subprocess with pid (?P<pid>\d+)"
)


@dataclass(frozen=True)
class TaskCounts:
    """One task's all-time counts on user streams, as Nimbus last heard of them."""

    task_id: int
    component: str
    host: str
    port: int
    uptime_s: int
    is_spout: bool
    executed: int
    """Storm's ``executed`` (a bolt); a ShellBolt counts a tuple when it queues it to its subprocess."""
    acked: int
    """Tuples the task acked (a bolt): a Python bolt acks a tuple once it has processed it."""
    emitted: int
    """Tuples emitted, once per emit."""


@dataclass(frozen=True)
class TopologyCounts:
    status: str
    """Nimbus's scheduler status line of the topology."""
    tasks: dict[int, TaskCounts]
    """User tasks (one per executor) by task id."""
    system: dict[str, list[str]]
    """Storm's system components (``__acker``) -> the hosts their executors run on."""


@dataclass(frozen=True)
class TaskProcess:
    task_id: int
    component: str
    pid: int
    worker_id: str | None


def _user_sum(by_stream: dict | None) -> int:
    total = 0
    for stream, count in (by_stream or {}).items():
        name = stream if isinstance(stream, str) else stream.streamId
        if not name.startswith(SYSTEM_PREFIX):
            total += count
    return total


def parse_counts(info) -> TopologyCounts:
    """Every executor's counts from a Thrift ``TopologyInfo``."""
    tasks: dict[int, TaskCounts] = {}
    system: dict[str, list[str]] = {}
    for e in info.executors or []:
        if e.component_id.startswith(SYSTEM_PREFIX):
            system.setdefault(e.component_id, []).append(e.host)
            continue
        stats = e.stats
        specific = stats.specific if stats is not None else None
        bolt = specific.bolt if specific is not None else None
        task = e.executor_info.task_start
        tasks[task] = TaskCounts(
            task_id=task,
            component=e.component_id,
            host=e.host,
            port=e.port,
            uptime_s=e.uptime_secs or 0,
            is_spout=specific is not None and specific.spout is not None,
            executed=_user_sum((bolt.executed or {}).get(ALL_TIME)) if bolt else 0,
            acked=_user_sum((bolt.acked or {}).get(ALL_TIME)) if bolt else 0,
            emitted=_user_sum((stats.emitted or {}).get(ALL_TIME)) if stats else 0,
        )
    return TopologyCounts(status=info.sched_status or "", tasks=tasks, system=system)


class NimbusReader:
    """One Thrift connection to Nimbus for many reads, opened again after a failure."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.host, self.port = cluster.layout.nimbus_host, cluster.layout.nimbus_port
        self._stack: ExitStack | None = None
        self._client = None

    def counts(self, topology_id: str) -> TopologyCounts:
        try:
            if self._client is None:
                self._stack = ExitStack()
                self._client = self._stack.enter_context(nimbus_client(self.host, self.port))
            return parse_counts(self._client.getTopologyInfo(topology_id))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._stack is not None:
            self._stack.close()
        self._stack = self._client = None

    def __enter__(self) -> "NimbusReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def worker_log_pids(cluster: LocalCluster, machine_id: str, topology_id: str) -> dict[int, tuple[str, int]]:
    """Task id -> (component, pid) of the Python processes the machine's workers launched for the topology (latest wins)."""
    root = cluster.layout.log_dir(machine_id) / "workers-artifacts" / topology_id
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


def worker_of_pid(cluster: LocalCluster, machine_id: str, pid: int) -> str | None:
    """The worker whose pid folder lists ``pid`` (Storm's ShellProcess has each subprocess write one)."""
    for pid_file in (cluster.layout.local_dir(machine_id) / "workers").glob(f"*/pids/{pid}"):
        return pid_file.parent.parent.name
    return None


def task_processes(cluster: LocalCluster, machine_id: str, topology_id: str, tasks: dict[int, str]) -> dict[int, TaskProcess]:
    """The live Python process of each of ``tasks`` (task id -> component) on the machine; absent ones left out."""
    found = {}
    for task, (component, pid) in worker_log_pids(cluster, machine_id, topology_id).items():
        if tasks.get(task) != component or not psutil.pid_exists(pid):
            continue
        if cluster.machine_of_pid(pid) not in (machine_id, None):
            continue
        found[task] = TaskProcess(task, component, pid, worker_of_pid(cluster, machine_id, pid))
    return found


def wait_for_processes(
    cluster: LocalCluster,
    topology_id: str,
    tasks_by_machine: dict[str, dict[int, str]],
    timeout_s: float,
    tick: Callable[[], None] = lambda: None,
) -> dict[int, TaskProcess]:
    """Block until every task's Python process runs; all of them by task id."""
    deadline = time.monotonic() + timeout_s
    while True:
        found: dict[int, TaskProcess] = {}
        for machine_id, tasks in tasks_by_machine.items():
            found.update(task_processes(cluster, machine_id, topology_id, tasks))
        missing = [f"{c} (task {t})" for tasks in tasks_by_machine.values() for t, c in tasks.items() if t not in found]
        if not missing:
            return found
        if time.monotonic() > deadline:
            raise ProfilingError(
                f"the Python processes of {', '.join(missing)} of {topology_id} did not start within {timeout_s:.0f} s "
                f"(worker logs under {cluster.layout.home / 'logs'})."
            )
        tick()
        time.sleep(1.0)


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far; None once it is gone."""
    try:
        times = psutil.Process(pid).cpu_times()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return None
    return times.user + times.system


def require_cgroups(cluster: LocalCluster) -> None:
    if cluster.hierarchies is None or not cluster.status().heterogeneous:
        raise ProfilingError(
            f"the cluster at {cluster.layout.home} has no CPU-quota cgroups: machine CPU cannot be measured "
            "and its machines are not heterogeneous; profiling needs a cluster started with cgroups."
        )


def machine_quota_cores(cluster: LocalCluster, machine_id: str) -> float | None:
    """The machine cgroup's CFS quota in cores, as the kernel holds it (None: unlimited)."""
    return cgroups.quota_cores(cluster.hierarchies, cluster.layout.machine(machine_id).cgroup)


def load_average() -> list[float]:
    """The host's 1, 5 and 15 minute load averages: how busy the shared machine was."""
    return [round(x, 2) for x in psutil.getloadavg()]


def machine_of_host(cluster: LocalCluster) -> dict[str, str]:
    """Supervisor host (127.0.0.x) -> machine id."""
    return {m.host: m.id for m in cluster.layout.machines}
