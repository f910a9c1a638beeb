"""What each daemon is told: its storm.yaml settings and its java command line. Pure.

Every daemon reads its own storm.yaml (``-Dstorm.conf.file``). Supervisors
pass that file on to the workers they launch, so a worker sees its machine's
``storm.local.dir`` and hostname.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from cluster.layout import NIMBUS, NIMBUS_STANDBY, NIMBUSES, NON_MACHINE_DAEMONS, UI, ZOOKEEPER, ClusterLayout, MachineLayout
from cluster.spec import DaemonHeaps

REPO_ROOT = Path(__file__).resolve().parents[1]

SCHEDULERS = {
    "default": "org.apache.storm.scheduler.DefaultScheduler",
    "resource_aware": "org.apache.storm.scheduler.resource.ResourceAwareScheduler",
    "plugin": "org.hetsched.storm.HetschedScheduler",
    "sps": "org.hetsched.storm.baselines.SpsScheduler",
    "dps": "org.hetsched.storm.baselines.DpsScheduler",
}
"""Choices of ``storm.scheduler`` for Nimbus by their short names."""

PLUGIN_JAR = REPO_ROOT / "storm-plugin" / "target" / "hetsched-storm-plugin.jar"

MAIN_CLASSES = {
    # ZooKeeper's own standalone server (as Storm shades it, with its snappy) instead of Storm's DevZookeeper,
    # which listens on every address with no setting to change it.
    ZOOKEEPER: "org.apache.storm.shade.org.apache.zookeeper.server.ZooKeeperServerMain",
    NIMBUS: "org.apache.storm.daemon.nimbus.Nimbus",
    NIMBUS_STANDBY: "org.apache.storm.daemon.nimbus.Nimbus",
    UI: "org.apache.storm.daemon.ui.UIServer",
}
SUPERVISOR_MAIN = "org.apache.storm.daemon.supervisor.Supervisor"

LOCAL_ADDRESS_TRANSPORT = "org.hetsched.storm.LocalAddressTransportPlugin"
"""Storm's simple Thrift transport listening on ``storm.local.hostname`` only (in the plugin jar)."""

WORKER_CHILDOPTS = "-Xmx%HEAP-MEM%m -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true"
"""Serial GC: one GC thread per worker, since a machine may have a fifth of a core."""

_TIMEOUTS = {
    # A worker JVM on a 0.2-core machine starts and heartbeats slowly; give it time before restarts.
    "supervisor.worker.start.timeout.secs": 240,
    "nimbus.task.launch.secs": 240,
    "supervisor.worker.timeout.secs": 60,
    "nimbus.task.timeout.secs": 60,
    "nimbus.supervisor.timeout.secs": 60,
}


STANDBY_CODE_SYNC_SECS = 10
"""``nimbus.code.sync.freq.secs`` with a standby Nimbus: it copies a new topology's code from the leader this often
(Storm's default is 120 s), and takes the lead only when it holds every active topology's code."""


_IDLE_SPIN = {
    # Storm's progressive wait parks an idle bolt executor 1000 times (every ~0.1 ms) after each tuple
    # before it sleeps 1 ms: at a few tuples/s that alone took 0.15 of a core per worker, most of a
    # 0.2-core machine. 10 parks keep the low-rate overhead near 0.01 core per executor. Nimbus merges
    # its storm.yaml under each topology's conf, so a topology may still set its own.
    "topology.bolt.wait.progressive.level2.count": 10,
}


def machine_scheduler_meta(machine: MachineLayout) -> dict[str, str]:
    """``supervisor.scheduler.meta``: how Nimbus' scheduler learns a supervisor's machine type (and quota in cores)."""
    return {"machine-type": machine.type, "machine-id": machine.id, "cores": f"{machine.cpu_cores:g}"}


def daemon_conf(
    layout: ClusterLayout, daemon: str, scheduler: str, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The storm.yaml of one daemon: cluster-wide settings, its own, then ``extra`` (spec and --conf) on top."""
    conf: dict[str, Any] = {
        "storm.zookeeper.servers": ["127.0.0.1"],
        "storm.zookeeper.port": layout.zookeeper_port,
        "storm.zookeeper.root": "/storm",
        "dev.zookeeper.path": str(layout.local_dir(ZOOKEEPER)),
        "nimbus.seeds": layout.nimbus_hosts(),
        "nimbus.thrift.port": layout.nimbus_port,
        "ui.port": layout.ui_port,
        "ui.host": "127.0.0.1",
        "storm.local.dir": str(layout.local_dir(daemon)),
        # Nimbus's metrics store defaults to STORM_HOME/storm_rocks, shared by every cluster using that STORM_HOME
        # (and RocksDB locks it: a standby Nimbus has its own).
        "storm.metricstore.rocksdb.location": str(layout.local_dir(daemon if daemon == NIMBUS_STANDBY else NIMBUS) / "storm_rocks"),
        "storm.local.hostname": layout.nimbus_host,
        "storm.scheduler": SCHEDULERS[scheduler],
        "worker.childopts": WORKER_CHILDOPTS,
        # Executor stats reach Nimbus every 10 s instead of every 60 s: status and profiling see counts sooner.
        "executor.metrics.frequency.secs": 10,
        **layout.other_ports,
        **_TIMEOUTS,
        **_IDLE_SPIN,
    }
    if layout.standby_nimbus_host is not None:
        conf["nimbus.code.sync.freq.secs"] = STANDBY_CODE_SYNC_SECS
    if daemon == NIMBUS_STANDBY:
        conf["storm.local.hostname"] = layout.nimbus_host_of(daemon)
    if daemon not in NON_MACHINE_DAEMONS:
        machine = layout.machine(daemon)
        conf.update(
            {
                "storm.local.hostname": machine.host,
                "supervisor.slots.ports": list(machine.slot_ports),
                "supervisor.thrift.port": machine.thrift_port,
                "supervisor.scheduler.meta": machine_scheduler_meta(machine),
                "supervisor.cpu.capacity": machine.cpu_capacity,
                "supervisor.memory.capacity.mb": float(machine.memory_mb),
            }
        )
    conf.update(extra or {})
    return conf


def listen_conf(layout: ClusterLayout, daemon: str) -> dict[str, Any]:
    """Settings that make a daemon's Thrift server listen on its own loopback address only (needs the plugin jar).

    Storm 2.8 has no bind-address setting: Nimbus and supervisors listen on every address unless their
    transport is :data:`LOCAL_ADDRESS_TRANSPORT`, which binds to ``storm.local.hostname`` (127.0.0.1 for
    Nimbus, its own address for a standby Nimbus, 127.0.0.x for a machine). Workers read the supervisor's setting as clients, so they must have
    the jar on their class path too (``STORM_EXT_CLASSPATH``).
    """
    if daemon in NIMBUSES:
        return {"nimbus.thrift.transport": LOCAL_ADDRESS_TRANSPORT}
    if daemon in (ZOOKEEPER, UI):
        return {}
    layout.machine(daemon)
    return {"supervisor.thrift.transport": LOCAL_ADDRESS_TRANSPORT}


def zookeeper_cfg_file(layout: ClusterLayout) -> Path:
    return layout.conf_file(ZOOKEEPER).with_suffix(".cfg")


def zookeeper_cfg(layout: ClusterLayout) -> str:
    """zoo.cfg of the cluster's standalone ZooKeeper: on 127.0.0.1 only, no admin web server (Jetty is on Storm's class path)."""
    settings = {
        "dataDir": layout.local_dir(ZOOKEEPER),
        "clientPort": layout.zookeeper_port,
        "clientPortAddress": "127.0.0.1",
        "tickTime": 2000,
        "maxClientCnxns": 0,  # as DevZookeeper: every daemon and worker of the cluster connects from 127.0.0.1
        "admin.enableServer": "false",
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def class_path(storm_home: Path, layout: ClusterLayout, daemon: str) -> str:
    folders = [storm_home / "lib"]
    if daemon == UI:
        folders.insert(0, storm_home / "lib-webapp")
    folders += [storm_home / "extlib", storm_home / "extlib-daemon", layout.extlib_daemon]
    # Nimbus finds user-resource-pools.yaml (RAS's user pools) in the cluster's own conf folder first.
    conf_dirs = [layout.conf_file(daemon).parent] if daemon in NIMBUSES else []
    return ":".join([f"{folder}/*" for folder in folders] + [str(d) for d in conf_dirs] + [str(storm_home / "conf")])


def java_command(storm_home: Path, layout: ClusterLayout, daemon: str, heaps: DaemonHeaps) -> list[str]:
    """``java ... <MainClass>`` for one daemon, as Storm's own launcher would build it."""
    heap = heaps.nimbus if daemon in NIMBUSES else getattr(heaps, daemon) if daemon in (ZOOKEEPER, UI) else heaps.supervisor
    main = MAIN_CLASSES.get(daemon, SUPERVISOR_MAIN)
    return [
        "java",
        "-server",
        f"-Xmx{heap}m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Djava.net.preferIPv4Stack=true",
        f"-Ddaemon.name={daemon}",
        f"-Dstorm.home={storm_home}",
        f"-Dstorm.log.dir={layout.log_dir(daemon)}",
        f"-Dlogfile.name={layout.log_file(daemon).name}",
        f"-Dlog4j.configurationFile={storm_home / 'log4j2' / 'cluster.xml'}",
        f"-Dstorm.conf.file={layout.conf_file(daemon)}",
        "-cp",
        class_path(storm_home, layout, daemon),
        main,
        *([str(zookeeper_cfg_file(layout))] if daemon == ZOOKEEPER else []),
    ]
