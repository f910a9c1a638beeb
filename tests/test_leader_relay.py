"""The client JVM's route to a leader Nimbus named by an address this host cannot reach (topologies.leader_relay)."""
from __future__ import annotations

import socket
import socketserver
import threading

import pytest

from observe.nimbus import NimbusAddress
from topologies.errors import TopologyError
from topologies.leader_relay import leader_route, split_leader


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(4096):
            self.request.sendall(b"echo:" + data)


@pytest.fixture
def seed():
    """A TCP server standing for the seed Nimbus this host reaches (127.0.0.1, a free port)."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield NimbusAddress("127.0.0.1", server.server_address[1])
    server.shutdown()
    server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_leader_this_host_cannot_resolve_is_reached_through_the_seed_by_a_hosts_file_and_a_relay(seed):
    port = _free_port()
    with leader_route(seed, f"nimbus.invalid:{port}") as options:
        assert len(options) == 1 and options[0].startswith("-Djdk.net.hosts.file=")
        lines = open(options[0].split("=", 1)[1]).read().splitlines()
        relay_ip = next(line.split()[0] for line in lines if line.split()[1:] == ["nimbus.invalid"])
        assert relay_ip.startswith("127.") and relay_ip != "127.0.0.1"
        assert any(socket.gethostname() in line.split()[1:] for line in lines)  # the JVM can still name itself
        with socket.create_connection((relay_ip, port), timeout=5) as client:
            client.sendall(b"getLeader")
            assert client.recv(100) == b"echo:getLeader"
    with pytest.raises(OSError):  # the relay is gone with the JVM
        socket.create_connection((relay_ip, port), timeout=1).close()


def test_no_route_is_added_when_the_leader_is_the_seed_or_answers_as_named(seed):
    with leader_route(seed, str(seed)) as options:
        assert options == []
    with leader_route(seed, None) as options:
        assert options == []
    with leader_route(seed, f"localhost:{seed.port}") as options:  # resolves here and answers
        assert options == []


def test_a_leader_that_is_not_host_and_port_is_named():
    with pytest.raises(TopologyError, match="Nimbus named its leader 'nimbus', not host:port"):
        split_leader("nimbus")
