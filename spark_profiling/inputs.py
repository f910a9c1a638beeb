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



_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d)$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str, now: float) -> float:
    """``--since``: a duration back from ``now`` (``90s``, ``30m``, ``2h``, ``1d``) or an ISO time (UTC if no zone), as unix seconds."""
    import datetime as dt

    value = text.strip()
    duration = _DURATION.match(value)
    if duration:
        return now - float(duration.group(1)) * _UNIT_S[duration.group(2)]
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ProfilingError(f"--since {text!r} is neither a duration like 30m or 2h nor a time like 2026-11-23T22:00.") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.timestamp()


STORE_FOLDER = "records"
"""The records store's folder inside the service's data directory (planner.records_store)."""


def store_topology_folders(store: Path, topology: str, since: float | None = None) -> list[str]:
    """The day folders of ``topology`` in the service's records store (``<store>/topology=T/day=D/``).

    ``store`` is the records folder or the service's data directory holding it. With ``since``,
    days wholly before it are left out (the records in the rest are filtered by ``ts``).
    """
    import datetime as dt

    root = Path(store)
    if not root.is_dir():
        raise ProfilingError(f"records store {root} is not a folder.")
    if not any(root.glob("topology=*")) and (root / STORE_FOLDER).is_dir():
        root = root / STORE_FOLDER
    folder = root / f"topology={topology}"
    if not folder.is_dir():
        held = sorted(p.name.removeprefix("topology=") for p in root.glob("topology=*") if p.is_dir())
        names = ", ".join(held) if held else "none"
        raise ProfilingError(f"the records store {root} holds no records of topology {topology!r} (it holds: {names}).")
    first_day = dt.datetime.fromtimestamp(since, tz=dt.timezone.utc).strftime("%Y-%m-%d") if since is not None else ""
    days = sorted(p for p in folder.glob("day=*") if p.is_dir() and p.name.removeprefix("day=") >= first_day)
    days = [d for d in days if _data_files(d)]
    if not days:
        after = f" from {first_day} on" if first_day else ""
        raise ProfilingError(f"the records store holds no records of topology {topology!r}{after}.")
    return [str(d) for d in days]
