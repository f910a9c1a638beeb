"""The Nimbus plugin in a real Storm cluster: Linear, submitted with a stored plan, runs where the plan says;
with the planner stopped a topology is scheduled evenly in the round that first sees it, saying why in
Nimbus's log and the status line Nimbus lists (the UI's "Scheduler Info"); with the planner back the next
topology is planned again.

Needs the session's live cluster to run ``org.hetsched.storm.HetschedScheduler`` with a planner
(``live_cluster_options``: scheduler ``plugin`` and ``hetsched.planner.url``); skipped, saying so,
where it runs another scheduler.
"""
from __future__ import annotations

import json
import time
from collections import defaultdict

import pytest
import yaml
from planner.client import PlannerClient
from planner.model import PlanRequest, ProfileEntry, ProfileRef, ProfileSet
from topologies.catalog import lookup, planner_topology
from observe.nimbus import Nimbus, NimbusAddress
from topologies.submission import SubmitRequest
from topologies.submit import kill, running_topologies, submit

pytestmark = pytest.mark.live

TOPOLOGY_NAME = "plugin-live-linear"
FALLBACK_NAME = "plugin-live-planner-down"
PLANNED_AGAIN_NAME = "plugin-live-planner-back"
SUPERVISOR_HALT_S = 5.0
"""Long enough for a supervisor that is halting (Storm waits 1 s before it exits) to be gone."""
PROFILE_SET = "plugin-live-specialised"
BASED_PROFILE_SET = "plugin-live-specialised-with-base-load"
BASE_LOAD = 40.0
"""Percent of every machine its idle software takes, in the second set: the plugin plans on the other 60."""
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


def test_nimbus_shows_its_conf_without_the_planner_token(live_cluster, live_cluster_options, plugin_planner_url):
    """getNimbusConf (what the Storm UI shows as "Nimbus Configuration") names the token file, never the token."""
    token = live_cluster_options.planner_token
    if token is None:
        pytest.skip("the live cluster's Nimbus was given no planner token file")
    with Nimbus(live_cluster.nimbus_address) as client:
        conf = client.nimbus_conf()
    shown = json.dumps(conf)
    assert conf["hetsched.planner.token.file"] == live_cluster_options.conf["hetsched.planner.token.file"]
    assert "hetsched.planner.token" not in conf
    assert token not in shown and token not in json.dumps(conf), "Nimbus shows the planner token to anyone who asks"
    log = live_cluster.log_file("nimbus").read_text(errors="replace")
    assert f"token from {conf['hetsched.planner.token.file']}" in log and token not in log


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
    with Nimbus(address) as nimbus:
        deadline = time.monotonic() + ASSIGNMENT_TIMEOUT_S
        while True:
            counts = nimbus.counts(topology_id)
            if counts.executors or time.monotonic() > deadline:
                break
            time.sleep(2)
    placed: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
    for task, e in counts.executors.items():
        placed[e.component].append((task, e.host, e.port))
    return ({c: [(host, port) for _task, host, port in sorted(e)] for c, e in placed.items()},
            counts.scheduler_status)


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

    address = nimbus_address(live_cluster)
    result = submit(SubmitRequest(topology="linear", name=TOPOLOGY_NAME, plan_id=plan.id, profiles=PROFILE_SET,
                                  planner_url=plugin_planner_url), address, force=True)
    try:
        placed, status = executors_by_component(address, result.topology_id)
        machine_of_host = {m.host: m.id for m in live_cluster.layout.machines}

        assert status.startswith(f"hetsched: placed by planner (stored plan {plan.id}"), status
        print(f"plan {plan.id} vs Nimbus: " + ", ".join(
            f"{a.component}[{a.index}] {a.machine}/{machine_of_host.get(placed[a.component][a.index][0])}"
            for a in plan.assignments))
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
        kill_and_settle(live_cluster, TOPOLOGY_NAME)


def kill_and_settle(live_cluster, name: str) -> None:
    """Kill a topology and restart any supervisor its quick kill halted.

    Killed while its workers' files may still be localizing, Storm 2.8's supervisor can halt a second
    later (cluster/README.md). Let it, and restart it here rather than leave it to a later test.
    """
    kill(name, nimbus_address(live_cluster), wait=True)
    time.sleep(SUPERVISOR_HALT_S)
    live_cluster.restart_stopped_supervisors(report=print)


def nimbus_address(live_cluster) -> NimbusAddress:
    return NimbusAddress("127.0.0.1", live_cluster.layout.nimbus_port, "the live cluster")


def listed_scheduler_status(live_cluster, topology_id: str) -> str:
    """The status line Nimbus lists for a topology: what the Storm UI shows as "Scheduler Info" and
    ``hetsched topologies`` as "scheduler status" (the local cluster has no UI: storm-webapp is not on Maven Central)."""
    listed = {t.id: t for t in running_topologies(nimbus_address(live_cluster))}
    return listed[topology_id].scheduler_status


def plugin_log_lines(live_cluster, topology_id: str) -> list[str]:
    """The plugin's lines about one topology in Nimbus's log (one per scheduling round that handled it)."""
    log = live_cluster.log_file("nimbus").read_text(errors="replace")
    return [line for line in log.splitlines() if f"hetsched: topology {topology_id} " in line]


def test_planner_down_falls_back_evenly_in_one_round_then_planner_back_plans_again(
        live_cluster, plugin_planner_url, planner_service):
    if planner_service.url != plugin_planner_url:
        pytest.skip(f"Nimbus asks {plugin_planner_url}, not the session's planner_service: cannot stop it here")
    spec = live_cluster.spec
    types = [t.name for t in sorted(spec.machine_types, key=lambda t: t.cpu_cores)]
    address = nimbus_address(live_cluster)
    down = SubmitRequest(topology="linear", name=FALLBACK_NAME, parallelism=PARALLELISM, profiles=PROFILE_SET)

    planner_service.stop()
    try:
        submitted = time.monotonic()
        result = submit(down, address, force=True)
        try:
            placed, status = executors_by_component(address, result.topology_id)
            print(f"planner stopped: {FALLBACK_NAME} assigned {time.monotonic() - submitted:.1f} s after submit; "
                  f"status: {status}")
            assert sum(len(e) for e in placed.values()) >= sum(PARALLELISM.values()), placed
            assert status.startswith("hetsched: planner not used (") and "scheduled evenly" in status, status
            assert "planner" in status.split("not used (", 1)[1], status
            listed = listed_scheduler_status(live_cluster, result.topology_id)
            assert listed == status, f"Nimbus lists {listed!r}, its topology info says {status!r}"
            lines = plugin_log_lines(live_cluster, result.topology_id)
            print("Nimbus log:", *lines, sep="\n  ")
            assert len(lines) == 1 and "falls back to even scheduling: " in lines[0], (
                f"one round, one fallback line expected; the plugin logged: {lines}")
        finally:
            kill_and_settle(live_cluster, FALLBACK_NAME)
    finally:
        planner_service.restart(keep_port=True)

    # Back, and asked with a profile set that reports a machine base load: the plugin plans on what it leaves.
    based = specialised_profiles(types).model_copy(update={
        "name": BASED_PROFILE_SET, "source": {"test": __name__, "machine_base_load": {t: BASE_LOAD for t in types}}})
    with PlannerClient(planner_service.url) as planner:
        planner.put_profile_set(based)
    back = SubmitRequest(topology="linear", name=PLANNED_AGAIN_NAME, parallelism=PARALLELISM, profiles=BASED_PROFILE_SET)
    result = submit(back, address, force=True)
    try:
        placed, status = executors_by_component(address, result.topology_id)
        print(f"planner back: {PLANNED_AGAIN_NAME} status: {status}")
        assert status.startswith("hetsched: placed by planner (plan "), status
        assert listed_scheduler_status(live_cluster, result.topology_id) == status
        plan_id = status.removeprefix("hetsched: placed by planner (plan ").split(",")[0]
        with PlannerClient(planner_service.url) as planner:
            plan = planner.get_plan(plan_id)
        busiest = max(m.utilization for m in plan.machines)
        print(f"plan {plan_id}: machine CPU {[(m.id, round(m.utilization, 2)) for m in plan.machines]} "
              f"with base load {BASE_LOAD}% on every type")
        assert busiest <= 100.0 - BASE_LOAD + 1e-6, f"a machine is planned at {busiest}% of CPU, over 100 - base load"
        assert busiest >= 100.0 - BASE_LOAD - 1.0, f"the busiest machine is planned at {busiest}%: the rate is not maximal"
    finally:
        kill_and_settle(live_cluster, PLANNED_AGAIN_NAME)
