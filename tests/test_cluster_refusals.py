"""Every refusal of the local cluster says what is wrong in a sentence, and starts nothing."""
from __future__ import annotations

import json

import socket
import stat
import sys
from pathlib import Path

import psutil
import pytest
from typer.testing import CliRunner

from cluster import cgroups, preflight, processes
from cluster.errors import ClusterError
from cluster.layout import make_layout
from cluster.local import LocalCluster
from cluster.spec import parse_spec
from cluster.storm_home import ensure_storm_home
from hetsched.cluster_cmd import cluster_app
from observe import nimbus

SPEC = {
    "name": "refusals",
    "port_base": 24000,
    "machine_types": [
        {"name": "small", "cpu_cores": 0.2, "slots": 1},
        {"name": "large", "cpu_cores": 0.8, "slots": 1},
    ],
}


@pytest.fixture
def idle_cluster(tmp_path) -> LocalCluster:
    return LocalCluster(parse_spec(SPEC), home=tmp_path / "home", port_base=24000)


def _fake_tool(folder: Path, name: str, script: str) -> None:
    tool = folder / name
    tool.write_text(f"#!/bin/sh\n{script}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


# ---- cgroups --------------------------------------------------------------------------------


def test_unwritable_cgroups_refuse_a_heterogeneous_cluster_and_start_nothing(idle_cluster, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-cgroup-mount"
    blocker.write_text("a plain file where the cpu controller should be")
    idle_cluster.hierarchies = cgroups.Hierarchies(cpu=blocker, cpuacct=blocker)
    monkeypatch.setattr(preflight, "check_java", lambda: None)
    with pytest.raises(ClusterError) as refused:
        idle_cluster.up()
    message = str(refused.value)
    assert "would not be heterogeneous" in message and "--allow-homogeneous" in message
    assert not idle_cluster.is_running()
    assert not any(idle_cluster.layout.pid_file(d).exists() for d in idle_cluster.layout.daemon_names())


def test_missing_controllers_are_named_and_allow_homogeneous_lets_it_start_without_quotas(idle_cluster):
    with pytest.raises(ClusterError, match="not mounted"):
        preflight.check_cgroups(None, idle_cluster.layout, allow_homogeneous=False)
    assert preflight.check_cgroups(None, idle_cluster.layout, allow_homogeneous=True) is False


def test_controllers_are_found_mounted_apart_or_together(tmp_path):
    apart = tmp_path / "apart"
    apart.write_text(
        "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n"
        "cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0\n"
        "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
    )
    together = tmp_path / "together"
    together.write_text("cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n")
    only_v2 = tmp_path / "v2"
    only_v2.write_text("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n")
    found = cgroups.find_hierarchies(apart)
    assert found == cgroups.Hierarchies(Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup/cpuacct"))
    assert len(found.paths("x")) == 2
    shared = cgroups.find_hierarchies(together)
    assert shared.cpu == shared.cpuacct and len(shared.paths("x")) == 1
    assert cgroups.find_hierarchies(only_v2) is None


def test_a_quota_is_written_in_microseconds_per_period(tmp_path):
    fake = cgroups.Hierarchies(cpu=tmp_path / "cpu", cpuacct=tmp_path / "cpuacct")
    cgroups.create(fake, "hetsched/x/small-1", 0.2)
    assert (tmp_path / "cpu/hetsched/x/small-1/cpu.cfs_quota_us").read_text() == "20000"
    assert cgroups.quota_cores(fake, "hetsched/x/small-1") == pytest.approx(0.2)
    cgroups.create(fake, "hetsched/x/daemons", None)
    assert cgroups.quota_cores(fake, "hetsched/x/daemons") is None
    (tmp_path / "cpuacct/hetsched/x/small-1/cpuacct.usage").write_text("1500000000\n")
    assert cgroups.usage_ns(fake, "hetsched/x/small-1") == 1_500_000_000
    with pytest.raises(ClusterError, match="does not exist"):
        cgroups.usage_ns(fake, "hetsched/x/nope")


def test_machines_weigh_in_proportion_to_their_quotas_under_a_cluster_with_priority(idle_cluster, tmp_path):
    fake = cgroups.Hierarchies(cpu=tmp_path / "cpu", cpuacct=tmp_path / "cpuacct")
    idle_cluster.hierarchies = fake
    idle_cluster._make_cgroups()
    shares = {m.id: int((fake.cpu / m.cgroup / "cpu.shares").read_text()) for m in idle_cluster.layout.machines}
    assert shares == {"small-1": 205, "large-1": 819}
    cluster_shares = int((fake.cpu / idle_cluster.layout.cluster_cgroup / "cpu.shares").read_text())
    assert cluster_shares == cgroups.DEFAULT_CLUSTER_SHARES > sum(shares.values())
    assert (fake.cpu / idle_cluster.layout.machine("large-1").cgroup / "cpu.cfs_quota_us").read_text() == "80000"
    assert (fake.cpuacct / idle_cluster.layout.machine("large-1").cgroup).is_dir()


def test_a_process_outside_the_cluster_belongs_to_no_machine(idle_cluster):
    assert idle_cluster.machine_of_pid(psutil.Process().pid) is None


# ---- tools ----------------------------------------------------------------------------------


def test_missing_java_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ClusterError, match="Java is not installed"):
        preflight.check_java()


def test_an_old_java_is_refused(tmp_path, monkeypatch):
    _fake_tool(tmp_path, "java", "echo 'openjdk version \"11.0.21\" 2023-10-17' >&2")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ClusterError, match="needs Java 17 or newer; 'java' on PATH is Java 11"):
        preflight.check_java()


@pytest.mark.parametrize(("text", "major"), [('openjdk version "17.0.15" 2025', 17), ('java version "1.8.0_392"', 8),
                                             ('openjdk version "21" 2023-09-19', 21), ("garbage", None)])
def test_java_versions_are_read_old_and_new_style(text, major):
    assert preflight.java_major_version(text) == major


def test_missing_maven_is_named_when_storm_home_must_be_assembled(tmp_path, monkeypatch):
    _fake_tool(tmp_path, "java", "exit 0")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HETSCHED_STORM_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("HETSCHED_STORM_HOME", raising=False)
    with pytest.raises(ClusterError, match="Maven is not installed"):
        ensure_storm_home()


def test_a_storm_home_override_that_is_no_distribution_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("HETSCHED_STORM_HOME", str(tmp_path))
    with pytest.raises(ClusterError, match="is not a Storm distribution"):
        ensure_storm_home()


# ---- the spec against this host ----------------------------------------------------------------


def test_quotas_beyond_the_hosts_cores_are_refused():
    with pytest.raises(ClusterError, match="add up to 3 cores but this host has 2"):
        preflight.check_cpu_budget(3.0, host_cores=2)
    preflight.check_cpu_budget(1.4, host_cores=2)


def test_an_unknown_scheduler_or_a_missing_plugin_jar_is_refused(tmp_path, monkeypatch):
    with pytest.raises(ClusterError, match="Unknown scheduler 'fair'"):
        preflight.check_scheduler("fair")
    monkeypatch.setattr(preflight, "PLUGIN_JAR", tmp_path / "missing.jar")
    with pytest.raises(ClusterError, match="plugin jar .*missing.jar does not exist"):
        preflight.check_scheduler("plugin")
    preflight.check_scheduler("resource_aware")


def test_a_port_in_use_is_named_with_its_purpose_and_holder(tmp_path):
    layout = make_layout(parse_spec(SPEC), tmp_path, 24000)
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            holder.bind(("127.0.0.1", layout.nimbus_port))
        except OSError:
            pytest.skip(f"port {layout.nimbus_port} is taken by something else on this machine")
        holder.listen()
        with pytest.raises(ClusterError) as refused:
            preflight.check_ports_free(layout)
    message = str(refused.value)
    assert f"Port {layout.nimbus_port} (Nimbus Thrift) is in use by pid {psutil.Process().pid}" in message
    assert "--port-base" in message


def test_ports_in_the_kernels_ephemeral_range_are_refused(tmp_path):
    layout = make_layout(parse_spec(SPEC), tmp_path, 40000)
    with pytest.raises(ClusterError, match="ephemeral range"):
        preflight.check_ports_free(layout)


# ---- faults while starting ------------------------------------------------------------------------


def test_a_supervisor_that_does_not_register_is_named_with_the_end_of_its_log(idle_cluster, sleepers, monkeypatch):
    for daemon in idle_cluster.layout.daemon_names():
        if daemon != "ui":
            sleepers(idle_cluster, daemon)
    idle_cluster.layout.log_file("large-1").write_text("starting\nFATAL could not bind slot port\n")
    small = idle_cluster.layout.machine("small-1")
    registered_small_only = nimbus.ClusterSummary(
        leader="127.0.0.1:24001",
        supervisors=[nimbus.SupervisorSummary("sup-small", small.host, 1, 0, 5, 20.0, 2048.0)],
        topologies=[],
    )
    monkeypatch.setattr(nimbus, "try_summary", lambda address: registered_small_only)
    with pytest.raises(ClusterError) as refused:
        idle_cluster._wait_until_registered(timeout_s=1.5, report=lambda line: None)
    message = str(refused.value)
    assert "large-1 did not register" in message and "small-1" not in message.split("\n")[0]
    assert "FATAL could not bind slot port" in message


def test_a_daemon_that_dies_while_starting_is_named_with_its_output(idle_cluster, tmp_path, monkeypatch):
    pid_file = idle_cluster.layout.pid_file("nimbus")
    gone = processes.start([sys.executable, "-c", "print('Error: could not find or load main class'); raise SystemExit(1)"],
                           env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path,
                           console_file=idle_cluster.layout.console_file("nimbus"), pid_file=pid_file)
    gone.wait(10)
    monkeypatch.setattr(nimbus, "try_summary", lambda address: None)
    with pytest.raises(ClusterError, match="nimbus exited during start(.|\n)*could not find or load main class"):
        idle_cluster._wait_until_registered(timeout_s=5, report=lambda line: None)


def test_a_partly_running_cluster_is_not_started_again(idle_cluster, sleepers):
    sleepers(idle_cluster, "nimbus")
    idle_cluster.layout.pid_file("zookeeper").write_text('{"pid": 1, "create_time": 0}')
    with pytest.raises(ClusterError, match="partly running \\(zookeeper stopped\\).*down"):
        idle_cluster.up()


def test_down_stops_the_daemons_it_started_and_nothing_else(idle_cluster, sleepers):
    nimbus_process = sleepers(idle_cluster, "nimbus")
    bystander = psutil.Popen(["sleep", "60"])
    try:
        report = idle_cluster.down()
        assert nimbus_process.pid in report.stopped_pids
        assert not nimbus_process.is_running() or nimbus_process.status() == psutil.STATUS_ZOMBIE
        assert bystander.is_running() and bystander.pid not in report.stopped_pids
        assert not idle_cluster.layout.pid_file("nimbus").exists()
    finally:
        bystander.kill()


def test_a_step_of_the_wall_clock_does_not_make_a_running_daemon_look_stopped(tmp_path, monkeypatch):
    pid_file = tmp_path / "nimbus.pid"
    me = psutil.Process()
    pid_file.write_text(json.dumps({"pid": me.pid, "create_time": me.create_time(),
                                    "since_boot_s": processes.since_boot_s(me.pid)}))
    real_boot_time = psutil._pslinux.boot_time
    monkeypatch.setattr(psutil._pslinux, "boot_time", lambda: real_boot_time() - 1.0)  # btime one second back
    assert processes.running(pid_file).pid == me.pid
    pid_file.write_text(json.dumps({"pid": me.pid, "create_time": me.create_time(),
                                    "since_boot_s": processes.since_boot_s(me.pid) - 5.0}))
    assert processes.running(pid_file) is None, "another process that had the same pid"


def test_a_recycled_pid_is_not_taken_for_a_daemon(tmp_path):
    pid_file = tmp_path / "nimbus.pid"
    pid_file.write_text(f'{{"pid": {psutil.Process().pid}, "create_time": 12345.0}}')
    assert processes.running(pid_file) is None
    assert processes.stop(pid_file) == []


# ---- the command line -------------------------------------------------------------------------


def test_the_command_line_prints_refusals_as_one_error_without_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("machine_types: [{name: small, cpu_cores: -1}]\n")
    result = CliRunner().invoke(cluster_app, ["up", "--spec", str(bad), "--home", str(tmp_path / "h")])
    assert result.exit_code == 1
    assert "error:" in result.output and "cpu_cores" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(cluster_app, ["up", "--scheduler", "fair", "--home", str(tmp_path / "h")])
    assert result.exit_code == 1 and "Unknown scheduler 'fair'" in result.output


def test_status_down_and_logs_of_a_cluster_that_is_not_running(tmp_path):
    home = ["--home", str(tmp_path / "h")]
    status = CliRunner().invoke(cluster_app, ["status", *home])
    assert status.exit_code == 3 and "is not running" in status.output
    down = CliRunner().invoke(cluster_app, ["down", *home])
    assert down.exit_code == 0 and "0 processes stopped" in down.output
    logs = CliRunner().invoke(cluster_app, ["logs", "nosuch", *home])
    assert logs.exit_code == 1 and "No daemon 'nosuch'" in logs.output
    listing = CliRunner().invoke(cluster_app, ["logs", *home])
    assert listing.exit_code == 0 and "No logs yet" in listing.output


def test_a_home_under_a_file_is_refused_naming_the_file(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder should be")
    with pytest.raises(ClusterError, match=f"{blocker} is a file, not a folder"):
        LocalCluster(home=blocker / "cluster")


def test_a_memory_limit_is_written_in_bytes_and_needs_the_memory_controller(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("cgroup /c/cpu cgroup rw,cpu 0 0\ncgroup /c/cpuacct cgroup rw,cpuacct 0 0\n"
                      "cgroup /c/memory cgroup rw,memory 0 0\n")
    assert cgroups.find_hierarchies(mounts).memory == Path("/c/memory")
    fake = cgroups.Hierarchies(cpu=tmp_path / "cpu", cpuacct=tmp_path / "cpuacct", memory=tmp_path / "memory")
    cgroups.create(fake, "hetsched/x/small-1", 0.2, memory_mb=768)
    assert (tmp_path / "memory/hetsched/x/small-1/memory.limit_in_bytes").read_text() == str(768 * 2**20)
    assert len(fake.paths("x")) == 3
    without = cgroups.Hierarchies(cpu=tmp_path / "cpu", cpuacct=tmp_path / "cpuacct")
    with pytest.raises(ClusterError, match="'memory' controller is not mounted"):
        cgroups.create(without, "hetsched/x/small-2", 0.2, memory_mb=768)


def test_a_plugin_jar_older_than_its_sources_is_named_in_a_warning(tmp_path):
    import os

    from cluster.preflight import stale_plugin_jar

    jar = tmp_path / "target" / "hetsched-storm-plugin.jar"
    source = tmp_path / "src" / "main" / "java" / "Grouping.java"
    source.parent.mkdir(parents=True)
    jar.parent.mkdir()
    source.write_text("class Grouping {}")
    jar.write_bytes(b"PK")
    os.utime(source, (1_000, 1_000))
    assert stale_plugin_jar(jar) is None
    os.utime(jar, (500, 500))
    warning = stale_plugin_jar(jar)
    assert warning is not None and "1 plugin source file(s) changed after hetsched-storm-plugin.jar" in warning
    assert "java/Grouping.java" in warning and "make plugin" in warning
    assert stale_plugin_jar(tmp_path / "missing.jar") is None
