"""Reading plan inputs from YAML or JSON files (the command line's edge; the core itself takes model objects).

Every fault becomes a PlanningError naming the file and what is wrong with
it, so a caller prints one line instead of a traceback.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from planner.errors import PlanningError
from planner.model import (
    Cluster,
    PlanOptions,
    PlanRequest,
    ProfileEntry,
    ProfileRef,
    Topology,
)

M = TypeVar("M", bound=BaseModel)


def read_document(path: str | Path, what: str) -> Any:
    """Parse a YAML or JSON file (JSON is YAML) into plain data."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanningError(f"the {what} file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanningError(f"cannot read the {what} file {path}: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise PlanningError(f"the {what} file {path} is not valid YAML or JSON{where}") from None
    if data is None:
        raise PlanningError(f"the {what} file {path} is empty")
    return data


def describe_validation_error(exc: ValidationError) -> str:
    """The first schema fault as 'field.path: message'."""
    first = exc.errors()[0]
    location = ".".join(str(p) for p in first.get("loc", ())) or "(top level)"
    more = len(exc.errors()) - 1
    suffix = f" (and {more} more)" if more else ""
    return f"{location}: {first.get('msg', 'invalid')}{suffix}"


def parse_as(model: type[M], data: Any, path: str | Path, what: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise PlanningError(f"the {what} file {path} does not describe a {what}: {describe_validation_error(exc)}") from None


def load_topology(path: str | Path) -> Topology:
    return parse_as(Topology, read_document(path, "topology"), path, "topology")


def load_cluster(path: str | Path) -> Cluster:
    return parse_as(Cluster, read_document(path, "cluster"), path, "cluster")


def load_profile_entries(path: str | Path) -> list[ProfileEntry]:
    """A ProfileSet (``{name, entries, source}``), ``{entries: [...]}`` or a bare list of entries."""
    data = read_document(path, "profiles")
    if isinstance(data, dict) and "entries" in data:
        data = data["entries"]
    if not isinstance(data, list):
        raise PlanningError(
            f"the profiles file {path} must hold a profile set (with 'entries') or a list of profile entries"
        )
    if not data:
        raise PlanningError(f"the profiles file {path} has no profile entries")
    entries = []
    for n, item in enumerate(data):
        try:
            entries.append(ProfileEntry.model_validate(item))
        except ValidationError as exc:
            raise PlanningError(f"the profiles file {path}: entry {n}: {describe_validation_error(exc)}") from None
    return entries


def load_options(path: str | Path | None) -> PlanOptions:
    if path is None:
        return PlanOptions()
    return parse_as(PlanOptions, read_document(path, "options"), path, "options")


def load_plan_request(
    topology: str | Path,
    cluster: str | Path,
    profiles: str | Path,
    strategy: str | None = None,
    options: str | Path | None = None,
) -> PlanRequest:
    """A PlanRequest (profiles inline) from the files the command line names; ready to plan or to POST."""
    return PlanRequest(
        topology=load_topology(topology),
        cluster=load_cluster(cluster),
        profiles=ProfileRef(entries=load_profile_entries(profiles)),
        strategy=strategy,
        options=load_options(options),
    )
