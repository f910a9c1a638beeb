"""The PySpark aggregation job on small generated data whose answers are known."""
from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from planner.model import ProfileSet
from spark_profiling.aggregate import aggregate
from spark_profiling.errors import ProfilingError
from spark_profiling.inputs import resolve_inputs
from spark_profiling.records import SEGMENT_KEY
from spark_profiling.synthetic import BAD_KINDS, PairTruth, default_truth, generate, synthetic_frame


def run_job(spark, paths: list[Path], min_samples: int = 5, name: str = "test") -> ProfileSet:
    return aggregate(spark, resolve_inputs([str(p) for p in paths]), name, min_samples)


def by_pair(profile_set: ProfileSet) -> dict[tuple[str, str], object]:
    return {(e.profile, e.machine_type): e for e in profile_set.entries}


def reference_fit(lines: list[str]) -> dict[tuple[str, str], dict[str, float]]:
    """The same profiles computed without Spark: sort each counter series, difference, numpy.polyfit."""
    series: dict[tuple, list[dict]] = defaultdict(list)
    for line in lines:
        record = json.loads(line)
        series[tuple(record[k] for k in SEGMENT_KEY)].append(record)
    points: dict[tuple[str, str], list[tuple[float, float, float, float]]] = defaultdict(list)
    for samples in series.values():
        samples.sort(key=lambda r: r["ts"])
        for before, after in zip(samples, samples[1:]):
            dt = after["ts"] - before["ts"]
            deltas = [after[c] - before[c] for c in ("executed", "emitted", "cpu_seconds")]
            if dt <= 0 or min(deltas) < 0:
                continue
            x = deltas[0] / dt
            y = 100 * deltas[2] / dt / after["machine_cores"]
            points[(after["profile"], after["machine_type"])].append((x, y, deltas[0], deltas[1]))
    result = {}
    for pair, pts in points.items():
        xs, ys, executed, emitted = np.array(pts).T
        slope, intercept = np.polyfit(xs, ys, 1)
        result[pair] = {
            "e": slope / 100, "met": max(intercept, 0.0), "alpha": emitted.sum() / executed.sum(),
            "r2": np.corrcoef(xs, ys)[0, 1] ** 2, "samples": len(pts), "low": xs.min(), "high": xs.max(),
        }
    return result


@pytest.mark.slow  # a Spark job of many seconds
def test_recovers_the_true_profiles(spark, tmp_path):
    run = generate(seed=11, tasks_per_pair=3, cpu_noise=0.005)
    result = run_job(spark, [run.write(tmp_path / "records.jsonl")])

    found = by_pair(result)
    assert set(found) == {(t.profile, t.machine_type) for t in run.truth}
    for truth in run.truth:
        entry = found[(truth.profile, truth.machine_type)]
        assert entry.e == pytest.approx(truth.e, rel=0.02)
        assert entry.met == pytest.approx(truth.met, rel=0.05)
        assert entry.alpha == pytest.approx(truth.alpha, rel=0.01)
        assert entry.r2 > 0.99
        low, high = truth.rate_range()
        assert entry.rate_range[0] < 1.2 * low and entry.rate_range[1] > 0.8 * high
    assert result.source["rows"] == result.source["valid_rows"] == run.valid_rows
    assert result.source["bad_rows"] == {}
    assert result.source["skipped_pairs"] == []
    assert result.source["runs"] == ["synthetic-1"]


@pytest.mark.slow  # a Spark job of many seconds
def test_matches_an_independent_reference_computation(spark, tmp_path):
    run = generate(seed=5, resets_per_task=1, restarts_per_task=1, cpu_noise=0.03)
    result = run_job(spark, [run.write(tmp_path / "records.jsonl")])

    reference = reference_fit(run.lines)
    found = by_pair(result)
    assert set(found) == set(reference)
    for pair, ref in reference.items():
        entry = found[pair]
        assert entry.e == pytest.approx(ref["e"], rel=1e-9)
        assert entry.met == pytest.approx(ref["met"], rel=1e-9, abs=1e-9)
        assert entry.alpha == pytest.approx(ref["alpha"], rel=1e-12)
        assert entry.r2 == pytest.approx(ref["r2"], rel=1e-9)
        assert entry.samples == ref["samples"]
        assert entry.rate_range == pytest.approx((ref["low"], ref["high"]), rel=1e-12)


def assert_same_profiles(profile_set: ProfileSet, reference: dict) -> None:
    found = by_pair(profile_set)
    assert set(found) == set(reference)
    for pair, ref in reference.items():
        assert found[pair].e == pytest.approx(ref["e"], rel=1e-9)
        assert found[pair].met == pytest.approx(ref["met"], rel=1e-9, abs=1e-9)
        assert found[pair].samples == ref["samples"]


@pytest.mark.slow  # a Spark job of many seconds
def test_counter_resets_start_a_new_segment(spark, tmp_path):
    run = generate(seed=21, cpu_noise=0.005, resets_per_task=2, restarts_per_task=1)
    tasks = len(run.truth) * 2
    assert run.counter_resets == 2 * tasks
    result = run_job(spark, [run.write(tmp_path / "records.jsonl")])

    # A same-pid reset costs the interval it falls in; so does a restart (new pid, new series).
    intervals_per_task = 4 * 6
    assert result.source["intervals"]["counter_reset"] == run.counter_resets
    assert result.source["intervals"]["used"] == tasks * (intervals_per_task - 2 - 1)
    for truth in run.truth:
        entry = by_pair(result)[(truth.profile, truth.machine_type)]
        assert entry.e == pytest.approx(truth.e, rel=0.02)
        assert entry.met == pytest.approx(truth.met, rel=0.05)
        assert entry.alpha == pytest.approx(truth.alpha, rel=0.01)


@pytest.mark.slow  # a Spark job of many seconds
def test_every_kind_of_bad_row_is_counted_and_skipped(spark, tmp_path):
    clean = generate(seed=8)
    dirty = generate(seed=8, bad_rows={kind: 2 for kind in BAD_KINDS})
    result = run_job(spark, [dirty.write(tmp_path / "dirty.jsonl")])

    assert result.source["bad_rows"] == dict(dirty.bad_rows)
    assert result.source["valid_rows"] == clean.valid_rows
    assert result.source["rows"] == clean.valid_rows + sum(dirty.bad_rows.values())
    (input_report,) = result.source["inputs"]
    assert input_report["rows"] == result.source["rows"]
    assert input_report["bad_rows"] == sum(dirty.bad_rows.values())
    # The bad rows change nothing: the valid records alone give the same profiles.
    assert_same_profiles(result, reference_fit(clean.lines))


class RawJson(str):
    """A value written into a line as it is, not JSON-encoded (a number too large for a double)."""


BAD_LINES = {
    "malformed_json": ['{"run_id": "r", "ts": 1', "[1, 2, 3]", "42"],
    "blank_line": ["", "   "],
    "missing:ts": [{"ts": None}, {"ts": ""}],
    "missing:run_id": [{"run_id": "  "}],
    "non_numeric:ts": [{"ts": "soon"}, {"ts": True}, {"ts": [1]}],
    "non_finite:ts": [{"ts": math.nan}, {"ts": -math.inf}, {"ts": "NaN"}, {"ts": RawJson("1e400")}],
    "non_positive:ts": [{"ts": -5}, {"ts": 0}],
    "negative:cpu_seconds": [{"cpu_seconds": -0.5}],
    "non_integer:task_id": [{"task_id": 1.5}],
    "out_of_range:pid": [{"pid": 1e30}],
    "non_positive:machine_quota_cores": [{"machine_quota_cores": 0}],
    "negative:process_cpu_seconds": [{"process_cpu_seconds": -1.0}],
    "unknown:cpu_basis": [{"cpu_basis": "alone"}, {"cpu_basis": "MACHINE"}],
}
"""Bad lines by the reason they must get: raw text, or changes to a good record (Python's json
writes NaN and Infinity bare, as many collectors would)."""


def bad_line(template: dict, variant: str | dict) -> str:
    if isinstance(variant, str):
        return variant
    line = json.dumps({**template, **variant})
    for value in variant.values():
        if isinstance(value, RawJson):
            line = line.replace(json.dumps(str(value)), str(value))
    return line


@pytest.mark.slow  # a Spark job of many seconds
def test_each_bad_line_names_its_fault(spark, tmp_path):
    good = generate(seed=2, truth=default_truth()[:1], shuffle=False)
    template = json.loads(good.lines[0])
    bad = [bad_line(template, variant) for variants in BAD_LINES.values() for variant in variants]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(good.lines[:10] + bad + good.lines[10:]) + "\n")
    result = run_job(spark, [path])
    assert result.source["bad_rows"] == {reason: len(v) for reason, v in sorted(BAD_LINES.items())}
    assert result.source["valid_rows"] == good.valid_rows


def test_a_pair_with_too_few_samples_is_reported_not_invented(spark, tmp_path):
    run = generate(seed=4, tasks_per_pair=1, steps=4, samples_per_step=6)
    sparse = run.truth[0]
    kept, sparse_lines = [], []
    for line in run.lines:
        record = json.loads(line)
        if (record["profile"], record["machine_type"]) == (sparse.profile, sparse.machine_type):
            sparse_lines.append((record["ts"], line))
        else:
            kept.append(line)
    kept += [line for _, line in sorted(sparse_lines)[:4]]  # 4 samples: 3 intervals
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(kept) + "\n")

    result = run_job(spark, [path], min_samples=5)
    assert (sparse.profile, sparse.machine_type) not in by_pair(result)
    assert len(result.entries) == len(run.truth) - 1
    assert result.source["skipped_pairs"] == [
        {"profile": sparse.profile, "machine_type": sparse.machine_type, "samples": 3,
         "reason": "3 intervals, fewer than the 5 needed", "verdict": "too_few", "fitted": None}
    ]


@pytest.mark.slow  # a Spark job of many seconds
def test_repeated_samples_are_dropped_as_non_increasing_time(spark, tmp_path):
    run = generate(seed=6, truth=default_truth()[:2], shuffle=False)
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(run.lines + run.lines[3:6]) + "\n")  # three samples collected twice
    result = run_job(spark, [path])
    assert result.source["intervals"]["non_increasing_ts"] == 3
    assert_same_profiles(result, reference_fit(run.lines))


@pytest.mark.slow  # a Spark job of many seconds
def test_parquet_and_json_lines_give_the_same_profiles_and_mix(spark, tmp_path):
    run = generate(seed=9, resets_per_task=1)
    half = len(run.lines) // 2
    first, rest = tmp_path / "first.jsonl", tmp_path / "rest.jsonl"
    first.write_text("\n".join(run.lines[:half]) + "\n")
    rest.write_text("\n".join(run.lines[half:]) + "\n")
    parquet_path = tmp_path / "first.parquet"
    spark.read.json(str(first)).write.parquet(str(parquet_path))  # typed columns, as a collector's Parquet

    mixed = run_job(spark, [parquet_path, rest])
    assert {i["format"] for i in mixed.source["inputs"]} == {"parquet", "jsonl"}
    assert [i["rows"] for i in mixed.source["inputs"]] == [half, len(run.lines) - half]
    assert_same_profiles(mixed, reference_fit(run.lines))


@pytest.mark.slow  # a Spark job of many seconds
def test_parquet_with_text_in_a_number_column_counts_bad_rows(spark, tmp_path):
    run = generate(seed=10, truth=default_truth()[:1], shuffle=False)
    records = [json.loads(line) for line in run.lines]
    records[5]["cpu_seconds"] = "n/a"
    records[7]["machine_cores"] = None
    source = tmp_path / "records.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    path = tmp_path / "typed.parquet"
    schema = ", ".join(f"{name} {'STRING' if name == 'cpu_seconds' else kind}" for name, kind in (
        ("run_id", "STRING"), ("ts", "DOUBLE"), ("topology", "STRING"), ("component", "STRING"),
        ("profile", "STRING"), ("task_id", "BIGINT"), ("pid", "BIGINT"), ("machine_type", "STRING"),
        ("machine_cores", "DOUBLE"), ("executed", "BIGINT"), ("emitted", "BIGINT"), ("cpu_seconds", "DOUBLE"),
    ))
    spark.read.schema(schema).json(str(source)).write.parquet(str(path))
    result = run_job(spark, [path])
    assert result.source["bad_rows"] == {"missing:machine_cores": 1, "non_numeric:cpu_seconds": 1}
    assert result.source["valid_rows"] == len(records) - 2


@pytest.mark.slow  # a Spark job of many seconds
def test_inputs_without_a_valid_record_are_a_clear_error(spark, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n{}\n")
    with pytest.raises(ProfilingError, match=r"no valid record in the inputs: all 2 rows are bad \(.*malformed_json"):
        run_job(spark, [bad])
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ProfilingError, match="hold no records"):
        run_job(spark, [empty])


def test_no_pair_with_enough_samples_is_a_clear_error(spark, tmp_path):
    run = generate(seed=3, truth=default_truth()[:1], tasks_per_pair=1, steps=1, samples_per_step=3)
    with pytest.raises(ProfilingError, match=r"no \(profile, machine type\) pair has enough data") as raised:
        run_job(spark, [run.write(tmp_path / "few.jsonl")])
    # The verdict on each pair it saw goes with the error (hetsched tune names them as weak, not never observed).
    pair = (default_truth()[0].profile, default_truth()[0].machine_type)
    assert list(raised.value.left_out) == [pair] and "interval" in raised.value.left_out[pair]


@pytest.mark.slow  # a Spark job of many seconds
def test_the_scale_generator_has_the_known_answers(spark, tmp_path):
    truth = (
        PairTruth("work", "small", 0.5, e=0.006, met=2.0, alpha=0.5),
        PairTruth("work", "large", 2.0, e=0.0015, met=0.5, alpha=0.5),
    )
    frame = synthetic_frame(spark, 40_000, truth=truth, seed=1, tasks_per_pair=2, segment_samples=1_500, bad_fraction=0.001)
    path = tmp_path / "scale.parquet"
    frame.write.parquet(str(path))
    result = run_job(spark, [path])
    for t in truth:
        entry = by_pair(result)[(t.profile, t.machine_type)]
        assert entry.e == pytest.approx(t.e, rel=0.02)
        assert entry.met == pytest.approx(t.met, rel=0.02)
        assert entry.alpha == pytest.approx(t.alpha, rel=0.001)
    assert result.source["intervals"]["counter_reset"] > 0
    assert set(result.source["bad_rows"]) == {"missing:cpu_seconds"}


def base_load_records(base: float, cores: float = 0.2) -> list[str]:
    """Two kinds profiled alone on machine type ``small`` (base load ``base`` percent) and one sharing ``small-2``.

    ``quiet``'s JVM idles at nothing beyond the machine's base load; ``busy``'s polls for 10 percent more
    (its own, like a spout's), so the least overhead intercept is the base load.
    """
    def percent_to_seconds(pct: float, dt: float) -> float:
        return pct / 100.0 * cores * dt

    lines: list[str] = []
    kinds = {"quiet": (0.8, 1.0, 0.0), "busy": (0.3, 2.0, 10.0)}  # own % per tuple/s, own idle %, extra JVM idle %
    for task_id, (profile, (own_slope, own_idle, extra)) in enumerate(kinds.items(), start=1):
        counters = {"executed": 0.0, "cpu_seconds": 0.0, "process_cpu_seconds": 0.0, "machine_cpu_seconds": 0.0}
        ts = 1000.0
        for rate in (2, 4, 6, 8, 10, 12, 14, 16, 18, 20):
            dt = 10.0
            own = own_slope * rate + own_idle
            machine = base + extra + own + 0.4 * rate  # the JVM's cost per tuple, 0.4 % per tuple/s
            counters["executed"] += rate * dt
            counters["process_cpu_seconds"] += percent_to_seconds(own, dt)
            counters["machine_cpu_seconds"] += percent_to_seconds(machine, dt)
            counters["cpu_seconds"] += percent_to_seconds(machine, dt)
            ts += dt
            lines.append(json.dumps({
                "run_id": "base", "ts": ts, "topology": "t", "component": profile, "profile": profile,
                "task_id": task_id, "pid": 100 + task_id, "machine": f"small-{task_id}", "machine_type": "small",
                "machine_cores": cores, "executed": counters["executed"], "emitted": counters["executed"],
                "cpu_seconds": counters["cpu_seconds"], "process_cpu_seconds": counters["process_cpu_seconds"],
                "machine_cpu_seconds": counters["machine_cpu_seconds"], "cpu_basis": "machine",
            }))
    return lines


def test_the_machine_base_load_is_measured_once_and_kept_out_of_met(spark, tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(base_load_records(base=25.0)) + "\n")
    result = run_job(spark, [path])

    assert result.source["machine_base_load"] == {"small": pytest.approx(25.0, abs=1e-6)}
    assert result.source["machine_base_load_from"] == {"small": {"profile": "quiet", "samples": 9}}
    found = by_pair(result)
    assert found[("quiet", "small")].met == pytest.approx(1.0, abs=1e-6)
    assert found[("busy", "small")].met == pytest.approx(12.0, abs=1e-6)  # its own idle and its JVM's polling
    assert found[("quiet", "small")].e == pytest.approx((0.8 + 0.4) / 100, rel=1e-6)
    assert result.source["base_load_removed_from_met"] == {"busy@small": 25.0, "quiet@small": 25.0}


def test_records_without_process_cpu_give_no_base_load_and_the_whole_met(spark, tmp_path):
    lines = [json.dumps({k: v for k, v in json.loads(line).items() if k not in ("process_cpu_seconds", "cpu_basis")})
             for line in base_load_records(base=25.0)]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = run_job(spark, [path])

    assert result.source["machine_base_load"] == {}
    assert by_pair(result)[("quiet", "small")].met == pytest.approx(26.0, abs=1e-6)
