"""The scale harness at a small size: every scheduler places every topology, and the plugin places each executor on a
supervisor its plan names (correctness only: the machine is too noisy for timed assertions)."""
from __future__ import annotations

import shutil

import pytest

from benchmarks.scheduler_scale import SHAPES, Size, main, scenario, tenant_request


def test_the_scenario_mixes_sizes_stored_plans_and_priorities():
    plan = scenario(Size(300, 200, 5), seed=1)
    assert {s["type"] for s in plan["supervisors"]} == {"t0", "t1", "t2", "t3", "t4"}
    assert {t["shape"] for t in plan["topologies"]} == set(SHAPES)
    assert any("stored_plan" in t for t in plan["topologies"])
    assert any("topology.priority" in t["conf"] for t in plan["topologies"])
    request = tenant_request(plan["topologies"][0], plan["supervisors"])
    assert len(request["cluster"]["machines"]) == 300 and request["tenant"]["priority"] in range(0, 30)


def test_every_topology_is_budgeted_its_shapes_workers_as_an_operator_at_scale_would():
    plan = scenario(Size(100, 50, 3), seed=1)
    for topology in plan["topologies"]:
        assert topology["conf"]["hetsched.max.workers"] == SHAPES[topology["shape"]][5] == topology["workers"]
        assert tenant_request(topology, plan["supervisors"])["topology"]["max_workers"] == topology["workers"]


@pytest.mark.slow  # builds the plugin's test classes and starts a planner: half a minute
@pytest.mark.skipif(shutil.which("mvn") is None or shutil.which("java") is None, reason="needs mvn and java")
def test_every_topology_is_placed_and_every_executor_where_its_plan_says(tmp_path):
    rows = main(["--sizes", "10x4x3", "--time-limit-s", "120", "--steady-rounds", "1", "--round-interval-s", "0.5",
                 "--serve-arg=--no-joint-replans", "--json", str(tmp_path / "scale.json")])
    assert {r["scheduler"] for r in rows} == {"hetsched", "ras", "default"}
    for row in rows:
        assert row["placed"] == row["topologies"] == 4, row
    hetsched = next(r for r in rows if r["scheduler"] == "hetsched")
    assert hetsched["statuses"] == {"placed by planner": 4}
    assert hetsched["off_plan_executors"] == 0
