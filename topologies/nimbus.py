"""Talking to Nimbus over Thrift with streamparse's Storm service definition.

streamparse's ``get_nimbus_client`` is ``thriftpy2.rpc.make_client`` over
``streamparse.thrift.Nimbus`` with a framed binary transport; importing it
would pull in fabric and paramiko, so the same three lines are called here.
Every Thrift or socket failure becomes a :class:`TopologyError` that says
where Nimbus was looked for.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from streamparse.thrift import (
    AlreadyAliveException,
    AuthorizationException,
    InvalidTopologyException,
    KillOptions,
    Nimbus as NimbusService,
    NotAliveException,
    SubmitOptions,
    TopologyInitialStatus,
)
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.rpc import make_client
from thriftpy2.thrift import TApplicationException, TException
from thriftpy2.transport import TFramedTransportFactory, TTransportException

from topologies.errors import TopologyError

log = logging.getLogger(__name__)

UPLOAD_CHUNK_BYTES = 307_200
"""streamparse's THRIFT_CHUNK_SIZE."""
ALL_TIME = ":all-time"
T = TypeVar("T")


@dataclass(frozen=True)
class NimbusAddress:
    host: str
    port: int
    source: str = "the command line"
    """Where the address came from, for error messages."""

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class RunningTopology:
    """One topology as Nimbus lists it."""

    id: str
    name: str
    status: str
    workers: int
    executors: int
    tasks: int
    uptime_s: int
    scheduler_status: str = ""
    """What the scheduler said of its placement (the Storm UI's "Scheduler Info"); the hetsched plugin starts it with "hetsched: "."""


@dataclass(frozen=True)
class ComponentCounts:
    """Tuple counts of one component since it started (Nimbus ``:all-time`` window)."""

    component: str
    executors: int
    emitted: int
    transferred: int
    acked: int
    failed: int
    executed: int


def parse_address(text: str, source: str = "--nimbus") -> NimbusAddress:
    """``host:port`` (or ``host``, port 6627) as a Nimbus address."""
    host, _, port = text.strip().rpartition(":")
    if not host:
        host, port = port, "6627"
    try:
        number = int(port)
    except ValueError:
        raise TopologyError(f"Nimbus address {text!r} from {source} is not host:port") from None
    if not host or not 0 < number < 65536:
        raise TopologyError(f"Nimbus address {text!r} from {source} is not host:port")
    return NimbusAddress(host, number, source)


class Nimbus:
    """A connection to one Nimbus."""

    def __init__(self, address: NimbusAddress, timeout_ms: int = 30_000) -> None:
        self.address = address
        try:
            self._client = make_client(
                NimbusService,
                host=address.host,
                port=address.port,
                proto_factory=TBinaryProtocolFactory(),
                trans_factory=TFramedTransportFactory(),
                timeout=timeout_ms,
            )
        except (TTransportException, OSError) as exc:
            raise TopologyError(
                f"cannot reach Nimbus at {address} (from {address.source}): {_reason(exc)}"
            ) from None

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "Nimbus":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        """Run one Thrift call; Storm's own answers (not alive, already alive, invalid) pass to the caller."""
        try:
            return fn()
        except (NotAliveException, AlreadyAliveException, InvalidTopologyException, TopologyError):
            raise
        except AuthorizationException as exc:
            raise TopologyError(f"Nimbus at {self.address} refused to {what}: not authorized ({exc.msg})") from None
        except (TTransportException, OSError, socket.timeout) as exc:
            raise TopologyError(
                f"lost the connection to Nimbus at {self.address} (from {self.address.source}) "
                f"while trying to {what}: {_reason(exc)}"
            ) from None
        except TApplicationException as exc:
            raise TopologyError(f"Nimbus at {self.address} failed to {what}: {exc.message or exc}") from None
        except TException as exc:
            detail = getattr(exc, "msg", None) or getattr(exc, "message", None) or type(exc).__name__
            raise TopologyError(f"Nimbus at {self.address} failed to {what}: {detail}") from None

    def wait_for_leader(self, timeout_s: float = 60.0) -> str:
        """Block until some Nimbus is the leader; return its host:port."""
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        while True:
            try:
                leader = self._client.getLeader()
                if leader is not None and leader.isLeader:
                    return f"{leader.host}:{leader.port}"
                last = "no Nimbus is leader yet"
            except (TTransportException, OSError, socket.timeout) as exc:
                raise TopologyError(
                    f"lost the connection to Nimbus at {self.address} (from {self.address.source}) "
                    f"while waiting for a leader: {_reason(exc)}"
                ) from None
            except TException as exc:
                last = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            if time.monotonic() >= deadline:
                raise TopologyError(f"Nimbus at {self.address} has no leader after {timeout_s:.0f} s ({last})")
            time.sleep(1.0)

    def upload_jar(self, jar: Path) -> str:
        """Upload a topology jar in chunks; return its location on Nimbus."""
        def upload() -> str:
            location = self._client.beginFileUpload()
            with open(jar, "rb") as f:
                while chunk := f.read(UPLOAD_CHUNK_BYTES):
                    self._client.uploadChunk(location, chunk)
            self._client.finishFileUpload(location)
            return location

        location = self._call("upload the topology jar", upload)
        log.info("uploaded %s (%d bytes) to %s", jar, os.path.getsize(jar), location)
        return location

    def submit(self, name: str, jar_location: str, conf: dict[str, Any], topology) -> None:
        def submit() -> None:
            if not self._client.isTopologyNameAllowed(name):
                raise TopologyError(f"Nimbus does not allow the topology name {name!r}")
            self._client.submitTopologyWithOpts(
                name=name,
                uploadedJarLocation=jar_location,
                jsonConf=json.dumps(conf),
                topology=topology,
                options=SubmitOptions(initial_status=TopologyInitialStatus.ACTIVE),
            )

        try:
            self._call(f"submit {name!r}", submit)
        except AlreadyAliveException:
            raise TopologyError(f"a topology named {name!r} is already running") from None
        except InvalidTopologyException as exc:
            raise TopologyError(f"Nimbus rejected topology {name!r}: {exc.msg}") from None

    def topologies(self) -> list[RunningTopology]:
        summary = self._call("list the topologies", self._client.getClusterInfo)
        return [
            RunningTopology(t.id, t.name, t.status, t.num_workers, t.num_executors, t.num_tasks, t.uptime_secs,
                            t.sched_status or "")
            for t in summary.topologies
        ]

    def find(self, name: str) -> RunningTopology | None:
        return next((t for t in self.topologies() if t.name == name), None)

    def kill(self, name: str, wait_s: int = 0) -> None:
        """Ask Nimbus to kill a topology, which deactivates it for ``wait_s`` seconds first."""
        try:
            self._call(f"kill {name!r}", lambda: self._client.killTopologyWithOpts(name, KillOptions(wait_secs=wait_s)))
        except NotAliveException:
            raise TopologyError(f"no topology named {name!r} is running") from None

    def wait_gone(self, name: str, timeout_s: float) -> None:
        """Block until Nimbus no longer lists the topology (kill wait and worker shutdown done)."""
        deadline = time.monotonic() + timeout_s
        while self.find(name) is not None:
            if time.monotonic() >= deadline:
                raise TopologyError(f"topology {name!r} is still listed by Nimbus {timeout_s:.0f} s after the kill")
            time.sleep(1.0)

    def component_counts(self, topology_id: str, component: str) -> ComponentCounts:
        """All-time tuple counts of one component (exact only with ``topology.stats.sample.rate: 1.0``)."""
        def fetch():
            return self._client.getComponentPageInfo(topology_id, component, ALL_TIME, False)

        try:
            page = self._call(f"read the stats of {component!r}", fetch)
        except NotAliveException:
            raise TopologyError(f"topology {topology_id!r} is not running") from None
        stats = (page.window_to_stats or {}).get(ALL_TIME)
        common = stats.common_stats if stats and stats.common_stats else None
        bolt = stats.specific_stats.bolt if stats and stats.specific_stats else None
        return ComponentCounts(
            component=component,
            executors=page.num_executors or 0,
            emitted=(common.emitted or 0) if common else 0,
            transferred=(common.transferred or 0) if common else 0,
            acked=(common.acked or 0) if common else 0,
            failed=(common.failed or 0) if common else 0,
            executed=(bolt.executed or 0) if bolt else 0,
        )

    def topology_conf(self, topology_id: str) -> dict[str, Any]:
        return json.loads(self._call("read the topology config", lambda: self._client.getTopologyConf(topology_id)))

    def worker_hosts(self, topology_id: str) -> dict[str, list[str]]:
        """Component id -> ``host:port`` of the worker of each of its executors."""
        info = self._call("read the topology info", lambda: self._client.getTopologyInfo(topology_id))
        hosts: dict[str, list[str]] = {}
        for executor in info.executors:
            hosts.setdefault(executor.component_id, []).append(f"{executor.host}:{executor.port}")
        return hosts


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return text.rstrip(".")


@contextmanager
def connect(address: NimbusAddress, leader_timeout_s: float = 60.0) -> Iterator[Nimbus]:
    """A connection to the leader Nimbus, closed afterwards."""
    nimbus = Nimbus(address)
    try:
        nimbus.wait_for_leader(leader_timeout_s)
        yield nimbus
    finally:
        nimbus.close()
