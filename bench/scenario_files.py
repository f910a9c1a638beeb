"""The result file every bench scenario keeps (multi-tenant, machine-loss): read, written atomically, stamped."""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.errors import BenchError
from planner.durable import write_json_atomic


def read_result(path: Path, scenario: str) -> dict[str, Any]:
    """A scenario's saved result; a file that is not one is one sentence."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BenchError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("scenario") != scenario:
        raise BenchError(f"{path} is not a {scenario} scenario result")
    return data


def save(path: Path, data: dict[str, Any]) -> None:
    try:
        write_json_atomic(path, data)
    except OSError as exc:
        raise BenchError(f"cannot write {path}: {exc.strerror or exc}") from None


def settings_dict(settings: Any) -> dict[str, Any]:
    """A settings dataclass as JSON values (paths as text)."""
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(settings).items()}


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
