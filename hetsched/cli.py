"""The one ``hetsched`` entry point: :func:`_register` adds every command, each written in its own module."""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Optional

import click
import typer
from rich.markup import escape
from typer.core import TyperCommand
from typer.models import CommandInfo

from hetsched.errors import fail
from hetsched.extras import extra_of_module, install_command, missing_modules, refusal
from hetsched.options import DEPRECATED_ALIASES
from planner.client import TOKEN_ENV

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Heterogeneity-aware scheduling for Apache Storm.")

TOPOLOGY_COMMANDS = ("submit", "kill", "topologies", "counts")
"""The commands of hetsched.topology_cmd, which imports streamparse when loaded."""

OPS_COMMANDS = ("supervisors", "placement")
"""The commands of hetsched.ops_cmd, which read Nimbus through streamparse's Thrift bindings when loaded."""

REPLAN_COMMANDS = ("replan",)
"""The commands of hetsched.replan_cmd (Nimbus through streamparse's Thrift bindings)."""

TUNE_COMMANDS = ("tune",)
"""The command of hetsched.tune_cmd, which reads Nimbus like hetsched.replan_cmd (streamparse's Thrift bindings)."""

COMMAND_EXTRAS: dict[str, tuple[str, ...]] = {
    **{name: ("topologies",) for name in TOPOLOGY_COMMANDS + OPS_COMMANDS + REPLAN_COMMANDS},
    # The local cluster talks to Nimbus through streamparse's Thrift client; `cluster compose` only writes files.
    **{f"cluster {name}": ("topologies",) for name in ("up", "status", "down", "logs")},
    "aggregate": ("spark",),
    "profile": ("spark", "topologies"),
    "tune": ("spark", "topologies"),
    "bench": ("bench",),
    "demo": ("bench",),
}
"""The extras each command needs beyond the core (planner, service, command line), by command path."""

HELP_PANELS: dict[str, tuple[str, ...]] = {
    "Plans": ("plan", "compare", "capacity", "plans"),
    "The planning service": ("serve", "profiles", "ledger", "priority"),
    "Topologies on a cluster": ("submit", "kill", "topologies", "counts", "placement", "replan", "tune"),
    "Profiling": ("profile", "aggregate"),
    "Clusters and benches": ("cluster", "supervisors", "bench", "demo"),
}
"""``hetsched --help`` groups the commands by what they act on (the noun); a command not listed shows under
"Commands"."""

_registered = False

CLIENT_TOKEN_FILE_ENV = "HETSCHED_CLIENT_TOKEN_FILE"
"""The token file every client command reads its planner token from (``hetsched --token-file``)."""


@app.callback()
def _root(token_file: Optional[Path] = typer.Option(
        None, "--token-file", envvar=CLIENT_TOKEN_FILE_ENV, metavar="PATH",
        help="Read the planner token every command sends from this file (owner-only; one token, bare or as one "
             f"'scopes TOKEN' line) instead of --token (which ps and the shell history show) or ${TOKEN_ENV}; "
             "a command's own --token still wins.")) -> None:
    """Heterogeneity-aware scheduling for Apache Storm."""
    if token_file is None:
        return
    from planner.service.scopes import TokenFileError, client_token

    try:
        token = client_token(token_file)
    except TokenFileError as fault:
        raise fail(str(fault), code=2) from None
    os.environ[TOKEN_ENV] = token


def _require(command: str, extras: tuple[str, ...]) -> None:
    missing = missing_modules(extras)
    if missing:
        raise fail(refusal(f"`hetsched {command}`", extras, missing), code=2)


def _command_class(command: str, extras: tuple[str, ...], base: type[TyperCommand]) -> type[TyperCommand]:
    """The command's class: it accepts the deprecated option names (``--url`` for ``--planner``) and, when an extra it
    needs is not installed, refuses with one sentence before its arguments are parsed (so a user does not fix arguments
    of a command that cannot run); ``--help`` still works."""

    class Command(base):  # type: ignore[valid-type, misc]
        def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
            if extras and not set(args) & set(ctx.help_option_names):
                _require(command, extras)
            return super().parse_args(ctx, renamed_options(self, args))

    return Command


def renamed_options(command: click.Command, args: list[str]) -> list[str]:
    """``args`` with each deprecated option name that ``command`` takes under its new name renamed, saying so on stderr."""
    names = {name for param in command.params for name in param.opts}
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        old, eq, value = arg.partition("=")
        new = DEPRECATED_ALIASES.get(old)
        if new is not None and new in names and old not in names:
            typer.echo(f"warning: {old} is deprecated; use {new}", err=True)
            arg = f"{new}{eq}{value}"
        out.append(arg)
    return out


def _placeholder(command: str, extras: tuple[str, ...]) -> None:
    """Stands in for a command whose module cannot load without its extra: listed, and refusing when run."""

    def refuse() -> None:
        _require(command, extras)

    app.command(
        command, help=escape(f"Needs the {' and '.join(extras)} extra: {install_command(extras)}"),
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(refuse)


def _guard_all(typer_app: typer.Typer, prefix: str = "") -> None:
    for info in typer_app.registered_commands:
        _guard_command(info, prefix)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _guard_all(group.typer_instance, f"{prefix}{group.name} ")


def _guard_command(info: CommandInfo, prefix: str) -> None:
    command = f"{prefix}{info.name}"
    info.cls = _command_class(command, COMMAND_EXTRAS.get(command, ()), info.cls or TyperCommand)


def _group_help(typer_app: typer.Typer) -> None:
    panel_of = {command: panel for panel, commands in HELP_PANELS.items() for command in commands}
    for info in typer_app.registered_commands:
        info.rich_help_panel = panel_of.get(info.name or "")
    for group in typer_app.registered_groups:
        group.rich_help_panel = panel_of.get(group.name or "")


def _register() -> None:
    """Add every command to ``app``, in ``hetsched --help``'s order, without importing PySpark or matplotlib (they
    load when a command runs); modules that import streamparse are loaded only where it is installed, else their
    commands are placeholders that name the extra.

    Commands are plain functions added here; hetsched.topology_cmd, replan_cmd and tune_cmd still add theirs to
    ``app`` themselves when imported (``@app.command``).
    """
    global _registered
    if _registered:
        return
    from hetsched import bench_cmd, cluster_cmd, compose_cmd, plan_cmd, plans_cmd, profile_cmd, profiles_cmd, serve_cmd
    from hetsched import tenants_cmd

    with_streamparse = not missing_modules(("topologies",))
    # the planner core
    app.command("plan")(plan_cmd.plan_command)
    app.command("compare")(plan_cmd.compare)
    app.command("capacity")(importlib.import_module("hetsched.capacity_cmd").capacity)
    # the planning service and what it stores
    app.command("serve")(serve_cmd.serve)
    app.add_typer(profiles_cmd.profiles_app, name="profiles")
    app.add_typer(plans_cmd.plans_app, name="plans")
    app.command("ledger")(tenants_cmd.ledger)
    app.command("priority")(tenants_cmd.priority)
    # topologies on a running cluster (streamparse), then profiling
    _streamparse_commands("hetsched.topology_cmd", {"submit": "submit", "kill": "kill", "topologies": "topologies",
                                                    "counts": "counts"}, with_streamparse)
    _streamparse_commands("hetsched.ops_cmd", {"supervisors": "supervisors", "placement": "placement"}, with_streamparse)
    _streamparse_commands("hetsched.replan_cmd", {"replan": "replan"}, with_streamparse)
    app.command("aggregate")(profile_cmd.aggregate)
    app.command("profile")(profile_cmd.profile)
    _streamparse_commands("hetsched.tune_cmd", {"tune": "tune"}, with_streamparse)
    # clusters and the bench
    cluster_cmd.cluster_app.command("compose")(compose_cmd.compose)
    app.add_typer(cluster_cmd.cluster_app, name="cluster")
    app.command("bench")(bench_cmd.bench)
    app.command("demo")(bench_cmd.demo)
    _guard_all(app)
    _group_help(app)
    _registered = True


def main() -> None:
    _register()
    try:
        app()
    except ModuleNotFoundError as exc:
        # A module of an extra that a command reached only on some path (e.g. `hetsched bench --profile-now` needs Spark).
        extra = extra_of_module(exc.name)
        if extra is None:
            raise
        module = (exc.name or extra).partition(".")[0]
        raise SystemExit(fail(refusal("this command", (extra,), (module,)), code=2).exit_code) from None


if __name__ == "__main__":
    # Run as ``python -m hetsched.cli`` this file is ``__main__``, a second copy; the subcommands
    # register on the imported ``hetsched.cli.app``, so start that one.
    from hetsched.cli import main as _main

    _main()


def _streamparse_commands(module: str, commands: dict[str, str], with_streamparse: bool) -> None:
    """Add ``commands`` (command name -> function of ``module``), or, without streamparse (the module imports it),
    placeholders that name the extra."""
    if not with_streamparse:
        for command in commands:
            _placeholder(command, COMMAND_EXTRAS[command])
        return
    loaded = importlib.import_module(module)
    for command, function in commands.items():
        app.command(command)(getattr(loaded, function))
