"""The heterogeneous cluster as docker-compose containers: up, status, down, and its ClusterHandle.

The same machines as the local cluster (one supervisor container per machine of the spec, with
``cpus:`` its quota), started from the committed ``docker-compose.yml`` plus an override file of
the run's own in its home: the published ports (a free range, on 127.0.0.1 only), fresh planner
tokens (one per holder), and Nimbus's storm.yaml for the scheduler asked for. One compose project per home, so
``down`` removes exactly what ``up`` made: containers, networks, the planner's volume.

It offers what the bench uses of :class:`cluster.local.LocalCluster` (``up``, ``down``,
``status``, ``restart_stopped_supervisors``, ``handle``, ``layout``), so ``hetsched bench
--cluster compose`` runs the same code on it.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psutil
import yaml

from cluster import compose
from cluster.errors import ClusterError
from cluster.layout import NIMBUS, ZOOKEEPER, make_layout
from cluster.local import ClusterStatus, Supervisor
from cluster.spec import ClusterSpec, load_spec
from cluster.storm_config import SCHEDULERS
from observe import nimbus
from planner.service.scopes import ALL_SCOPES, TokenFileError, parse_token_lines
from observe.machines import Machine, TaskProcess

log = logging.getLogger(__name__)

Report = Callable[[str], None]
REPO_ROOT = compose.REPO_ROOT
PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"
PORTS_NEEDED = 2
"""Published on 127.0.0.1: Nimbus Thrift (port base), the planner (port base + 1)."""
WORKER_CLASS = "org.apache.storm.daemon.worker.Worker"
LOG_WRITER_CLASS = "org.apache.storm.LogWriter"
_LAUNCHED = re.compile(
    r"^(?P<when>\S+ \S+) .*Thread-\d+-(?P<component>.+)-executor\[(?P<start>\d+), (?P<end>\d+)\] "
    r"\[INFO\] Launched subprocess with pid (?P<pid>\d+)"
)


def default_home(spec: ClusterSpec) -> Path:
    return REPO_ROOT / "var" / "clusters" / f"compose-{spec.name}"


def compose_tool() -> list[str]:
    """``docker compose`` (v2) where the plugin is there, else Debian's ``docker-compose`` (1.29)."""
    if shutil.which("docker") is not None:
        v2 = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, check=False)
        if v2.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose") is not None:
        return ["docker-compose"]
    raise ClusterError("Neither 'docker compose' nor 'docker-compose' is installed: apt-get install docker-compose, or make setup.")


@dataclass(frozen=True)
class ComposeDownReport:
    removed: list[str]
    """What ``docker compose down`` removed (containers, networks, volumes), as it said."""
    left: list[str]
    """The project's objects still there afterwards (empty: nothing left behind)."""
    purged: bool


class ComposeCluster:
    """One compose deployment, identified by its home (where its override file, token and state live)."""

    def __init__(self, spec: ClusterSpec | None = None, *, home: str | Path | None = None,
                 port_base: int | None = None) -> None:
        self.spec = spec or load_spec()
        self.home = Path(home).resolve() if home else default_home(self.spec)
        saved = self._read_state()
        self.port_base = port_base or (saved or {}).get("port_base") or self.spec.port_base
        self.layout = make_layout(self.spec, self.home, self.port_base)
        """Machines (ids, types, quotas, slots, memory) as the local cluster's; hosts differ (see ``host``)."""
        self.project = "hetsched-" + hashlib.sha256(str(self.home).encode()).hexdigest()[:10]

    # ---- where things are ------------------------------------------------------------------------

    @property
    def nimbus_port(self) -> int:
        return self.port_base

    @property
    def planner_port(self) -> int:
        return self.port_base + 1

    @property
    def nimbus_address(self) -> nimbus.NimbusAddress:
        return nimbus.NimbusAddress("127.0.0.1", self.nimbus_port, self.name)

    @property
    def name(self) -> str:
        return f"the compose cluster {self.project} ({self.home})"

    @property
    def planner_url(self) -> str:
        """The planner as the host reaches it (published on 127.0.0.1)."""
        return f"http://127.0.0.1:{self.planner_port}"

    cluster_planner_url = compose.PLANNER_URL
    """The planner as Nimbus and the workers reach it (by service name on the cluster network)."""

    @property
    def token_file(self) -> Path:
        """The operator's token (every scope), for calls from the host."""
        return self.home / "secrets" / compose.OPERATOR_TOKEN_FILE

    def planner_token(self) -> str:
        """The operator's token; a home made before tokens had scopes has only the planner's one bare token."""
        try:
            if self.token_file.is_file():
                return self.token_file.read_text().strip()
            planner_file = self.home / "secrets" / compose.PLANNER_TOKEN.file_name
            grants = parse_token_lines(planner_file.read_text(), str(planner_file))
        except OSError as fault:
            raise ClusterError(f"Cannot read the planner token {self.token_file}: {fault.strerror or fault}.") from None
        except TokenFileError as fault:
            raise ClusterError(f"{fault}.") from None
        every = [token for token, scopes in grants.items() if scopes == ALL_SCOPES]
        if not every:
            raise ClusterError(f"The planner's token file {planner_file} has no token with every scope.")
        return every[0]

    def host(self, machine_id: str) -> str:
        """The host a machine's supervisor registers as: its service name."""
        return compose.supervisor_service(machine_id)

    def supervisor_conf_files(self) -> list[Path]:
        """Each supervisor's storm.yaml as the compose file mounts it (``docker/storm/supervisor-<machine>.yaml``):
        where ``hetsched tune``, ``replan`` and ``placement`` read the machine each one declares."""
        return [p for m in self.layout.machines
                if (p := self.deployment_dir() / compose.CONF_FOLDER / f"{self.host(m.id)}.yaml").is_file()]

    def deployment_dir(self) -> Path:
        """The folder of the compose file this cluster runs: the repository's committed one where it is what the
        spec gives, else (another spec, e.g. one more machine) one generated into the home from the spec, so every
        machine of the spec gets its container."""
        return REPO_ROOT if self._runs_committed_files else self.home / "compose" / "deployment"

    @functools.cached_property
    def _runs_committed_files(self) -> bool:
        """Decided once per cluster object: rendering the deployment to compare it is too much for every command."""
        return not compose.stale_files(self.spec)

    def _write_deployment(self) -> None:
        if self.deployment_dir() != REPO_ROOT:
            compose.write(self.spec, out_dir=self.deployment_dir())

    def handle(self) -> ComposeClusterHandle:
        return ComposeClusterHandle(self)

    # ---- the operator's verbs --------------------------------------------------------------------

    def up(self, scheduler: str = "plugin", conf: dict[str, Any] | None = None, *, timeout_s: float = 420.0,
           report: Report = log.info, allow_homogeneous: bool = False, build: bool = True) -> ClusterStatus:
        """Build what is missing, start the project and wait until Nimbus leads and every supervisor registered.

        ``allow_homogeneous`` is accepted for the local cluster's signature: containers always get their quotas.
        """
        from cluster.compose_images import ensure_images

        if scheduler not in SCHEDULERS:
            raise ClusterError(f"Unknown scheduler {scheduler!r}; choose one of {', '.join(SCHEDULERS)}.")
        from cluster.compose_images import require_docker

        require_docker(report)
        tool = compose_tool()
        conf = json.loads(json.dumps(conf or {}))
        if self.containers():
            status = self.status()
            if status.stopped_daemons or not all(s.supervisor_id for s in status.supervisors):
                raise ClusterError(f"{self.name} is partly running; run 'hetsched cluster down --compose --home {self.home}' first.")
            state = self._read_state() or {}
            if state.get("scheduler") == scheduler and state.get("conf", {}) == conf:
                return replace(status, already_running=True)
            report(f"recreating Nimbus with {scheduler} (the rest keeps running)")
            self._write_run_files(scheduler, conf, new_token=False)
            self._save_state(scheduler, conf)
            self._compose(tool, "up", "-d", "--no-build", "--no-deps", "--force-recreate", NIMBUS)
            self._wait_until_registered(timeout_s, report)
            return self.status()
        self._require_ports_free()
        from cluster.preflight import stale_plugin_jar

        if stale := stale_plugin_jar():  # the image takes the jar as it is
            report(stale)
        if build:
            for image in ensure_images(report):
                if image.built:
                    report(f"built {image.name} in {image.seconds:g} s")
        self._write_deployment()
        self._write_run_files(scheduler, conf, new_token=True)
        self._save_state(scheduler, conf)
        report(f"starting {self.project}: ZooKeeper, Nimbus ({scheduler}), the planner, "
               + ", ".join(f"{m.id} ({m.cpu_cores:g} cores)" for m in self.layout.machines))
        try:
            self._compose(tool, "up", "-d", "--no-build")
            self._wait_until_registered(timeout_s, report)
        except BaseException:
            report("Start failed; removing what was started.")
            self._save_logs()
            self.down()
            raise
        return self.status()

    def down(self, purge: bool = False) -> ComposeDownReport:
        """Remove every container, network and volume of the project (images stay: they are the cache)."""
        removed: list[str] = []
        if self._compose_files_exist():
            done = self._compose(compose_tool(), "down", "--volumes", "--remove-orphans", "--timeout", "10", check=False)
            removed = [line.strip() for line in done.splitlines() if line.strip().startswith("Removing")
                       or "Removed" in line]
        left = self.leftovers()
        if left:  # made by another compose file, or the files are gone: remove by label
            self._remove_by_label()
            left = self.leftovers()
        if purge:
            shutil.rmtree(self.home, ignore_errors=True)
        return ComposeDownReport(removed=removed, left=left, purged=purge)

    def status(self) -> ClusterStatus:
        """What runs now: the supervisors with Nimbus's view, the topologies, stopped containers."""
        containers = self.containers()
        running = {c["service"] for c in containers if c["running"]}
        summary = nimbus.try_summary(self.nimbus_address) if NIMBUS in running else None
        registered = {s.host: s for s in summary.supervisors} if summary else {}
        handle = self.handle()
        supervisors = []
        heterogeneous = bool(containers)
        for m in self.layout.machines:
            seen = registered.get(self.host(m.id))
            quota = handle.cpu_quota_cores(m.id) if self.host(m.id) in running else None
            heterogeneous = heterogeneous and quota is not None and abs(quota - m.cpu_cores) < 1e-6
            supervisors.append(Supervisor(
                machine_id=m.id, machine_type=m.type, host=self.host(m.id), cpu_cores=m.cpu_cores, slots=m.slots,
                slot_ports=[compose.FIRST_SLOT_PORT + i for i in range(m.slots)], memory_mb=m.memory_mb, cgroup=None,
                supervisor_id=seen.supervisor_id if seen else None, used_slots=seen.used_slots if seen else None,
                cpu_seconds=handle.cpu_seconds(m.id) if self.host(m.id) in running else None,
            ))
        expected = [ZOOKEEPER, NIMBUS, compose.PLANNER_SERVICE] + [self.host(m.id) for m in self.layout.machines]
        state = self._read_state() or {}
        return ClusterStatus(
            name=self.spec.name, home=self.home, running=bool(running), scheduler=state.get("scheduler") if running else None,
            heterogeneous=heterogeneous, nimbus_host="127.0.0.1", nimbus_port=self.nimbus_port,
            nimbus_leader=summary.leader if summary else None, ui_url=None, supervisors=supervisors,
            topologies=summary.topologies if summary else [],
            stopped_daemons=[s for s in expected if s not in running] if containers else [],
        )

    def is_running(self) -> bool:
        return any(c["running"] for c in self.containers())

    def restart_stopped_supervisors(self, timeout_s: float = 180.0, report: Report = log.info) -> list[str]:
        """Start again a supervisor container that exited (``restart: unless-stopped`` normally does it first)."""
        stopped = [c for c in self.containers() if not c["running"] and c["service"].startswith("supervisor-")]
        if not stopped:
            return []
        for c in stopped:
            report(f"Supervisor container {c['service']} had stopped; starting it again.")
            _docker("start", c["id"])
        self._wait_until_registered(timeout_s, report)
        return [c["service"].removeprefix("supervisor-") for c in stopped]

    def leftovers(self) -> list[str]:
        """The project's containers, networks and volumes still there (none after ``down``)."""
        label = f"label={PROJECT_LABEL}={self.project}"
        found = []
        for kind, command in (("container", ["ps", "-a", "--filter", label, "--format", "{{.Names}}"]),
                              ("network", ["network", "ls", "--filter", label, "--format", "{{.Name}}"]),
                              ("volume", ["volume", "ls", "--filter", label, "--format", "{{.Name}}"])):
            found += [f"{kind} {name}" for name in _docker(*command).split()]
        return found

    def containers(self) -> list[dict[str, Any]]:
        """The project's containers: id, service, running."""
        if shutil.which("docker") is None:
            return []
        done = subprocess.run(["docker", "ps", "-a", "--filter", f"label={PROJECT_LABEL}={self.project}", "--format",
                               "{{.ID}}\t{{.Label \"" + SERVICE_LABEL + "\"}}\t{{.State}}"],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return []
        found = []
        for line in done.stdout.splitlines():
            cid, service, state = line.split("\t")
            found.append({"id": cid, "service": service, "running": state == "running"})
        return found

    def container_id(self, service: str) -> str:
        for c in self.containers():
            if c["service"] == service:
                return c["id"]
        raise ClusterError(f"{self.name} has no container for {service}.")

    def save_logs(self, folder: Path) -> Path | None:
        """Copy every daemon's and worker's log folder out of the containers (before ``down``)."""
        return self._save_logs(folder)

    # ---- the steps of up -------------------------------------------------------------------------

    def _require_ports_free(self) -> None:
        from cluster.ports import listener_of

        for port, what in ((self.nimbus_port, "Nimbus Thrift"), (self.planner_port, "the planner")):
            if listener_of(port) is not False:
                raise ClusterError(f"Port {port} (for {what}) is taken on 127.0.0.1; choose another --port-base.")

    def _write_run_files(self, scheduler: str, conf: dict[str, Any], new_token: bool) -> None:
        """The override file, Nimbus's storm.yaml for ``scheduler``, and (``new_token``) a fresh planner token, in the home."""
        run = self.home / "compose"
        run.mkdir(parents=True, exist_ok=True)
        nimbus_conf = compose.deployment(self.spec, scheduler=scheduler, nimbus_extra=conf).storm_confs[f"{NIMBUS}.yaml"]
        (run / "nimbus.yaml").write_text(yaml.safe_dump(nimbus_conf, sort_keys=True))
        (run / "nimbus.yaml").chmod(0o644)
        present = [(self.home / "secrets" / t.file_name).is_file() for t in compose.TOKEN_SECRETS]
        if new_token or not any(present):
            compose.write_token_files(self.home, secrets_folder=Path("secrets"))
        elif not all(present):
            raise ClusterError(f"{self.name} runs with one planner token for every holder; run 'hetsched cluster down "
                               f"--compose --home {self.home}' and up again to give each holder its own.")
        nimbus_volumes: list[dict[str, Any]] = [
            {"type": "bind", "source": str(run / "nimbus.yaml"), "target": compose.CONF_IN_CONTAINER, "read_only": True}]
        for extra in sorted((self.home / "conf").glob("*.yaml")):  # RAS's user pools: on Nimbus's class path
            nimbus_volumes.append({"type": "bind", "source": str(extra), "read_only": True,
                                   "target": f"{compose.STORM_HOME_IN_IMAGE}/conf/{extra.name}"})
        override = {
            "services": {NIMBUS: {"volumes": nimbus_volumes}},
            "secrets": {t.secret: {"file": str(self.home / "secrets" / t.file_name)} for t in compose.TOKEN_SECRETS},
        }
        (run / "override.yml").write_text("# Written by hetsched cluster up --compose for this run.\n"
                                          + yaml.safe_dump(override, sort_keys=False))

    def _wait_until_registered(self, timeout_s: float, report: Report) -> None:
        deadline = time.monotonic() + timeout_s
        hosts = {self.host(m.id) for m in self.layout.machines}
        said = ""
        while True:
            summary = nimbus.try_summary(self.nimbus_address)
            seen = {s.host for s in summary.supervisors} if summary else set()
            planner = self._planner_answers()
            if summary and summary.leader and hosts <= seen and planner:
                report(f"Nimbus leads, the planner answers, and every supervisor registered: {', '.join(sorted(hosts))}")
                return
            now = ("Nimbus not answering yet" if summary is None else
                   f"registered {len(seen & hosts)}/{len(hosts)} supervisors" + ("" if planner else ", planner not yet"))
            if now != said:
                report(f"waiting: {now}")
                said = now
            exited = [c["service"] for c in self.containers() if not c["running"]]
            if exited and time.monotonic() > deadline - timeout_s + 60:
                raise ClusterError(f"Containers of {self.project} exited: {', '.join(exited)} (logs: docker logs <id>, "
                                   f"or {self.home / 'logs'} after this failure).")
            if time.monotonic() > deadline:
                raise ClusterError(f"{self.name} was not ready within {timeout_s:.0f} s ({now}).")
            time.sleep(2.0)

    def _planner_answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.planner_url}/healthz", timeout=3) as answer:
                return answer.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def _compose(self, tool: list[str], *args: str, check: bool = True) -> str:
        env = {**os.environ, compose.NIMBUS_PORT_VARIABLE: str(self.nimbus_port),
               compose.PLANNER_PORT_VARIABLE: str(self.planner_port)}
        folder = self.deployment_dir()
        command = [*tool, "--project-name", self.project, "--project-directory", str(folder),
                   "-f", str(folder / compose.COMPOSE_FILE), "-f", str(self.home / "compose" / "override.yml"), *args]
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=600)
        if check and done.returncode != 0:
            raise ClusterError(f"{' '.join(tool)} {args[0]} failed (exit {done.returncode}): "
                               + " ".join((done.stderr or done.stdout).strip().splitlines()[-6:]))
        return done.stdout + done.stderr

    def _compose_files_exist(self) -> bool:
        return (self.home / "compose" / "override.yml").is_file() and (
            self.deployment_dir() / compose.COMPOSE_FILE).is_file()

    def _remove_by_label(self) -> None:
        label = f"label={PROJECT_LABEL}={self.project}"
        containers = _docker("ps", "-aq", "--filter", label).split()
        if containers:
            _docker("rm", "-f", *containers)
        for kind in ("network", "volume"):
            names = _docker(kind, "ls", "-q", "--filter", label).split()
            if names:
                _docker(kind, "rm", *names)

    def _save_logs(self, folder: Path | None = None) -> Path | None:
        folder = folder or self.home / "logs"
        copied = None
        for c in self.containers():
            target = folder / c["service"]
            target.mkdir(parents=True, exist_ok=True)
            done = subprocess.run(["docker", "cp", f"{c['id']}:/logs/.", str(target)], capture_output=True, check=False)
            if done.returncode == 0:
                copied = folder
        return copied

    def _state_file(self) -> Path:
        return self.home / "compose-state.json"

    def _read_state(self) -> dict[str, Any] | None:
        try:
            return json.loads(self._state_file().read_text())
        except (OSError, ValueError):
            return None

    def _save_state(self, scheduler: str, conf: dict[str, Any]) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self._state_file().write_text(json.dumps({"project": self.project, "port_base": self.port_base,
                                                  "scheduler": scheduler, "conf": conf, "spec": self.spec.name},
                                                 indent=2) + "\n")


def compose_cluster_at(address: nimbus.NimbusAddress, home: str | Path | None = None) -> ComposeCluster | None:
    """The compose cluster started from ``home`` (default: its default home) whose Nimbus is ``address``, else None.

    Reads only the home's state file: no Docker call, so it costs nothing where no compose cluster ever ran.
    """
    try:
        cluster = ComposeCluster(home=home)
    except Exception:  # no spec, or an unreadable home: not one of ours
        return None
    if cluster._read_state() is None or (address.host, address.port) != ("127.0.0.1", cluster.nimbus_port):
        return None
    return cluster


class ComposeClusterHandle:
    """A :class:`ComposeCluster` seen through the observer's protocol (:class:`observe.machines.ClusterHandle`).

    CPU and quota come from each supervisor container's cgroup (v1: ``cpuacct.usage``,
    ``cpu.cfs_quota_us``; v2: ``cpu.stat``, ``cpu.max``), found through the container's first process.
    Everything a machine runs (supervisor, workers, their Python processes) is in that cgroup.
    """

    def __init__(self, cluster: ComposeCluster) -> None:
        self.cluster = cluster

    @property
    def name(self) -> str:
        return self.cluster.name

    @property
    def nimbus(self) -> nimbus.NimbusAddress:
        return self.cluster.nimbus_address

    def machines(self) -> list[Machine]:
        return [Machine(m.id, m.type, m.cpu_cores, self.cluster.host(m.id)) for m in self.cluster.layout.machines]

    def cpu_seconds(self, machine_id: str) -> float:
        v1, v2 = self._cgroup(machine_id)
        if v2 is not None:
            stat = dict(line.split() for line in (v2 / "cpu.stat").read_text().splitlines())
            return int(stat["usage_usec"]) / 1e6
        return int((v1["cpuacct"] / "cpuacct.usage").read_text()) / 1e9

    def cpu_quota_cores(self, machine_id: str) -> float | None:
        v1, v2 = self._cgroup(machine_id)
        if v2 is not None:
            limit, every = (v2 / "cpu.max").read_text().split()
            return None if limit == "max" else int(limit) / int(every)
        quota = int((v1["cpu"] / "cpu.cfs_quota_us").read_text())
        period = int((v1["cpu"] / "cpu.cfs_period_us").read_text())
        return None if quota <= 0 else quota / period

    def processes(self, machine_id: str) -> list[int]:
        found: set[int] = set()
        for pid in self._pids(machine_id):
            try:
                process = psutil.Process(pid)
                cmdline = " ".join(process.cmdline())
                if WORKER_CLASS not in cmdline or LOG_WRITER_CLASS in cmdline:
                    continue
                found.add(pid)
                found.update(child.pid for child in process.children(recursive=True))
            except psutil.Error:
                continue
        return sorted(found)

    def task_processes(self, machine_id: str, topology_id: str) -> dict[int, TaskProcess]:
        """Task -> Python process, from the workers' ``Launched subprocess with pid N`` (a pid inside the container)."""
        service = self.cluster.host(machine_id)
        logs = subprocess.run(
            ["docker", "exec", self.cluster.container_id(service), "sh", "-c",
             f"cat /logs/workers-artifacts/{topology_id}/*/worker.log 2>/dev/null; "
             f"ls -d /data/workers/*/pids/* 2>/dev/null"],
            capture_output=True, text=True, check=False).stdout
        launched = sorted((m["when"], int(m["start"]), m["component"], int(m["pid"]))
                          for m in map(_LAUNCHED.match, logs.splitlines()) if m)
        worker_of = {int(p.rsplit("/", 1)[1]): p.split("/")[3] for p in logs.splitlines() if p.startswith("/data/workers/")}
        host_pid = self._host_pids(machine_id)
        found = {}
        for _when, task, component, inner in launched:
            if inner in host_pid:
                found[task] = TaskProcess(task, component, host_pid[inner], worker_of.get(inner))
        return found

    def stopped_daemons(self) -> list[str]:
        return self.cluster.status().stopped_daemons

    # ---- cgroups ---------------------------------------------------------------------------------

    def _cgroup(self, machine_id: str) -> tuple[dict[str, Path], Path | None]:
        """The container's cgroup folders: v1 by controller, or the v2 folder."""
        service = self.cluster.host(machine_id)
        pid = _docker("inspect", "--format", "{{.State.Pid}}", self.cluster.container_id(service)).strip()
        if not pid or pid == "0":
            raise ClusterError(f"The container of {machine_id} ({service}) is not running.")
        v1: dict[str, Path] = {}
        v2 = None
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            _id, controllers, path = line.split(":", 2)
            if controllers == "":
                v2 = Path("/sys/fs/cgroup") / path.lstrip("/")
            for controller in controllers.split(","):
                if controller in ("cpu", "cpuacct"):
                    v1[controller] = _mount_of(controller) / path.lstrip("/")
        if {"cpu", "cpuacct"} <= set(v1):
            return v1, None
        if v2 is not None:
            return {}, v2
        raise ClusterError(f"No cpu/cpuacct cgroup found for {service} (pid {pid}).")

    def _pids(self, machine_id: str) -> list[int]:
        v1, v2 = self._cgroup(machine_id)
        folder = v2 if v2 is not None else v1["cpu"]
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]

    def _host_pids(self, machine_id: str) -> dict[int, int]:
        """Pid inside the container -> pid on this host (``NSpid`` of /proc/<pid>/status)."""
        found = {}
        for pid in self._pids(machine_id):
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("NSpid:"):
                        found[int(line.split()[-1])] = pid
            except OSError:
                continue
        return found


def _mount_of(controller: str) -> Path:
    """Where a cgroup v1 controller is mounted (``/sys/fs/cgroup/cpu`` or ``.../cpu,cpuacct``)."""
    for line in Path("/proc/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) > 3 and parts[2] == "cgroup" and controller in parts[3].split(","):
            return Path(parts[1])
    raise ClusterError(f"The cgroup v1 controller {controller} is not mounted.")


def _docker(*args: str) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ClusterError(f"docker {args[0]} failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    return done.stdout
