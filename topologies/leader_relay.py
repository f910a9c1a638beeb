"""The client JVM's way to a leader Nimbus that names itself by an address this host cannot reach.

Storm's ``NimbusClient`` asks its seed for the leader and then connects to the host and port the
leader gives (``nimbus:6627`` on the compose cluster: the container's name and port, published on
this host as ``127.0.0.1:PORT``). The Python client talks to the seed it was given; a JVM cannot be
told to. So for the JVM's lifetime a relay listens on a free loopback address at the leader's port
and forwards to the seed, and a hosts file (JDK's ``jdk.net.hosts.file``) gives the leader's host
that loopback address.
"""
from __future__ import annotations

import contextlib
import socket
import socketserver
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from observe.nimbus import NimbusAddress
from topologies.errors import TopologyError

RELAY_HOSTS = [f"127.77.{i}.1" for i in range(1, 40)]
"""Loopback addresses the relay may listen on (all of 127/8 is loopback here; these are not the local cluster's)."""
CONNECT_TIMEOUT_S = 10.0
BUFFER_BYTES = 65536


def reachable(host: str, port: int, timeout_s: float = 2.0) -> bool:
    """Whether ``host`` resolves on this host and ``host:port`` accepts a connection."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def split_leader(leader: str) -> tuple[str, int]:
    host, _, port = leader.rpartition(":")
    if not host or not port.isdigit():
        raise TopologyError(f"Nimbus named its leader {leader!r}, not host:port")
    return host, int(port)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(BUFFER_BYTES):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


class _Relay(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, listen: tuple[str, int], target: tuple[str, int]):
        self.target = target
        self.host = listen[0]
        """The loopback address it listens on (``server_address`` is typed for any socket family)."""
        super().__init__(listen, _Forward)


class _Forward(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server: _Relay = self.server  # type: ignore[assignment]
        try:
            upstream = socket.create_connection(server.target, timeout=CONNECT_TIMEOUT_S)
        except OSError:
            return  # the client sees its connection closed, as with Nimbus down
        upstream.settimeout(None)
        with upstream:
            back = threading.Thread(target=_pump, args=(upstream, self.request), daemon=True)
            back.start()
            _pump(self.request, upstream)
            back.join()


def _listen(port: int, target: tuple[str, int]) -> _Relay:
    for host in RELAY_HOSTS:
        try:
            return _Relay((host, port), target)
        except OSError:
            continue
    raise TopologyError(f"no free loopback address for a relay to the leader Nimbus at port {port} "
                        f"({RELAY_HOSTS[0]} to {RELAY_HOSTS[-1]} all taken)")


@contextlib.contextmanager
def leader_route(address: NimbusAddress, leader: str | None) -> Iterator[list[str]]:
    """JVM options that take the client to ``leader`` through ``address``: none when it reaches the leader as named."""
    if leader is None or leader == str(address):
        yield []
        return
    host, port = split_leader(leader)
    if reachable(host, port):
        yield []
        return
    relay = _listen(port, (address.host, address.port))
    serving = threading.Thread(target=relay.serve_forever, name="nimbus-leader-relay", daemon=True)
    serving.start()
    try:
        with tempfile.TemporaryDirectory(prefix="hetsched-hosts-") as tmp:
            hosts = Path(tmp) / "hosts"
            local = socket.gethostname()
            hosts.write_text(f"127.0.0.1 localhost {local}\n{relay.host} {host}\n")
            yield [f"-Djdk.net.hosts.file={hosts}"]
    finally:
        relay.shutdown()
        relay.server_close()
