"""The PySpark job: raw worker records in, the planner's ProfileSet out.

Per (profile key, machine type): counters become per-interval input rates and CPU percent
(:mod:`spark_profiling.rates`), Spark sums them (n, Σx, Σy, Σxy, Σx², Σy², ...) and the driver fits
the line from the sums alone (:mod:`spark_profiling.fit`). The input is read once: validation,
intervals and every count of the run's report come out of one grouped aggregation whose result
has one row per (input, verdict, pair), never raw records.

Run it as ``spark-submit spark_profiling/aggregate.py IN... --out F`` or ``hetsched aggregate``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import sys
import time
from dataclasses import replace
from collections import Counter, defaultdict
from collections.abc import Callable
from functools import reduce
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from planner.durable import write_atomic
from planner.model import ProfileEntry, ProfileSet
from planner.profiles import MACHINE_BASE_LOAD
from spark_profiling.errors import NoPairError, ProfilingError
from spark_profiling.fit import (
    OUTLIER_FLOOR_PERCENT, OUTLIER_FLOOR_RELATIVE, Clamped, FitCriteria, OutlierBand, PairSums, Skipped, machine_base_load,
    outlier_band, profile_entry,
)
from spark_profiling.inputs import Format, InputSpec, read_raw, resolve_inputs, spark_error_sentence
from spark_profiling.progress import reporting
from spark_profiling.rates import (
    AT_QUOTA, COUNTER_RESET, CPU_PERCENT, D_EMITTED, D_EXECUTED, D_THREAD_CPU, D_WORKER_CPU, INPUT_RATE, INTERVAL, INTERVAL_S,
    MACHINE_PERCENT, NON_INCREASING_TS, OK, OWN_PERCENT, THREAD_PERCENT, intervals,
)
from spark_profiling.records import INPUT, REASON, validate
from spark_profiling.session import spark_session

log = logging.getLogger(__name__)

DEFAULT_MIN_SAMPLES = 5
"""Fewest intervals a (profile key, machine type) pair needs before its line is trusted."""


OUTLIER_SAMPLE = 400
"""Intervals per pair the robust line is drawn from (a random sample, brought to the driver)."""


def _outlier_bands(points: DataFrame, seed: int = 0) -> list[OutlierBand]:
    """Each pair's robust band from at most :data:`OUTLIER_SAMPLE` of its usable intervals."""
    usable = points.where(F.col(REASON).isNull() & (F.col(INTERVAL) == OK) & F.col(CPU_PERCENT).isNotNull())
    pick = Window.partitionBy("profile", "machine_type").orderBy(F.rand(seed))
    sample = (
        usable.select("profile", "machine_type", INPUT_RATE, CPU_PERCENT, F.row_number().over(pick).alias("_pick"))
        .where(F.col("_pick") <= OUTLIER_SAMPLE)
        .collect()
    )
    by_pair: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for row in sample:
        by_pair[(row["profile"], row["machine_type"])].append((row[INPUT_RATE], row[CPU_PERCENT]))
    bands = [outlier_band(profile, machine_type, pts) for (profile, machine_type), pts in sorted(by_pair.items())]
    return [b for b in bands if b is not None]


AT_QUOTA_PERCENT = 90.0
"""Percent of a machine's CPU quota its workers (JVMs and shell subprocesses) used, from which it counts as at quota.

There the CPU cannot grow with the rate, so its intervals do not show a cost per tuple: Linear's
highCompute measured on a small machine at quota came out 28% and 47% under the lab's ``e``
(two ``hetsched tune`` runs, issue19/tune-explore-20261126 and tune-drained-1). The supervisor's own
CPU is not in the records, hence under 100."""
QUOTA_BUCKET_S = 10.0
"""Width of the time buckets in which the workers of one machine are summed (their samples are not aligned)."""


def with_at_quota(points: DataFrame) -> DataFrame:
    """Workers' intervals on a machine at its quota (:data:`AT_QUOTA_PERCENT`) relabelled :data:`AT_QUOTA`.

    Per worker sample, the JVM's CPU plus its executors' shell subprocesses (``cpu_seconds`` less
    ``thread_cpu_seconds``); per machine and :data:`QUOTA_BUCKET_S` bucket, each worker's mean summed.
    Records of the lab (``cpu_basis`` machine or shared) are left as they are.
    """
    thread_basis = F.col("cpu_basis") == "thread"
    usable = points.where(
        F.col(REASON).isNull() & (F.col(INTERVAL) == OK) & thread_basis & F.col("worker_id").isNotNull()
        & F.col("machine").isNotNull()
    )
    subprocess = F.when(F.col(THREAD_PERCENT).isNotNull(), F.col(CPU_PERCENT) - F.col(THREAD_PERCENT)).otherwise(0.0)
    samples = usable.groupBy("machine", "worker_id", "ts").agg(
        F.min_by(D_WORKER_CPU, F.struct(INTERVAL_S, D_WORKER_CPU)).alias("worker"),
        F.min(INTERVAL_S).alias("seconds"),
        F.max("machine_cores").alias("cores"),
        F.sum(subprocess).alias("subprocesses"),
    ).where(F.col("worker").isNotNull())
    percent = 100.0 * F.col("worker") / (F.col("seconds") * F.col("cores")) + F.col("subprocesses")
    bucket = F.floor(F.col("ts") / QUOTA_BUCKET_S)
    busy = (
        samples.groupBy("machine", bucket.alias("_bucket"), "worker_id").agg(F.avg(percent).alias("_percent"))
        .groupBy("machine", "_bucket").agg(F.sum("_percent").alias("_busy"))
        .where(F.col("_busy") >= AT_QUOTA_PERCENT)
        .select("machine", "_bucket", F.lit(True).alias("_at_quota"))
    )
    marked = points.withColumn("_bucket", bucket).join(F.broadcast(busy), ["machine", "_bucket"], "left")
    at_quota = (F.col(INTERVAL) == OK) & thread_basis & F.col("_at_quota").isNotNull()
    return marked.withColumn(INTERVAL, F.when(at_quota, F.lit(AT_QUOTA)).otherwise(F.col(INTERVAL))).drop(
        "_bucket", "_at_quota")


ESTIMATED_PAIRS = "estimated_pairs"
"""``source`` key: pairs whose entry is an estimate from one operating point (fit.ratio_estimate), with why."""

THREAD_IDLE_FALL = "thread_idle_fall"
"""``source`` key: per pair, the fall of its executor threads' CPU with the rate (percent per tuple/s), kept out of ``e``."""

WORKER_REST = "worker_rest"
"""``source`` key: per machine type, the CPU of the workers that is in no executor's thread (records of workers)."""


def _worker_rest(points: DataFrame) -> dict[str, dict[str, float]]:
    """Per machine type, the median over worker intervals of the worker JVM's CPU outside its executors' threads.

    A worker's records of one sample share its ``ts`` and its ``worker_cpu_seconds``; what that
    counter grew by less what the executor threads grew by is Storm's own threads (transfer,
    Netty, the acker, ShellBolt pipes) and the JVM's idle: the worker's base load, percent of the
    machine. Subprocess CPU is not in the worker's counter, so it is not subtracted.
    """
    usable = points.where(
        F.col(REASON).isNull() & (F.col(INTERVAL) == OK) & (F.col("cpu_basis") == "thread") & F.col("worker_id").isNotNull()
    )
    per_worker = usable.groupBy("run_id", "worker_id", "machine_type", "ts").agg(
        # min_by, not first: which row comes first differs between local mode and a cluster
        F.min_by(D_WORKER_CPU, F.struct(INTERVAL_S, D_WORKER_CPU)).alias("worker"),
        F.sum(D_THREAD_CPU).alias("threads"),
        F.count(F.when(F.col(D_THREAD_CPU).isNull(), 1)).alias("unknown"),
        F.min(INTERVAL_S).alias("seconds"),
        F.max("machine_cores").alias("cores"),
    ).where(F.col("worker").isNotNull() & (F.col("unknown") == 0))
    rest = 100.0 * F.greatest(F.col("worker") - F.col("threads"), F.lit(0.0)) / (F.col("seconds") * F.col("cores"))
    rows = per_worker.groupBy("machine_type").agg(
        F.median(rest).alias("percent"), F.count(F.lit(1)).alias("intervals"),
    ).collect()
    return {r["machine_type"]: {"percent": round(min(r["percent"], 100.0), 3), "intervals": r["intervals"]} for r in rows}


def _band_frame(spark: SparkSession, bands: list[OutlierBand]) -> DataFrame:
    return spark.createDataFrame(
        [(b.profile, b.machine_type, b.slope, b.intercept, b.k * b.mad_percent) for b in bands],
        "profile string, machine_type string, _band_slope double, _band_intercept double, _band_limit double",
    )


def _pair_sums_frame(points: DataFrame, bands: DataFrame | None = None, keep_at_quota: bool = False) -> DataFrame:
    """One row per (input, reason, profile, machine type) with the counts and regression sums.

    ``keep_at_quota``: intervals at quota (:func:`with_at_quota`) are fitted too (and still counted).

    With ``bands``, an interval outside its pair's band (:meth:`OutlierBand.is_outlier`, the same
    rule in Spark's terms) is counted as an outlier and kept out of the sums.
    """
    valid = F.col(REASON).isNull()
    x, y = F.col(INPUT_RATE), F.col(CPU_PERCENT)
    if bands is not None:
        points = points.join(F.broadcast(bands), ["profile", "machine_type"], "left")
        predicted = F.col("_band_intercept") + F.col("_band_slope") * x
        limit = F.greatest(F.col("_band_limit"), F.lit(OUTLIER_FLOOR_PERCENT), F.lit(OUTLIER_FLOOR_RELATIVE) * F.abs(predicted))
        outlier = (F.col(INTERVAL) == OK) & valid & F.col("_band_slope").isNotNull() & (F.abs(y - predicted) > limit)
    else:
        outlier = F.lit(False)
    fitted = F.col(INTERVAL).isin(OK, AT_QUOTA) if keep_at_quota else F.col(INTERVAL) == OK
    ok = fitted & ~F.coalesce(outlier, F.lit(False))

    def ok_sum(value):
        return F.sum(F.when(ok, value))

    alone = F.col("cpu_basis") == "machine"
    own, machine = F.col(OWN_PERCENT), F.col(MACHINE_PERCENT)
    overhead = F.when(alone & own.isNotNull() & machine.isNotNull(), machine - own)
    rest = machine - own
    share = (
        F.when(alone, F.lit(1.0))
        .when((F.col("cpu_basis") == "shared") & own.isNotNull() & (rest > 0),
              F.least(F.lit(1.0), F.greatest(F.lit(0.0), (y - own) / rest)))
    )

    return points.groupBy(
        INPUT,
        REASON,
        F.when(valid, F.col("profile")).alias("profile"),
        F.when(valid, F.col("machine_type")).alias("machine_type"),
    ).agg(
        F.count(F.lit(1)).alias("rows"),
        F.count(F.when(ok, 1)).alias("n"),
        F.count(F.when(F.col(INTERVAL) == COUNTER_RESET, 1)).alias("resets"),
        F.count(F.when(F.col(INTERVAL) == NON_INCREASING_TS, 1)).alias("non_increasing"),
        F.count(F.when(F.col(INTERVAL) == AT_QUOTA, 1)).alias("at_quota"),
        ok_sum(x).alias("sx"),
        ok_sum(y).alias("sy"),
        ok_sum(x * y).alias("sxy"),
        ok_sum(x * x).alias("sxx"),
        ok_sum(y * y).alias("syy"),
        F.min(F.when(ok, x)).alias("x_min"),
        F.max(F.when(ok, x)).alias("x_max"),
        F.count(F.when(outlier, 1)).alias("outliers"),
        ok_sum(F.col(D_EXECUTED)).alias("executed"),
        ok_sum(F.col(D_EMITTED)).alias("emitted"),
        F.count(F.when(ok, overhead)).alias("on"),
        ok_sum(F.when(overhead.isNotNull(), x)).alias("osx"),
        ok_sum(overhead).alias("osy"),
        ok_sum(x * overhead).alias("osxy"),
        ok_sum(F.when(overhead.isNotNull(), x * x)).alias("osxx"),
        F.count(F.when(ok, F.col(THREAD_PERCENT))).alias("nt"),
        ok_sum(F.col(THREAD_PERCENT)).alias("sty"),
        ok_sum(x * F.col(THREAD_PERCENT)).alias("sxty"),
        F.count(F.when(ok, share)).alias("ns"),
        ok_sum(share).alias("ss"),
        ok_sum(x * share).alias("sxs"),
        F.collect_set(F.when(valid, F.col("run_id"))).alias("runs"),
    )


def _sums(row) -> PairSums:
    return PairSums(
        n=row["n"],
        sx=row["sx"] or 0.0,
        sy=row["sy"] or 0.0,
        sxy=row["sxy"] or 0.0,
        sxx=row["sxx"] or 0.0,
        syy=row["syy"] or 0.0,
        x_min=row["x_min"] if row["x_min"] is not None else float("inf"),
        x_max=row["x_max"] if row["x_max"] is not None else float("-inf"),
        executed=row["executed"] or 0.0,
        emitted=row["emitted"] or 0.0,
        on=row["on"],
        osx=row["osx"] or 0.0,
        osy=row["osy"] or 0.0,
        osxy=row["osxy"] or 0.0,
        osxx=row["osxx"] or 0.0,
        at_quota=row["at_quota"],
        nt=row["nt"],
        sty=row["sty"] or 0.0,
        sxty=row["sxty"] or 0.0,
        ns=row["ns"],
        ss=row["ss"] or 0.0,
        sxs=row["sxs"] or 0.0,
    )


def aggregate(
    spark: SparkSession, inputs: list[InputSpec], name: str, min_samples: int = DEFAULT_MIN_SAMPLES,
    criteria: FitCriteria | None = None, since: float | None = None, drop_outliers: bool = True,
) -> ProfileSet:
    """Aggregate the inputs into a ProfileSet whose ``source`` reports the run.

    ``since`` (unix seconds) keeps only samples taken from then on. ``drop_outliers`` False fits
    every interval (what the job did before outliers were judged; for comparisons). Raises ProfilingError when an
    input cannot be read, holds no valid record, or no pair has enough intervals for a profile.
    """
    if min_samples < 2:
        raise ProfilingError(f"min_samples must be at least 2 (a line needs two points), not {min_samples}.")
    criteria = replace(criteria or FitCriteria(), min_samples=min_samples)
    started = time.monotonic()
    records = reduce(
        DataFrame.unionByName,
        [validate(read_raw(spark, spec)).withColumn(INPUT, F.lit(i)) for i, spec in enumerate(inputs)],
    )
    if since is not None:
        records = records.where(F.col(REASON).isNotNull() | (F.col("ts") >= since))
    points = with_at_quota(intervals(records)).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        bands = _outlier_bands(points) if drop_outliers else []
        groups = _pair_sums_frame(points, _band_frame(spark, bands) if bands else None, criteria.keep_at_quota).collect()
        worker_rest = _worker_rest(points)
    except Exception as exc:  # a file that fails mid-read (corrupt gzip, truncated Parquet)
        raise ProfilingError(f"reading the inputs failed: {spark_error_sentence(exc)}") from None
    finally:
        points.unpersist()

    rows_per_input: Counter[int] = Counter()
    bad_per_input: Counter[int] = Counter()
    bad_rows: Counter[str] = Counter()
    pairs: dict[tuple[str, str], PairSums] = defaultdict(PairSums)
    resets = non_increasing = 0
    outliers: Counter[str] = Counter()
    runs: set[str] = set()
    for g in groups:
        rows_per_input[g[INPUT]] += g["rows"]
        if g[REASON] is not None:
            bad_rows[g[REASON]] += g["rows"]
            bad_per_input[g[INPUT]] += g["rows"]
            continue
        pairs[(g["profile"], g["machine_type"])] += _sums(g)
        resets += g["resets"]
        non_increasing += g["non_increasing"]
        if g["outliers"]:
            outliers[f"{g['profile']}@{g['machine_type']}"] += g["outliers"]
        runs.update(g["runs"])

    total_rows = sum(rows_per_input.values())
    valid_rows = total_rows - sum(bad_rows.values())
    if total_rows == 0:
        raise ProfilingError("the inputs hold no records.")
    if bad_rows:
        log.warning("skipped %d bad rows of %d: %s", sum(bad_rows.values()), total_rows, _reasons_text(bad_rows))
    if valid_rows == 0:
        raise ProfilingError(f"no valid record in the inputs: all {total_rows} rows are bad ({_reasons_text(bad_rows)}).")

    entries: list[ProfileEntry] = []
    skipped: list[Skipped] = []
    clamped: list[Clamped] = []
    base_loads = machine_base_load(pairs, min_samples)
    removed: dict[str, float] = {}
    idle_fall: dict[str, float] = {}
    estimated: dict[str, dict] = {}
    for (profile, machine_type), sums in sorted(pairs.items()):
        base = base_loads.get(machine_type)
        result = profile_entry(profile, machine_type, sums, min_samples, base.percent if base else 0.0, criteria)
        if result.entry is not None:
            entries.append(result.entry)
            if result.base_load_removed is not None:
                removed[f"{profile}@{machine_type}"] = round(result.base_load_removed, 3)
            if result.thread_idle_fall is not None:
                idle_fall[f"{profile}@{machine_type}"] = round(result.thread_idle_fall, 6)
            if result.estimate is not None:
                estimated[f"{profile}@{machine_type}"] = result.estimate
                log.warning("pair (%s, %s) estimated from its mean operating point (%s tuples/s): %s", profile,
                            machine_type, result.estimate["rate"], result.estimate["why"])
        if result.skipped is not None:
            skipped.append(result.skipped)
            log.warning("pair (%s, %s) left out: %s", profile, machine_type, result.skipped.reason)
        for clamp in result.clamped:
            clamped.append(clamp)
            log.warning("pair (%s, %s): fitted %s %.4g clamped to %g", profile, machine_type, clamp.field, clamp.fitted, clamp.used)
    if not entries:
        raise NoPairError(
            "no (profile, machine type) pair has enough data for a profile: "
            + "; ".join(f"({s.profile}, {s.machine_type}) {s.reason}" for s in skipped)
            + ".",
            {(s.profile, s.machine_type): s.reason for s in skipped},
        )

    source = {
        "kind": "spark_profiling.aggregate",
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "inputs": [
            {"path": spec.path, "format": spec.format, "rows": rows_per_input[i], "bad_rows": bad_per_input[i]}
            for i, spec in enumerate(inputs)
        ],
        "rows": total_rows,
        "valid_rows": valid_rows,
        "bad_rows": dict(sorted(bad_rows.items())),
        "intervals": {
            "used": sum(p.n for p in pairs.values()), COUNTER_RESET: resets, NON_INCREASING_TS: non_increasing,
            "outlier": sum(outliers.values()), AT_QUOTA: sum(p.at_quota for p in pairs.values()),
        },
        "outliers": dict(sorted(outliers.items())),
        "at_quota": {f"{k[0]}@{k[1]}": p.at_quota for k, p in sorted(pairs.items()) if p.at_quota},
        "at_quota_fitted": criteria.keep_at_quota,
        ESTIMATED_PAIRS: estimated,
        "fit_criteria": {"min_rate_spread": criteria.min_rate_spread, "max_e_error": criteria.max_e_error,
                         "outlier_mads": bands[0].k if bands else None},
        "runs": sorted(runs),
        "min_samples": min_samples,
        "skipped_pairs": [vars(s) for s in skipped],
        "clamped": [vars(c) for c in clamped],
        MACHINE_BASE_LOAD: dict(sorted({
            **{t: rest["percent"] for t, rest in worker_rest.items()},
            **{t: round(b.percent, 3) for t, b in base_loads.items()},
        }.items())),
        WORKER_REST: dict(sorted(worker_rest.items())),
        "machine_base_load_from": {t: {"profile": b.profile, "samples": b.samples} for t, b in sorted(base_loads.items())},
        "base_load_removed_from_met": removed,
        THREAD_IDLE_FALL: idle_fall,
        "spark": {"version": spark.version, "master": spark.sparkContext.master},
        "elapsed_s": round(time.monotonic() - started, 3),
    }
    return ProfileSet(name=name, entries=entries, source=source)


def _reasons_text(reasons: Counter[str]) -> str:
    return ", ".join(f"{count} {reason}" for reason, count in reasons.most_common())


def check_writable(out: Path) -> None:
    """Fail before a long Spark run, not after it, when the output cannot be written."""
    parent = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise ProfilingError(f"output {out} is a folder; give a file name.")
    existing = parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        raise ProfilingError(f"output {out} cannot be written: {existing} is not a writable folder.")


def write_profile_set(out: Path, profile_set: ProfileSet) -> None:
    """Write the set as JSON atomically (a reader never sees half a file), owner-only (planner.durable)."""
    try:
        write_atomic(out, profile_set.model_dump_json(indent=2) + "\n")
    except OSError as exc:
        raise ProfilingError(f"cannot write {out}: {exc.strerror or exc}.") from None


def set_name(out: Path, name: str | None, put: str | None) -> str:
    """The set's name: ``name``, else the name it is stored under, else the output file's stem."""
    if name and put and name != put:
        raise ProfilingError(f"--name {name} and --put {put} differ; the stored set is named by --put, so give one name.")
    chosen = (name or put or out.stem).strip()
    if not 1 <= len(chosen) <= 200:
        raise ProfilingError(f"a profile set name must have 1 to 200 characters, not {len(chosen)}.")
    return chosen


def run(
    inputs: list[str],
    out: Path,
    name: str | None = None,
    min_samples: int = DEFAULT_MIN_SAMPLES,
    fmt: Format | None = None,
    master: str | None = None,
    conf: dict[str, str] | None = None,
    progress: Callable[[str], None] | None = None,
    criteria: FitCriteria | None = None,
    since: float | None = None,
) -> ProfileSet:
    """Check the inputs and output, aggregate in a Spark session, write the set to ``out``.

    ``progress`` is called now and then with a line on the running Spark stages.
    """
    name = set_name(out, name, None)
    specs = resolve_inputs(inputs, fmt)
    check_writable(out)
    with spark_session(master, conf) as spark, reporting(spark, progress):
        profile_set = aggregate(spark, specs, name, min_samples, criteria, since)
    write_profile_set(out, profile_set)
    return profile_set


def parse_conf(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings (``--conf``) as a dict."""
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ProfilingError(f"--conf {pair!r} is not KEY=VALUE.")
        conf[key.strip()] = value
    return conf


def main(argv: list[str] | None = None) -> int:
    """spark-submit entry point; the same options as ``hetsched aggregate``."""
    from planner.client import put_summary
    from spark_profiling.publish import TOKEN_ENV, URL_ENV, put_profile_set
    from spark_profiling.report import summary_lines

    parser = argparse.ArgumentParser(prog="aggregate.py", description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", help="raw record files or folders (JSON lines or Parquet)")
    parser.add_argument("--out", required=True, type=Path, help="where to write the ProfileSet JSON")
    parser.add_argument("--name", help="the ProfileSet's name (default: --put NAME, else the output file's stem)")
    parser.add_argument("--min-samples", type=int, default=DEFAULT_MIN_SAMPLES, help="fewest intervals per pair")
    parser.add_argument("--format", choices=["jsonl", "parquet"], help="force the input format")
    parser.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting")
    parser.add_argument("--put", metavar="NAME", help="also store the set in the planner under NAME")
    parser.add_argument("--planner", help=f"planner URL (default: ${URL_ENV}, else http://127.0.0.1:8765)")
    parser.add_argument("--token", help=f"planner bearer token (default: ${TOKEN_ENV})")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        name = set_name(args.out, args.name, args.put)
        profile_set = run(args.inputs, args.out, name, args.min_samples, args.format, args.master, parse_conf(args.conf))
        print("\n".join(summary_lines(profile_set)))
        print(f"wrote {args.out}")
        if args.put:
            stored = put_profile_set(profile_set, args.put, args.planner, args.token)
            print(put_summary(stored, "in the planner"))
    except ProfilingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
