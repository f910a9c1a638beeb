"""``benchmarks/bench_speedups.py``: planned against the other schedulers, one ratio per bench where both ran."""
from __future__ import annotations

import json

import pytest

from benchmarks.bench_speedups import main, speedups


def _bench(**sinks: float) -> dict:
    runs = []
    for key, sink in sinks.items():
        topology, scheduler = key.split("__")
        runs.append({"topology": topology, "scheduler": scheduler, "status": "ok", "measured": {"sink_throughput": sink}})
    runs.append({"topology": "linear", "scheduler": "resource_aware", "status": "failed", "measured": None})
    return {"runs": runs}


def test_each_bench_gives_one_ratio_where_both_schedulers_ran():
    benches = [_bench(linear__planned=30.0, linear__default=10.0), _bench(linear__planned=20.0, linear__default=10.0,
                                                                           star__default=5.0)]
    ratios = speedups(benches, ["default", "resource_aware"])
    assert ratios == {("linear", "default"): pytest.approx([3.0, 2.0])}


def test_the_command_prints_median_and_range_and_fails_without_a_pair(tmp_path, capsys):
    paths = []
    for i, planned in enumerate((30.0, 20.0, 25.0)):
        path = tmp_path / f"b{i}.json"
        path.write_text(json.dumps(_bench(linear__planned=planned, linear__default=10.0)))
        paths.append(str(path))
    assert main(paths) == 0
    assert "2.50x (2.00-3.00), 3 benches" in capsys.readouterr().out
    assert main([paths[0], "--against", "sps"]) == 1


def test_another_base_and_each_schedulers_medians_against_the_bounds(tmp_path, capsys):
    def bench(weighted: float, planned: float) -> dict:
        data = _bench(linear__planned=planned, **{"linear__planned-weighted": weighted})
        for run in data["runs"]:
            if run["status"] == "ok":
                sink = run["measured"]["sink_throughput"]
                run["measured"]["input_rate"] = sink
                run["machines"] = [{"machine": "small-1", "utilization": 90.0 + sink / 10}]
        return {**data, "fluid_bounds": {"linear": 40.0}, "compute_bounds": {"linear": 50.0}}

    assert speedups([bench(33.0, 30.0)], ["planned"], base="planned-weighted") == {
        ("linear", "planned"): pytest.approx([1.1])}
    paths = []
    for i, (weighted, planned) in enumerate(((36.0, 30.0), (32.0, 32.0), (34.0, 31.0))):
        paths.append(tmp_path / f"b{i}.json")
        paths[-1].write_text(json.dumps(bench(weighted, planned)))
    assert main([*map(str, paths), "--base", "planned-weighted", "--against", "planned", "--runs"]) == 0
    out = capsys.readouterr().out
    assert ("linear   planned-weighted sink 34.0 (32.0-36.0), fluid 85 (80-90)%, compute 68 (64-72)%, n=3; "
            "CPU small-1 93 (93-94)") in out
    assert "planned-weighted / other" in out and "1.10x (1.00-1.20), 3 benches" in out
