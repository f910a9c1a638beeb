"""Asking Nimbus about the cluster over its Thrift API (streamparse's thriftpy2 bindings of storm.thrift).

Storm's UI (storm-webapp) is not on Maven Central, so readiness and status
come from Nimbus itself: ``getClusterInfo`` lists the leader and the
registered supervisors, ``getTopologyInfo`` where each executor runs.
"""
from __future__ import annotations

import socket
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from streamparse.thrift import storm_thrift
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.rpc import make_client
from thriftpy2.transport import TFramedTransportFactory, TTransportException

NIMBUS_TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class RegisteredSupervisor:
    supervisor_id: str
    host: str
    slots: int
    used_slots: int
    uptime_s: int
    cpu_capacity: float | None
    memory_capacity_mb: float | None


@dataclass(frozen=True)
class TopologySummary:
    id: str
    name: str
    status: str
    workers: int
    executors: int
    tasks: int
    uptime_s: int
    scheduler_status: str = ""
    """What the scheduler said of its placement (the Storm UI's "Scheduler Info")."""


@dataclass(frozen=True)
class ClusterSummary:
    leader: str | None
    supervisors: list[RegisteredSupervisor]
    topologies: list[TopologySummary]


@contextmanager
def client(host: str, port: int, timeout_ms: int = NIMBUS_TIMEOUT_MS) -> Iterator[Any]:
    """A connected Nimbus Thrift client (framed binary, Storm's SimpleTransportPlugin)."""
    connection = make_client(
        storm_thrift.Nimbus,
        host=host,
        port=port,
        proto_factory=TBinaryProtocolFactory(),
        trans_factory=TFramedTransportFactory(),
        timeout=timeout_ms,
    )
    try:
        yield connection
    finally:
        connection.close()


def summary(host: str, port: int, timeout_ms: int = NIMBUS_TIMEOUT_MS) -> ClusterSummary:
    """Leader, supervisors and topologies as Nimbus sees them; raises OSError/TTransportException when unreachable."""
    with client(host, port, timeout_ms) as nimbus:
        info = nimbus.getClusterInfo()
    leader = next((f"{n.host}:{n.port}" for n in info.nimbuses or [] if n.isLeader), None)
    supervisors = [
        RegisteredSupervisor(
            supervisor_id=s.supervisor_id,
            host=s.host,
            slots=s.num_workers,
            used_slots=s.num_used_workers,
            uptime_s=s.uptime_secs,
            cpu_capacity=(s.total_resources or {}).get("cpu.pcore.percent"),
            memory_capacity_mb=(s.total_resources or {}).get("memory.mb"),
        )
        for s in info.supervisors or []
    ]
    topologies = [
        TopologySummary(
            id=t.id, name=t.name, status=t.status, workers=t.num_workers, executors=t.num_executors,
            tasks=t.num_tasks, uptime_s=t.uptime_secs, scheduler_status=t.sched_status or "",
        )
        for t in info.topologies or []
    ]
    return ClusterSummary(leader=leader, supervisors=supervisors, topologies=topologies)


def try_summary(host: str, port: int, timeout_ms: int = 3_000) -> ClusterSummary | None:
    """``summary`` or None while Nimbus is not (yet) answering."""
    try:
        return summary(host, port, timeout_ms)
    except (OSError, TTransportException, socket.timeout, storm_thrift.AuthorizationException):
        return None


def executor_hosts(host: str, port: int, topology_id: str) -> list[tuple[str, str, int]]:
    """``(component, host, port)`` of every executor of a running topology."""
    with client(host, port) as nimbus:
        info = nimbus.getTopologyInfo(topology_id)
    return [(e.component_id, e.host, e.port) for e in info.executors or []]
