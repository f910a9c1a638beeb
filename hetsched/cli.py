"""The one ``hetsched`` entry point; each subcommand group lives in its own module."""
from __future__ import annotations

import importlib

import click
import typer
from rich.markup import escape
from typer.core import TyperCommand
from typer.models import CommandInfo

from hetsched.errors import fail
from hetsched.extras import extra_of_module, install_command, missing_modules, refusal
from hetsched.options import DEPRECATED_ALIASES

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Heterogeneity-aware scheduling for Apache Storm.")

TOPOLOGY_COMMANDS = ("submit", "kill", "topologies", "counts")
"""The commands of hetsched.topology_cmd, which imports streamparse when loaded."""

OPS_COMMANDS = ("supervisors", "placement")
"""The commands of hetsched.ops_cmd, which read Nimbus through streamparse's Thrift bindings when loaded."""

REPLAN_COMMANDS = ("replan",)
"""The commands of hetsched.replan_cmd (Nimbus through streamparse's Thrift bindings)."""

TUNE_COMMANDS = ("tune",)
"""The command of hetsched.tune_cmd, which reads Nimbus like hetsched.replan_cmd (streamparse's Thrift bindings)."""

STREAMPARSE_MODULES = {"hetsched.topology_cmd": TOPOLOGY_COMMANDS, "hetsched.ops_cmd": OPS_COMMANDS,
                       "hetsched.replan_cmd": REPLAN_COMMANDS, "hetsched.tune_cmd": TUNE_COMMANDS}
"""Modules that import streamparse when loaded: without it their commands are placeholders naming the extra."""

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

COMMAND_MODULES = (
    "hetsched.plan_cmd",  # planner core: hetsched plan|compare
    "hetsched.serve_cmd",  # planning service: hetsched serve
    "hetsched.profiles_cmd",  # planning service: hetsched profiles put|get|list|versions|delete (remote-cost: files)
    "hetsched.plans_cmd",  # planning service: hetsched plans get|delete
    "hetsched.tenants_cmd",  # planning service: hetsched ledger|priority (topologies sharing the cluster)
    "hetsched.topology_cmd",  # topologies: hetsched submit|kill|topologies|counts (imports streamparse)
    "hetsched.ops_cmd",  # operating a cluster: hetsched supervisors|placement (imports streamparse)
    "hetsched.replan_cmd",  # re-planning a running topology: hetsched replan (imports streamparse)
    "hetsched.profile_cmd",  # profiling: hetsched aggregate|profile
    "hetsched.tune_cmd",  # profiling a running topology from its records, planning and applying: hetsched tune (imports streamparse)
    "hetsched.cluster_cmd",  # local cluster: hetsched cluster up|down|status|logs
    "hetsched.compose_cmd",  # compose deployment: hetsched cluster compose
    "hetsched.bench_cmd",  # end-to-end bench: hetsched bench, hetsched demo (the main job)
)
"""Each module adds its commands to ``app`` when imported, in this order (the order of ``hetsched --help``)."""

_registered = False


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


def _register() -> None:
    """Add every command to ``app`` without importing PySpark or matplotlib (they load when a command runs); the
    topology commands' module needs streamparse, so without it they are placeholders that name their extra."""
    global _registered
    if _registered:
        return
    for module in COMMAND_MODULES:
        if module in STREAMPARSE_MODULES and missing_modules(("topologies",)):
            for command in STREAMPARSE_MODULES[module]:
                _placeholder(command, COMMAND_EXTRAS[command])
        else:
            importlib.import_module(module)
    _guard_all(app)
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
