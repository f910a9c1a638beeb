"""The docker-compose deployment of a cluster spec: the local cluster's machines as containers. Pure but for ``write``.

The local cluster and the compose file describe the same machines, so the
compose file is generated from the spec, never written by hand. Each daemon's
storm.yaml starts from what the local cluster would give it
(:func:`cluster.storm_config.daemon_conf`: machine type, CPU capacity,
timeouts, worker options, the spec's own ``storm_conf``); only *where*
things are (hosts, ports, folders) is replaced by the containers' own.

Files made (relative to the output folder, normally the repository root):

- ``docker-compose.yml``: ZooKeeper, Nimbus with the plugin, the planner and
  one supervisor per machine, each with ``cpus:`` = the machine's CPU quota in
  cores (and ``mem_limit:`` where its type has a ``memory_limit_mb``), all on one ``internal`` network; Nimbus and the planner also sit on
  an ``edge`` network without NAT, only so their ports can be published on
  127.0.0.1 (an internal network publishes nothing);
- ``docker/storm/<daemon>.yaml``: each Storm daemon's storm.yaml, mounted
  read-only at ``/etc/hetsched/storm.yaml`` (``-Dstorm.conf.file``), and
  ``docker/storm/zookeeper.cfg``.

The images are built here from Debian's packages, Maven Central and PyPI
(:mod:`cluster.compose_images`); every daemon runs as a plain ``java``
command, the same as the local cluster's (:func:`cluster.storm_config.java_command`).
The Storm UI is left out: ``storm-webapp`` is not on Maven Central.

The planner's tokens reach the planner, Nimbus and the supervisors (whose workers ship their metrics
to the planner) as compose secrets (files under ``docker/secrets/``, made by ``hetsched cluster
compose --new-token``), never on a command line or in a storm.yaml that Nimbus would show
(``getNimbusConf``). Each holder has a token of its own with only the scopes it needs: Nimbus's
plugin read, plan and bind, the workers (who run user code) records only, and the operator on the
host every scope. One file per service, each readable by its owner only.
"""
from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cluster.errors import ClusterError
from cluster.cgroups import SHARES_PER_CORE
from cluster.layout import NIMBUS, ZOOKEEPER, make_layout
from cluster.spec import DEFAULT_SPEC, ClusterSpec
from cluster.storm_config import MAIN_CLASSES, SUPERVISOR_MAIN, daemon_conf
from cluster.storm_home import STORM_VERSION
from planner.service.scopes import ALL_WORD, Scope

REPO_ROOT = Path(__file__).resolve().parents[1]

BASE_IMAGE = "hetsched-base:bookworm"
"""Debian bookworm with OpenJDK 17, Python 3 and procps, made by docker/build-base.sh (debootstrap)."""
STORM_IMAGE = f"hetsched-storm:{STORM_VERSION}"
"""Storm from Maven Central (cluster/storm_home.py), the plugin jar, streamparse (docker/storm.Dockerfile).
ZooKeeper runs from it too: the ZooKeeper server Storm ships (shaded in storm-shaded-deps)."""
PLANNER_IMAGE = "hetsched-planner"
"""The core install of hetsched: planner, service, command line (docker/planner.Dockerfile)."""
ZOOKEEPER_MAIN = "org.apache.storm.shade.org.apache.zookeeper.server.ZooKeeperServerMain"

CLUSTER_NETWORK = "cluster"
"""Every container, ``internal``: no route out of it, names resolve to the project's own containers."""
EDGE_NETWORK = "edge"
"""Nimbus and the planner only, so their ports can be published on 127.0.0.1; no NAT (masquerade off)."""
NIMBUS_PORT_VARIABLE = "HETSCHED_COMPOSE_NIMBUS_PORT"
PLANNER_PORT_VARIABLE = "HETSCHED_COMPOSE_PLANNER_PORT"

PLANNER_SERVICE = "planner"
PLANNER_PORT = 8765
PLANNER_URL = f"http://{PLANNER_SERVICE}:{PLANNER_PORT}"
"""How Nimbus reaches the planner on the compose network."""
PLANNER_DB = "/var/lib/hetsched/hetsched.db"
SECRETS_FOLDER = Path("docker") / "secrets"
"""Token files, git-ignored, made by :func:`write_token_files`."""


@dataclass(frozen=True)
class TokenSecret:
    """One service's planner token file: a compose secret from a file readable by the service's user only."""

    secret: str
    file_name: str
    uid: int
    """The user the service's image runs as, who must own the file."""

    @property
    def in_container(self) -> str:
        return f"/run/secrets/{self.secret}"

    @property
    def source(self) -> Path:
        return SECRETS_FOLDER / self.file_name


STORM_UID = 1000
"""The ``storm`` user of docker/storm.Dockerfile, whom the Storm daemons run as."""
PLANNER_UID = 1001
"""The ``hetsched`` user of docker/planner.Dockerfile."""
PLANNER_TOKEN = TokenSecret("planner_token", "planner-token", PLANNER_UID)
"""The planner's token file (``--token-file``): one ``SCOPES TOKEN`` line per holder below."""
NIMBUS_TOKEN = TokenSecret("nimbus_planner_token", "nimbus-planner-token", STORM_UID)
"""The plugin's token, alone in its file (``hetsched.planner.token.file`` in Nimbus's storm.yaml)."""
WORKERS_TOKEN = TokenSecret("workers_planner_token", "workers-planner-token", STORM_UID)
"""The workers' metrics hook's token, alone in its file (the same setting in each supervisor's storm.yaml)."""
TOKEN_SECRETS = (PLANNER_TOKEN, NIMBUS_TOKEN, WORKERS_TOKEN)
OPERATOR_TOKEN_FILE = "operator-token"
"""The operator's token on the host (every scope), mounted nowhere; the file stays its writer's."""
NIMBUS_SCOPES = (Scope.READ, Scope.PLAN, Scope.BIND)
"""What the plugin calls: GETs of plans, bindings and profile sets; plans, repairs, evaluations and
``/v1/tenants/alive``; and ``PUT /v1/assignments`` when it re-places a running topology itself."""
WORKERS_SCOPES = (Scope.RECORDS,)
"""The workers run the topologies' own code, so their token may post records and nothing else."""
TOKEN_FILE_VARIABLE = "HETSCHED_PLANNER_TOKEN_FILE"
"""``hetsched serve --token-file`` from the environment."""
TOKEN_FILE_SETTING = "hetsched.planner.token.file"
METRICS_TOKEN_FILE_SETTING = "hetsched.metrics.token.file"
"""The workers' token file in a supervisor's storm.yaml: not TOKEN_FILE_SETTING, which Nimbus's storm.yaml sets and
Nimbus merges into every topology's conf, where it would win over the supervisor's in the workers."""
METRICS_URL_SETTING = "hetsched.metrics.url"
"""Where the workers' metrics hook posts its records (docs/operations/plugin.md#worker-metrics); a supervisor's storm.yaml sets
it for its workers, with the workers' records-only token."""

STORM_HOME_IN_IMAGE = "/apache-storm"
CONF_IN_CONTAINER = "/etc/hetsched/storm.yaml"
PLUGIN_JAR_NAME = "hetsched-storm-plugin.jar"
PLUGIN_JAR_IN_CONTAINER = f"{STORM_HOME_IN_IMAGE}/extlib-daemon/{PLUGIN_JAR_NAME}"
PLUGIN_JAR_IN_WORKERS = f"{STORM_HOME_IN_IMAGE}/extlib/{PLUGIN_JAR_NAME}"
"""Workers load the plugin jar's metrics task hook (``hetsched submit`` turns it on)."""
ZOOKEEPER_CFG_IN_CONTAINER = "/etc/hetsched/zoo.cfg"
VENV_IN_IMAGE = "/opt/hetsched/venv"
CONF_FOLDER = Path("docker") / "storm"
COMPOSE_FILE = Path("docker-compose.yml")
ZOOKEEPER_CFG = "zookeeper.cfg"

ZOOKEEPER_PORT = 2181
NIMBUS_PORT = 6627
SUPERVISOR_THRIFT_PORT = 6628
FIRST_SLOT_PORT = 6700

_PLACEHOLDER_HOME = Path("/hetsched-compose-placeholder-home")
_HEADER = (
    "# Generated by `hetsched cluster compose` from {spec}; do not edit by hand.\n"
    "# Regenerate after changing the spec: hetsched cluster compose{spec_option}\n"
)


@dataclass(frozen=True)
class ComposeDeployment:
    """Everything the deployment consists of, as data: the compose file and each daemon's storm.yaml."""

    compose: dict[str, Any]
    storm_confs: dict[str, dict[str, Any]]
    """File name under ``docker/storm/`` -> that daemon's storm.yaml settings."""
    zookeeper_cfg: str
    """``docker/storm/zookeeper.cfg``: ZooKeeper's zoo.cfg."""


def supervisor_service(machine_id: str) -> str:
    """Service name, container hostname and ``storm.local.hostname`` of a machine's supervisor."""
    return f"supervisor-{machine_id}"


def deployment(
    spec: ClusterSpec, repo_path: str = ".", scheduler: str = "plugin", nimbus_extra: dict[str, Any] | None = None,
) -> ComposeDeployment:
    """The deployment of ``spec``.

    ``repo_path`` is the repository as seen from the compose file's folder; the storm.yaml files sit
    beside the compose file, under ``docker/storm/``. ``scheduler`` and ``nimbus_extra`` change
    Nimbus's storm.yaml only: a running cluster's own copy (``hetsched bench`` restarts Nimbus with
    Storm's Resource Aware Scheduler); the committed files are the plugin's.
    """
    if spec.nimbus_standby:
        raise ClusterError(f"The cluster spec {spec.name!r} asks for a standby Nimbus, which only the local cluster runs; "
                           "leave nimbus_standby out of a spec for the compose cluster.")
    layout = make_layout(spec, _PLACEHOLDER_HOME, spec.port_base)
    extra = dict(spec.storm_conf)
    local_only = _local_only_keys(layout)

    def conf(daemon: str, hostname: str, here: dict[str, Any], daemon_scheduler: str = "plugin") -> dict[str, Any]:
        kept = {k: v for k, v in daemon_conf(layout, daemon, daemon_scheduler, extra).items() if k not in local_only}
        _refuse_local_values(daemon, kept, layout)
        return _sorted({**kept, **_cluster_locations(), "storm.local.hostname": hostname, **here})

    nimbus_here = {"hetsched.planner.url": PLANNER_URL, TOKEN_FILE_SETTING: NIMBUS_TOKEN.in_container,
                   **(nimbus_extra or {})}
    confs = {f"{NIMBUS}.yaml": conf(NIMBUS, NIMBUS, nimbus_here, scheduler)}
    heaps = spec.daemon_heap_mb
    services: dict[str, Any] = {
        ZOOKEEPER: {
            "image": STORM_IMAGE,
            "hostname": ZOOKEEPER,
            "restart": "unless-stopped",
            "command": _java(ZOOKEEPER, heaps.zookeeper, ZOOKEEPER_MAIN, ZOOKEEPER_CFG_IN_CONTAINER),
            "networks": [CLUSTER_NETWORK],
            "volumes": [_bind(f"./{CONF_FOLDER.as_posix()}/{ZOOKEEPER_CFG}", ZOOKEEPER_CFG_IN_CONTAINER)],
        },
        NIMBUS: {
            "image": STORM_IMAGE,
            "hostname": NIMBUS,
            "restart": "unless-stopped",
            "depends_on": [ZOOKEEPER, PLANNER_SERVICE],
            "command": _java(NIMBUS, heaps.nimbus, MAIN_CLASSES[NIMBUS]),
            "secrets": [NIMBUS_TOKEN.secret],
            "networks": [CLUSTER_NETWORK, EDGE_NETWORK],
            "ports": [f"127.0.0.1:${{{NIMBUS_PORT_VARIABLE}:-{NIMBUS_PORT}}}:{NIMBUS_PORT}"],
            "volumes": [_bind(f"./{CONF_FOLDER.as_posix()}/{NIMBUS}.yaml", CONF_IN_CONTAINER)],
        },
        PLANNER_SERVICE: {
            "image": PLANNER_IMAGE,
            "hostname": PLANNER_SERVICE,
            "restart": "unless-stopped",
            "environment": {"HETSCHED_DB": PLANNER_DB, TOKEN_FILE_VARIABLE: PLANNER_TOKEN.in_container},
            "secrets": [PLANNER_TOKEN.secret],
            "networks": [CLUSTER_NETWORK, EDGE_NETWORK],
            "ports": [f"127.0.0.1:${{{PLANNER_PORT_VARIABLE}:-{PLANNER_PORT}}}:{PLANNER_PORT}"],
            "volumes": [f"planner-data:{Path(PLANNER_DB).parent.as_posix()}"],
        },
    }
    for machine in layout.machines:
        service = supervisor_service(machine.id)
        name = f"{service}.yaml"
        here = {
            "supervisor.slots.ports": [FIRST_SLOT_PORT + i for i in range(machine.slots)],
            "supervisor.thrift.port": SUPERVISOR_THRIFT_PORT,
            # The workers' metrics hook reads these from its supervisor's storm.yaml: where to ship, and the token.
            METRICS_URL_SETTING: PLANNER_URL,
            METRICS_TOKEN_FILE_SETTING: WORKERS_TOKEN.in_container,
        }
        confs[name] = conf(machine.id, service, here)
        services[service] = {
            "image": STORM_IMAGE,
            "hostname": service,
            "restart": "unless-stopped",
            "depends_on": [NIMBUS],
            "cpus": machine.cpu_cores,
            "cpu_shares": _cpu_shares(machine.cpu_cores),
            "command": _java(service, heaps.supervisor, SUPERVISOR_MAIN),
            "secrets": [WORKERS_TOKEN.secret],
            "networks": [CLUSTER_NETWORK],
            "volumes": [_bind(f"./{CONF_FOLDER.as_posix()}/{name}", CONF_IN_CONTAINER)],
        }
        if machine.memory_limit_mb is not None:  # as the local cluster's cgroup: supervisor and workers, no swap
            services[service]["mem_limit"] = f"{machine.memory_limit_mb}m"
            services[service]["memswap_limit"] = f"{machine.memory_limit_mb}m"
    compose = {
        "services": services,
        "networks": {
            CLUSTER_NETWORK: {"internal": True},
            EDGE_NETWORK: {"driver_opts": {
                "com.docker.network.bridge.enable_ip_masquerade": "false",
                "com.docker.network.bridge.host_binding_ipv4": "127.0.0.1",
            }},
        },
        "volumes": {"planner-data": {}},
        "secrets": {t.secret: {"file": f"./{t.source.as_posix()}"} for t in TOKEN_SECRETS},
    }
    return ComposeDeployment(compose=compose, storm_confs=confs, zookeeper_cfg=_zookeeper_cfg())


def render(spec: ClusterSpec, spec_path: Path = DEFAULT_SPEC, out_dir: Path = REPO_ROOT) -> dict[Path, str]:
    """The text of every file of the deployment, by path relative to ``out_dir``."""
    repo_path = Path(os.path.relpath(REPO_ROOT, out_dir.resolve())).as_posix()
    made = deployment(spec, repo_path)
    shown = _shown_path(spec_path)
    header = _HEADER.format(spec=shown, spec_option="" if Path(spec_path).resolve() == DEFAULT_SPEC else f" --spec {shown}")
    files = {COMPOSE_FILE: header + _dump(made.compose)}
    for name, settings in made.storm_confs.items():
        files[CONF_FOLDER / name] = header + _dump(settings)
    files[CONF_FOLDER / ZOOKEEPER_CFG] = header + made.zookeeper_cfg
    return files


def write(spec: ClusterSpec, spec_path: Path = DEFAULT_SPEC, out_dir: Path = REPO_ROOT) -> list[Path]:
    """Write the deployment under ``out_dir``; storm.yaml files of machines no longer in the spec are removed."""
    files = render(spec, spec_path, out_dir)
    conf_folder = out_dir / CONF_FOLDER
    try:
        conf_folder.mkdir(parents=True, exist_ok=True)
        for stale in [*conf_folder.glob(f"{supervisor_service('')}*.yaml"), conf_folder / "ui.yaml"]:
            if stale.relative_to(out_dir) not in files:
                stale.unlink(missing_ok=True)
        for relative, text in files.items():
            (out_dir / relative).write_text(text)
    except OSError as fault:
        raise ClusterError(f"Cannot write the compose deployment under {out_dir}: {fault.strerror or fault}.") from None
    return [out_dir / relative for relative in files]


@dataclass(frozen=True)
class ComposeTokens:
    """The deployment's planner tokens, one per holder, so a worker's token cannot plan, bind or store profiles."""

    operator: str
    nimbus: str
    workers: str

    @classmethod
    def new(cls) -> ComposeTokens:
        return cls(*(secrets.token_urlsafe(32) for _ in range(3)))


def token_file_texts(tokens: ComposeTokens) -> dict[str, str]:
    """File name under the secrets folder -> its text: the planner's scoped lines, and each holder's token alone.

    The plugin and the metrics hook read a file of one bare token; only the planner reads scopes.
    """
    lines = [(ALL_WORD, tokens.operator), (_words(NIMBUS_SCOPES), tokens.nimbus), (_words(WORKERS_SCOPES), tokens.workers)]
    planner = ("# The compose deployment's planner tokens: the operator's, Nimbus's plugin's, the workers'.\n"
               + "".join(f"{scopes} {token}\n" for scopes, token in lines))
    return {PLANNER_TOKEN.file_name: planner, NIMBUS_TOKEN.file_name: tokens.nimbus + "\n",
            WORKERS_TOKEN.file_name: tokens.workers + "\n", OPERATOR_TOKEN_FILE: tokens.operator + "\n"}


def write_token_files(out_dir: Path = REPO_ROOT, tokens: ComposeTokens | None = None,
                      secrets_folder: Path = SECRETS_FOLDER) -> list[str]:
    """Write new planner tokens (random unless given) into each service's secret file and the operator's, mode 0600.

    Returns what is left for the operator: as root the service files are given to the users the images
    run as; otherwise a sentence per file saying whom it must belong to. The operator's file stays its writer's.
    """
    texts = token_file_texts(tokens or ComposeTokens.new())
    folder = out_dir / secrets_folder
    left: list[str] = []
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for name, text in texts.items():
            path = folder / name
            path.unlink(missing_ok=True)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as file:
                file.write(text)
            owner = next((t.uid for t in TOKEN_SECRETS if t.file_name == name), None)
            if owner is None:
                continue
            if os.geteuid() == 0:
                os.chown(path, owner, owner)
            elif path.stat().st_uid != owner:
                left.append(f"{path} must belong to uid {owner}, whom its container runs as: sudo chown {owner} {path}")
    except OSError as fault:
        raise ClusterError(f"Cannot write the token files under {folder}: {fault.strerror or fault}.") from None
    return left


def _words(scopes: tuple[Scope, ...]) -> str:
    return ",".join(s.value for s in scopes)


def stale_files(spec: ClusterSpec, spec_path: Path = DEFAULT_SPEC, out_dir: Path = REPO_ROOT) -> list[Path]:
    """Files under ``out_dir`` that differ from what the spec gives (missing ones included)."""
    stale = []
    for relative, text in render(spec, spec_path, out_dir).items():
        path = out_dir / relative
        if not path.is_file() or path.read_text() != text:
            stale.append(path)
    return stale


def _java(daemon: str, heap_mb: int, main: str, *args: str) -> list[str]:
    """The daemon's ``java`` command in the Storm image, as :func:`cluster.storm_config.java_command` builds the local one."""
    home = STORM_HOME_IN_IMAGE
    class_path = ":".join([f"{home}/lib/*", f"{home}/extlib/*", f"{home}/extlib-daemon/*", f"{home}/conf"])
    return [
        "java", "-server", f"-Xmx{heap_mb}m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-Djava.net.preferIPv4Stack=true", f"-Ddaemon.name={daemon}", f"-Dstorm.home={home}",
        "-Dstorm.log.dir=/logs", f"-Dlogfile.name={daemon}.log",
        f"-Dlog4j.configurationFile={home}/log4j2/cluster.xml", f"-Dstorm.conf.file={CONF_IN_CONTAINER}",
        "-cp", class_path, main, *args,
    ]


def _cpu_shares(cpu_cores: float) -> int:
    """``cpu_shares`` in proportion to the quota, as the local cluster's cgroups: 1:2:4 under contention too,
    and ahead of a busy daemon container (1024)."""
    return max(2, round(cpu_cores * SHARES_PER_CORE * 10))


def _zookeeper_cfg() -> str:
    """ZooKeeper's zoo.cfg: its data in the container, no admin web server (Jetty is on Storm's class path)."""
    settings = {"dataDir": "/data/zookeeper", "clientPort": ZOOKEEPER_PORT, "tickTime": 2000,
                "maxClientCnxns": 0, "admin.enableServer": "false"}
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def _bind(source: str, target: str) -> dict[str, Any]:
    """A read-only bind mount in the long syntax, which names the source plainly."""
    return {"type": "bind", "source": source, "target": target, "read_only": True}


def _cluster_locations() -> dict[str, Any]:
    """Where the daemons find each other and keep their files inside the containers."""
    return {
        "storm.zookeeper.servers": [ZOOKEEPER],
        "storm.zookeeper.port": ZOOKEEPER_PORT,
        "nimbus.seeds": [NIMBUS],
        "nimbus.thrift.port": NIMBUS_PORT,
        "storm.local.dir": "/data",
        "storm.log.dir": "/logs",
        # Nimbus's metrics store defaults to STORM_HOME/storm_rocks, which the storm user may not write in the image.
        "storm.metricstore.rocksdb.location": "/data/storm_rocks",
    }


def _local_only_keys(layout) -> set[str]:
    """Settings of the local cluster that say where things are on this host: ports, folders, hostnames."""
    return {
        "storm.zookeeper.servers", "storm.zookeeper.port", "dev.zookeeper.path", "nimbus.seeds",
        "nimbus.thrift.port", "ui.port", "ui.host", "storm.local.dir", "storm.log.dir", "storm.local.hostname",
        "supervisor.slots.ports", "supervisor.thrift.port", "storm.metricstore.rocksdb.location", *layout.other_ports,
    }


def _refuse_local_values(daemon: str, conf: dict[str, Any], layout) -> None:
    """A setting still naming a local folder or port would break the containers: say which, rather than write it."""
    local_ports = set(layout.all_ports()) | set(layout.other_ports.values())
    for key, value in conf.items():
        text = str(value)
        if str(_PLACEHOLDER_HOME) in text or (isinstance(value, int) and value in local_ports):
            raise ClusterError(
                f"The {daemon} setting {key} = {value!r} is about the local cluster's host; "
                "cluster/compose.py must be told how to set it for containers."
            )


def _sorted(conf: dict[str, Any]) -> dict[str, Any]:
    return {key: conf[key] for key in sorted(conf)}


def _shown_path(spec_path: Path) -> str:
    path = Path(spec_path).resolve()
    try:
        return path.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return str(path)


class _Dumper(yaml.SafeDumper):
    """Block style, no anchors (every service spelled out), lists indented under their key."""

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def increase_indent(self, flow: bool = False, indentless: bool = False):
        return super().increase_indent(flow, False)


def _dump(data: dict[str, Any]) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
