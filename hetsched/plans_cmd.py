"""``hetsched plans get|delete``: the plans stored in a running planning service."""
from __future__ import annotations

import json
from typing import Optional

import typer

from hetsched.errors import fail
from hetsched.options import PlannerOption, TokenOption
from planner.client import PlannerClient, PlannerClientError

plans_app = typer.Typer(no_args_is_help=True, help="Plans stored in a planning service.")


@plans_app.command("get")
def get(plan_id: str, planner: Optional[str] = PlannerOption, token: Optional[str] = TokenOption) -> None:
    """Print stored plan PLAN_ID as JSON (with the profile set version it was made with)."""
    try:
        with PlannerClient(planner, token) as client:
            plan = client.get_plan(plan_id)
    except PlannerClientError as exc:
        raise fail(str(exc)) from None
    typer.echo(json.dumps(plan.model_dump(mode="json"), indent=2))


@plans_app.command("delete")
def delete(plan_id: str, planner: Optional[str] = PlannerOption, token: Optional[str] = TokenOption) -> None:
    """Delete stored plan PLAN_ID (a topology submitted with it is then planned afresh)."""
    try:
        with PlannerClient(planner, token) as client:
            client.delete_plan(plan_id)
    except PlannerClientError as exc:
        raise fail(str(exc)) from None
    typer.echo(f"deleted plan {plan_id}")
