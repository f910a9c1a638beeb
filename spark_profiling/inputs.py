"""Finding and reading the raw record files: the I/O edge of the aggregation.

Local paths are checked before Spark starts, so a missing or unreadable file is one clear
sentence rather than a JVM stack trace. URIs with a scheme (``hdfs://``, ``s3a://``) are left to
Spark. The format is told by the name: ``*.parquet`` (or a folder of them) is Parquet, anything
else JSON lines (``.gz``/``.bz2`` compressed too).
"""
from __future__ import annotations

import glob
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pyspark.sql import DataFrame, SparkSession

from spark_profiling.errors import ProfilingError
from spark_profiling.records import parse_json_lines

Format = Literal["jsonl", "parquet"]
_URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_HIDDEN = ("_", ".")
"""Spark skips files starting with these (``_SUCCESS``, ``.crc``); so do we when checking folders."""


@dataclass(frozen=True)
class InputSpec:
    path: str
    format: Format


def _data_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and not any(part.startswith(_HIDDEN) for part in p.relative_to(folder).parts)]


def _format_of(path: str, files: list[Path]) -> Format:
    if path.endswith(".parquet") or (files and all(f.name.endswith(".parquet") for f in files)):
        return "parquet"
    return "jsonl"


def _check_readable(path: Path) -> None:
    try:
        with path.open("rb") as handle:
            handle.read(1)
    except PermissionError:
        raise ProfilingError(f"input file {path} is not readable (permission denied).") from None
    except OSError as exc:
        raise ProfilingError(f"input file {path} cannot be read: {exc.strerror or exc}.") from None


def resolve_inputs(paths: list[str], fmt: Format | None = None) -> list[InputSpec]:
    """Check every input and tell its format; ``fmt`` forces one format for all of them."""
    if not paths:
        raise ProfilingError("no input files given.")
    specs: list[InputSpec] = []
    for raw in paths:
        if _URI.match(raw) and not raw.startswith("file://"):
            specs.append(InputSpec(raw, fmt or _format_of(raw, [])))
            continue
        local = raw.removeprefix("file://")
        matches = sorted(glob.glob(local)) if glob.has_magic(local) else [local]
        if not matches:
            raise ProfilingError(f"input pattern {raw} matches no file.")
        for match in matches:
            path = Path(match)
            if not path.exists():
                raise ProfilingError(f"input file {path} does not exist.")
            if path.is_dir():
                files = _data_files(path)
                if not files:
                    raise ProfilingError(f"input folder {path} holds no data files.")
                for f in files:
                    _check_readable(f)
            else:
                files = [path]
                _check_readable(path)
            specs.append(InputSpec(str(path.resolve()), fmt or _format_of(str(path), files)))
    return specs


def spark_error_sentence(exc: BaseException) -> str:
    """The first informative line of a Spark/JVM error, without the stack trace."""
    text = str(getattr(exc, "desc", None) or exc)
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "JVM stacktrace", "Traceback")):
            return line[:500]
    return type(exc).__name__


def read_raw(spark: SparkSession, spec: InputSpec) -> DataFrame:
    """The records of one input as raw columns (not yet validated)."""
    try:
        if spec.format == "parquet":
            return spark.read.parquet(spec.path)
        return parse_json_lines(spark.read.text(spec.path))
    except Exception as exc:  # Spark raises many types (AnalysisException, Py4JJavaError, ...)
        kind = "Parquet" if spec.format == "parquet" else "JSON lines"
        raise ProfilingError(f"cannot read {spec.path} as {kind}: {spark_error_sentence(exc)}") from None

