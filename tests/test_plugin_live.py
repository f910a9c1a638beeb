"""The Nimbus plugin in a real Storm cluster: Linear, submitted with a stored plan, runs where the plan says.

Needs the session's live cluster to run ``org.hetsched.storm.HetschedScheduler`` with a planner
(``live_cluster_options``: scheduler ``plugin`` and ``hetsched.planner.url``); skipped, saying so,
where it runs another scheduler.
"""
from __future__ import annotations

import time
from collections import defaultdict

import pytest
import yaml
from streamparse.thrift import Nimbus as NimbusService
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.rpc import make_client
from thriftpy2.transport import TFramedTransportFactory

from planner.client import PlannerClient
from planner.model import PlanRequest, ProfileEntry, ProfileRef, ProfileSet
from topologies.catalog import lookup, planner_topology
from topologies.nimbus import NimbusAddress
from topologies.submission import SubmitRequest
from topologies.submit import kill, submit

pytestmark = pytest.mark.live

TOPOLOGY_NAME = "plugin-live-linear"
SUPERVISOR_HALT_S = 5.0
"""Long enough for a supervisor that is halting (Storm waits 1 s before it exits) to be gone."""
PROFILE_SET = "plugin-live-specialised"
PARALLELISM = {"spout": 1, "low": 2, "mid": 2, "high": 2}
ASSIGNMENT_TIMEOUT_S = 180.0


@pytest.fixture(scope="module")
def plugin_planner_url(live_cluster) -> str:
    """The planner the live cluster's Nimbus asks, or a skip where Nimbus runs another scheduler."""
    status = live_cluster.status()
    if status.scheduler != "plugin":
        pytest.skip(f"the live cluster runs the {status.scheduler!r} scheduler, not the hetsched plugin "
                    "(live_cluster_options: scheduler='plugin' with hetsched.planner.url)")
    nimbus_conf = yaml.safe_load(live_cluster.layout.conf_file("nimbus").read_text())
    url = nimbus_conf.get("hetsched.planner.url")
    if not url:
        pytest.skip("the live cluster runs the plugin without hetsched.planner.url: every topology is scheduled evenly")
    return url


def specialised_profiles(machine_types: list[str]) -> ProfileSet:
    """Each compute profile far cheaper on its own machine type, so a good plan spreads Linear over the machines.

    Invented numbers for this test only: it checks where executors land, not how fast they run.
    """
    home = dict(zip(["lowCompute", "midCompute", "highCompute"], machine_types))
    entries = [ProfileEntry(profile="spout", machine_type=t, e=0.001, met=0.5) for t in machine_types]
    entries += [
        ProfileEntry(profile=profile, machine_type=t, e=0.01 if t == own else 0.1, met=1.0)
        for profile, own in home.items() for t in machine_types
    ]
    return ProfileSet(name=PROFILE_SET, entries=entries, source={"test": __name__})


def executors_by_component(address: NimbusAddress, topology_id: str) -> tuple[dict[str, list[tuple[str, int]]], str]:
    """Component -> (host, port) of each executor in task order, and the scheduler's status line, once assigned."""
    client = make_client(NimbusService, host=address.host, port=address.port, proto_factory=TBinaryProtocolFactory(),
                         trans_factory=TFramedTransportFactory(), timeout=30_000)
    try:
        deadline = time.monotonic() + ASSIGNMENT_TIMEOUT_S
        while True:
            info = client.getTopologyInfo(topology_id)
            if info.executors or time.monotonic() > deadline:
                break
            time.sleep(2)
    finally:
        client.close()
    placed: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
    for executor in info.executors:
        placed[executor.component_id].append((executor.executor_info.task_start, executor.host, executor.port))
    return ({c: [(host, port) for _task, host, port in sorted(e)] for c, e in placed.items()},
            info.sched_status or "")


def test_linear_submitted_with_a_plan_runs_where_the_plan_says(live_cluster, plugin_planner_url):
    spec = live_cluster.spec
    cluster = spec.planner_cluster()
    types = [t.name for t in sorted(spec.machine_types, key=lambda t: t.cpu_cores)]
    with PlannerClient(plugin_planner_url) as planner:
        planner.put_profile_set(specialised_profiles(types))
        plan = planner.plan(PlanRequest(
            topology=planner_topology(lookup("linear"), PARALLELISM), cluster=cluster,
            profiles=ProfileRef(name=PROFILE_SET), strategy="paper",
        ))
    planned_machines = {a.machine for a in plan.assignments}
    assert len(planned_machines) >= 2, f"the plan puts Linear on {planned_machines} only: placement would prove little"

    address = NimbusAddress("127.0.0.1", live_cluster.layout.nimbus_port, "the live cluster")
    result = submit(SubmitRequest(topology="linear", name=TOPOLOGY_NAME, plan_id=plan.id, profiles=PROFILE_SET,
                                  planner_url=plugin_planner_url), address, force=True)
    try:
        placed, status = executors_by_component(address, result.topology_id)
        machine_of_host = {m.host: m.id for m in live_cluster.layout.machines}

        assert status.startswith(f"hetsched: placed by planner (stored plan {plan.id}"), status
        for assignment in plan.assignments:
            host, _port = placed[assignment.component][assignment.index]
            assert machine_of_host[host] == assignment.machine, (
                f"instance {assignment.index} of {assignment.component} runs on {machine_of_host[host]}, "
                f"the plan says {assignment.machine}")
        workers = defaultdict(set)
        for executors in placed.values():
            for host, port in executors:
                workers[machine_of_host[host]].add(port)
        assert set(workers) == planned_machines, "ackers run only on the machines the plan uses"
        assert all(len(ports) == 1 for ports in workers.values()), f"one worker per machine, got {dict(workers)}"
    finally:
        kill(TOPOLOGY_NAME, address, wait=True)
        # Killed while its workers' files may still be localizing: Storm 2.8's supervisor can halt on that
        # a second later (cluster/README.md). Let it, and restart it here rather than leave it to a later test.
        time.sleep(SUPERVISOR_HALT_S)
        live_cluster.restart_stopped_supervisors(report=print)
