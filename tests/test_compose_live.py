"""The compose cluster, really running: images built here, the machines as containers with their
CPU quotas, a topology placed by plan across the three supervisor containers, counts moving at
every sink, and nothing of the project left after ``down``.

One session-scoped cluster (``compose_cluster``) under a temporary home and a free port range.
Needs a Docker engine (started here where none runs and we are root), docker-compose and
debootstrap (``make setup`` installs them); without them the tests skip, saying what is missing.
From nothing (no images) the images take about 3 minutes to build; with them cached, ``up`` about one.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from bench.placement import from_topology_info, plan_mismatches
from bench.profiles import load_profile_set
from cluster import compose
from cluster.compose_cluster import PORTS_NEEDED, ComposeCluster
from cluster.errors import ClusterError
from cluster.ports import free_port_base
from cluster.spec import load_spec
from cluster.storm_config import PLUGIN_JAR
from observe.counts import parse_topology_info
from observe.machines import machine_of_host
from observe.nimbus import connect
from planner.client import PlannerClient
from planner.model import PlanRequest, ProfileRef
from planner.profiles import machine_base_load
from topologies.catalog import lookup, planner_topology
from topologies.jar import build_jar
from topologies.measure import roles
from topologies.submission import SubmitRequest, build_submission
from topologies.submit import KILL_TIMEOUT_S, apply_plan

pytestmark = [pytest.mark.live, pytest.mark.slow]

START_TIMEOUT_S = 900.0
"""Image build from nothing (debootstrap) included, on a busy 2-core machine."""
TOPOLOGY = "linear"
RUN_NAME = "compose-smoke-linear"


def _missing_tools() -> list[str]:
    needed = ["docker", "debootstrap"]
    missing = [tool for tool in needed if shutil.which(tool) is None]
    if shutil.which("docker-compose") is None and subprocess.run(
            ["docker", "compose", "version"], capture_output=True, check=False).returncode != 0:
        missing.append("docker-compose")
    return missing


@pytest.fixture(scope="session")
def compose_cluster(tmp_path_factory):
    missing = _missing_tools()
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (make setup installs Debian's docker.io, docker-compose, debootstrap)")
    if not PLUGIN_JAR.is_file():
        pytest.skip(f"{PLUGIN_JAR.name} is not built (make setup)")
    spec = load_spec()
    cluster = ComposeCluster(spec, home=tmp_path_factory.mktemp("compose-cluster"), port_base=free_port_base(PORTS_NEEDED))
    started = time.monotonic()
    try:
        try:
            cluster.up(scheduler="plugin", timeout_s=START_TIMEOUT_S, report=print)
        except ClusterError as fault:
            if "No Docker engine answers" in str(fault):
                pytest.skip(str(fault))
            raise
        print(f"compose cluster up in {time.monotonic() - started:.1f} s (images included)")
        yield cluster
    finally:
        done = cluster.down()
        print(f"compose cluster down: {len(done.removed)} objects removed, left: {done.left or 'nothing'}")
        assert done.left == [], f"down left the project's objects behind: {done.left}"
        assert cluster.leftovers() == []


def test_every_supervisor_container_registers_as_its_machine_with_its_quota(compose_cluster):
    status = compose_cluster.status()
    spec = load_spec()
    assert status.stopped_daemons == []
    assert [(s.machine_id, s.machine_type) for s in status.supervisors] == [(m, t.name) for m, t in spec.machine_ids()]
    assert all(s.supervisor_id for s in status.supervisors), status.supervisors
    handle = compose_cluster.handle()
    quotas = {m.id: handle.cpu_quota_cores(m.id) for m in handle.machines()}
    assert quotas == {m: pytest.approx(t.cpu_cores) for m, t in spec.machine_ids()}, "the kernel's CFS quota of each container"
    assert all(handle.cpu_seconds(m.id) > 0 for m in handle.machines())
    assert status.heterogeneous


def test_only_loopback_ports_are_published_and_the_cluster_network_is_internal(compose_cluster):
    published = subprocess.run(["docker", "ps", "--filter", f"label=com.docker.compose.project={compose_cluster.project}",
                                "--format", "{{.Label \"com.docker.compose.service\"}} {{.Ports}}"],
                               capture_output=True, text=True, check=True).stdout.splitlines()
    ports = {line.split(" ", 1)[0]: line.split(" ", 1)[1] if " " in line else "" for line in published}
    assert ports["nimbus"].startswith(f"127.0.0.1:{compose_cluster.nimbus_port}->")
    assert ports["planner"].startswith(f"127.0.0.1:{compose_cluster.planner_port}->")
    for service, text in ports.items():
        bound = [p for p in text.split(", ") if "->" in p]
        assert all(p.startswith("127.0.0.1:") for p in bound), f"{service} publishes beyond loopback: {text}"
        if service not in ("nimbus", "planner"):
            assert not bound, f"{service} publishes {text}"
    network = f"{compose_cluster.project}_{compose.CLUSTER_NETWORK}"
    internal = subprocess.run(["docker", "network", "inspect", "--format", "{{.Internal}}", network],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert internal == "true"


def test_a_planned_topology_runs_where_the_plan_says_on_all_three_containers_and_every_sink_counts(compose_cluster):
    profile_set, _path = load_profile_set("default-cluster")
    spec = load_spec()
    entry = lookup(TOPOLOGY)
    token = compose_cluster.planner_token()
    with PlannerClient(compose_cluster.planner_url, token=token) as client:
        client.put_profile_set(profile_set)
        plan = client.plan(PlanRequest(topology=planner_topology(entry), cluster=spec.planner_cluster(machine_base_load(profile_set)),
                                       profiles=ProfileRef(name=profile_set.name)))
    machines = {a.machine for a in plan.assignments}
    assert machines == {m for m, _t in spec.machine_ids()}, f"the plan should use every machine: {machines}"

    os.environ["HETSCHED_PLANNER_TOKEN"] = token  # apply_plan fetches the plan from the host
    try:
        request = apply_plan(SubmitRequest(topology=TOPOLOGY, name=RUN_NAME, plan_id=plan.id,
                                           planner_url=compose_cluster.planner_url))
    finally:
        os.environ.pop("HETSCHED_PLANNER_TOKEN", None)
    request.planner_url = None  # the plugin asks the planner Nimbus's storm.yaml names (http://planner:8765)
    submission = build_submission(request)
    hosts = machine_of_host(compose_cluster.handle())
    with connect(compose_cluster.nimbus_address) as nimbus:
        location = nimbus.upload_jar(build_jar(compose_cluster.home / f"{TOPOLOGY}.jar"))
        nimbus.submit(submission.name, location, submission.conf, submission.topology)
        topology_id = nimbus.find(submission.name).id
        try:
            sinks = [c for c, role in roles(entry).items() if role == "sink"]
            deadline = time.monotonic() + 420
            first: dict[str, int] = {}
            while time.monotonic() < deadline:
                info = nimbus.topology_info(topology_id)
                placement = from_topology_info(info, hosts)
                totals = parse_topology_info(info).totals()
                if placement is not None and all(totals.get(s, 0) > 0 for s in sinks):
                    first = totals
                    break
                time.sleep(3)
            assert first, f"not every sink of {TOPOLOGY} handled tuples within 420 s: {parse_topology_info(info).totals()}"
            assert plan_mismatches(placement, plan) == [], "the plugin placed the topology as planned"
            assert set(placement.machines_used()) >= {m for m, _t in spec.machine_ids()}
            time.sleep(25)  # two of the executors' 10 s stats reports
            later = parse_topology_info(nimbus.topology_info(topology_id)).totals()
            for sink in sinks:
                assert later[sink] > first[sink], f"the counts of {sink} did not move: {first[sink]} -> {later[sink]}"
            print(f"{TOPOLOGY} placed by plan {plan.id}: {placement.machines_used()}; sinks {sinks}: "
                  + ", ".join(f"{s} {first[s]} -> {later[s]}" for s in sinks))
        finally:
            nimbus.kill(submission.name, wait_s=0)
            nimbus.wait_gone(submission.name, KILL_TIMEOUT_S)
