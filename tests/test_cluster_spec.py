"""Cluster spec parsing, the layout derived from it, and each daemon's storm.yaml."""
from __future__ import annotations

from pathlib import Path

import pytest

from cluster.errors import ClusterError
from cluster.layout import make_layout, port_span, resolve_home, resolve_port_base
from cluster.spec import DEFAULT_SPEC, load_spec, parse_conf_overrides, parse_spec
from cluster.storm_config import (
    LOCAL_ADDRESS_TRANSPORT,
    SCHEDULERS,
    daemon_conf,
    java_command,
    listen_conf,
    zookeeper_cfg,
    zookeeper_cfg_file,
)
from planner.model import Cluster

GOOD = {
    "name": "lab",
    "port_base": 30000,
    "machine_types": [
        {"name": "slow", "cpu_cores": 0.25, "slots": 1, "memory_mb": 512, "count": 2},
        {"name": "fast", "cpu_cores": 1.0, "slots": 3, "memory_mb": 4096, "count": 1},
    ],
    "storm_conf": {"topology.stats.sample.rate": 1.0},
}


def test_the_default_spec_has_three_types_at_1_2_4_one_machine_each_within_the_hosts_two_cores():
    spec = load_spec()
    cores = [t.cpu_cores for t in spec.machine_types]
    assert [c / min(cores) for c in cores] == pytest.approx([1, 2, 4])
    assert [t.count for t in spec.machine_types] == [1, 1, 1]
    assert spec.total_cpu_cores <= 1.5


def test_machines_are_numbered_within_their_type_and_map_to_the_planner_model():
    spec = parse_spec(GOOD)
    assert [m for m, _t in spec.machine_ids()] == ["slow-1", "slow-2", "fast-1"]
    planner_cluster = spec.planner_cluster()
    assert isinstance(planner_cluster, Cluster)
    assert [(m.id, m.type) for m in planner_cluster.machines] == [("slow-1", "slow"), ("slow-2", "slow"), ("fast-1", "fast")]
    assert {t.name: t.cores for t in planner_cluster.machine_types} == {"slow": 0.25, "fast": 1.0}
    assert {t.name: t.capacity for t in planner_cluster.machine_types} == {"slow": 100.0, "fast": 100.0}
    with_base = spec.planner_cluster({"slow": 24.5})
    assert {t.name: t.capacity for t in with_base.machine_types} == {"slow": 75.5, "fast": 100.0}


@pytest.mark.parametrize("value", [-1.0, 100.0, float("nan"), "ten", True, None])
def test_a_profile_set_with_a_bad_base_load_is_refused_naming_the_machine_type(value):
    from planner.errors import PlanningError
    from planner.model import ProfileEntry, ProfileSet
    from planner.profiles import machine_base_load

    entry = ProfileEntry(profile="k", machine_type="slow", e=0.01, met=1.0)
    assert machine_base_load(ProfileSet(name="p", entries=[entry], source={"machine_base_load": {"slow": 12.5}})) == {"slow": 12.5}
    assert machine_base_load(ProfileSet(name="p", entries=[entry])) == {}
    with pytest.raises(PlanningError, match="machine type slow"):
        machine_base_load(ProfileSet(name="p", entries=[entry], source={"machine_base_load": {"slow": value}}))


@pytest.mark.parametrize(
    ("change", "fault"),
    [
        ({"machine_types": []}, "machine_types"),
        ({"machine_types": [{"name": "a", "cpu_cores": 0}]}, "machine_types.0.cpu_cores"),
        ({"machine_types": [{"name": "a", "cpu_cores": -1}]}, "machine_types.0.cpu_cores"),
        ({"machine_types": [{"name": "a", "cpu_cores": float("nan")}]}, "machine_types.0.cpu_cores"),
        ({"machine_types": [{"name": "a", "cpu_cores": 0.5, "slots": 11}]}, "machine_types.0.slots"),
        ({"machine_types": [{"name": "Big Box", "cpu_cores": 0.5}]}, "machine_types.0.name"),
        ({"machine_types": [{"name": "a", "cpu_cores": 0.5}, {"name": "a", "cpu_cores": 1}]}, "repeated: a"),
        ({"machine_types": [{"name": "a", "cpu_cores": 0.5, "count": 0}]}, "no machine"),
        ({"machine_types": [{"name": "a", "cpu_cores": 0.5, "count": 40}, {"name": "b", "cpu_cores": 0.1, "count": 40}]}, "at most 50"),
        ({"port_base": 80}, "port_base"),
        ({"cpus": 3}, "cpus: unknown field"),
    ],
)
def test_a_bad_spec_is_refused_naming_the_field(change, fault):
    with pytest.raises(ClusterError) as refused:
        parse_spec({**GOOD, **change})
    assert fault in str(refused.value)


def test_a_spec_that_is_not_a_mapping_is_refused():
    with pytest.raises(ClusterError, match="must be a mapping"):
        parse_spec(["small"])


def test_spec_files_missing_or_not_yaml_are_refused(tmp_path):
    with pytest.raises(ClusterError, match="does not exist"):
        load_spec(tmp_path / "nope.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("machine_types: [\n")
    with pytest.raises(ClusterError, match="not valid YAML"):
        load_spec(broken)
    with pytest.raises(ClusterError, match="cannot be read"):
        load_spec(tmp_path)


def test_conf_overrides_are_read_as_yaml_values():
    assert parse_conf_overrides(["a.b=1", "c=true", "d=[1, 2]", "e=http://x:1/p", "f="]) == {
        "a.b": 1, "c": True, "d": [1, 2], "e": "http://x:1/p", "f": "",
    }
    for bad in ["novalue", "=1", "k=[1,"]:
        with pytest.raises(ClusterError, match="--conf"):
            parse_conf_overrides([bad])


def test_home_and_port_base_come_from_argument_then_environment_then_spec(tmp_path, monkeypatch):
    spec = parse_spec({**GOOD, "home": str(tmp_path / "from-spec")})
    monkeypatch.delenv("HETSCHED_CLUSTER_HOME", raising=False)
    monkeypatch.delenv("HETSCHED_CLUSTER_PORT_BASE", raising=False)
    assert resolve_home(spec) == tmp_path / "from-spec"
    assert resolve_port_base(spec) == 30000
    monkeypatch.setenv("HETSCHED_CLUSTER_HOME", str(tmp_path / "from-env"))
    monkeypatch.setenv("HETSCHED_CLUSTER_PORT_BASE", "31000")
    assert resolve_home(spec) == tmp_path / "from-env"
    assert resolve_port_base(spec) == 31000
    assert resolve_home(spec, tmp_path / "arg") == tmp_path / "arg"
    assert resolve_port_base(spec, 32000) == 32000
    monkeypatch.setenv("HETSCHED_CLUSTER_PORT_BASE", "lots")
    with pytest.raises(ClusterError, match="HETSCHED_CLUSTER_PORT_BASE"):
        resolve_port_base(spec)


def test_two_clusters_with_different_homes_and_bases_share_no_port_folder_or_cgroup(tmp_path):
    spec = parse_spec(GOOD)
    a = make_layout(spec, tmp_path / "a", 30000)
    b = make_layout(spec, tmp_path / "b", 30000 + port_span(len(spec.machine_ids())))
    assert not set(a.all_ports()) & set(b.all_ports())
    assert a.key != b.key and a.name == b.name
    assert not {m.cgroup for m in a.machines} & {m.cgroup for m in b.machines}
    assert not {a.pid_file(d) for d in a.daemon_names()} & {b.pid_file(d) for d in b.daemon_names()}
    assert len(set(a.all_ports())) == 3 + len(a.machines) + sum(m.slots for m in a.machines)
    assert all(30000 <= p < 30000 + port_span(len(a.machines)) for p in a.all_ports())


def test_a_port_base_without_room_for_the_cluster_is_refused(tmp_path):
    spec = parse_spec(GOOD)
    with pytest.raises(ClusterError, match="does not leave room"):
        make_layout(spec, tmp_path, 65500)


def test_a_supervisor_declares_its_type_capacity_slots_and_hostname(tmp_path):
    spec = parse_spec(GOOD)
    layout = make_layout(spec, tmp_path, 30000)
    slow2 = layout.machine("slow-2")
    conf = daemon_conf(layout, "slow-2", "resource_aware", spec.storm_conf)
    assert conf["supervisor.scheduler.meta"] == {"machine-type": "slow", "machine-id": "slow-2", "cores": "0.25"}
    assert conf["supervisor.cpu.capacity"] == 25.0
    assert conf["supervisor.memory.capacity.mb"] == 512.0
    assert conf["supervisor.slots.ports"] == slow2.slot_ports
    assert conf["storm.local.hostname"] == slow2.host != layout.machine("slow-1").host
    assert conf["storm.local.dir"] == str(tmp_path / "data" / "slow-2")
    assert conf["storm.scheduler"] == SCHEDULERS["resource_aware"]
    assert conf["topology.stats.sample.rate"] == 1.0
    assert conf["storm.zookeeper.port"] == 30000 and conf["nimbus.thrift.port"] == 30001


def test_extra_settings_override_the_clusters_own(tmp_path):
    layout = make_layout(parse_spec(GOOD), tmp_path, 30000)
    conf = daemon_conf(layout, "nimbus", "plugin", {"hetsched.planner.url": "http://127.0.0.1:9", "nimbus.task.timeout.secs": 5})
    assert conf["storm.scheduler"] == "org.hetsched.storm.HetschedScheduler"
    assert conf["hetsched.planner.url"] == "http://127.0.0.1:9"
    assert conf["nimbus.task.timeout.secs"] == 5


def test_daemons_start_as_java_with_their_own_conf_file_and_the_clusters_extlib(tmp_path):
    layout = make_layout(parse_spec(GOOD), tmp_path, 30000)
    storm_home = Path("/opt/storm")
    command = java_command(storm_home, layout, "fast-1", parse_spec(GOOD).daemon_heap_mb)
    assert command[0] == "java" and command[-1] == "org.apache.storm.daemon.supervisor.Supervisor"
    assert f"-Dstorm.conf.file={layout.conf_file('fast-1')}" in command
    assert f"-Dstorm.home={storm_home}" in command
    class_path = command[command.index("-cp") + 1]
    assert f"{layout.extlib_daemon}/*" in class_path.split(":")
    assert java_command(storm_home, layout, "nimbus", parse_spec(GOOD).daemon_heap_mb)[-1] == "org.apache.storm.daemon.nimbus.Nimbus"


def test_the_default_spec_file_is_the_packaged_one():
    assert DEFAULT_SPEC.name == "default.yaml" and DEFAULT_SPEC.is_file()


def test_every_daemon_is_told_to_listen_on_its_own_loopback_address(tmp_path):
    layout = make_layout(parse_spec(GOOD), tmp_path, 30000)
    assert listen_conf(layout, "nimbus") == {"nimbus.thrift.transport": LOCAL_ADDRESS_TRANSPORT}
    assert daemon_conf(layout, "nimbus", "plugin")["storm.local.hostname"] == "127.0.0.1"
    for machine in layout.machines:
        assert listen_conf(layout, machine.id) == {"supervisor.thrift.transport": LOCAL_ADDRESS_TRANSPORT}
        assert daemon_conf(layout, machine.id, "plugin")["storm.local.hostname"] == machine.host
    assert daemon_conf(layout, "ui", "plugin")["ui.host"] == "127.0.0.1"
    cfg = dict(line.split("=", 1) for line in zookeeper_cfg(layout).splitlines())
    assert cfg["clientPortAddress"] == "127.0.0.1" and cfg["clientPort"] == str(layout.zookeeper_port)
    assert cfg["admin.enableServer"] == "false"
    assert cfg["dataDir"] == str(layout.local_dir("zookeeper"))
    command = java_command(Path("/opt/storm"), layout, "zookeeper", parse_spec(GOOD).daemon_heap_mb)
    assert command[-2:] == ["org.apache.storm.shade.org.apache.zookeeper.server.ZooKeeperServerMain",
                            str(zookeeper_cfg_file(layout))]
    java_sources = Path(__file__).resolve().parents[1] / "storm-plugin" / "src" / "main" / "java"
    assert (java_sources / (LOCAL_ADDRESS_TRANSPORT.replace(".", "/") + ".java")).is_file()


def test_a_memory_limit_sits_above_what_storm_schedules_and_reaches_the_planner():
    spec = parse_spec({"machine_types": [
        {"name": "small", "cpu_cores": 0.2, "memory_mb": 512, "memory_limit_mb": 768},
        {"name": "large", "cpu_cores": 0.8, "memory_mb": 2048}]})
    assert make_layout(spec, Path("/tmp/x"), 16700).machine("small-1").memory_limit_mb == 768
    memory = {t.name: t.memory_mb for t in spec.planner_cluster().machine_types}
    assert memory == {"small": 512, "large": None}, "only a machine really held to its memory limits the planner"
    with pytest.raises(ClusterError, match=r"memory_limit_mb \(512\) must be above memory_mb \(512\)"):
        parse_spec({"machine_types": [{"name": "small", "cpu_cores": 0.2, "memory_mb": 512, "memory_limit_mb": 512}]})
