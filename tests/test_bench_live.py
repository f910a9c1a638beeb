"""A tiny bench on the session's live cluster: Linear under Storm's default scheduler and under the plan.

Needs the live cluster to run the hetsched plugin with the session planner (``live_cluster_options``);
skipped, saying so, where it runs another scheduler.
"""
from __future__ import annotations

import datetime as dt
import json

import pytest
import yaml

from bench import report
from bench.experiment import run_bench
from bench.profiles import SHIPPED_DIR
from bench.settings import DEFAULT_PROFILES, BenchSettings
from planner.model import ProfileEntry, ProfileSet
from topologies.conf import DEFAULT_CPU_MS

pytestmark = pytest.mark.live


def profile_file(tmp_path, spec) -> str:
    """The shipped profile set of the default cluster; where it is missing, one from the bolts' configured CPU per tuple."""
    shipped = SHIPPED_DIR / f"{DEFAULT_PROFILES}.json"
    if shipped.is_file():
        return str(shipped)
    per_tuple_s = {"spout": 0.002, **{k: ms / 1000 for k, ms in DEFAULT_CPU_MS.items()}}
    entries = [ProfileEntry(profile=k, machine_type=t.name, e=s / t.cpu_cores, met=2.0 / t.cpu_cores)
               for k, s in per_tuple_s.items() for t in spec.machine_types]
    path = tmp_path / "configured-cpu.json"
    path.write_text(ProfileSet(name="configured-cpu", entries=entries, source={"from": "topologies.conf.DEFAULT_CPU_MS"})
                    .model_dump_json())
    return str(path)


def test_a_tiny_bench_measures_both_schedulers_and_planned_runs_where_the_plan_says(live_cluster, tmp_path):
    status = live_cluster.status()
    if status.scheduler != "plugin":
        pytest.skip(f"the live cluster runs the {status.scheduler!r} scheduler, not the hetsched plugin")
    planner_url = yaml.safe_load(live_cluster.layout.conf_file("nimbus").read_text()).get("hetsched.planner.url")
    if not planner_url:
        pytest.skip("the live cluster runs the plugin without hetsched.planner.url")

    settings = BenchSettings(out_dir=tmp_path / "bench", topologies=("linear",), schedulers=("default", "planned"),
                             profiles=profile_file(tmp_path, live_cluster.spec), window_s=20.0, warmup_s=5.0)
    result = run_bench(settings, cluster=live_cluster, planner_url=planner_url)
    data = json.loads(report.write_json(report.result_dict(result), tmp_path / "bench" / "bench.json").read_text())

    assert data["error"] is None, data["error"]
    runs = {r["scheduler"]: r for r in data["runs"]}
    assert set(runs) == {"default", "planned"}
    for scheduler, run in runs.items():
        assert run["status"] == "ok", f"{scheduler}: {run['reason']}"
        assert run["measured"]["sink_throughput"] > 0 and run["predicted"]["sink_throughput"] > 0
        assert run["measured"]["total_throughput"] > run["measured"]["bolt_throughput"] > 0
        assert {m["machine"] for m in run["machines"]} == {m for m, _ in live_cluster.spec.machine_ids()}
        assert all(m["cpu_seconds"] > 0 and m["predicted_utilization"] is not None for m in run["machines"])
        assert run["load_average"]["start"] and run["topology_conf"]["topology.max.spout.pending"] == 100
        start, end = (dt.datetime.fromisoformat(t) for t in run["window_utc"])
        assert 15 <= (end - start).total_seconds() <= 90, "the window's wall-clock times, about its 20 s"
        placed = run["placement"]["executors"]
        for component in run["parallelism"]:
            mine = [e for e in run["executors"] if e["component"] == component]
            assert sorted(e["machine"] for e in mine) == sorted(placed[component]), "each executor where Storm put it"
            total = next(c["per_second"] for c in run["components"] if c["component"] == component)
            assert sum(e["per_second"] for e in mine) == pytest.approx(total, abs=0.01)
    assert runs["default"]["placement"]["sched_status"].startswith("hetsched: the topology asks for no planner")

    plan = data["plans"]["linear"]
    planned = runs["planned"]
    assert planned["plan_id"] == plan["id"] and planned["plan_mismatches"] == []
    for a in plan["assignments"]:
        assert planned["placement"]["executors"][a["component"]][a["index"]] == a["machine"]
    assert planned["parallelism"] == {c: n for c, n in plan["instances"].items()}
    assert data["comparison"][0]["planned_vs_default"] is not None
    assert data["profile_set"]["entries"] and data["versions"]["storm"]
