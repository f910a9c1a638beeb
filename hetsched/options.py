"""Options that mean the same in every command: the planner's address and its token.

``--url`` is the planner's old name in ``profiles``, ``plans``, ``ledger``, ``priority`` and ``plan``; it is
still accepted, hidden, for every command that takes ``--planner`` (see :data:`DEPRECATED_ALIASES`).
"""
from __future__ import annotations

import typer

from planner.client import TOKEN_ENV, URL_ENV

PlannerOption = typer.Option(None, "--planner", envvar=URL_ENV, help="The planning service [default: http://127.0.0.1:8765].")
TokenOption = typer.Option(None, "--token", envvar=TOKEN_ENV, help="Bearer token, where the planner needs one.")

DEPRECATED_ALIASES = {"--url": "--planner"}
"""Old option names still accepted (and not shown in ``--help``) where a command takes the new one."""
