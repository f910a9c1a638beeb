"""CPU quotas of the machines: cgroup v1 ``cpu`` (quota) and ``cpuacct`` (usage) controllers; memory limits:
the v1 ``memory`` controller, where mounted.

Each machine of a cluster is one cgroup in both hierarchies. A process that
joins it (the supervisor, at exec) passes it to everything it starts: its
workers and their Python subprocesses, so they all share the machine's quota.
The two controllers may be mounted apart (``/sys/fs/cgroup/cpu`` and
``/sys/fs/cgroup/cpuacct``) or together (``cpu,cpuacct``); both work.
"""
from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass
from pathlib import Path

from cluster.errors import ClusterError

CFS_PERIOD_US = 100_000
"""The scheduling period; the quota is ``cpu_cores * CFS_PERIOD_US`` microseconds of CPU per period."""

SHARES_PER_CORE = 1024
"""``cpu.shares`` of one core's worth of weight, what one busy ordinary process has.

A quota is only a cap: when the host is busy, cgroups of equal shares get
equal CPU, and machines of quotas 1:2:4 would run 1:1:1. Shares in
proportion to the quotas keep them 1:2:4 under contention too."""

ROOT_SHARES = 262_144
"""The kernel's largest weight, for the ``hetsched`` parent of all clusters: the parent itself never squeezes them."""

DEFAULT_CLUSTER_SHARES = 32 * SHARES_PER_CORE
"""A cluster's weight against the host's other processes: that of 32 busy ones. With it the machines
got exactly their quotas (0.200/0.400/0.800 cores) on a host at load average 21; at 1024 per machine
they got 40-60% of them in uneven ratios. The quotas still cap the cluster."""

_PROC_MOUNTS = Path("/proc/mounts")


@dataclass(frozen=True)
class Hierarchies:
    """Mount points of the cgroup v1 controllers this package uses."""

    cpu: Path
    cpuacct: Path
    memory: Path | None = None
    """The ``memory`` controller's mount point, None where it is not mounted (no memory limits then)."""

    def paths(self, cgroup: str) -> tuple[Path, ...]:
        """The cgroup's folders, deduplicated when the controllers are co-mounted."""
        folders = [self.cpu / cgroup, self.cpuacct / cgroup]
        if self.memory is not None:
            folders.append(self.memory / cgroup)
        return tuple(dict.fromkeys(folders))


def find_hierarchies(mounts_file: Path = _PROC_MOUNTS) -> Hierarchies | None:
    """The v1 mount points of ``cpu`` and ``cpuacct``, or None if either is missing."""
    cpu = acct = memory = None
    try:
        lines = mounts_file.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) < 4 or fields[2] != "cgroup":
            continue
        options = fields[3].split(",")
        if "cpu" in options:
            cpu = Path(fields[1])
        if "cpuacct" in options:
            acct = Path(fields[1])
        if "memory" in options:
            memory = Path(fields[1])
    return Hierarchies(cpu, acct, memory) if cpu and acct else None


def cannot_use_reason(hierarchies: Hierarchies | None, probe: str) -> str | None:
    """Why CPU quotas cannot be set here (None when they can): tried by making and removing a probe cgroup."""
    if hierarchies is None:
        return "the cgroup v1 'cpu' and 'cpuacct' controllers are not mounted (see /proc/mounts)"
    made: list[Path] = []
    try:
        for folder in hierarchies.paths(probe):
            folder.mkdir(parents=True, exist_ok=True)
            made.append(folder)
        (hierarchies.cpu / probe / "cpu.cfs_quota_us").write_text(str(CFS_PERIOD_US))
    except OSError as fault:
        return f"cgroups under {hierarchies.cpu} are not writable ({fault.strerror or fault})"
    finally:
        for folder in reversed(made):
            _rmdir_quietly(folder)
    return None


def create(hierarchies: Hierarchies, cgroup: str, cpu_cores: float | None, shares: int | None = None,
           memory_mb: int | None = None) -> None:
    """Make the cgroup in every controller; with ``cpu_cores`` set its CFS quota (None: no limit), with ``memory_mb``
    its hard memory limit (``memory.limit_in_bytes``, swap included where the kernel accounts it).

    ``shares`` (``cpu.shares``) default to ``SHARES_PER_CORE * cpu_cores`` for a quota, else the kernel's 1024.
    """
    if memory_mb is not None and hierarchies.memory is None:
        raise ClusterError(f"The cgroup v1 'memory' controller is not mounted (see {_PROC_MOUNTS}): "
                           f"cannot hold cgroup {cgroup} to {memory_mb} MB.")
    for folder in hierarchies.paths(cgroup):
        folder.mkdir(parents=True, exist_ok=True)
    cpu = hierarchies.cpu / cgroup
    (cpu / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
    quota = -1 if cpu_cores is None else max(1000, round(cpu_cores * CFS_PERIOD_US))
    (cpu / "cpu.cfs_quota_us").write_text(str(quota))
    if shares is None and cpu_cores is not None:
        shares = round(SHARES_PER_CORE * cpu_cores)
    if shares is not None:
        set_shares(hierarchies, cgroup, shares)
    if memory_mb is not None:
        set_memory_limit(hierarchies, cgroup, memory_mb)


def set_memory_limit(hierarchies: Hierarchies, cgroup: str, memory_mb: int) -> None:
    """Hold everything in the cgroup to ``memory_mb`` MB: past it the kernel reclaims, then OOM-kills in the cgroup."""
    assert hierarchies.memory is not None
    folder = hierarchies.memory / cgroup
    limit = str(memory_mb * 1024 * 1024)
    (folder / "memory.limit_in_bytes").write_text(limit)
    memsw = folder / "memory.memsw.limit_in_bytes"
    if memsw.exists():
        memsw.write_text(limit)  # no swapping past the limit either (memsw >= limit: write it after)


def memory_events(hierarchies: Hierarchies, cgroup: str) -> dict[str, int]:
    """The memory controller's figures of a cgroup: its limit, peak and current use (bytes), how often it hit the
    limit (``failcnt``) and how many processes the kernel's OOM killer ended in it (``oom_kill``, newer kernels)."""
    if hierarchies.memory is None:
        return {}
    folder = hierarchies.memory / cgroup
    figures = {name: int((folder / f"memory.{name}").read_text())
               for name in ("limit_in_bytes", "max_usage_in_bytes", "usage_in_bytes", "failcnt")}
    for line in (folder / "memory.oom_control").read_text().splitlines():
        key, _, value = line.partition(" ")
        if key in ("oom_kill", "under_oom"):
            figures[key] = int(value)
    return figures


def set_shares(hierarchies: Hierarchies, cgroup: str, shares: int) -> None:
    """Relative CPU weight among sibling cgroups and processes (kernel minimum 2)."""
    (hierarchies.cpu / cgroup / "cpu.shares").write_text(str(max(2, shares)))


def quota_cores(hierarchies: Hierarchies, cgroup: str) -> float | None:
    """The cgroup's CPU quota in cores as the kernel holds it, None when unlimited."""
    cpu = hierarchies.cpu / cgroup
    quota = int((cpu / "cpu.cfs_quota_us").read_text())
    period = int((cpu / "cpu.cfs_period_us").read_text())
    return None if quota < 0 else quota / period


def join(hierarchies: Hierarchies, cgroup: str, pid: int) -> None:
    """Move ``pid`` (all its threads) into the cgroup in both controllers."""
    for folder in hierarchies.paths(cgroup):
        (folder / "cgroup.procs").write_text(str(pid))


def members(hierarchies: Hierarchies, cgroup: str) -> list[int]:
    """Pids in the cgroup (and its children), from the cpu controller."""
    pids: set[int] = set()
    root = hierarchies.cpu / cgroup
    if not root.is_dir():
        return []
    for folder, _dirs, _files in os.walk(root):
        try:
            pids.update(int(p) for p in (Path(folder) / "cgroup.procs").read_text().split())
        except OSError:
            continue
    return sorted(pids)


def usage_ns(hierarchies: Hierarchies, cgroup: str) -> int:
    """CPU time used by everything that ran in the cgroup, in nanoseconds (``cpuacct.usage``)."""
    try:
        return int((hierarchies.cpuacct / cgroup / "cpuacct.usage").read_text())
    except FileNotFoundError:
        raise ClusterError(f"The cgroup {cgroup} does not exist (is the cluster up?).") from None


def throttled(hierarchies: Hierarchies, cgroup: str) -> dict[str, int]:
    """The cpu controller's ``cpu.stat``: periods, throttled periods, throttled time (ns)."""
    stats = {}
    for line in (hierarchies.cpu / cgroup / "cpu.stat").read_text().splitlines():
        key, _, value = line.partition(" ")
        stats[key] = int(value)
    return stats


def cgroup_of_pid(pid: int, controller: str = "cpu") -> str | None:
    """The pid's cgroup path in a v1 controller (e.g. ``/hetsched/default-1a2b3c4d/small-1``), or None."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return None


def remove(hierarchies: Hierarchies, cgroup: str, timeout_s: float = 10.0) -> None:
    """Remove the cgroup and its children (deepest first) once they are empty."""
    for root in hierarchies.paths(cgroup):
        if not root.is_dir():
            continue
        folders = sorted((Path(f) for f, _d, _f in os.walk(root)), key=lambda p: len(p.parts), reverse=True)
        for folder in folders:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as fault:
                    if fault.errno != errno.EBUSY or time.monotonic() > deadline:
                        raise ClusterError(f"Cannot remove cgroup {folder}: {fault.strerror}.") from None
                    time.sleep(0.1)


def remove_if_empty(hierarchies: Hierarchies, cgroup: str) -> None:
    """Remove a shared parent cgroup when no cluster uses it any more."""
    for folder in hierarchies.paths(cgroup):
        _rmdir_quietly(folder)


def _rmdir_quietly(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass
