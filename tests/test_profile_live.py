"""Profiling end to end on the live cluster: one (kind, machine type) pair collected, aggregated with
Spark, stored in the planner and read back.

Needs the session's cluster to run the hetsched plugin with the session's planner
(``live_cluster_options``); skipped, saying so, where it runs another scheduler.
"""
from __future__ import annotations

import json

import pytest

from cluster.handle import LocalClusterHandle
from spark_profiling.collector.runner import ExperimentOptions
from spark_profiling.collector.workflow import nimbus_planner_url, profile
from topologies.conf import DEFAULT_CPU_MS

pytestmark = pytest.mark.live

KIND, MACHINE_TYPE = "highCompute", "large"
SET_NAME = "live-profile-one-pair"


@pytest.fixture(scope="module")
def plugin_cluster(live_cluster, planner_service):
    status = live_cluster.status()
    if status.scheduler != "plugin":
        pytest.skip(f"the live cluster runs the {status.scheduler!r} scheduler; profiling pins through the hetsched plugin")
    if status.stopped_daemons:
        live_cluster.restart_stopped_supervisors(report=print)
        status = live_cluster.status()
    if status.stopped_daemons:
        pytest.skip(f"{', '.join(status.stopped_daemons)} of the live cluster stopped before this test (a Storm "
                    "supervisor halts when a topology is killed while its worker starts); profiling needs every machine")
    handle = LocalClusterHandle(live_cluster)
    if nimbus_planner_url(handle) != planner_service.url.rstrip("/"):
        pytest.skip("the live cluster's Nimbus asks another planner than the session's planner_service")
    return handle


def test_one_pair_is_collected_aggregated_stored_and_read_back(plugin_cluster, planner_service, spark, tmp_path):
    options = ExperimentOptions(topology="linear", kinds=[KIND], types=[MACHINE_TYPE], steps=3, step_seconds=20.0,
                                warmup_seconds=5.0)
    result = profile(plugin_cluster, planner_service.url, tmp_path, options, put=SET_NAME, min_samples=3)

    (round_,) = result.experiment.rounds
    machine = next(m.id for m in plugin_cluster.machines() if m.type == MACHINE_TYPE)
    assert round_.measured == {"high": machine}
    assert [c for c, m in round_.placement.items() if m == machine] == ["high"], "high runs alone on its machine"
    offered = [s.offered for s in round_.steps]
    assert offered == sorted(offered) and len(set(offered)) == len(offered), "the spout's rate stepped up"

    records = [json.loads(line) for line in open(result.experiment.records_path)]
    assert records and {(r["profile"], r["machine_type"], r["cpu_basis"]) for r in records} == {(KIND, MACHINE_TYPE, "machine")}
    assert all(r["machine_cpu_seconds"] >= r["process_cpu_seconds"] > 0 for r in records)
    executed = [r["executed"] for r in records]
    assert executed == sorted(executed) and executed[-1] > executed[0]

    (entry,) = result.profile_set.entries
    assert (entry.profile, entry.machine_type) == (KIND, MACHINE_TYPE)
    assert entry.samples >= 3 and entry.r2 is not None
    cores = next(m.cores for m in plugin_cluster.machines() if m.type == MACHINE_TYPE)
    cpu_ms_per_tuple = entry.e * cores * 1000
    assert cpu_ms_per_tuple > 0.5 * DEFAULT_CPU_MS[KIND], (
        f"the machine spent {cpu_ms_per_tuple:.1f} ms per tuple; the bolt alone burns {DEFAULT_CPU_MS[KIND]} ms")
    assert result.profile_set.source["collection"]["run_id"] == result.experiment.run_id

    with planner_service.client() as planner:
        stored = planner.get_profile_set(SET_NAME)
    assert result.stored_as == SET_NAME
    assert stored.entries == result.profile_set.entries
    on_disk = json.loads(result.profile_path.read_text())
    assert on_disk["entries"][0]["e"] == pytest.approx(entry.e)
