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
class _Executor:
    """One synthetic executor's truth and running totals (its worker's records are read off these)."""

    pair: PairTruth
    task: int
    pid: int
    rates: list[float]
    glitch_at: int | None
    executed: float = 0.0
    cpu: float = 0.0


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


# --- records of running workers, in the service's records store -----------------------------------

THREAD_SHARE = 0.2
"""Part of an executor's CPU spent in its JVM thread; the rest is its shell subprocess's."""


def generate_workers(
    truth: tuple[PairTruth, ...] | None = None,
    seed: int = 0,
    topology: str = "synthetic",
    run_id: str = "synthetic-1-1700000000",
    workers_per_type: int = 2,
    steps: int = 4,
    samples_per_step: int = 6,
    interval_s: float = 5.0,
    cpu_noise: float = 0.02,
    rate_jitter: float = 0.05,
    worker_rest_percent: float = 5.0,
    steady: bool = False,
    rate_glitches: int = 0,
) -> SyntheticRun:
    """What the workers of a running topology send (docs/profiling-records.md, "Records from the workers").

    Each (profile key, machine type) pair has ``workers_per_type`` workers, each with one executor
    on a machine of its own: all of a type's pairs on one machine at their top rates would be more
    than its quota (which the job leaves out, docs/profiling-records.md step 8). ``cpu_seconds`` is the
    executor's thread plus its subprocess; ``worker_cpu_seconds`` grows by the threads plus
    ``worker_rest_percent`` of the machine (the true worker rest). ``steady`` keeps every interval
    at the first step's rate (a topology left alone); ``rate_glitches`` intervals (on the first
    executors) count 100x the tuples they executed, with the CPU of the true ones.
    """
    truth = default_truth() if truth is None else truth
    rng = random.Random(seed)
    records: list[dict] = []
    samples = steps * samples_per_step + 1
    by_type: dict[str, list[PairTruth]] = {}
    for pair in truth:
        by_type.setdefault(pair.machine_type, []).append(pair)
    glitches_left = rate_glitches
    task_id = 0
    for machine_type, pairs in by_type.items():
        cores = pairs[0].machine_cores
        for w, pair in enumerate(p for _ in range(workers_per_type) for p in pairs):
            port = 6700 + w
            task_id += 1
            low, high = pair.rate_range()
            rates = [low] * steps if steady else [low + (high - low) * j / max(steps - 1, 1) for j in range(steps)]
            glitch_at = rng.randrange(2, samples) if glitches_left > 0 else None
            glitches_left -= glitch_at is not None
            executors = [_Executor(pair=pair, task=task_id, pid=70_000 + task_id, rates=rates, glitch_at=glitch_at)]
            ts = T0 + rng.uniform(0, interval_s)
            worker_cpu = 0.0
            for k in range(samples):
                dt = interval_s * rng.uniform(0.95, 1.05) if k > 0 else 0.0
                ts += dt
                worker_cpu += worker_rest_percent / 100.0 * cores * dt
                for ex in executors:
                    pair = ex.pair
                    if k > 0:
                        rate = ex.rates[min((k - 1) // samples_per_step, steps - 1)]
                        d_exec = round(max(rate * (1 + rng.gauss(0, rate_jitter)), 0.0) * dt)
                        d_cpu = max((pair.e * d_exec / dt + pair.met / 100.0) * cores * dt * (1 + rng.gauss(0, cpu_noise)), 0.0)
                        ex.executed += d_exec * (100 if k == ex.glitch_at else 1)
                        ex.cpu += d_cpu
                        worker_cpu += THREAD_SHARE * d_cpu
                    thread = THREAD_SHARE * ex.cpu
                    records.append({
                        "source": "worker", "cpu_basis": "thread", "run_id": run_id, "ts": round(ts, 3),
                        "topology": topology, "component": pair.profile, "profile": pair.profile,
                        "task_id": ex.task, "executor": [ex.task, ex.task], "pid": ex.pid,
                        "worker_id": f"{machine_type}-{w}.local:{port}", "machine": f"{machine_type}-{w}",
                        "machine_type": machine_type, "machine_cores": cores,
                        "executed": int(ex.executed), "emitted": math.floor(pair.alpha * ex.executed),
                        "cpu_seconds": round(ex.cpu, 6), "thread_cpu_seconds": round(thread, 6),
                        "subprocess_cpu_seconds": round(ex.cpu - thread, 6),
                        "worker_cpu_seconds": round(worker_cpu, 6),
                    })
    return SyntheticRun(lines=[json.dumps(r) for r in records], truth=truth, valid_rows=len(records))


def write_store(run: SyntheticRun, root: Path, samples_per_batch: int = 6, seed: int = 0) -> list[Path]:
    """The run's records as the service stores them: ``root/topology=T/day=D/<batch_id>.jsonl``, one file per batch.

    A batch is one worker's records of ``samples_per_batch`` consecutive samples, as a worker ships them.
    """
    import datetime as dt
    import uuid

    rng = random.Random(seed)
    batches: dict[tuple[str, str, int], list[dict]] = {}
    by_worker: dict[tuple[str, str], list[dict]] = {}
    for line in run.lines:
        record = json.loads(line)
        by_worker.setdefault((record["topology"], record["worker_id"]), []).append(record)
    for (topology, worker), records in by_worker.items():
        times = sorted({r["ts"] for r in records})
        index = {t: i // samples_per_batch for i, t in enumerate(times)}
        for r in records:
            batches.setdefault((topology, worker, index[r["ts"]]), []).append(r)
    paths = []
    for (topology, _, _), records in sorted(batches.items()):
        batch_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        day = dt.datetime.fromtimestamp(min(r["ts"] for r in records), tz=dt.timezone.utc).strftime("%Y-%m-%d")
        path = root / f"topology={topology}" / f"day={day}" / f"{batch_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        extra = {"batch_id": batch_id, "received_at": max(r["ts"] for r in records) + 1.0, "worker_dropped": 0}
        path.write_text("".join(json.dumps({**r, **extra}) + "\n"
                                for r in records))
        paths.append(path)
    return paths


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
