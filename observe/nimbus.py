"""The one Nimbus client: Storm's Thrift service through streamparse's bindings, framed binary transport.

streamparse's ``get_nimbus_client`` is ``thriftpy2.rpc.make_client`` over ``streamparse.thrift.Nimbus``
with a framed binary transport; importing it would pull in fabric and paramiko, so the same call is
made here, and only here. A dropped connection or a timeout is retried on a fresh connection (reads,
uploads); submit and kill are not repeated, as Nimbus may have acted before the connection broke.
An address may name standby Nimbus hosts (``seeds``) as Storm's ``nimbus.seeds`` does: a connection goes to
whichever of them leads (only the leader takes uploads, submits, kills and rebalances), and a fresh one after a
drop finds the new leader.
Every failure becomes a :class:`NimbusError`: one sentence that says where Nimbus was looked for.
"""
from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from streamparse.thrift import (
    AlreadyAliveException,
    AuthorizationException,
    InvalidTopologyException,
    KillOptions,
    Nimbus as NimbusService,
    NotAliveException,
    RebalanceOptions,
    SubmitOptions,
    SupervisorSummary as ThriftSupervisorSummary,
    TopologyInitialStatus,
)
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.rpc import make_client
from thriftpy2.thrift import TApplicationException, TException, TType
from thriftpy2.transport import TFramedTransportFactory, TTransportException

from observe.counts import TopologyCounts, parse_topology_info

log = logging.getLogger(__name__)


class RebalanceOptionsWithConf(RebalanceOptions):
    """Storm 2's ``RebalanceOptions`` with its field 5, ``topology_conf_overrides`` (a JSON object as a string), which
    streamparse's older Thrift IDL lacks; thriftpy2 writes a struct by its own ``thrift_spec``."""

    thrift_spec = {**RebalanceOptions.thrift_spec, 5: (TType.STRING, "topology_conf_overrides", False)}
    default_spec = [*RebalanceOptions.default_spec, ("topology_conf_overrides", None)]


if 12 not in ThriftSupervisorSummary.thrift_spec:
    # Storm 2's SupervisorSummary field 12, ``blacklisted``, which streamparse's IDL lacks: thriftpy2 reads a struct
    # by its class's own thrift_spec, and skips the fields it does not name
    ThriftSupervisorSummary.thrift_spec[12] = (TType.BOOL, "blacklisted", False)
    ThriftSupervisorSummary.default_spec = [*ThriftSupervisorSummary.default_spec, ("blacklisted", None)]

DEFAULT_PORT = 6627
TIMEOUT_MS = 30_000
RETRIES = 2
"""Fresh connections tried after a dropped one, for calls that may be repeated."""
RETRY_PAUSE_S = 0.5
UPLOAD_CHUNK_BYTES = 307_200
"""streamparse's THRIFT_CHUNK_SIZE."""
_TRANSIENT = (TTransportException, OSError, socket.timeout)
T = TypeVar("T")


class NimbusError(Exception):
    """A fault of Nimbus, or of what was asked of it, that the user must fix; the message is one sentence."""


class TopologyNotRunning(NimbusError):
    """Nimbus answers, and runs no topology of that name (killed, or never submitted)."""


@dataclass(frozen=True)
class NimbusAddress:
    host: str
    port: int
    source: str = "the command line"
    """Where the address came from, for error messages."""
    seeds: tuple[str, ...] = ()
    """Other Nimbus hosts on the same port (standbys of a highly available cluster), tried after ``host``."""

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def hosts(self) -> list[str]:
        """``host`` then the seeds: Storm's ``nimbus.seeds`` for this address."""
        return list(dict.fromkeys((self.host, *self.seeds)))


@dataclass(frozen=True)
class SupervisorSummary:
    """One supervisor as Nimbus lists it."""

    supervisor_id: str
    host: str
    slots: int
    used_slots: int
    uptime_s: int
    cpu_capacity: float | None
    """``supervisor.cpu.capacity``: percent of one core (100 = one core)."""
    memory_capacity_mb: float | None
    scheduler_meta: dict[str, str] = field(default_factory=dict)
    """``supervisor.scheduler.meta``, where the Thrift bindings carry it (streamparse's do not: empty)."""
    blacklisted: bool = False
    """Kept out of scheduling by Storm's BlacklistScheduler (after missed heartbeats, for
    ``blacklist.scheduler.resume.time.secs``): listed, but no scheduler is offered its slots."""


@dataclass(frozen=True)
class TopologySummary:
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
class ClusterSummary:
    leader: str | None
    """``host:port`` of the leader Nimbus, None while there is none."""
    supervisors: list[SupervisorSummary]
    topologies: list[TopologySummary]
    nimbuses: list[str] = field(default_factory=list)
    """``host:port`` of every Nimbus registered in ZooKeeper, the leader and its standbys."""


def parse_address(text: str, source: str = "--nimbus") -> NimbusAddress:
    """``host:port`` (or ``host``, port 6627) as a Nimbus address."""
    host, colon, port = text.strip().rpartition(":")
    if not colon:
        host, port = port, str(DEFAULT_PORT)
    try:
        number = int(port)
    except ValueError:
        raise NimbusError(f"Nimbus address {text!r} from {source} is not host:port") from None
    if not host or not 0 < number < 65536:
        raise NimbusError(f"Nimbus address {text!r} from {source} is not host:port")
    return NimbusAddress(host, number, source)


class Nimbus:
    """A connection to one Nimbus, opened again when it drops."""

    def __init__(self, address: NimbusAddress, timeout_ms: int = TIMEOUT_MS, retries: int = RETRIES) -> None:
        self.address = address
        self.timeout_ms = timeout_ms
        self.retries = retries
        self.host = address.host
        """The host of the connection (of the last one, when closed): the leader's, where one of the seeds leads."""
        self._client: Any = None
        self._connect()

    @property
    def where(self) -> str:
        others = "".join(f" or {host}:{self.address.port}" for host in self.address.hosts[1:])
        return f"Nimbus at {self.address}{others} (from {self.address.source})"

    def _connect(self) -> Any:
        """A connection to the first host that answers, or to the leader where it is another of the seeds."""
        hosts = self.address.hosts
        faults = []
        for host in hosts:
            try:
                client = self._open(host)
            except _TRANSIENT as exc:
                faults.append(f"{host}: {_reason(exc)}" if len(hosts) > 1 else _reason(exc))
                continue
            leader = _leader_host(client) if len(hosts) > 1 else None
            if leader is not None and leader != host and leader in hosts:
                try:
                    client, host = self._open(leader), leader
                except _TRANSIENT:
                    pass  # the leader does not answer here: keep the Nimbus that does (reads work on a standby)
            self._client, self.host = client, host
            return client
        raise NimbusError(f"cannot reach {self.where}: {'; '.join(faults)}")

    def _open(self, host: str) -> Any:
        return make_client(
            NimbusService,
            host=host,
            port=self.address.port,
            proto_factory=TBinaryProtocolFactory(),
            trans_factory=TFramedTransportFactory(),
            timeout=self.timeout_ms,
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = None

    def __enter__(self) -> "Nimbus":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _call(self, what: str, fn: Callable[[Any], T], repeatable: bool = True) -> T:
        """One Thrift call; Storm's own answers (not alive, already alive, invalid) pass to the caller."""
        attempts = 1 + (self.retries if repeatable else 0)
        for attempt in range(attempts):
            client = self._client if self._client is not None else self._connect()
            try:
                return fn(client)
            except (NotAliveException, AlreadyAliveException, InvalidTopologyException, NimbusError):
                raise
            except AuthorizationException as exc:
                raise NimbusError(f"{self.where} refused to {what}: not authorized ({exc.msg})") from None
            except _TRANSIENT as exc:
                self.close()
                if attempt + 1 == attempts:
                    raise NimbusError(f"lost the connection to {self.where} while trying to {what}: "
                                      f"{_reason(exc)}") from None
                log.debug("retrying %s after %s", what, _reason(exc))
                time.sleep(RETRY_PAUSE_S * (attempt + 1))
            except TApplicationException as exc:
                raise NimbusError(f"{self.where} failed to {what}: {exc.message or exc}") from None
            except TException as exc:
                detail = getattr(exc, "msg", None) or getattr(exc, "message", None) or type(exc).__name__
                raise NimbusError(f"{self.where} failed to {what}: {detail}") from None
        raise AssertionError("unreachable")

    # ---- the cluster ------------------------------------------------------------------------

    def wait_for_leader(self, timeout_s: float = 60.0) -> str:
        """Block until some Nimbus is the leader; return its host:port."""
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        while True:
            try:
                leader = self._call("ask for the leader", lambda c: c.getLeader())
                if leader is not None and leader.isLeader:
                    if leader.host != self.host and leader.host in self.address.hosts:
                        self.close()  # a standby answered: the next call goes to the leader among the seeds
                    return f"{leader.host}:{leader.port}"
                last = "no Nimbus is leader yet"
            except NimbusError as exc:
                if self._client is None:  # the connection was lost, not just no leader yet
                    raise
                last = str(exc)
            if time.monotonic() >= deadline:
                raise NimbusError(f"{self.where} has no leader after {timeout_s:.0f} s ({last})")
            time.sleep(1.0)

    def summary(self) -> ClusterSummary:
        """Leader, supervisors and topologies as Nimbus sees them."""
        return cluster_summary(self._call("read the cluster summary", lambda c: c.getClusterInfo()))

    def topologies(self) -> list[TopologySummary]:
        return self.summary().topologies

    def find(self, name: str) -> TopologySummary | None:
        return next((t for t in self.topologies() if t.name == name), None)

    def nimbus_conf(self) -> dict[str, Any]:
        """Nimbus's own configuration (its storm.yaml over Storm's defaults)."""
        return json.loads(self._call("read its configuration", lambda c: c.getNimbusConf()))

    # ---- one topology -----------------------------------------------------------------------

    def topology_info(self, topology_id: str) -> Any:
        """The Thrift ``TopologyInfo``: every executor's place and stats, and the scheduler status."""
        try:
            return self._call(f"read the info of {topology_id}", lambda c: c.getTopologyInfo(topology_id))
        except NotAliveException:
            raise NimbusError(f"topology {topology_id!r} is not running on {self.where}") from None

    def user_topology(self, topology_id: str) -> Any:
        """The Thrift ``StormTopology`` as submitted: spouts, bolts, their inputs and parallelism hints."""
        try:
            return self._call(f"read the topology {topology_id}", lambda c: c.getUserTopology(topology_id))
        except NotAliveException:
            raise NimbusError(f"topology {topology_id!r} is not running on {self.where}") from None

    def component_parallelism(self, topology_id: str) -> dict[str, int]:
        """Each user component's executor count as submitted (its parallelism hint), from the user topology."""
        topology = self.user_topology(topology_id)
        components = {**(topology.spouts or {}), **(topology.bolts or {})}
        return {c: int(spec.common.parallelism_hint or 1) for c, spec in components.items()}

    def counts(self, topology_id: str) -> TopologyCounts:
        """Every executor's all-time counts and place, as Nimbus last heard of them."""
        return parse_topology_info(self.topology_info(topology_id))

    def topology_conf(self, topology_id: str) -> dict[str, Any]:
        try:
            text = self._call(f"read the config of {topology_id}", lambda c: c.getTopologyConf(topology_id))
        except NotAliveException:
            raise NimbusError(f"topology {topology_id!r} is not running on {self.where}") from None
        return json.loads(text)

    def upload_jar(self, jar: Path) -> str:
        """Upload a topology jar in chunks; return its location on Nimbus."""
        return self.upload_bytes(Path(jar).read_bytes(), str(jar))

    def upload_bytes(self, data: bytes, label: str = "the topology jar") -> str:
        def upload(client) -> str:
            location = client.beginFileUpload()
            for start in range(0, len(data), UPLOAD_CHUNK_BYTES):
                client.uploadChunk(location, data[start:start + UPLOAD_CHUNK_BYTES])
            client.finishFileUpload(location)
            return location

        location = self._call(f"upload {label}", upload)
        log.info("uploaded %s (%d bytes) to %s", label, len(data), location)
        return location

    def submit(self, name: str, jar_location: str, conf: dict[str, Any], topology: Any) -> None:
        """Submit an uploaded topology, active at once."""
        def submit(client) -> None:
            if not client.isTopologyNameAllowed(name):
                raise NimbusError(f"{self.where} does not allow the topology name {name!r}")
            client.submitTopologyWithOpts(
                name=name, uploadedJarLocation=jar_location, jsonConf=json.dumps(conf), topology=topology,
                options=SubmitOptions(initial_status=TopologyInitialStatus.ACTIVE),
            )

        try:
            self._call(f"submit {name!r}", submit, repeatable=False)
        except AlreadyAliveException:
            raise NimbusError(f"a topology named {name!r} is already running") from None
        except InvalidTopologyException as exc:
            raise NimbusError(f"Nimbus rejected topology {name!r}: {exc.msg}") from None

    def kill(self, name: str, wait_s: int = 0) -> None:
        """Ask Nimbus to kill a topology, which deactivates it for ``wait_s`` seconds first."""
        try:
            self._call(f"kill {name!r}", lambda c: c.killTopologyWithOpts(name, KillOptions(wait_secs=wait_s)),
                       repeatable=False)
        except NotAliveException:
            raise TopologyNotRunning(f"no topology named {name!r} is running") from None

    def deactivate(self, name: str) -> None:
        """Stop the topology's spouts from emitting; tuples already in flight are still processed and acked."""
        self._topology_call("deactivate", name, lambda c: c.deactivate(name))

    def activate(self, name: str) -> None:
        self._topology_call("activate", name, lambda c: c.activate(name))

    def rebalance(self, name: str, wait_s: int = 0, num_executors: dict[str, int] | None = None,
                  conf_overrides: dict[str, Any] | None = None) -> None:
        """Storm's rebalance: deactivate for ``wait_s`` seconds, free the topology's slots, schedule it again (the
        scheduler places it anew), back to its earlier status (active or inactive). ``num_executors``: new executor
        counts of the components named, each at most the component's task count. ``conf_overrides``: keys Nimbus
        merges into the topology's conf before scheduling it (RebalanceOptions.topology_conf_overrides)."""
        options = RebalanceOptionsWithConf(wait_secs=int(wait_s),
                                           num_executors=dict(num_executors) if num_executors else None,
                                           topology_conf_overrides=json.dumps(conf_overrides) if conf_overrides else None)
        self._topology_call("rebalance", name, lambda c: c.rebalance(name, options))

    def _topology_call(self, verb: str, name: str, fn: Callable[[Any], None]) -> None:
        try:
            self._call(f"{verb} {name!r}", fn, repeatable=False)
        except NotAliveException:
            raise TopologyNotRunning(f"no topology named {name!r} is running") from None
        except InvalidTopologyException as exc:
            raise NimbusError(f"Nimbus refused to {verb} {name!r}: {exc.msg}") from None

    def wait_gone(self, name: str, timeout_s: float) -> None:
        """Block until Nimbus no longer lists the topology (kill wait and worker shutdown done)."""
        deadline = time.monotonic() + timeout_s
        while self.find(name) is not None:
            if time.monotonic() >= deadline:
                raise NimbusError(f"topology {name!r} is still listed by Nimbus {timeout_s:.0f} s after the kill")
            time.sleep(1.0)


def cluster_summary(info: Any) -> ClusterSummary:
    """A Thrift ``ClusterSummary`` as plain data."""
    leader = next((f"{n.host}:{n.port}" for n in info.nimbuses or [] if n.isLeader), None)
    supervisors = [
        SupervisorSummary(
            supervisor_id=s.supervisor_id, host=s.host, slots=s.num_workers, used_slots=s.num_used_workers,
            uptime_s=s.uptime_secs, cpu_capacity=(s.total_resources or {}).get("cpu.pcore.percent"),
            memory_capacity_mb=(s.total_resources or {}).get("memory.mb"),
            scheduler_meta=dict(getattr(s, "scheduler_meta", None) or {}),
            blacklisted=bool(getattr(s, "blacklisted", None)),
        )
        for s in info.supervisors or []
    ]
    topologies = [
        TopologySummary(t.id, t.name, t.status, t.num_workers, t.num_executors, t.num_tasks, t.uptime_secs,
                        t.sched_status or "")
        for t in info.topologies or []
    ]
    nimbuses = [f"{n.host}:{n.port}" for n in info.nimbuses or []]
    return ClusterSummary(leader=leader, supervisors=supervisors, topologies=topologies, nimbuses=nimbuses)


def _leader_host(client: Any) -> str | None:
    """The host the Nimbus on ``client`` names as leader; None when it names none or does not say (no leader yet)."""
    try:
        leader = client.getLeader()
    except (*_TRANSIENT, TException):
        return None
    return leader.host if leader is not None and leader.isLeader else None


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return text.rstrip(".")


@contextmanager
def connect(address: NimbusAddress, leader_timeout_s: float = 60.0, timeout_ms: int = TIMEOUT_MS) -> Iterator[Nimbus]:
    """A connection to the leader Nimbus, closed afterwards."""
    nimbus = Nimbus(address, timeout_ms)
    try:
        nimbus.wait_for_leader(leader_timeout_s)
        yield nimbus
    finally:
        nimbus.close()


def try_summary(address: NimbusAddress, timeout_ms: int = 3_000) -> ClusterSummary | None:
    """The cluster summary, or None while Nimbus is not (yet) answering."""
    try:
        with Nimbus(address, timeout_ms, retries=0) as nimbus:
            return nimbus.summary()
    except NimbusError:
        return None
