"""Aggregating the service's records store: worker records (``cpu_basis: thread``), outliers, weak pairs, --since."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hetsched.cli import _register, app
from planner.model import ProfileSet
from spark_profiling.aggregate import aggregate
from spark_profiling.errors import ProfilingError
from spark_profiling.inputs import parse_since, resolve_inputs, store_topology_folders
from spark_profiling.synthetic import T0, default_truth, generate_workers, write_store

_register()


def aggregate_store(spark, root: Path, topology: str = "synthetic", since: float | None = None, name: str = "live") -> ProfileSet:
    return aggregate(spark, resolve_inputs(store_topology_folders(root, topology, since)), name, since=since)


def by_pair(profile_set: ProfileSet) -> dict:
    return {(e.profile, e.machine_type): e for e in profile_set.entries}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data") / "records"
    write_store(generate_workers(seed=11, worker_rest_percent=5.0), root)
    return root


@pytest.mark.slow  # a Spark job of many seconds
def test_worker_records_in_the_store_give_the_true_profiles_and_the_worker_rest(spark, store):
    result = aggregate_store(spark, store.parent)  # the service's data directory finds its records folder
    truth = {(t.profile, t.machine_type): t for t in default_truth()}
    found = by_pair(result)
    assert set(found) == set(truth)
    for pair, t in truth.items():
        assert found[pair].e == pytest.approx(t.e, rel=0.08), pair
        assert found[pair].met == pytest.approx(t.met, abs=max(0.3 * t.met, 0.5)), pair
        assert found[pair].alpha == pytest.approx(t.alpha, rel=0.02)
    rest = result.source["worker_rest"]
    assert set(rest) == {"small", "medium", "large"}
    for machine_type, measured in rest.items():
        assert measured["percent"] == pytest.approx(5.0, abs=0.5), machine_type
        assert result.source["machine_base_load"][machine_type] == measured["percent"]
    assert result.source["intervals"]["outlier"] == 0
    assert result.source["runs"] == ["synthetic-1-1700000000"]


@pytest.mark.slow  # a Spark job of many seconds
def test_one_interval_at_100x_the_rate_is_dropped_and_counted(spark, tmp_path):
    write_store(generate_workers(seed=11, rate_glitches=1), tmp_path)
    result = aggregate_store(spark, tmp_path)
    assert result.source["intervals"]["outlier"] == 1
    ((pair, count),) = result.source["outliers"].items()
    assert count == 1
    profile, _, machine_type = pair.partition("@")
    truth = {(t.profile, t.machine_type): t for t in default_truth()}[(profile, machine_type)]
    assert by_pair(result)[(profile, machine_type)].e == pytest.approx(truth.e, rel=0.08)
    assert len(result.entries) == 9


@pytest.mark.slow  # a Spark job of many seconds
def test_a_topology_left_at_one_rate_gives_no_profile_and_says_why(spark, tmp_path):
    write_store(generate_workers(seed=3, steady=True), tmp_path)
    with pytest.raises(ProfilingError) as failure:
        aggregate_store(spark, tmp_path)
    assert "to tell e from MET" in str(failure.value)


@pytest.mark.slow  # a Spark job of many seconds
def test_narrow_pairs_are_left_out_beside_the_good_ones(spark, tmp_path):
    steady = generate_workers(seed=6, topology="mixed", steady=True, run_id="mixed-2-1700000000",
                              truth=tuple(t for t in default_truth() if t.machine_type == "large"))
    wide = generate_workers(seed=5, topology="mixed", truth=tuple(t for t in default_truth() if t.machine_type != "large"))
    write_store(wide, tmp_path)
    write_store(steady, tmp_path, seed=1)
    result = aggregate_store(spark, tmp_path, "mixed")
    left_out = {(s["profile"], s["machine_type"]): s for s in result.source["skipped_pairs"]}
    assert set(left_out) == {(p, "large") for p in ("spout", "lowCompute", "highCompute")}
    assert {s["verdict"] for s in left_out.values()} == {"narrow_range"}
    assert all(s["fitted"]["rate_spread"] < 0.3 for s in left_out.values())
    assert {m for _, m in by_pair(result)} == {"small", "medium"}


@pytest.mark.slow  # a Spark job of many seconds
def test_since_keeps_only_the_samples_from_then_on(spark, store):
    whole = aggregate_store(spark, store)
    later = aggregate_store(spark, store, since=T0 + 60.0)
    assert 0 < later.source["intervals"]["used"] < whole.source["intervals"]["used"]


def test_the_store_names_what_it_lacks(tmp_path, store):
    with pytest.raises(ProfilingError, match=r"holds no records of topology 'nope' \(it holds: synthetic\)"):
        store_topology_folders(store, "nope")
    with pytest.raises(ProfilingError, match="from 2100-01-01 on"):
        store_topology_folders(store, "synthetic", since=4_102_444_800.0)
    with pytest.raises(ProfilingError, match="is not a folder"):
        store_topology_folders(tmp_path / "absent", "synthetic")


def test_since_reads_durations_and_times():
    assert parse_since("30m", 10_000.0) == 10_000.0 - 1800
    assert parse_since("2h", 10_000.0) == 10_000.0 - 7200
    assert parse_since("1970-01-01T01:00", 0.0) == 3600.0
    assert parse_since("1970-01-01T01:00+01:00", 0.0) == 0.0
    with pytest.raises(ProfilingError, match="neither a duration"):
        parse_since("soon", 0.0)


@pytest.mark.slow  # a Spark job of many seconds
def test_hetsched_aggregate_reads_the_store(spark, store, tmp_path):
    out = tmp_path / "linear.json"
    result = CliRunner().invoke(app, ["aggregate", "--store", str(store), "--topology", "synthetic", "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = ProfileSet.model_validate_json(out.read_text())
    assert len(written.entries) == 9 and written.name == "linear"
    assert "worker rest on small" in result.output
    assert all(math.isfinite(e.e) for e in written.entries)
    assert json.loads(out.read_text())["source"]["fit_criteria"]["min_rate_spread"] == 0.3


def test_intervals_of_a_machine_at_its_cpu_quota_are_left_out_and_the_pairs_named(spark, tmp_path):
    # Workers whose JVMs alone use 95% of their machines: no interval shows what a tuple costs.
    write_store(generate_workers(seed=11, worker_rest_percent=95.0), tmp_path)
    with pytest.raises(ProfilingError, match=r"ran on a machine at its CPU quota, where the CPU cannot grow with the rate"):
        aggregate_store(spark, tmp_path)
