"""The raw profiling record: one task's counters at one moment, and how a row is judged valid.

One record per task per sample (every few seconds), as JSON lines or Parquet. Counters are
cumulative, so rates come from differences between consecutive samples (:mod:`spark_profiling.rates`).
docs/profiling-records.md is the reader's version of :data:`FIELDS`; keep the two in step.

A row that breaks the schema is not an error of the run: it gets a *reason* (``missing:cpu_seconds``,
``non_numeric:ts``, ...), is counted and skipped. Only the first fault of a row is named.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

Kind = Literal["text", "number", "integer"]
Bound = Literal["any", "non_negative", "positive"]


@dataclass(frozen=True)
class Field:
    name: str
    kind: Kind
    required: bool
    bound: Bound = "any"
    doc: str = ""
    choices: tuple[str, ...] = ()
    """For a text field, the only values it may take (empty: any)."""


FIELDS: tuple[Field, ...] = (
    Field("run_id", "text", True, doc="One experiment run (a collector invocation)."),
    Field("ts", "number", True, "positive", "Sample time, unix seconds."),
    Field("topology", "text", True, doc="Storm topology name."),
    Field("component", "text", True, doc="Component id (spout or bolt)."),
    Field("profile", "text", True, doc="Profile key of the component (e.g. highCompute)."),
    Field("task_id", "integer", True, doc="Storm task id (unique within the topology)."),
    Field("pid", "integer", True, "positive", "Pid of the task's Python process (ShellBolt/ShellSpout subprocess)."),
    Field("worker_id", "text", False, doc="Storm worker id the task ran in."),
    Field("machine", "text", False, doc="Supervisor (machine) id."),
    Field("machine_type", "text", True, doc="Machine type of the supervisor (supervisor.scheduler.meta)."),
    Field("machine_cores", "number", True, "positive", "The machine's CPU quota in cores (e.g. 0.5, 1, 2)."),
    Field("rate_step", "number", False, "non_negative", "Offered spout rate of the experiment step, tuples/s."),
    Field("executed", "number", True, "non_negative", "Cumulative tuples executed by the task (spouts: tuples emitted)."),
    Field("emitted", "number", True, "non_negative", "Cumulative tuples emitted by the task on its user streams."),
    Field("cpu_seconds", "number", True, "non_negative", "Cumulative CPU seconds charged to the task (its Python process, or its share of the machine)."),
    Field("machine_cpu_seconds", "number", False, "non_negative", "Cumulative cgroup cpuacct usage of the machine, seconds."),
    Field("machine_quota_cores", "number", False, "positive", "The machine's cgroup CPU quota in cores as read from the cgroup."),
    Field("process_cpu_seconds", "number", False, "non_negative", "Cumulative CPU seconds of the task's own Python process (psutil)."),
    Field("cpu_basis", "text", False, doc="How cpu_seconds was charged: machine (the task alone on its machine), shared, "
          "or thread (a worker's record: its executor thread plus its shell subprocess).",
          choices=("machine", "shared", "thread")),
    Field("source", "text", False, doc="Who wrote the record: worker (the plugin's task hook) or lab (a collector).",
          choices=("worker", "lab")),
    Field("thread_cpu_seconds", "number", False, "non_negative", "Cumulative CPU seconds of the executor's JVM thread."),
    Field("subprocess_cpu_seconds", "number", False, "non_negative", "Cumulative CPU seconds of a shell component's subprocess."),
    Field("worker_cpu_seconds", "number", False, "non_negative", "Cumulative CPU seconds of the whole worker JVM process."),
    Field("acked", "number", False, "non_negative", "Cumulative tuple trees a spout saw acked."),
    Field("failed", "number", False, "non_negative", "Cumulative tuple trees a spout saw failed."),
)

FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in FIELDS)
SEGMENT_KEY: tuple[str, ...] = ("run_id", "topology", "task_id", "pid", "machine_type")
"""Consecutive samples with the same key form one counter series; a new pid is a new series."""

CORRUPT = "_corrupt_record"
LINE = "_line"
INPUT = "input"
"""Index of the input (file, folder or pattern as given) a row came from."""
REASON = "reason"

MALFORMED_JSON = "malformed_json"
BLANK_LINE = "blank_line"

JSON_READ_SCHEMA = T.StructType(
    [T.StructField(name, T.StringType()) for name in FIELD_NAMES] + [T.StructField(CORRUPT, T.StringType())]
)
"""Every field read as text, so a non-numeric value is seen and named instead of nulling the whole row."""

_SPARK_TYPE = {"text": T.StringType(), "number": T.DoubleType(), "integer": T.LongType()}


def parse_json_lines(lines: DataFrame) -> DataFrame:
    """Parse a DataFrame of text lines (column ``value``) into raw string fields plus the line itself."""
    parsed = F.from_json(F.col("value"), JSON_READ_SCHEMA, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT})
    return lines.select(F.col("value").alias(LINE), parsed.alias("r")).select(LINE, "r.*")


def _present(name: str) -> str:
    return f"_present_{name}"


def _parse_fields(raw: DataFrame) -> DataFrame:
    """Every field parsed once: text trimmed (empty is null); numbers as double, plus whether any value was there.

    A number field that is there but parses to null is a non-number. One parse per field keeps the
    checks in :func:`validate` from parsing each value again and again.
    """
    types = {f.name: f.dataType for f in raw.schema.fields}
    columns: list[Column] = []
    for field in FIELDS:
        source_type = types.get(field.name)
        col = F.col(field.name) if source_type is not None else F.lit(None).cast(T.StringType())
        if field.kind == "text":
            value = F.trim(col.cast(T.StringType()))
            columns.append(F.when(value != "", value).alias(field.name))
        elif isinstance(source_type, T.NumericType):
            columns += [col.cast(T.DoubleType()).alias(field.name), col.isNotNull().alias(_present(field.name))]
        else:
            # Spark's JSON reader hands a bare NaN/Infinity to a text field as "\"NaN\"": drop quotes too.
            text = F.btrim(col.cast(T.StringType()), F.lit('" '))
            columns += [text.try_cast(T.DoubleType()).alias(field.name), (text != "").alias(_present(field.name))]
    if LINE in types:
        columns.append((F.trim(F.col(LINE)) == "").alias(BLANK_LINE))
    if CORRUPT in types:
        columns.append(F.col(CORRUPT).isNotNull().alias(MALFORMED_JSON))
    return raw.select(*columns)


def validate(raw: DataFrame) -> DataFrame:
    """Typed fields plus a ``reason`` column: null for a valid row, else the row's first fault.

    ``raw`` may hold the fields as text (JSON lines) or typed (Parquet); absent columns count as
    missing. The result has every field of :data:`FIELDS` with its Spark type and ``reason``.
    Values of a bad row are whatever could be parsed and must not be used.
    """
    parsed = _parse_fields(raw)
    checks: list[Column] = [
        F.when(F.col(flag), F.lit(flag)) for flag in (BLANK_LINE, MALFORMED_JSON) if flag in parsed.columns
    ]
    typed: dict[str, Column] = {}
    for field in FIELDS:
        value = F.col(field.name)
        if field.kind == "text":
            if field.required:
                checks.append(F.when(value.isNull(), F.lit(f"missing:{field.name}")))
            if field.choices:
                checks.append(F.when(value.isNotNull() & ~value.isin(*field.choices), F.lit(f"unknown:{field.name}")))
            typed[field.name] = value
            continue
        present = F.coalesce(F.col(_present(field.name)), F.lit(False))
        field_checks = [
            (present & value.isNull(), "non_numeric"),
            (F.isnan(value) | (F.abs(value) == float("inf")), "non_finite"),
        ]
        if field.kind == "integer":
            field_checks.append((F.abs(value) >= 2.0**62, "out_of_range"))
            field_checks.append((value % 1 != 0, "non_integer"))
        if field.bound == "non_negative":
            field_checks.append((value < 0, "negative"))
        elif field.bound == "positive":
            field_checks.append((value <= 0, "non_positive"))
        if field.required:
            checks.append(F.when(~present, F.lit(f"missing:{field.name}")))
        for failed, reason in field_checks:
            checks.append(F.when(failed, F.lit(f"{reason}:{field.name}")))
        typed[field.name] = value.try_cast(_SPARK_TYPE[field.kind])

    return parsed.select(*[typed[name].alias(name) for name in FIELD_NAMES], F.coalesce(*checks).alias(REASON))
