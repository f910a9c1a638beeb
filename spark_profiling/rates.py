"""Cumulative counters to per-interval rates: the points the profile fit is made of.

Each pair of consecutive samples of one counter series (:data:`records.SEGMENT_KEY`, ordered by
``ts``) is one interval. Its input rate is ``d(executed)/dt`` tuples/s and its CPU is
``100 * d(cpu_seconds)/dt / machine_cores`` percent of the machine (ARCHITECTURE.md:
``e[k,t] = cpu_seconds_per_tuple / cores_of_t``). A counter that goes down is a reset (the
process restarted its counting), never a negative rate: that interval is dropped and the
series goes on from the sample after the reset, as a new segment would.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_profiling.records import REASON, SEGMENT_KEY

INTERVAL = "interval"
"""Column saying what an interval is: one of the constants below, or null (first sample, bad row)."""
OK = "ok"
COUNTER_RESET = "counter_reset"
NON_INCREASING_TS = "non_increasing_ts"
AT_QUOTA = "at_quota"
"""An interval whose machine was at its CPU quota (set by the aggregation, :func:`aggregate.with_at_quota`)."""

INPUT_RATE = "input_rate"
CPU_PERCENT = "cpu_percent"
D_EXECUTED = "d_executed"
D_EMITTED = "d_emitted"

OWN_PERCENT = "own_cpu_percent"
"""The task's own Python process, percent of the machine (null where not recorded)."""
MACHINE_PERCENT = "machine_cpu_percent"
"""The machine's whole cgroup CPU, percent of the machine (null where not recorded)."""

COUNTERS = ("executed", "emitted", "cpu_seconds")
"""Counters whose going down marks a reset of the series."""
MACHINE_COUNTERS = ("process_cpu_seconds", "machine_cpu_seconds")
"""Optional counters that only feed the machine base load (aggregate.py); null where absent."""
WORKER_COUNTERS = ("thread_cpu_seconds", "worker_cpu_seconds")
"""Optional counters of a worker's record (``cpu_basis: thread``) that give the worker's own CPU, the rest of it."""
INTERVAL_S = "interval_s"
D_THREAD_CPU = "d_thread_cpu_seconds"
D_WORKER_CPU = "d_worker_cpu_seconds"
THREAD_PERCENT = "thread_cpu_percent"
"""The executor's JVM thread alone, percent of the machine (null where not recorded): part of ``cpu_percent``."""


def intervals(records: DataFrame) -> DataFrame:
    """Add interval columns to validated records (one row per sample; the interval ending at it).

    Bad rows stay in the frame, each in series of their own reason, so counting them needs no
    second pass over the input; their interval columns are null.
    """
    series = Window.partitionBy(REASON, *SEGMENT_KEY).orderBy("ts")
    with_previous = records.select(
        "*", *[F.lag(name).over(series).alias(f"_prev_{name}") for name in ("ts", *COUNTERS, *MACHINE_COUNTERS, *WORKER_COUNTERS)]
    )
    dt = F.col("ts") - F.col("_prev_ts")
    deltas = {name: F.col(name) - F.col(f"_prev_{name}") for name in COUNTERS}

    went_down: Column = F.lit(False)
    for delta in deltas.values():
        went_down = went_down | (delta < 0)
    kind = (
        F.when(F.col(REASON).isNotNull() | F.col("_prev_ts").isNull(), F.lit(None))
        .when(dt <= 0, F.lit(NON_INCREASING_TS))
        .when(went_down, F.lit(COUNTER_RESET))
        .otherwise(F.lit(OK))
    )
    ok = kind == OK
    seconds = F.when(ok, dt)

    def machine_percent(name: str) -> Column:
        delta = F.col(name) - F.col(f"_prev_{name}")
        return F.try_divide(F.when(ok & (delta >= 0), 100.0 * delta), seconds * F.col("machine_cores"))

    return with_previous.select(
        *records.columns,
        kind.alias(INTERVAL),
        F.when(ok, deltas["executed"]).alias(D_EXECUTED),
        F.when(ok, deltas["emitted"]).alias(D_EMITTED),
        F.try_divide(F.when(ok, deltas["executed"]), seconds).alias(INPUT_RATE),
        F.try_divide(F.when(ok, 100.0 * deltas["cpu_seconds"]), seconds * F.col("machine_cores")).alias(CPU_PERCENT),
        machine_percent("process_cpu_seconds").alias(OWN_PERCENT),
        machine_percent("machine_cpu_seconds").alias(MACHINE_PERCENT),
        machine_percent("thread_cpu_seconds").alias(THREAD_PERCENT),
        seconds.alias(INTERVAL_S),
        *[F.when(ok & (F.col(name) >= F.col(f"_prev_{name}")), F.col(name) - F.col(f"_prev_{name}")).alias(alias)
          for name, alias in (("thread_cpu_seconds", D_THREAD_CPU), ("worker_cpu_seconds", D_WORKER_CPU))],
    )
