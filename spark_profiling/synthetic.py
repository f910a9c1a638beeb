"""Seeded synthetic raw records with known answers, for tests and the scale benchmark.

Each (profile key, machine type) pair has a true ``e``, ``MET`` and ``alpha``; a task of that
pair fed ``IR`` tuples/s burns ``(e * IR + MET / 100) * machine_cores`` CPU seconds per second,
which is docs/model.md's ``TCU = 100 * e * IR + MET`` percent of the machine. The records carry what a
collector would see: cumulative counters sampled every few seconds, noise on the CPU readings,
offered rates in steps, worker restarts (new pid), counter resets (same pid, counters drop) and,
on request, bad rows of every kind :mod:`spark_profiling.records` names.

:func:`generate` builds JSON lines in Python (small, every fault under control);
:func:`synthetic_frame` builds many rows inside Spark with closed-form counters (for scale).
"""
from __future__ import annotations

import json
import math
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


T0 = 1_700_000_000.0
"""Unix time of the first sample."""


@dataclass(frozen=True)
class PairTruth:
    """The true profile of one (profile key, machine type) pair."""

    profile: str
    machine_type: str
    machine_cores: float
    e: float
    """Seconds of the machine's whole CPU per tuple."""
    met: float
    """Fixed CPU percent of the machine per running instance."""
    alpha: float

    @property
    def cpu_seconds_per_tuple(self) -> float:
        return self.e * self.machine_cores

    def rate_range(self) -> tuple[float, float]:
        """Offered rates that keep one task's thread between ~6 % and 60 % of one core."""
        thread_limit = 0.6 * min(1.0, self.machine_cores)
        high = (thread_limit - self.met / 100.0 * self.machine_cores) / self.cpu_seconds_per_tuple
        return high / 10.0, high


def default_truth() -> tuple[PairTruth, ...]:
    """Three profile keys on three machine types whose CPU quotas are 1:2:4.

    A tuple costs the same CPU seconds everywhere; the machine's capacity differs, so
    ``e = cpu_seconds_per_tuple / cores`` (ARCHITECTURE.md).
    """
    cost = {"spout": (0.0002, 0.010, 1.0), "lowCompute": (0.001, 0.015, 1.0), "highCompute": (0.004, 0.020, 0.5)}
    cores = {"small": 0.5, "medium": 1.0, "large": 2.0}
    return tuple(
        PairTruth(profile, machine_type, c, e=seconds / c, met=100.0 * idle_cores / c, alpha=alpha)
        for profile, (seconds, idle_cores, alpha) in cost.items()
        for machine_type, c in cores.items()
    )


# --- small data in Python ------------------------------------------------------------------------

BAD_KINDS: tuple[str, ...] = (
    "malformed_json",
    "blank_line",
    "missing:cpu_seconds",
    "missing:profile",
    "missing:machine_type",
    "non_numeric:executed",
    "non_numeric:ts",
    "non_finite:cpu_seconds",
    "non_finite:emitted",
    "negative:executed",
    "non_positive:machine_cores",
    "non_integer:pid",
    "non_numeric:task_id",
)
"""One bad row of each of these kinds is what ``generate(bad_rows=...)`` can inject; the kind is the expected reason."""


def _bad_line(kind: str, record: dict, rng: random.Random) -> str:
    if kind == "malformed_json":
        text = json.dumps(record)
        return text[: len(text) // 2]
    if kind == "blank_line":
        return "   "
    reason, _, name = kind.partition(":")
    bad = dict(record)
    if reason == "missing":
        if rng.random() < 0.5:
            bad.pop(name)
        else:
            bad[name] = "" if isinstance(record[name], str) else None
    elif reason == "non_numeric":
        bad[name] = rng.choice(["abc", "12x", True, {"value": 1}])
    elif reason == "non_finite":
        bad[name] = rng.choice([math.nan, math.inf, "NaN", "-Infinity"])
    elif reason == "negative":
        bad[name] = -abs(float(record[name])) - 1.0
    elif reason == "non_positive":
        bad[name] = 0
    elif reason == "non_integer":
        bad[name] = float(record[name]) + 0.5
    else:
        raise ValueError(f"unknown bad row kind {kind!r}")
    return json.dumps(bad)


@dataclass
class SyntheticRun:
    """Generated JSON lines and what the aggregation must find in them."""

    lines: list[str]
    truth: tuple[PairTruth, ...]
    bad_rows: Counter[str] = field(default_factory=Counter)
    counter_resets: int = 0
    valid_rows: int = 0

    def write(self, path: Path) -> Path:
        path.write_text("\n".join(self.lines) + "\n")
        return path


def generate(
    truth: tuple[PairTruth, ...] | None = None,
    seed: int = 0,
    run_id: str = "synthetic-1",
    tasks_per_pair: int = 2,
    steps: int = 4,
    samples_per_step: int = 6,
    interval_s: float = 5.0,
    cpu_noise: float = 0.02,
    rate_jitter: float = 0.05,
    resets_per_task: int = 0,
    restarts_per_task: int = 0,
    bad_rows: dict[str, int] | None = None,
    shuffle: bool = True,
) -> SyntheticRun:
    """Records of one run: every task of every pair through ``steps`` offered rates.

    ``cpu_noise`` is the relative standard deviation of each interval's CPU reading;
    ``rate_jitter`` that of the rate actually reached around the offered one.
    """
    truth = default_truth() if truth is None else truth
    rng = random.Random(seed)
    records: list[dict] = []
    resets = 0
    samples = steps * samples_per_step + 1
    task_id = 0
    for pair in truth:
        low, high = pair.rate_range()
        rates = [low + (high - low) * j / max(steps - 1, 1) for j in range(steps)]
        for t in range(tasks_per_pair):
            task_id += 1
            pid = 1000 * task_id
            # Two samples apart at least, so a counter always has something to lose at a reset.
            events = rng.sample(range(3, samples - 1, 2), resets_per_task + restarts_per_task)
            reset_at = set(events[:resets_per_task])
            restart_at = set(events[resets_per_task:])
            ts = T0 + rng.uniform(0, interval_s)
            executed_true = cpu = 0.0
            base_executed = base_cpu = 0.0
            for k in range(samples):
                if k > 0:
                    rate = rates[min((k - 1) // samples_per_step, steps - 1)]
                    dt = interval_s * rng.uniform(0.95, 1.05)
                    d_exec = round(max(rate * (1 + rng.gauss(0, rate_jitter)), 0.0) * dt)
                    x = d_exec / dt
                    d_cpu = (pair.e * x + pair.met / 100.0) * pair.machine_cores * dt
                    ts += dt
                    executed_true += d_exec
                    cpu += max(d_cpu * (1 + rng.gauss(0, cpu_noise)), 0.0)
                if k in reset_at or k in restart_at:
                    # Counting starts again at this sample: the counters read 0 and the interval is lost.
                    base_executed, base_cpu = executed_true, cpu
                    if k in restart_at:
                        pid += 1
                    else:
                        resets += 1
                executed = executed_true - base_executed
                records.append({
                    "run_id": run_id,
                    "ts": round(ts, 3),
                    "topology": "synthetic",
                    "component": pair.profile,
                    "profile": pair.profile,
                    "task_id": task_id,
                    "pid": pid,
                    "worker_id": f"worker-{pair.machine_type}-{t}",
                    "machine": f"{pair.machine_type}-{t % 2}",
                    "machine_type": pair.machine_type,
                    "machine_cores": pair.machine_cores,
                    "rate_step": round(rates[min(max(k - 1, 0) // samples_per_step, steps - 1)], 3),
                    "executed": int(executed),
                    "emitted": math.floor(pair.alpha * executed),
                    "cpu_seconds": round(cpu - base_cpu, 6),
                })
    lines = [json.dumps(r) for r in records]
    expected_bad: Counter[str] = Counter()
    for kind, count in (bad_rows or {}).items():
        for _ in range(count):
            lines.append(_bad_line(kind, rng.choice(records), rng))
            expected_bad[kind] += 1
    if shuffle:
        rng.shuffle(lines)
    return SyntheticRun(lines=lines, truth=truth, bad_rows=expected_bad, counter_resets=resets, valid_rows=len(records))


# --- many rows inside Spark ----------------------------------------------------------------------


def synthetic_frame(
    spark,
    rows: int,
    truth: tuple[PairTruth, ...] | None = None,
    seed: int = 0,
    tasks_per_pair: int = 8,
    steps: int = 6,
    samples_per_step: int = 40,
    interval_s: float = 5.0,
    segment_samples: int = 2000,
    cpu_noise_s: float = 0.005,
    bad_fraction: float = 1e-4,
    partitions: int | None = None,
):
    """``rows`` raw records (typed columns, as Parquet would hold them) made by Spark itself.

    Counters are closed-form in the sample index, so no window or driver loop is needed: the
    offered rate cycles through ``steps`` levels of ``samples_per_step`` samples each; every
    ``segment_samples`` samples the counters start again, alternately as a worker restart (new
    pid) and as a counter reset (same pid). The CPU counter carries independent noise of about
    ``cpu_noise_s`` seconds per sample; a ``bad_fraction`` of rows lack ``cpu_seconds``.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    truth = default_truth() if truth is None else truth
    pairs = spark.createDataFrame(
        [
            (i, p.profile, p.machine_type, float(p.machine_cores), p.e, p.met, p.alpha, *p.rate_range())
            for i, p in enumerate(truth)
        ],
        "pair long, profile string, machine_type string, machine_cores double, e double, met double, "
        "alpha double, low double, high double",
    )
    tasks = len(truth) * tasks_per_pair
    m, s, dt = steps, samples_per_step, interval_s
    frame = spark.range(0, rows, numPartitions=partitions or spark.sparkContext.defaultParallelism)
    frame = frame.select(
        (F.col("id") % tasks).alias("task_id"),
        F.floor(F.col("id") / tasks).alias("k"),
        F.floor((F.col("id") % tasks) / tasks_per_pair).alias("pair"),
        F.randn(seed).alias("noise"),
        F.rand(seed + 1).alias("bad_draw"),
    ).join(F.broadcast(pairs), "pair")

    def rate(q):
        return F.col("low") + (F.col("high") - F.col("low")) * q / (m - 1)

    def offered_tuples(k):
        """Tuples offered from sample 0 to sample k (rates cycle through the steps)."""
        j = F.floor(k / s)
        cycles, q = F.floor(j / m), j % m
        per_cycle = m * F.col("low") + (F.col("high") - F.col("low")) * m / 2.0
        before_q = q * F.col("low") + (F.col("high") - F.col("low")) * q * (q - 1) / (2.0 * (m - 1))
        return dt * (s * (cycles * per_cycle + before_q) + (k - j * s) * rate(q))

    def cpu_seconds(k):
        """CPU seconds the tuples executed up to sample k cost, plus the fixed cost of the time."""
        return F.col("machine_cores") * (F.col("e") * F.floor(offered_tuples(k)) + F.col("met") / 100.0 * k * dt)

    k = F.col("k")
    segment = F.floor(k / segment_samples)
    k0 = segment * segment_samples
    frame = frame.select(
        "*",
        segment.alias("segment"),
        F.floor(offered_tuples(k)).alias("tuples"),
        F.floor(offered_tuples(k0)).alias("tuples_at_start"),
        cpu_seconds(k).alias("cpu"),
        cpu_seconds(k0).alias("cpu_at_start"),
    )
    noise = cpu_noise_s * (3.0 + F.greatest(F.least(F.col("noise"), F.lit(3.0)), F.lit(-3.0)))
    return frame.select(
        F.lit(f"scale-{seed}").alias("run_id"),
        (F.lit(T0) + k * dt + F.col("task_id") * 0.01).alias("ts"),
        F.lit("synthetic").alias("topology"),
        F.col("profile").alias("component"),
        F.col("profile"),
        F.col("task_id"),
        (10_000 + F.col("task_id") * 1_000 + F.floor(F.col("segment") / 2)).cast(T.LongType()).alias("pid"),
        F.concat(F.lit("worker-"), F.col("task_id").cast("string")).alias("worker_id"),
        F.concat(F.col("machine_type"), F.lit("-"), (F.col("task_id") % 2).cast("string")).alias("machine"),
        F.col("machine_type"),
        F.col("machine_cores"),
        rate(F.floor(k / s) % m).alias("rate_step"),
        (F.col("tuples") - F.col("tuples_at_start")).cast(T.LongType()).alias("executed"),
        (F.floor(F.col("alpha") * F.col("tuples")) - F.floor(F.col("alpha") * F.col("tuples_at_start")))
        .cast(T.LongType()).alias("emitted"),
        F.when(F.col("bad_draw") >= bad_fraction, F.col("cpu") - F.col("cpu_at_start") + noise).alias("cpu_seconds"),
    )
