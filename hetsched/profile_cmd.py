"""``hetsched aggregate``: raw worker records -> the planner's ProfileSet (spark_profiling)."""
from __future__ import annotations

import logging
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

from hetsched.cli import app
from planner.client import TOKEN_ENV, URL_ENV

console = Console()


class InputFormat(str, Enum):
    jsonl = "jsonl"
    parquet = "parquet"


def _fail(message: str) -> typer.Exit:
    Console(stderr=True).print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(1)


def _entries_table(profile_set) -> Table:
    table = Table(title=f"profile set {profile_set.name}")
    for column in ("profile", "machine type", "e (s/tuple)", "MET (%)", "alpha", "R²", "samples", "rates (tuples/s)"):
        table.add_column(column, justify="left" if column in ("profile", "machine type") else "right")
    for e in profile_set.entries:
        low, high = e.rate_range or (0.0, 0.0)
        table.add_row(
            e.profile, e.machine_type, f"{e.e:.6g}", f"{e.met:.3f}", f"{e.alpha:.3f}",
            "-" if e.r2 is None else f"{e.r2:.3f}", str(e.samples), f"{low:.1f}..{high:.1f}",
        )
    return table


@app.command("aggregate")
def aggregate(
    inputs: List[str] = typer.Argument(..., help="Raw record files or folders: JSON lines (.jsonl, .gz) or Parquet."),
    out: Path = typer.Option(..., "--out", "-o", help="Where to write the ProfileSet (JSON)."),
    name: Optional[str] = typer.Option(None, "--name", help="The set's name (default: --put NAME, else the output file's stem)."),
    put: Optional[str] = typer.Option(None, "--put", metavar="NAME", help="Also store the set in the planner under NAME."),
    planner: Optional[str] = typer.Option(None, "--planner", envvar=URL_ENV, help="The planning service (default http://127.0.0.1:8765)."),
    token: Optional[str] = typer.Option(None, "--token", envvar=TOKEN_ENV, help="Bearer token, where the planner needs one."),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (default local[*])."),
    min_samples: int = typer.Option(5, "--min-samples", min=2, help="Fewest intervals a (profile, machine type) pair needs."),
    input_format: Optional[InputFormat] = typer.Option(None, "--format", help="Force the input format (default: by file name)."),
    conf: Optional[List[str]] = typer.Option(None, "--conf", "-c", help="Spark setting KEY=VALUE; repeatable."),
) -> None:
    """Fit e, MET and alpha per (profile key, machine type) from raw worker records with PySpark."""
    from spark_profiling.aggregate import parse_conf, run, set_name
    from spark_profiling.errors import ProfilingError
    from spark_profiling.publish import put_profile_set
    from spark_profiling.report import headline, notes

    logging.basicConfig(level=logging.INFO, format="%(message)s", handlers=[RichHandler(console=Console(stderr=True), show_path=False)])
    try:
        set_name_ = set_name(out, name, put)
        with console.status(f"aggregating {len(inputs)} input(s) with Spark ..."):
            profile_set = run(
                inputs, out, set_name_, min_samples,
                input_format.value if input_format else None, master, parse_conf(conf or []),
            )
        console.print(_entries_table(profile_set))
        console.print(headline(profile_set), highlight=False)
        for line in notes(profile_set):
            console.print(f"[yellow]{line}[/yellow]", highlight=False)
        console.print(f"wrote {out}")
        if put:
            stored = put_profile_set(profile_set, put, planner, token)
            console.print(f"stored profile set {stored.name} ({len(stored.entries)} entries) in the planner")
    except ProfilingError as exc:
        raise _fail(str(exc)) from None
