"""``hetsched profiles put|get|list|versions|delete``: the versioned profile sets stored in a running planning service."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
import yaml
from pydantic import ValidationError

from hetsched.errors import fail
from hetsched.options import PlannerOption, TokenOption
from planner.client import PlannerClient, PlannerClientError, put_summary, request_body
from planner.model import ProfileSet

profiles_app = typer.Typer(no_args_is_help=True, help="Profile sets stored in a planning service.")

VersionOption = typer.Option(None, "--version", min=1, help="This stored version instead of the newest.")
DIGEST_SHOWN_CHARS = 19
"""``sha256:`` and the first 12 hex digits: enough to tell versions apart by eye."""


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {error['msg']}{more}" if where else f"{error['msg']}{more}"


def load_profile_set(name: str, path: Path) -> ProfileSet:
    """A profile set from a JSON or YAML file: a whole ProfileSet, ``{"entries": [...]}`` or a list of entries.

    The set is stored under ``name`` whatever name the file gives.
    """
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise fail(f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise fail(f"{path} is neither JSON nor YAML: {str(exc).splitlines()[0]}") from None
    if isinstance(data, list):
        data = {"entries": data}
    if not isinstance(data, dict):
        raise fail(f"{path} must hold a profile set (an object with 'entries') or a list of profile entries")
    try:
        return ProfileSet.model_validate({**data, "name": name})
    except ValidationError as exc:
        raise fail(f"{path}: {_first_error(exc)}") from None


@profiles_app.command("put")
def put(name: str, file: Path, planner: Optional[str] = PlannerOption, token: Optional[str] = TokenOption) -> None:
    """Store FILE (JSON or YAML) as the next version of profile set NAME (none is added if it equals the newest)."""
    profile_set = load_profile_set(name, file)
    try:
        with PlannerClient(planner, token) as client:
            stored = client.put_profile_set(profile_set)
            typer.echo(put_summary(stored, f"at {client.url}"))
    except PlannerClientError as exc:
        raise fail(str(exc)) from None


@profiles_app.command("get")
def get(
    name: str,
    version: Optional[int] = VersionOption,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the set to this file instead of stdout."),
    planner: Optional[str] = PlannerOption,
    token: Optional[str] = TokenOption,
) -> None:
    """Print profile set NAME (its newest version, or --version N) as JSON (the body PUT /v1/profiles accepts)."""
    try:
        with PlannerClient(planner, token) as client:
            profile_set = client.get_profile_set(name, version)
    except PlannerClientError as exc:
        raise fail(str(exc)) from None
    text = json.dumps(request_body(profile_set), indent=2)
    if output is None:
        typer.echo(text)
    else:
        output.write_text(text + "\n")
        typer.echo(f"wrote profile set {name} version {profile_set.version} ({len(profile_set.entries)} entries) to {output}")


@profiles_app.command("list")
def list_(planner: Optional[str] = PlannerOption, token: Optional[str] = TokenOption) -> None:
    """The names of the stored profile sets, one a line."""
    try:
        with PlannerClient(planner, token) as client:
            for name in client.profile_set_names():
                typer.echo(name)
    except PlannerClientError as exc:
        raise fail(str(exc)) from None


@profiles_app.command("versions")
def versions(name: str, planner: Optional[str] = PlannerOption, token: Optional[str] = TokenOption) -> None:
    """The stored versions of profile set NAME, oldest first: when stored (UTC), entries, plans made with it, digest."""
    try:
        with PlannerClient(planner, token) as client:
            listing = client.profile_set_versions(name)
    except PlannerClientError as exc:
        raise fail(str(exc)) from None
    for v in listing.versions:
        plans = f"{v.plans} plan{'' if v.plans == 1 else 's'}"
        typer.echo(f"version {v.version}  stored {v.created_at}  {v.entry_count} entries  {plans}  {v.digest[:DIGEST_SHOWN_CHARS]}")


@profiles_app.command("delete")
def delete(
    name: str,
    version: int = typer.Option(..., "--version", min=1, help="The version to delete (refused while stored plans name it)."),
    planner: Optional[str] = PlannerOption,
    token: Optional[str] = TokenOption,
) -> None:
    """Delete one version of profile set NAME; deleting the newest makes the one before it the newest."""
    try:
        with PlannerClient(planner, token) as client:
            client.delete_profile_version(name, version)
    except PlannerClientError as exc:
        raise fail(str(exc)) from None
    typer.echo(f"deleted version {version} of profile set {name}")


@profiles_app.command("remote-cost")
def remote_cost(
    measured: Path = typer.Argument(..., help="bench/remote_tuple_cost.py's JSON (next to its --out)."),
    file: Path = typer.Argument(..., help="The profile set file to add the costs to (JSON or YAML)."),
    output: Path = typer.Option(..., "--output", "-o", help="Where the profile set with remote costs goes (JSON)."),
) -> None:
    """Give every entry of a profile set file its machine type's measured CPU cost per tuple crossing workers
    (``remote_send``, ``remote_receive``); the file is read and written, no service is asked."""
    from planner.errors import PlanningError
    from planner.remote_cost import RemoteCostFile, with_remote_costs

    profile_set = load_profile_set("_", file)
    try:
        figures = RemoteCostFile.model_validate_json(measured.read_text())
    except OSError as exc:
        raise fail(f"cannot read {measured}: {exc.strerror}") from None
    except ValidationError as exc:
        raise fail(f"{measured}: {_first_error(exc)}") from None
    original = yaml.safe_load(file.read_text())
    name = original.get("name", file.stem) if isinstance(original, dict) else file.stem
    try:
        updated = with_remote_costs(profile_set.model_copy(update={"name": name}), figures.remote_cost, str(measured))
    except PlanningError as exc:
        raise fail(str(exc)) from None
    output.write_text(json.dumps(request_body(updated), indent=2) + "\n")
    per_type = updated.source["remote_cost"]["per_machine_type"]
    typer.echo(f"wrote profile set {name} ({len(updated.entries)} entries) to {output}; remote cost per tuple, ms of "
               "the machine's CPU: " + ", ".join(f"{t} send {c['remote_send'] * 1000:.4f} receive "
                                                  f"{c['remote_receive'] * 1000:.4f}" for t, c in sorted(per_type.items())))
