"""A Flux topology of Storm's own testing components and the project's CPU-heavy Java bolt on the session's live
cluster: submitted with a stored plan by ``hetsched submit --flux``, it runs with the plan's parallelism, its sink
counts move, the plugin places the stored plan, and the workers' metrics profile the Java bolt.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import hetsched.topology_cmd  # noqa: F401  registers submit/kill on app
from benchmarks.worker_metrics import executor_series, records_of
from cluster.spec import load_spec
from cluster.storm_config import PLUGIN_JAR
from hetsched.cli import app
from observe.nimbus import NimbusAddress, connect
from planner.client import PlannerClient
from planner.model import PlanRequest, ProfileSet
from topologies.flux_topology import planner_topology, read_flux

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[1]
FLUX_FILE = REPO / "topologies" / "flux" / "words-cpu.yaml"
JAVA_JAR = REPO / "topologies" / "java" / "target" / "hetsched-java-topologies.jar"
NAME = "live-flux-words-cpu"
PROFILE_SET = "live-java-flux"
PLANNED = {"words": 1, "cpu": 3, "count": 1}
"""Fixed in the plan request, unlike the file's (2, 2, 1), so the counts Nimbus runs can only be the plan's."""
CPU_MS = 5.0
"""CPU per tuple the file gives the CPU-heavy bolt (constructorArgs: 5000 microseconds)."""
WAIT_S = 300.0

runner = CliRunner()


def _profile_set(machine_types) -> ProfileSet:
    """Illustrative numbers (e: CPU seconds per tuple over the machine's cores) for the file's three profile keys."""
    cpu_s = {"testWordSpout": 0.0005, "cpuWork5ms": CPU_MS / 1000, "testWordCounter": 0.0002}
    return ProfileSet.model_validate({
        "name": PROFILE_SET,
        "entries": [{"profile": key, "machine_type": t.name, "e": seconds / t.cpu_cores, "met": 1.0, "alpha": 1.0}
                    for key, seconds in cpu_s.items() for t in machine_types],
    })


@pytest.mark.skipif(not PLUGIN_JAR.is_file() or not JAVA_JAR.is_file(),
                    reason="the plugin jar or the Java topologies jar is not built (make setup)")
def test_flux_topology_runs_with_the_plans_parallelism_and_its_sink_counts_move(live_cluster, planner_service):
    spec = load_spec()
    flux = read_flux(FLUX_FILE)
    with PlannerClient(planner_service.url) as client:
        client.put_profile_set(_profile_set(spec.machine_types))
        plan = client.plan(PlanRequest.model_validate({
            "topology": planner_topology(flux, PLANNED).model_dump(by_alias=True),
            "cluster": spec.planner_cluster().model_dump(by_alias=True),
            "profiles": {"name": PROFILE_SET},
        }))
    assert {c: n for c, n in plan.instances.items() if not c.startswith("__")} == PLANNED

    nimbus = f"{live_cluster.layout.nimbus_host}:{live_cluster.layout.nimbus_port}"
    result = runner.invoke(app, ["submit", "--flux", str(FLUX_FILE), "--jar", str(JAVA_JAR), "--name", NAME,
                                 "--plan", plan.id, "--planner", planner_service.url,
                                 "--conf", "hetsched.metrics.interval.secs=2", "--metrics", "--nimbus", nimbus])
    assert result.exit_code == 0, result.output
    print(result.output)
    assert "Traceback" not in result.output and f"plan {plan.id}" in " ".join(result.output.split())
    records_dir = planner_service.db_path.parent / "records"
    try:
        host, port = nimbus.split(":")
        with connect(NimbusAddress(host, int(port), "live_cluster")) as client:
            running = client.find(NAME)
            assert running is not None, f"{NAME} is not running after the submit:\n{result.output}"
            conf = client.topology_conf(running.id)
            assert conf["hetsched.plan.id"] == plan.id and conf["hetsched.profiles"] == PROFILE_SET
            assert "org.hetsched.storm.metrics.MetricsHook" in conf["topology.auto.task.hooks"]
            assert conf["hetsched.component.profiles"] == flux.profiles()

            deadline = time.monotonic() + WAIT_S
            executors: dict[str, int] = {}
            first_sink = last_sink = None
            cpu_per_tuple_ms: list[float] = []
            while time.monotonic() < deadline:
                info = client.topology_info(running.id)
                executors = {}
                for e in info.executors or []:
                    if not e.component_id.startswith("__"):
                        executors[e.component_id] = executors.get(e.component_id, 0) + 1
                sink = client.counts(running.id).totals().get("count", 0)
                if sink > 0 and first_sink is None:
                    first_sink = sink
                last_sink = sink
                cpu_per_tuple_ms = [
                    1000 * (s[-1]["thread_cpu_seconds"] - s[0]["thread_cpu_seconds"]) / (s[-1]["executed"] - s[0]["executed"])
                    for (component, _t, _p), s in executor_series(records_of(records_dir, NAME, running.id)).items()
                    if component == "cpu" and len(s) >= 3 and s[-1]["executed"] - s[0]["executed"] >= 20
                ]
                if (executors == PLANNED and first_sink is not None and last_sink > first_sink
                        and len(cpu_per_tuple_ms) == PLANNED["cpu"]):
                    break
                time.sleep(5)
            status = client.find(NAME).scheduler_status
        print(f"executors {executors} (plan {PLANNED}); sink 'count' executed {first_sink} -> {last_sink}; "
              f"CpuWorkBolt thread CPU per tuple {[round(ms, 2) for ms in cpu_per_tuple_ms]} ms; status {status!r}")
        assert executors == PLANNED, f"Nimbus runs {executors}, the plan has {PLANNED}"
        assert first_sink is not None and last_sink > first_sink, f"the sink's counts did not move ({first_sink} -> {last_sink})"
        assert f"stored plan {plan.id}" in status, status
        assert len(cpu_per_tuple_ms) == PLANNED["cpu"], "not every CpuWorkBolt executor shipped records with moving counts"
        assert all(CPU_MS * 0.9 <= ms <= CPU_MS * 4 for ms in cpu_per_tuple_ms), cpu_per_tuple_ms
        profiled = {r["profile"] for r in records_of(records_dir, NAME, running.id) if r["component"] == "cpu"}
        assert profiled == {"cpuWork5ms"}
    finally:
        runner.invoke(app, ["kill", NAME, "--nimbus", nimbus])
