"""The live heterogeneous cluster: registration, machine types, quotas, worker placement."""
from __future__ import annotations

import ipaddress

import psutil
import pytest

from cluster import cgroups, smoke
from observe import nimbus
from cluster.processes import running
from cluster.spec import load_spec
from cluster.storm_config import PLUGIN_JAR

pytestmark = pytest.mark.live


def test_every_machine_registers_with_nimbus_as_its_type(live_cluster):
    status = live_cluster.status()
    spec = load_spec()
    assert status.running and status.nimbus_leader == f"{status.nimbus_host}:{status.nimbus_port}"
    assert [(s.machine_id, s.machine_type) for s in status.supervisors] == [
        (machine_id, t.name) for machine_id, t in spec.machine_ids()
    ]
    assert all(s.supervisor_id for s in status.supervisors)
    with nimbus.Nimbus(live_cluster.nimbus_address) as client:
        registered = {s.host: s for s in client.summary().supervisors}
    for s in status.supervisors:
        seen = registered[s.host]
        assert seen.slots == spec.machine_type(s.machine_type).slots
        assert seen.cpu_capacity == pytest.approx(spec.machine_type(s.machine_type).cpu_cores * 100)
        assert seen.memory_capacity_mb == pytest.approx(spec.machine_type(s.machine_type).memory_mb)


def test_zookeeper_nimbus_and_supervisors_listen_on_loopback_addresses_only(live_cluster):
    """Workers' Netty servers are left out: Storm 2.8 binds them to every address, with no setting (docs/operations/security.md)."""
    listening = {}
    for daemon in live_cluster.layout.daemon_names():
        process = running(live_cluster.layout.pid_file(daemon))
        if process is None:
            continue
        listening[daemon] = {(c.laddr.ip, c.laddr.port) for c in process.net_connections(kind="tcp")
                             if c.status == psutil.CONN_LISTEN}
    layout = live_cluster.layout
    assert ("127.0.0.1", layout.zookeeper_port) in listening["zookeeper"]
    if not (layout.extlib_daemon / PLUGIN_JAR.name).is_file():
        pytest.skip(f"{PLUGIN_JAR.name} is not built: Nimbus and the supervisors listen on every address without its transport")
    assert ("127.0.0.1", layout.nimbus_port) in listening["nimbus"]
    for machine in layout.machines:
        assert (machine.host, machine.thrift_port) in listening[machine.id]
    open_to_all = {d: a for d, a in listening.items() if any(not ipaddress.ip_address(ip).is_loopback for ip, _ in a)}
    assert not open_to_all, f"listening beyond loopback: {open_to_all}"


def test_each_supervisor_runs_in_its_machines_cgroup_with_its_quota(live_cluster):
    if not live_cluster.status().heterogeneous:
        pytest.skip("cgroups are not writable here: the cluster runs homogeneous")
    for machine in live_cluster.layout.machines:
        quota = cgroups.quota_cores(live_cluster.hierarchies, machine.cgroup)
        assert quota == pytest.approx(machine.cpu_cores)
        supervisor = running(live_cluster.layout.pid_file(machine.id))
        assert cgroups.cgroup_of_pid(supervisor.pid, "cpu") == "/" + machine.cgroup
        assert cgroups.cgroup_of_pid(supervisor.pid, "cpuacct") == "/" + machine.cgroup
        assert live_cluster.machine_of_pid(supervisor.pid) == machine.id
        assert live_cluster.machine_cpu_seconds(machine.id) > 0


def test_the_kernels_quotas_stand_1_2_4_like_the_default_spec(live_cluster):
    if not live_cluster.status().heterogeneous:
        pytest.skip("cgroups are not writable here: the cluster runs homogeneous")
    quotas = [cgroups.quota_cores(live_cluster.hierarchies, m.cgroup) for m in live_cluster.layout.machines]
    assert sorted(q / min(quotas) for q in quotas) == pytest.approx([1, 2, 4])


def test_a_topology_runs_on_every_machine_with_its_workers_and_python_in_the_machines_cgroup(live_cluster):
    topology_id = smoke.submit(live_cluster)
    try:
        run = smoke.wait_until_running(live_cluster, topology_id)
        hosts = {m.host for m in live_cluster.layout.machines}
        assert {host for _component, host, _port in run.executors} == hosts
        by_machine = smoke.processes_by_machine(live_cluster)
        for machine in live_cluster.layout.machines:
            assert by_machine[machine.id]["workers"], f"no worker JVM in {machine.id}'s cgroup"
            assert by_machine[machine.id]["python"], f"no Python bolt process in {machine.id}'s cgroup"
            for pid in by_machine[machine.id]["workers"] + by_machine[machine.id]["python"]:
                assert cgroups.cgroup_of_pid(pid, "cpu") == "/" + machine.cgroup
            for pid in by_machine[machine.id]["workers"]:
                listening = {c.laddr.ip for c in psutil.Process(pid).net_connections(kind="tcp")
                             if c.status == psutil.CONN_LISTEN}
                assert listening, f"worker {pid} on {machine.id} listens nowhere"
                assert {ip.removeprefix("::ffff:") for ip in listening} == {machine.host}, (
                    f"worker {pid} on {machine.id} listens on {sorted(listening)}, not only on {machine.host} "
                    "(the bind-address shim, cluster/bind_address.py)")
        assert topology_id in {t.id for t in live_cluster.status().topologies}
    finally:
        smoke.kill(live_cluster)


def test_up_on_a_running_cluster_changes_nothing(live_cluster):
    before = {d: running(live_cluster.layout.pid_file(d)).pid for d in live_cluster.layout.daemon_names()
              if running(live_cluster.layout.pid_file(d))}
    again = live_cluster.up()
    after = {d: running(live_cluster.layout.pid_file(d)).pid for d in live_cluster.layout.daemon_names()
             if running(live_cluster.layout.pid_file(d))}
    assert again.already_running
    assert before == after


def test_a_supervisor_that_halted_is_restarted_and_registers_again(live_cluster):
    """Storm's supervisors halt on some errors and expect supervision; the cluster restarts them."""
    machine = live_cluster.layout.machines[0]
    before = running(live_cluster.layout.pid_file(machine.id))
    assert before is not None
    before.kill()
    before.wait(30)
    assert machine.id in live_cluster.status().stopped_daemons

    said: list[str] = []
    assert live_cluster.restart_stopped_supervisors(report=said.append) == [machine.id]
    after = live_cluster.status()
    assert after.stopped_daemons == []
    assert next(s for s in after.supervisors if s.machine_id == machine.id).supervisor_id is not None
    assert running(live_cluster.layout.pid_file(machine.id)).pid != before.pid
    assert any(f"Supervisor {machine.id} had stopped" in line for line in said)
    assert live_cluster.restart_stopped_supervisors(report=said.append) == []
