"""A standby Nimbus beside the leader (issue 35), checked without Storm: what each Nimbus is told, the seeds every
client gets, the fault verbs, and the Python client that follows the leader among the seeds (a fake Thrift Nimbus)."""
from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from pathlib import Path

import psutil
import pytest
from streamparse.thrift import Nimbus as NimbusService
from streamparse.thrift import storm_thrift as st
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.rpc import make_server
from thriftpy2.transport import TFramedTransportFactory
from typer.testing import CliRunner

from cluster import compose, processes
from cluster import local as local_module
from cluster.bind_address import BIND_ADDRESS_ENV
from cluster.errors import ClusterError
from cluster.handle import LocalClusterHandle
from cluster.layout import NIMBUS, NIMBUS_STANDBY, STANDBY_NIMBUS_HOST, UI, ZOOKEEPER, make_layout
from cluster.local import ClusterStatus, LocalCluster
from cluster.spec import MAX_MACHINES, parse_spec
from cluster.storm_config import (
    LOCAL_ADDRESS_TRANSPORT,
    MAIN_CLASSES,
    STANDBY_CODE_SYNC_SECS,
    class_path,
    daemon_conf,
    java_command,
    listen_conf,
)
from hetsched.cluster_cmd import cluster_app
from observe import nimbus
from observe.nimbus import Nimbus, NimbusAddress, NimbusError
from topologies.storm_client import client_storm_yaml

PORT_BASE = 24100
NIMBUS_PORT = PORT_BASE + 1
SPEC = {
    "name": "standby",
    "port_base": PORT_BASE,
    "machine_types": [
        {"name": "small", "cpu_cores": 0.2, "slots": 1},
        {"name": "large", "cpu_cores": 0.8, "slots": 1},
    ],
    "nimbus_standby": True,
}
LEADER = f"127.0.0.1:{NIMBUS_PORT}"
STANDBY = f"{STANDBY_NIMBUS_HOST}:{NIMBUS_PORT}"


def spec(**changes):
    return parse_spec({**SPEC, **changes})


@pytest.fixture
def cluster(tmp_path) -> LocalCluster:
    return LocalCluster(spec(), home=tmp_path / "home", port_base=PORT_BASE)


def summary(leader: str | None, *nimbuses: str) -> nimbus.ClusterSummary:
    return nimbus.ClusterSummary(leader=leader, supervisors=[], topologies=[], nimbuses=list(nimbuses))


# ---- the spec and the layout ----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["maybe", 1, None])
def test_nimbus_standby_must_be_true_or_false_in_one_sentence(value):
    with pytest.raises(ClusterError) as refused:
        spec(nimbus_standby=value)
    message = str(refused.value)
    assert message.startswith("the cluster spec is invalid: nimbus_standby: Input should be a valid boolean")
    assert "\n" not in message and message.endswith(".")


def test_one_nimbus_unless_the_spec_asks_for_a_standby(tmp_path):
    single = make_layout(spec(nimbus_standby=False), tmp_path, PORT_BASE)
    assert parse_spec({k: v for k, v in SPEC.items() if k != "nimbus_standby"}).nimbus_standby is False
    assert single.standby_nimbus_host is None
    assert single.daemon_names() == [ZOOKEEPER, NIMBUS, UI, "small-1", "large-1"]
    assert single.nimbus_hosts() == ["127.0.0.1"]
    assert daemon_conf(single, NIMBUS, "default")["nimbus.seeds"] == ["127.0.0.1"]
    assert "nimbus.code.sync.freq.secs" not in daemon_conf(single, NIMBUS, "default")
    with pytest.raises(ClusterError, match="'nimbus-standby' is no Nimbus of cluster 'standby'"):
        single.nimbus_host_of(NIMBUS_STANDBY)


def test_the_standby_has_its_own_address_past_every_machines_even_in_the_largest_cluster(tmp_path):
    largest = make_layout(spec(machine_types=[{"name": "tiny", "cpu_cores": 0.01, "slots": 1, "count": MAX_MACHINES}]),
                          tmp_path, PORT_BASE)
    assert largest.standby_nimbus_host == STANDBY_NIMBUS_HOST == "127.0.0.52"
    assert STANDBY_NIMBUS_HOST not in {m.host for m in largest.machines} | {largest.nimbus_host}
    layout = make_layout(spec(), tmp_path, PORT_BASE)
    assert layout.daemon_names() == [ZOOKEEPER, NIMBUS, NIMBUS_STANDBY, UI, "small-1", "large-1"]
    assert layout.nimbus_hosts() == ["127.0.0.1", STANDBY_NIMBUS_HOST]
    assert layout.daemon_of_nimbus(STANDBY) == NIMBUS_STANDBY and layout.daemon_of_nimbus(LEADER) == NIMBUS
    assert layout.daemon_of_nimbus(f"127.0.0.1:{NIMBUS_PORT + 1}") is None
    assert not {layout.pid_file(NIMBUS), layout.log_file(NIMBUS), layout.local_dir(NIMBUS)} & {
        layout.pid_file(NIMBUS_STANDBY), layout.log_file(NIMBUS_STANDBY), layout.local_dir(NIMBUS_STANDBY)}
    assert type(layout).model_validate(json.loads(layout.model_dump_json())) == layout, "state.json keeps the standby"


# ---- what each daemon is told ---------------------------------------------------------------------


def test_each_nimbus_has_its_own_hostname_and_folders_on_the_same_port_and_every_daemon_has_both_seeds(tmp_path):
    layout = make_layout(spec(), tmp_path, PORT_BASE)
    first, standby = (daemon_conf(layout, d, "plugin", {"topology.workers": 2}) for d in (NIMBUS, NIMBUS_STANDBY))
    assert (first["storm.local.hostname"], standby["storm.local.hostname"]) == ("127.0.0.1", STANDBY_NIMBUS_HOST)
    assert first["nimbus.thrift.port"] == standby["nimbus.thrift.port"] == NIMBUS_PORT
    assert first["storm.local.dir"] == str(layout.local_dir(NIMBUS))
    assert standby["storm.local.dir"] == str(layout.local_dir(NIMBUS_STANDBY)) != first["storm.local.dir"]
    assert standby["storm.metricstore.rocksdb.location"] == str(layout.local_dir(NIMBUS_STANDBY) / "storm_rocks")
    assert first["storm.metricstore.rocksdb.location"] == str(layout.local_dir(NIMBUS) / "storm_rocks")
    assert first["storm.scheduler"] == standby["storm.scheduler"] == "org.hetsched.storm.HetschedScheduler"
    assert first["nimbus.code.sync.freq.secs"] == standby["nimbus.code.sync.freq.secs"] == STANDBY_CODE_SYNC_SECS
    assert standby["topology.workers"] == 2, "the spec's storm_conf and --conf reach the standby too"
    for daemon in layout.daemon_names():
        assert daemon_conf(layout, daemon, "plugin")["nimbus.seeds"] == ["127.0.0.1", STANDBY_NIMBUS_HOST]
    machine = daemon_conf(layout, "small-1", "plugin")
    assert machine["storm.local.hostname"] == layout.machine("small-1").host
    assert listen_conf(layout, NIMBUS_STANDBY) == listen_conf(layout, NIMBUS) == {"nimbus.thrift.transport": LOCAL_ADDRESS_TRANSPORT}


def test_the_standby_runs_nimbus_with_the_plugin_jar_its_own_log_and_the_nimbus_heap(tmp_path):
    layout = make_layout(spec(daemon_heap_mb={"nimbus": 512}), tmp_path / "home", PORT_BASE)
    storm_home = tmp_path / "storm"
    command = java_command(storm_home, layout, NIMBUS_STANDBY, spec(daemon_heap_mb={"nimbus": 512}).daemon_heap_mb)
    assert command[-1] == MAIN_CLASSES[NIMBUS_STANDBY] == MAIN_CLASSES[NIMBUS] == "org.apache.storm.daemon.nimbus.Nimbus"
    assert "-Xmx512m" in command and "-Ddaemon.name=nimbus-standby" in command
    assert f"-Dstorm.conf.file={layout.conf_file(NIMBUS_STANDBY)}" in command
    assert f"-Dstorm.log.dir={layout.log_dir(NIMBUS_STANDBY)}" in command
    assert f"-Dlogfile.name={layout.log_file(NIMBUS_STANDBY).name}" in command
    entries = command[command.index("-cp") + 1].split(":")
    assert f"{layout.extlib_daemon}/*" in entries, "the plugin jar is on both Nimbus class paths"
    assert str(layout.conf_file(NIMBUS_STANDBY).parent) in entries
    assert class_path(storm_home, layout, NIMBUS_STANDBY) == class_path(storm_home, layout, NIMBUS)


def test_both_nimbus_daemons_bind_their_own_address_through_the_shim_and_one_nimbus_binds_as_before(cluster, tmp_path, monkeypatch):
    library = tmp_path / "hetsched-bind-address.so"
    monkeypatch.setattr(local_module, "shim_library", lambda: (library, ""))
    base = {"PATH": "/usr/bin", "LD_PRELOAD": "/lib/other.so"}
    for daemon, host in ((NIMBUS, "127.0.0.1"), (NIMBUS_STANDBY, STANDBY_NIMBUS_HOST), ("large-1", "127.0.0.3")):
        env = cluster._bound_environment(daemon, base)
        assert env[BIND_ADDRESS_ENV] == host and env["LD_PRELOAD"] == f"{library} /lib/other.so"
    assert cluster._bound_environment(ZOOKEEPER, base) == base
    single = LocalCluster(spec(nimbus_standby=False), home=tmp_path / "single", port_base=PORT_BASE)
    assert single._bound_environment(NIMBUS, base) == base


def test_up_writes_a_storm_yaml_for_each_nimbus(cluster, tmp_path):
    cluster._prepare_home("default", {"topology.workers": 1}, tmp_path / "storm")
    written = {d: cluster.layout.conf_file(d).read_text() for d in (NIMBUS, NIMBUS_STANDBY)}
    assert f"storm.local.hostname: {STANDBY_NIMBUS_HOST}" in written[NIMBUS_STANDBY]
    assert "storm.local.hostname: 127.0.0.1" in written[NIMBUS]
    assert cluster.layout.local_dir(NIMBUS_STANDBY).is_dir() and cluster.layout.log_dir(NIMBUS_STANDBY).is_dir()


def test_without_the_shim_a_standby_is_refused_before_anything_starts(cluster, monkeypatch):
    for check in ("check_scheduler", "check_java", "check_cpu_budget", "check_ports_free"):
        monkeypatch.setattr(local_module.preflight, check, lambda *args, **kwargs: None)
    monkeypatch.setattr(local_module.preflight, "check_cgroups", lambda *args: False)
    monkeypatch.setattr(local_module, "shim_library", lambda: (None, "no C compiler (cc or gcc) to build the bind-address shim"))
    monkeypatch.setattr(local_module, "ensure_storm_home", lambda: pytest.fail("nothing may start"))
    with pytest.raises(ClusterError) as refused:
        cluster.up(allow_homogeneous=True, report=lambda line: None)
    assert str(refused.value).startswith("A standby Nimbus cannot run here: no C compiler (cc or gcc)")
    assert not any(cluster.layout.pid_file(d).exists() for d in cluster.layout.daemon_names())


def test_the_compose_cluster_refuses_a_standby_in_one_sentence():
    with pytest.raises(ClusterError, match="^The cluster spec 'standby' asks for a standby Nimbus, which only the local "
                                           "cluster runs; leave nimbus_standby out of a spec for the compose cluster.$"):
        compose.deployment(spec())


# ---- the seeds every client gets ------------------------------------------------------------------


def test_clients_get_both_nimbus_hosts_as_seeds(cluster):
    address = cluster.nimbus_address
    assert (address.host, address.port, address.seeds) == ("127.0.0.1", NIMBUS_PORT, (STANDBY_NIMBUS_HOST,))
    assert address.hosts == ["127.0.0.1", STANDBY_NIMBUS_HOST]
    assert LocalClusterHandle(cluster).nimbus.seeds == (STANDBY_NIMBUS_HOST,)
    assert client_storm_yaml(address) == {"nimbus.seeds": ["127.0.0.1", STANDBY_NIMBUS_HOST], "nimbus.thrift.port": NIMBUS_PORT}
    assert NimbusAddress("127.0.0.1", 1).hosts == ["127.0.0.1"]


class FakeNimbus:
    """Storm's Nimbus Thrift service as far as finding the leader goes: who leads, and the registered Nimbus hosts."""

    def __init__(self, host: str, port: int, state: dict) -> None:
        self.host, self.port, self.state = host, port, state
        self.server = make_server(NimbusService, self, host, port, proto_factory=TBinaryProtocolFactory(),
                                  trans_factory=TFramedTransportFactory(), client_timeout=None)
        self.connections: list = []
        serve_one = self.server.handle

        def handle(connection) -> None:
            self.connections.append(connection)
            serve_one(connection)

        self.server.handle = handle
        self.server.trans.listen()  # listening before the client connects, not once the thread runs
        self.server.trans.listen = lambda: None
        threading.Thread(target=self.server.serve, daemon=True).start()

    def getLeader(self):  # noqa: N802 - Storm's Thrift name
        leader = self.state["leader"]
        return st.NimbusSummary(host=leader, port=self.port, uptime_secs=1, isLeader=True, version="2.8.3") if leader else None

    def getClusterInfo(self):  # noqa: N802 - Storm's Thrift name
        nimbuses = [st.NimbusSummary(host=h, port=self.port, uptime_secs=1, isLeader=h == self.state["leader"], version="2.8.3")
                    for h in self.state["up"]]
        return st.ClusterSummary(supervisors=[], topologies=[], nimbuses=nimbuses, nimbus_uptime_secs=1)

    def close(self) -> None:
        """Die as a killed Nimbus does: no more connections, and the open ones dropped."""
        self.server.close()
        for sock in [self.server.trans.sock, *(c.sock for c in self.connections)]:
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()


def free_port_on(*hosts: str) -> int:
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind((hosts[0], 0))
            port = probe.getsockname()[1]
        if all(_free(host, port) for host in hosts):
            return port
    raise RuntimeError("no port free on every host")


def _free(host: str, port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


@pytest.fixture
def fake_nimbuses():
    started: list[FakeNimbus] = []

    def start(hosts: list[str], port: int, state: dict) -> list[FakeNimbus]:
        made = [FakeNimbus(h, port, state) for h in hosts]
        started.extend(made)
        return made

    yield start
    for fake in started:
        fake.close()


def test_the_client_goes_to_the_leader_among_the_seeds_and_finds_the_new_one_after_a_drop(fake_nimbuses):
    port = free_port_on("127.0.0.1", STANDBY_NIMBUS_HOST)
    state = {"leader": STANDBY_NIMBUS_HOST, "up": ["127.0.0.1", STANDBY_NIMBUS_HOST]}
    first, standby = fake_nimbuses(["127.0.0.1", STANDBY_NIMBUS_HOST], port, state)
    address = NimbusAddress("127.0.0.1", port, "the test", seeds=(STANDBY_NIMBUS_HOST,))
    with Nimbus(address, timeout_ms=3000) as client:
        assert client.host == STANDBY_NIMBUS_HOST, "the first seed answered but names the standby as leader"
        found = client.summary()
        assert found.leader == f"{STANDBY_NIMBUS_HOST}:{port}"
        assert found.nimbuses == [f"127.0.0.1:{port}", f"{STANDBY_NIMBUS_HOST}:{port}"]
        standby.close()  # the leader dies; the first takes over
        state.update(leader="127.0.0.1", up=["127.0.0.1"])
        assert client.summary().leader == f"127.0.0.1:{port}"
        assert client.host == "127.0.0.1"
        assert client.wait_for_leader(5) == f"127.0.0.1:{port}"


def test_a_seed_that_does_not_answer_is_passed_over_and_none_answering_names_every_seed(fake_nimbuses):
    port = free_port_on("127.0.0.1", STANDBY_NIMBUS_HOST)
    fake_nimbuses([STANDBY_NIMBUS_HOST], port, {"leader": None, "up": [STANDBY_NIMBUS_HOST]})
    address = NimbusAddress("127.0.0.1", port, "the test", seeds=(STANDBY_NIMBUS_HOST,))
    with Nimbus(address, timeout_ms=3000) as client:
        assert client.host == STANDBY_NIMBUS_HOST
        assert client.summary().leader is None
    nobody = free_port_on("127.0.0.1", STANDBY_NIMBUS_HOST)
    with pytest.raises(NimbusError) as fault:
        Nimbus(NimbusAddress("127.0.0.1", nobody, "the test", seeds=(STANDBY_NIMBUS_HOST,)), timeout_ms=2000)
    message = str(fault.value)
    assert message.startswith(f"cannot reach Nimbus at 127.0.0.1:{nobody} or {STANDBY_NIMBUS_HOST}:{nobody} (from the test): "
                              f"127.0.0.1: ")
    assert f"; {STANDBY_NIMBUS_HOST}: " in message and "\n" not in message


# ---- status, the fault verbs, up and down --------------------------------------------------------


def test_status_reports_the_standby_and_which_nimbus_leads(cluster, sleepers, monkeypatch):
    sleepers(cluster, ZOOKEEPER)
    sleepers(cluster, NIMBUS_STANDBY)
    asked: list[NimbusAddress] = []
    monkeypatch.setattr(nimbus, "try_summary", lambda address: asked.append(address) or summary(STANDBY, STANDBY))
    status = cluster.status()
    assert asked and asked[0].hosts == ["127.0.0.1", STANDBY_NIMBUS_HOST], "the standby alone is asked too"
    assert (status.nimbus_standby_host, status.nimbus_leader) == (STANDBY_NIMBUS_HOST, STANDBY)
    assert cluster.leader_daemon() == NIMBUS_STANDBY


def test_the_command_line_prints_the_standby_and_the_leader(monkeypatch):
    shown = ClusterStatus(name="standby", home=Path("/h"), running=True, scheduler="plugin", heterogeneous=True,
                          nimbus_host="127.0.0.1", nimbus_port=NIMBUS_PORT, nimbus_leader=STANDBY, ui_url=None,
                          supervisors=[], nimbus_standby_host=STANDBY_NIMBUS_HOST)
    asked = {}

    def up(self, **kwargs):
        asked["standby"] = self.layout.standby_nimbus_host
        return shown

    monkeypatch.setattr(LocalCluster, "up", up)
    result = CliRunner().invoke(cluster_app, ["up", "--standby-nimbus", "--home", "/nonexistent/standby-home"])
    assert result.exit_code == 0, result.output
    assert asked["standby"] == STANDBY_NIMBUS_HOST, "--standby-nimbus sets the spec's nimbus_standby"
    assert f"Nimbus Thrift: 127.0.0.1:{NIMBUS_PORT}, standby {STANDBY} (leader: {STANDBY})" in result.output


def test_kill_daemon_stops_the_leader_and_keeps_it_listed_as_stopped(cluster, sleepers, monkeypatch):
    sleepers(cluster, ZOOKEEPER)
    leader = sleepers(cluster, NIMBUS)
    standby = sleepers(cluster, NIMBUS_STANDBY)
    monkeypatch.setattr(nimbus, "try_summary", lambda address: summary(LEADER, LEADER, STANDBY))
    assert cluster.leader_daemon() == NIMBUS
    assert cluster.kill_daemon(cluster.leader_daemon(), grace_s=0) == [leader.pid]
    assert not leader.is_running() or leader.status() == psutil.STATUS_ZOMBIE
    assert standby.is_running()
    assert cluster.status().stopped_daemons == [NIMBUS]
    with pytest.raises(ClusterError, match="^nimbus of cluster 'standby' is not running; there is nothing to kill.$"):
        cluster.kill_daemon(NIMBUS)
    with pytest.raises(ClusterError, match="^No daemon 'nimbus-2'; choose one of zookeeper, nimbus, nimbus-standby, ui"):
        cluster.kill_daemon("nimbus-2")


def test_restart_daemon_starts_a_stopped_nimbus_and_waits_until_it_is_listed(cluster, sleepers, monkeypatch):
    sleepers(cluster, ZOOKEEPER)
    sleepers(cluster, NIMBUS_STANDBY)
    monkeypatch.setattr(LocalCluster, "_start_daemon", lambda self, daemon, *args: sleepers(self, daemon))
    answers = iter([None, summary(STANDBY, STANDBY)])
    monkeypatch.setattr(nimbus, "try_summary", lambda address: next(answers, summary(STANDBY, STANDBY, LEADER)))
    monkeypatch.setattr(local_module.time, "sleep", lambda s: None)
    said: list[str] = []
    pid = cluster.restart_daemon(NIMBUS, timeout_s=30, report=said.append)
    assert processes.running(cluster.layout.pid_file(NIMBUS)).pid == pid
    assert said[-1] == f"nimbus is listed at {LEADER} and stands by (leader: {STANDBY})."
    assert cluster.restart_daemon(NIMBUS) == pid, "a running daemon is left alone"


def test_a_second_up_restarts_a_killed_nimbus_while_the_other_leads(cluster, sleepers, monkeypatch):
    sleepers(cluster, ZOOKEEPER)
    sleepers(cluster, NIMBUS_STANDBY)
    cluster.layout.pid_file(NIMBUS).write_text('{"pid": 1, "create_time": 0}')  # killed: its pid file stays
    restarted: list[str] = []
    monkeypatch.setattr(LocalCluster, "restart_daemon", lambda self, daemon, *args: restarted.append(daemon))
    monkeypatch.setattr(LocalCluster, "restart_stopped_supervisors", lambda self, *args: restarted.append("supervisors"))
    monkeypatch.setattr(nimbus, "try_summary", lambda address: None)
    assert cluster.up().already_running
    assert restarted == [NIMBUS, "supervisors"]


def test_supervisors_restart_while_a_killed_nimbus_stays_stopped(cluster, sleepers, monkeypatch):
    sleepers(cluster, ZOOKEEPER)
    sleepers(cluster, NIMBUS_STANDBY)
    cluster.layout.pid_file(NIMBUS).write_text('{"pid": 1, "create_time": 0}')
    monkeypatch.setattr(LocalCluster, "_start_daemon", lambda self, daemon, *args: sleepers(self, daemon))
    hosts = [m.host for m in cluster.layout.machines]
    registered = nimbus.ClusterSummary(leader=STANDBY, topologies=[], nimbuses=[STANDBY], supervisors=[
        nimbus.SupervisorSummary(f"sup-{h}", h, 1, 0, 5, 20.0, 1024.0) for h in hosts])
    monkeypatch.setattr(nimbus, "try_summary", lambda address: registered)
    monkeypatch.setattr(cluster, "_last_error", lambda daemon: "killed")
    assert cluster.restart_stopped_supervisors(timeout_s=10, report=lambda line: None) == ["small-1", "large-1"]


def test_down_stops_the_standby_even_when_status_is_asked_with_a_spec_without_one(cluster, sleepers, tmp_path):
    cluster.layout.home.mkdir(parents=True)
    cluster._save_state("default", False, tmp_path / "storm", {})
    standby = sleepers(cluster, NIMBUS_STANDBY)
    plain = LocalCluster(spec(nimbus_standby=False), home=cluster.layout.home, port_base=PORT_BASE)
    assert plain.layout.standby_nimbus_host == STANDBY_NIMBUS_HOST, "the running cluster's saved layout wins"
    report = plain.down()
    assert standby.pid in report.stopped_pids
    deadline = time.monotonic() + 5
    while standby.is_running() and standby.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not plain.layout.pid_file(NIMBUS_STANDBY).exists()


def test_the_test_sessions_supervision_restarts_zookeeper_then_a_stopped_nimbus_then_the_supervisors(
        cluster, sleepers, monkeypatch):
    cluster.layout.pid_file(ZOOKEEPER).parent.mkdir(parents=True, exist_ok=True)
    for daemon in (ZOOKEEPER, NIMBUS):
        cluster.layout.pid_file(daemon).write_text('{"pid": 1, "create_time": 0}')  # halted: its pid file stays
    sleepers(cluster, NIMBUS_STANDBY)
    restarted: list[str] = []
    monkeypatch.setattr(LocalCluster, "restart_daemon", lambda self, daemon, **kw: restarted.append(daemon))
    monkeypatch.setattr(LocalCluster, "restart_stopped_supervisors", lambda self, **kw: ["small-1"])
    said: list[str] = []
    assert cluster.restart_stopped_daemons(timeout_s=10, report=said.append) == [ZOOKEEPER, NIMBUS, "small-1"]
    assert restarted == [ZOOKEEPER, NIMBUS], "the running standby is left alone"
    assert said[0].startswith(f"{ZOOKEEPER} had stopped (no ERROR line in ") and said[1].startswith(f"{NIMBUS} had stopped")
