"""The workers' metrics hook on the session's live cluster: Linear's executors land in the planner's records store."""
from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

import hetsched.topology_cmd  # noqa: F401  registers submit/kill on app
from benchmarks.worker_metrics import duplicates, executor_series, records_of
from cluster.storm_config import PLUGIN_JAR
from hetsched.cli import app
from observe.nimbus import NimbusAddress, connect
from topologies.catalog import lookup

pytestmark = pytest.mark.live

runner = CliRunner()
NAME = "live-metrics-linear"
RATE = 5.0
WAIT_S = 240.0


@pytest.mark.skipif(not PLUGIN_JAR.is_file(), reason="the plugin jar (with the metrics hook) is not built")
def test_every_executor_of_linear_ships_records_with_moving_counters_and_cpu(live_cluster, planner_service):
    nimbus = f"{live_cluster.layout.nimbus_host}:{live_cluster.layout.nimbus_port}"
    records_dir = planner_service.db_path.parent / "records"
    result = runner.invoke(app, ["submit", "linear", "--name", NAME, "--rate", str(RATE), "--workers", "2",
                                 "--conf", "hetsched.metrics.interval.secs=2", "--metrics", "--nimbus", nimbus])
    assert result.exit_code == 0, result.output
    try:
        host, port = nimbus.split(":")
        deadline = time.monotonic() + WAIT_S
        executors, moving = 0, {}
        with connect(NimbusAddress(host, int(port), "live_cluster")) as client:
            running = client.find(NAME)
            while time.monotonic() < deadline:
                executors = sum(1 for e in client.topology_info(running.id).executors or []
                                if not e.component_id.startswith("__"))
                series = executor_series(records_of(records_dir, NAME, running.id))
                moving = {key: s for key, s in series.items() if len(s) >= 3
                          and s[-1]["executed"] > s[0]["executed"] and s[-1].get("cpu_seconds", 0) > s[0].get("cpu_seconds", 0)}
                if executors and len(moving) >= executors:
                    break
                time.sleep(5)
        assert executors > 0, f"Storm placed no executor of {NAME} within {WAIT_S:g} s"
        assert len(moving) == executors, f"{len(moving)} of {executors} executors have records with moving counters"
        records = records_of(records_dir, NAME, running.id)
        assert duplicates(records) == 0
        profiles = lookup("linear").profiles()
        for (component, _task, _pid), samples in moving.items():
            last = samples[-1]
            assert last["subprocess_cpu_seconds"] > 0 and last["thread_cpu_seconds"] >= 0, last
            assert last["cpu_seconds"] >= last["subprocess_cpu_seconds"] and last["worker_cpu_seconds"] > 0, last
            assert last["machine_type"] and last["machine_cores"] > 0 and last["profile"] == profiles[component], last
        shell_pids = {pid for (_c, _t, pid) in moving}
        assert len(shell_pids) == executors, "each Python executor is charged its own subprocess"
    finally:
        runner.invoke(app, ["kill", NAME, "--nimbus", nimbus])
