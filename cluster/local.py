"""A heterogeneous Storm 2.8 cluster of local processes: up, status, down.

ZooKeeper (ZooKeeper's own standalone server), Nimbus and, where STORM_HOME has it, the
UI run in the cluster's ``daemons`` cgroup (no quota). Each machine of the
spec is one supervisor in its own cgroup with the machine's CPU quota, its
own ``storm.local.dir``, ports and hostname (127.0.0.x). Workers and their
Python processes inherit the supervisor's cgroup, so the quota covers them.
ZooKeeper, Nimbus, the UI and the supervisors listen on loopback addresses
only (Nimbus and the supervisors when the plugin jar is built, see
:func:`cluster.storm_config.listen_conf`); the workers' Netty servers listen
on every address, which Storm 2.8 offers no setting to change.

With ``nimbus_standby`` in the spec a second Nimbus (daemon ``nimbus-standby``) runs beside the
first on its own loopback address and the same Thrift port, both in ``nimbus.seeds``: killing the
leader (:meth:`LocalCluster.kill_daemon`) makes the standby lead, as on a highly available cluster.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil
import yaml

from cluster import cgroups, preflight, processes
from cluster.bind_address import machine_environment, shim_library
from cluster.errors import ClusterError
from cluster.layout import (
    CGROUP_ROOT_NAME,
    NIMBUS,
    NIMBUS_STANDBY,
    NIMBUSES,
    NON_MACHINE_DAEMONS,
    UI,
    ZOOKEEPER,
    ClusterLayout,
    make_layout,
    resolve_home,
    resolve_port_base,
)
from cluster.spec import ClusterSpec, load_spec
from cluster.storm_config import (
    PLUGIN_JAR,
    SCHEDULERS,
    daemon_conf,
    java_command,
    listen_conf,
    zookeeper_cfg,
    zookeeper_cfg_file,
)
from cluster.storm_home import ensure_storm_home, has_ui
from observe import nimbus

log = logging.getLogger(__name__)

Report = Callable[[str], None]


@dataclass(frozen=True)
class Supervisor:
    """One machine of the cluster as it runs."""

    machine_id: str
    machine_type: str
    host: str
    cpu_cores: float
    slots: int
    slot_ports: list[int]
    memory_mb: int
    cgroup: Path | None
    """The machine's folder in the cgroup v1 cpu controller (None on a homogeneous cluster)."""
    supervisor_id: str | None = None
    used_slots: int | None = None
    cpu_seconds: float | None = None
    """CPU time used by everything in the machine's cgroup since it was made (cpuacct.usage)."""


@dataclass(frozen=True)
class ClusterStatus:
    name: str
    home: Path
    running: bool
    scheduler: str | None
    heterogeneous: bool
    nimbus_host: str
    nimbus_port: int
    nimbus_leader: str | None
    ui_url: str | None
    supervisors: list[Supervisor]
    topologies: list[nimbus.TopologySummary] = field(default_factory=list)
    stopped_daemons: list[str] = field(default_factory=list)
    already_running: bool = False
    nimbus_standby_host: str | None = None
    """The standby Nimbus's address (same port), None without one; ``nimbus_leader`` says which of the two leads."""


@dataclass(frozen=True)
class DownReport:
    stopped_pids: list[int]
    removed_cgroups: list[str]
    purged: bool


class LocalCluster:
    """One local cluster, identified by its home. Cheap to create; nothing happens until ``up``."""

    def __init__(
        self, spec: ClusterSpec | None = None, *, home: str | Path | None = None, port_base: int | None = None
    ) -> None:
        self.spec = spec or load_spec()
        home_path = resolve_home(self.spec, home)
        self.layout = make_layout(self.spec, home_path, resolve_port_base(self.spec, port_base))
        self._saved = _read_state(home_path)
        if self._saved is not None:
            running_layout = _saved_layout(self._saved)
            if running_layout is not None and running_layout != self.layout and _any_running(running_layout):
                # The cluster in this home runs as it was started; status and down follow that, not the spec.
                self.layout = running_layout
        self.hierarchies = cgroups.find_hierarchies()

    # ---- the operator's verbs -------------------------------------------------------------

    def up(
        self,
        scheduler: str = "default",
        conf: dict[str, Any] | None = None,
        *,
        allow_homogeneous: bool = False,
        timeout_s: float = 300.0,
        report: Report = log.info,
    ) -> ClusterStatus:
        """Start the cluster and wait until Nimbus leads and every supervisor has registered (and the standby
        Nimbus, where the spec has one, is listed beside the leader).

        On a cluster that already runs, changes nothing but restarting supervisors that
        stopped (and a Nimbus of two that stopped), and returns its status with ``already_running`` set.
        """
        live, dead = self._daemon_states()
        if live and not dead:
            return replace(self.status(), already_running=True)
        machine_ids = {m.id for m in self.layout.machines}
        nimbuses = set(self.layout.nimbus_daemons())
        if ZOOKEEPER in live and nimbuses & set(live) and set(dead) <= machine_ids | nimbuses:
            for daemon in sorted(nimbuses & set(dead)):
                self.restart_daemon(daemon, timeout_s, report)
            self.restart_stopped_supervisors(timeout_s, report)
            return replace(self.status(), already_running=True)
        if live:
            raise ClusterError(
                f"Cluster {self.layout.name!r} at {self.layout.home} is partly running ({', '.join(dead)} stopped); "
                "run 'hetsched cluster down' first."
            )
        preflight.check_scheduler(scheduler)
        if scheduler in preflight.PLUGIN_SCHEDULERS and (stale := preflight.stale_plugin_jar()):
            report(stale)
        preflight.check_java()
        preflight.check_cpu_budget(self.spec.total_cpu_cores)
        heterogeneous = preflight.check_cgroups(self.hierarchies, self.layout, allow_homogeneous)
        if not heterogeneous:
            report("WARNING: no CPU quotas: every machine gets the whole host; this cluster is NOT heterogeneous.")
        preflight.check_ports_free(self.layout)
        if self.layout.standby_nimbus_host is not None and (why_not := shim_library()[1]):
            raise ClusterError(f"A standby Nimbus cannot run here: {why_not}, which keeps each Nimbus on its own address "
                               "of the Thrift port they share.")
        storm_home = ensure_storm_home()
        extra = {**self.spec.storm_conf, **(conf or {})}
        self._prepare_home(scheduler, extra, storm_home)
        self._save_state(scheduler, heterogeneous, storm_home, extra)
        try:
            if heterogeneous:
                self._make_cgroups()
            self._start_daemons(storm_home, heterogeneous, report, timeout_s)
            self._wait_until_registered(timeout_s, report)
            if self.layout.standby_nimbus_host is not None:
                # Started once the first leads, so the standby is the standby; it copies the topologies' code from the leader.
                self._start_nimbus(NIMBUS_STANDBY, storm_home, heterogeneous, report, timeout_s)
        except BaseException:
            report("Start failed; stopping what was started (logs kept in the cluster's home).")
            self.down()
            raise
        return self.status()

    def status(self) -> ClusterStatus:
        """What runs now: supervisors (with Nimbus' view where it answers), topologies, stopped daemons."""
        live, dead = self._daemon_states()
        summary = None
        if set(self.layout.nimbus_daemons()) & set(live):
            summary = nimbus.try_summary(self.nimbus_address)
        registered = {s.host: s for s in summary.supervisors} if summary else {}
        state = self._saved or {}
        heterogeneous = bool(state.get("heterogeneous", False))
        supervisors = []
        for m in self.layout.machines:
            seen = registered.get(m.host)
            supervisors.append(
                Supervisor(
                    machine_id=m.id,
                    machine_type=m.type,
                    host=m.host,
                    cpu_cores=m.cpu_cores,
                    slots=m.slots,
                    slot_ports=list(m.slot_ports),
                    memory_mb=m.memory_mb,
                    cgroup=self.cgroup_path(m.id) if heterogeneous else None,
                    supervisor_id=seen.supervisor_id if seen else None,
                    used_slots=seen.used_slots if seen else None,
                    cpu_seconds=self._cpu_seconds_or_none(m.cgroup) if heterogeneous and live else None,
                )
            )
        ui_live = UI in live
        return ClusterStatus(
            name=self.layout.name,
            home=self.layout.home,
            running=bool(live),
            scheduler=state.get("scheduler") if live else None,
            heterogeneous=heterogeneous,
            nimbus_host=self.layout.nimbus_host,
            nimbus_port=self.layout.nimbus_port,
            nimbus_leader=summary.leader if summary else None,
            ui_url=f"http://127.0.0.1:{self.layout.ui_port}/" if ui_live else None,
            supervisors=supervisors,
            topologies=summary.topologies if summary else [],
            stopped_daemons=dead if live else [],
            nimbus_standby_host=self.layout.standby_nimbus_host,
        )

    def down(self, purge: bool = False) -> DownReport:
        """Stop every process this cluster started (workers and Python processes too) and remove its cgroups."""
        victims: set[psutil.Process] = set()
        for daemon in self.layout.daemon_names():
            victims |= processes.process_tree(self.layout.pid_file(daemon))
        cluster_cgroup = self.layout.cluster_cgroup
        victims |= set(_processes([p for p in self._cgroup_members(cluster_cgroup) if p != os.getpid()]))
        stopped = processes.terminate(victims)
        for daemon in self.layout.daemon_names():
            self.layout.pid_file(daemon).unlink(missing_ok=True)
        removed: list[str] = []
        if self.hierarchies is not None:
            late = _processes(self._cgroup_members(cluster_cgroup))  # anything forked while we stopped the rest
            stopped += processes.terminate(late, grace_s=2.0)
            if any(folder.is_dir() for folder in self.hierarchies.paths(cluster_cgroup)):
                cgroups.remove(self.hierarchies, cluster_cgroup)
                removed.append(cluster_cgroup)
            cgroups.remove_if_empty(self.hierarchies, CGROUP_ROOT_NAME)
        if purge:
            self._purge_home()
        self._saved = _read_state(self.layout.home)
        return DownReport(stopped_pids=sorted(set(stopped)), removed_cgroups=removed, purged=purge)

    def restart_stopped_supervisors(self, timeout_s: float = 180.0, report: Report = log.info) -> list[str]:
        """Start again every supervisor that exited while the cluster runs, and wait until Nimbus lists it.

        Storm's daemons are fail-fast and meant to run under supervision: a supervisor halts on some
        errors and expects to be restarted (its workers and local state survive). Storm 2.8's does so,
        for one, when a topology is killed while its worker's files are still being localized. Returns
        the machines restarted; ZooKeeper and Nimbus are not restarted here (:meth:`restart_daemon` does).
        """
        live, dead = self._daemon_states()
        if ZOOKEEPER not in live or not set(self.layout.nimbus_daemons()) & set(live):
            raise ClusterError(f"cluster {self.layout.name!r} is not running (ZooKeeper and Nimbus must be); cannot restart supervisors.")
        stopped = [m.id for m in self.layout.machines if m.id not in live]
        if not stopped:
            return []
        state = self._saved or {}
        storm_home = Path(state.get("storm_home") or ensure_storm_home())
        env = _daemon_environment(self._cluster_jar())
        for machine_id in stopped:
            report(f"Supervisor {machine_id} had stopped ({self._last_error(machine_id)}); restarting it.")
            process = self._start_daemon(machine_id, storm_home, env, bool(state.get("heterogeneous", False)))
            report(f"Started {machine_id} again (pid {process.pid}).")
        self._wait_until_registered(timeout_s, report, stopped=set(dead) - set(stopped))
        return stopped

    def restart_stopped_daemons(self, timeout_s: float = 180.0, report: Report = log.info) -> list[str]:
        """Start again every daemon that exited while the cluster runs: ZooKeeper, then each Nimbus, then the
        supervisors, each with the last error its log gave; what a process supervisor (systemd) does for a real
        cluster. A daemon stopped by ``down`` has no pid file and is not restarted. Returns the daemons restarted."""
        _live, dead = self._daemon_states()
        restarted = []
        for daemon in [ZOOKEEPER, *self.layout.nimbus_daemons()]:
            if daemon in dead:
                report(f"{daemon} had stopped ({self._last_error(daemon)}); restarting it.")
                self.restart_daemon(daemon, timeout_s=timeout_s, report=report)
                restarted.append(daemon)
        return restarted + self.restart_stopped_supervisors(timeout_s=timeout_s, report=report)

    def kill_machine(self, machine_id: str, grace_s: float = 2.0) -> list[int]:
        """Take a machine away as a power cut would: its supervisor and every process in its cgroup (its workers and
        their Python subprocesses) are stopped; ``restart_stopped_supervisors`` brings the machine back. Returns the pids."""
        machine = self.layout.machine(machine_id)
        killed = processes.stop(self.layout.pid_file(machine.id), grace_s=grace_s)
        left = [p for p in psutil.process_iter(["pid"]) if self.machine_of_pid(p.info["pid"]) == machine.id]
        return killed + processes.terminate(left, grace_s=grace_s)

    def kill_daemon(self, daemon: str, grace_s: float = 2.0) -> list[int]:
        """Stop one daemon as a fault would, for fault scripts (the leader Nimbus: ``kill_daemon(leader_daemon())``).

        SIGTERM, then SIGKILL after ``grace_s``; ``grace_s=0`` is SIGKILL at once, a crash: a killed Nimbus then
        keeps its ZooKeeper session, and the standby leads only once the session times out
        (``storm.zookeeper.session.timeout``, 20 s). A machine goes as :meth:`kill_machine` takes it; any other
        daemon keeps its pid file, so ``status()`` lists it as stopped and :meth:`restart_daemon` (or ``up``)
        starts it again. Returns the pids signalled.
        """
        if daemon not in self.layout.daemon_names():
            raise ClusterError(f"No daemon {daemon!r}; choose one of {', '.join(self.layout.daemon_names())}.")
        if daemon not in NON_MACHINE_DAEMONS:
            return self.kill_machine(daemon, grace_s)
        victims = processes.process_tree(self.layout.pid_file(daemon))
        if not victims:
            raise ClusterError(f"{daemon} of cluster {self.layout.name!r} is not running; there is nothing to kill.")
        if grace_s > 0:
            return processes.terminate(victims, grace_s)
        for process in victims:
            try:
                process.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(list(victims), timeout=5)
        return sorted(p.pid for p in victims)

    def restart_daemon(self, daemon: str, timeout_s: float = 180.0, report: Report = log.info) -> int:
        """Start one stopped daemon again with the storm.yaml it had, and wait until it serves: ZooKeeper its port,
        a Nimbus until Nimbus lists it beside the leader, a machine until its supervisor registers. A daemon that
        runs is left alone. Returns its pid."""
        if daemon not in self.layout.daemon_names():
            raise ClusterError(f"No daemon {daemon!r}; choose one of {', '.join(self.layout.daemon_names())}.")
        running = processes.running(self.layout.pid_file(daemon))
        if running is not None:
            return running.pid
        live, _dead = self._daemon_states()
        if daemon != ZOOKEEPER and ZOOKEEPER not in live:
            raise ClusterError(f"ZooKeeper of cluster {self.layout.name!r} is not running; restart it before {daemon}.")
        state = self._saved or {}
        storm_home = Path(state.get("storm_home") or ensure_storm_home())
        heterogeneous = bool(state.get("heterogeneous", False))
        if daemon in NIMBUSES:
            return self._start_nimbus(daemon, storm_home, heterogeneous, report, timeout_s).pid
        process = self._start_daemon(daemon, storm_home, _daemon_environment(self._cluster_jar()), heterogeneous)
        report(f"Started {daemon} again (pid {process.pid}).")
        if daemon == ZOOKEEPER:
            self._wait_for_port(ZOOKEEPER, self.layout.zookeeper_port, min(timeout_s, 120.0))
        elif daemon != UI:
            self._wait_until_registered(timeout_s, report, stopped=set(self._daemon_states()[1]))
        return process.pid

    def leader_daemon(self) -> str | None:
        """The Nimbus daemon that leads now (``nimbus`` or ``nimbus-standby``), None while none does."""
        summary = nimbus.try_summary(self.nimbus_address)
        return self.layout.daemon_of_nimbus(summary.leader) if summary is not None and summary.leader else None

    # ---- helpers other parts use ----------------------------------------------------------

    def is_running(self) -> bool:
        live, _dead = self._daemon_states()
        return bool(live)

    def leftovers(self) -> list[str]:
        """What of this cluster still exists: processes naming its home, its cgroups (none after ``down``)."""
        found = []
        home = str(self.layout.home)
        for process in psutil.process_iter(["pid", "cmdline"]):
            cmdline = " ".join(process.info["cmdline"] or [])
            if home in cmdline:
                found.append(f"process {process.info['pid']}: {cmdline[:100]}")
        if self.hierarchies is not None:
            found += [f"cgroup {f}" for f in self.hierarchies.paths(self.layout.cluster_cgroup) if f.exists()]
        return found

    def cgroup_path(self, machine_id: str) -> Path:
        """The machine's cgroup folder in the cpu controller (where ``cpu.cfs_quota_us`` lives)."""
        return self._require_cgroups().cpu / self.layout.machine(machine_id).cgroup

    def machine_cpu_seconds(self, machine_id: str) -> float:
        """CPU seconds used so far by everything in the machine's cgroup (supervisor, workers, Python)."""
        return cgroups.usage_ns(self._require_cgroups(), self.layout.machine(machine_id).cgroup) / 1e9

    def machine_of_pid(self, pid: int) -> str | None:
        """The machine id a process runs on: by its cgroup, else by its supervisor ancestor; None if not in this cluster."""
        path = cgroups.cgroup_of_pid(pid)
        if path is not None:
            for m in self.layout.machines:
                if path.rstrip("/") == "/" + m.cgroup or path.startswith("/" + m.cgroup + "/"):
                    return m.id
        supervisors = {}
        for m in self.layout.machines:
            process = processes.running(self.layout.pid_file(m.id))
            if process is not None:
                supervisors[process.pid] = m.id
        try:
            chain = [psutil.Process(pid)] + psutil.Process(pid).parents()
        except psutil.Error:
            return None
        return next((supervisors[p.pid] for p in chain if p.pid in supervisors), None)

    @property
    def nimbus_address(self) -> nimbus.NimbusAddress:
        """The first Nimbus, with the standby as a seed: the client connects to whichever leads."""
        return nimbus.NimbusAddress(self.layout.nimbus_host, self.layout.nimbus_port,
                                    f"the local cluster at {self.layout.home}", seeds=tuple(self.layout.nimbus_hosts()[1:]))

    def log_file(self, daemon: str) -> Path:
        if daemon not in self.layout.daemon_names():
            raise ClusterError(f"No daemon {daemon!r}; choose one of {', '.join(self.layout.daemon_names())}.")
        return self.layout.log_file(daemon)

    def worker_logs(self, machine_id: str) -> list[Path]:
        """Worker log files of a machine (``workers-artifacts/<topology>/<port>/worker.log``)."""
        root = self.layout.log_dir(self.layout.machine(machine_id).id) / "workers-artifacts"
        return sorted(root.glob("*/*/worker.log"))

    # ---- the steps of up ------------------------------------------------------------------

    def _daemon_states(self) -> tuple[list[str], list[str]]:
        live, dead = [], []
        for daemon in self.layout.daemon_names():
            pid_file = self.layout.pid_file(daemon)
            if processes.running(pid_file) is not None:
                live.append(daemon)
            elif pid_file.exists():
                dead.append(daemon)
        return live, dead

    def _prepare_home(self, scheduler: str, extra: dict[str, Any], storm_home: Path) -> None:
        layout = self.layout
        # Topologies do not survive a fresh ZooKeeper, so neither does the daemons' local state.
        for folder in (layout.home / "data", layout.home / "run", layout.extlib_daemon):
            shutil.rmtree(folder, ignore_errors=True)
        for folder in (layout.home / "conf", layout.home / "run", layout.extlib_daemon):
            folder.mkdir(parents=True, exist_ok=True)
        if scheduler in ("plugin", "sps", "dps") or PLUGIN_JAR.is_file():
            shutil.copy2(PLUGIN_JAR, layout.extlib_daemon / PLUGIN_JAR.name)
        jar = self._cluster_jar()
        for daemon in layout.daemon_names():
            layout.local_dir(daemon).mkdir(parents=True, exist_ok=True)
            layout.log_dir(daemon).mkdir(parents=True, exist_ok=True)
            listen = listen_conf(layout, daemon) if jar else {}
            text = yaml.safe_dump(daemon_conf(layout, daemon, scheduler, {**listen, **extra}), sort_keys=True)
            layout.conf_file(daemon).write_text(f"# Written by hetsched cluster up for {daemon}; do not edit.\n{text}")
        zookeeper_cfg_file(layout).write_text(zookeeper_cfg(layout))

    def _cluster_jar(self) -> Path | None:
        """The plugin jar in this cluster's extlib-daemon, which also holds the loopback-only Thrift transport."""
        jar = self.layout.extlib_daemon / PLUGIN_JAR.name
        return jar if jar.is_file() else None

    def _save_state(self, scheduler: str, heterogeneous: bool, storm_home: Path, extra: dict[str, Any]) -> None:
        state = {
            "layout": json.loads(self.layout.model_dump_json()),
            "scheduler": scheduler,
            "storm_scheduler": SCHEDULERS[scheduler],
            "heterogeneous": heterogeneous,
            "storm_home": str(storm_home),
            "storm_conf": extra,
            "started_at": time.time(),
        }
        self.layout.state_file.write_text(json.dumps(state, indent=2, default=str))
        self._saved = state

    def _make_cgroups(self) -> None:
        """The cluster's cgroups: machines weighted by their quotas under a cluster cgroup that has priority.

        Priority (``cpu_weight``, default :data:`cgroups.DEFAULT_CLUSTER_SHARES`) is what makes the
        quotas capacities a machine really gets on a busy host, not just caps.
        """
        hierarchies = self._require_cgroups()
        cgroups.create(hierarchies, CGROUP_ROOT_NAME, None, shares=cgroups.ROOT_SHARES)
        cluster_weight = self.spec.cpu_weight or cgroups.DEFAULT_CLUSTER_SHARES
        cgroups.create(hierarchies, self.layout.cluster_cgroup, None, shares=cluster_weight)
        cgroups.create(hierarchies, self.layout.daemons_cgroup, None)
        for m in self.layout.machines:
            cgroups.create(hierarchies, m.cgroup, m.cpu_cores, memory_mb=m.memory_limit_mb)

    def _start_daemons(self, storm_home: Path, heterogeneous: bool, report: Report, timeout_s: float) -> None:
        env = _daemon_environment(self._cluster_jar())
        if self._cluster_jar() is None:
            report(f"WARNING: {PLUGIN_JAR.name} is not built: Nimbus and the supervisors listen on every address of this host.")
        _library, why_not = shim_library()
        if why_not:
            report(f"WARNING: {why_not}: the workers' Netty servers listen on every address of this host.")
        daemons = [ZOOKEEPER, NIMBUS] + ([UI] if has_ui(storm_home) else []) + [m.id for m in self.layout.machines]
        if not has_ui(storm_home):
            report("Storm UI not started: storm-webapp is not on Maven Central (set HETSCHED_STORM_HOME to a full distribution for it).")
        for daemon in daemons:
            process = self._start_daemon(daemon, storm_home, env, heterogeneous)
            report(f"Started {daemon} (pid {process.pid}).")
            if daemon == ZOOKEEPER:
                self._wait_for_port(ZOOKEEPER, self.layout.zookeeper_port, min(timeout_s, 120.0))

    def _start_daemon(self, daemon: str, storm_home: Path, env: dict[str, str], heterogeneous: bool) -> psutil.Process:
        cgroup = None
        if heterogeneous:
            cgroup = self.layout.daemons_cgroup if daemon in NON_MACHINE_DAEMONS else self.layout.machine(daemon).cgroup
        return processes.start(
            java_command(storm_home, self.layout, daemon, self.spec.daemon_heap_mb),
            env=self._bound_environment(daemon, env),
            cwd=self.layout.local_dir(daemon),
            console_file=self.layout.console_file(daemon),
            pid_file=self.layout.pid_file(daemon),
            before_exec=_joiner(self._require_cgroups(), cgroup) if cgroup else None,
        )

    def _bound_environment(self, daemon: str, env: dict[str, str]) -> dict[str, str]:
        """``env`` with the bind-address shim where a daemon must not bind the wildcard address: a supervisor (its
        workers' Netty servers), and each Nimbus where there are two, as both listen on one port (each on its own address)."""
        if daemon in NIMBUSES:
            host = self.layout.nimbus_host_of(daemon) if self.layout.standby_nimbus_host is not None else None
        else:
            host = None if daemon in NON_MACHINE_DAEMONS else self.layout.machine(daemon).host
        if host is None:
            return env
        library, _why_not = shim_library()
        return machine_environment(env, host, library) if library is not None else env

    def _start_nimbus(self, daemon: str, storm_home: Path, heterogeneous: bool, report: Report, timeout_s: float) -> psutil.Process:
        """Start one Nimbus daemon and wait until Nimbus lists it (registered in ZooKeeper) while some Nimbus leads."""
        process = self._start_daemon(daemon, storm_home, _daemon_environment(self._cluster_jar()), heterogeneous)
        report(f"Started {daemon} (pid {process.pid}).")
        listed = f"{self.layout.nimbus_host_of(daemon)}:{self.layout.nimbus_port}"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self._require_alive(daemon)
            summary = nimbus.try_summary(self.nimbus_address)
            if summary is not None and summary.leader and listed in summary.nimbuses:
                role = "leads" if summary.leader == listed else f"stands by (leader: {summary.leader})"
                report(f"{daemon} is listed at {listed} and {role}.")
                return process
            time.sleep(1.0)
        raise ClusterError(
            f"{daemon} was not listed by Nimbus at {listed} within {timeout_s:.0f} s. Last lines of "
            f"{self.layout.log_file(daemon)}:\n{self._log_tail(daemon)}"
        )

    def _wait_for_port(self, daemon: str, port: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self._require_alive(daemon)
            with socket.socket() as probe:
                probe.settimeout(1.0)
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.3)
        raise ClusterError(
            f"{daemon} did not open port {port} within {timeout_s:.0f} s. Last lines of "
            f"{self.layout.log_file(daemon)}:\n{self._log_tail(daemon)}"
        )

    def _wait_until_registered(self, timeout_s: float, report: Report, stopped: set[str] | frozenset[str] = frozenset()) -> None:
        """Wait until some Nimbus leads and lists every machine; a daemon that dies meanwhile fails it, except those
        ``stopped`` before (a killed Nimbus of two, left stopped)."""
        expected = {m.host: m.id for m in self.layout.machines}
        deadline = time.monotonic() + timeout_s
        leader_seen = False
        registered: set[str] = set()
        while time.monotonic() < deadline:
            for daemon in self.layout.daemon_names():
                if self.layout.pid_file(daemon).exists() and daemon not in stopped:
                    self._require_alive(daemon)
            summary = nimbus.try_summary(self.nimbus_address)
            if summary is not None:
                if summary.leader and not leader_seen:
                    leader_seen = True
                    report(f"Nimbus is leader at {summary.leader}.")
                now = {s.host for s in summary.supervisors} & expected.keys()
                for host in sorted(now - registered):
                    report(f"Supervisor {expected[host]} registered ({host}).")
                registered = now
                if leader_seen and registered == expected.keys():
                    return
            time.sleep(1.0)
        if not leader_seen:
            raise ClusterError(
                f"Nimbus did not become leader within {timeout_s:.0f} s. Last lines of "
                f"{self.layout.log_file(NIMBUS)}:\n{self._log_tail(NIMBUS)}"
            )
        missing = [expected[h] for h in expected if h not in registered]
        tails = "\n".join(f"--- {self.layout.log_file(m)} ---\n{self._log_tail(m)}" for m in missing)
        raise ClusterError(
            f"Supervisor(s) {', '.join(missing)} did not register with Nimbus within {timeout_s:.0f} s.\n{tails}"
        )

    def _require_alive(self, daemon: str) -> None:
        if processes.running(self.layout.pid_file(daemon)) is None:
            raise ClusterError(
                f"{daemon} exited during start. Last lines of its output:\n{self._log_tail(daemon)}"
            )

    def _last_error(self, daemon: str) -> str:
        """The last ERROR line of a daemon's log other than Storm's "Halting process" (what made it stop), or where to look."""
        log_file = self.layout.log_file(daemon)
        found = None
        try:
            with log_file.open(errors="replace") as lines:
                for line in lines:
                    if "[ERROR]" in line and "Halting process" not in line:
                        found = line.strip()
        except OSError:
            pass
        return f"{log_file}: {found[:300]}" if found else f"no ERROR line in {log_file}"

    def _log_tail(self, daemon: str, lines: int = 20) -> str:
        log_file = self.layout.log_file(daemon)
        console = self.layout.console_file(daemon)
        parts = []
        if console.exists() and console.stat().st_size:
            parts.append(processes.tail(console, lines))
        parts.append(processes.tail(log_file, lines))
        return "\n".join(parts)

    # ---- cgroups and home -----------------------------------------------------------------

    def _require_cgroups(self) -> cgroups.Hierarchies:
        """The host's cgroup controllers, refusing with one sentence where there are none."""
        if self.hierarchies is None:
            raise ClusterError("This host has no cgroup v1 cpu/cpuacct controllers; machines have no CPU accounting.")
        return self.hierarchies

    def _cpu_seconds_or_none(self, cgroup: str) -> float | None:
        if self.hierarchies is None:
            return None
        try:
            return cgroups.usage_ns(self.hierarchies, cgroup) / 1e9
        except (ClusterError, OSError, ValueError):
            return None

    def _cgroup_members(self, cgroup: str) -> list[int]:
        return cgroups.members(self.hierarchies, cgroup) if self.hierarchies else []

    def _purge_home(self) -> None:
        """Remove what ``up`` wrote (and nothing else) from the home, then the home if it is empty."""
        home = self.layout.home
        for folder in ("conf", "run", "data", "logs", "extlib-daemon"):
            shutil.rmtree(home / folder, ignore_errors=True)
        self.layout.state_file.unlink(missing_ok=True)
        try:
            home.rmdir()
        except OSError:
            pass


def _joiner(hierarchies: cgroups.Hierarchies, cgroup: str) -> Callable[[], None]:
    """Runs in the forked child before exec: the daemon starts inside its cgroup."""

    def join() -> None:
        cgroups.join(hierarchies, cgroup, os.getpid())

    return join


def _daemon_environment(cluster_jar: Path | None = None) -> dict[str, str]:
    """The daemons' environment: the project's virtualenv first on PATH, so workers find ``streamparse_run``.

    ``cluster_jar`` goes on the workers' class path (a supervisor adds ``STORM_EXT_CLASSPATH`` to its
    workers'): they read the supervisor's Thrift transport setting and need its class.
    """
    env = dict(os.environ)
    if cluster_jar is not None:
        env["STORM_EXT_CLASSPATH"] = str(cluster_jar)
    else:
        env.pop("STORM_EXT_CLASSPATH", None)
    venv_bin = Path(sys.prefix) / "bin"
    if not (venv_bin / "streamparse_run").exists():
        found = shutil.which("streamparse_run")
        if found:
            venv_bin = Path(found).parent
        else:
            log.warning("streamparse_run not found; Python (multi-lang) components will not start on this cluster.")
    env["PATH"] = f"{venv_bin}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
    env.pop("JAVA_TOOL_OPTIONS", None)
    return env


def _processes(pids: list[int]) -> list[psutil.Process]:
    found = []
    for pid in pids:
        try:
            found.append(psutil.Process(pid))
        except psutil.Error:
            continue
    return found


def _read_state(home: Path) -> dict[str, Any] | None:
    try:
        return json.loads((home / "state.json").read_text())
    except (OSError, ValueError):
        return None


def _saved_layout(state: dict[str, Any]) -> ClusterLayout | None:
    try:
        return ClusterLayout.model_validate(state["layout"])
    except (KeyError, ValueError):
        return None


def _any_running(layout: ClusterLayout) -> bool:
    return any(processes.running(layout.pid_file(d)) is not None for d in layout.daemon_names())
