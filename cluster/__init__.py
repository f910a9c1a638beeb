"""The local heterogeneous Apache Storm 2.8 cluster.

One machine of the spec is one Storm supervisor in its own cgroup (cgroup v1
``cpu`` + ``cpuacct``) with that machine's CPU quota, so the supervisor, its
workers and their Python processes share the quota. ZooKeeper (standalone,
on 127.0.0.1) and Nimbus run beside them. STORM_HOME is assembled from
Maven Central (:mod:`cluster.storm_home`, ``make storm``).

The Python API others use::

    from cluster.spec import load_spec
    from cluster.local import LocalCluster

    spec = load_spec()                         # cluster/specs/default.yaml, or a path
    cluster = LocalCluster(spec, home=None, port_base=None)   # home/port base: args > env > spec
    status = cluster.up(scheduler="default",   # "default" | "resource_aware" | "plugin"
                        conf={"hetsched.planner.url": "http://127.0.0.1:8765"})
    status.supervisors       # [Supervisor(machine_id, machine_type, host, cpu_cores, slots,
                             #             slot_ports, memory_mb, cgroup, supervisor_id, ...)]
    status.nimbus_host, status.nimbus_port    # Nimbus Thrift (also cluster.layout.*)
    status.ui_url            # None: storm-webapp is not on Maven Central
    cluster.status()         # the same, plus status.topologies
    cluster.machine_cpu_seconds("small-1")    # cpuacct.usage of the machine's cgroup, in seconds
    cluster.machine_of_pid(pid)               # "small-1", or None if the pid is not in this cluster
    cluster.cgroup_path("small-1")            # /sys/fs/cgroup/cpu/hetsched/<key>/small-1
    cluster.nimbus_address                    # observe.nimbus.NimbusAddress, for observe.nimbus.Nimbus (standby as a seed)
    cluster.leader_daemon()                   # "nimbus", or "nimbus-standby" with nimbus_standby in the spec
    cluster.kill_daemon("nimbus")             # a fault: stop one daemon; cluster.restart_daemon("nimbus") starts it again
    LocalClusterHandle(cluster)               # cluster.handle: the observe.machines.ClusterHandle of it
    cluster.spec.planner_cluster()            # planner.model.Cluster of the same machines
    cluster.down(purge=False)

``running_cluster()`` finds the cluster in the default (or ``HETSCHED_CLUSTER_HOME``)
home if one runs. Every fault is a :class:`cluster.errors.ClusterError` with a plain sentence.

Machine ids are ``<type>-<n>`` (``small-1``); supervisors register with host
``127.0.0.<2+i>`` and ``supervisor.scheduler.meta`` ``{"machine-type": <type>,
"machine-id": <id>, "cores": "<cpu_cores>"}``; ``supervisor.cpu.capacity`` is ``cpu_cores * 100``.
"""
from __future__ import annotations

from pathlib import Path


def running_cluster(home: str | Path | None = None, spec_path: str | Path | None = None):
    """The LocalCluster in ``home`` (default: ``HETSCHED_CLUSTER_HOME``, else the default spec's) if it runs, else None."""
    from cluster.local import LocalCluster
    from cluster.spec import load_spec

    cluster = LocalCluster(load_spec(spec_path), home=home)
    return cluster if cluster.is_running() else None
