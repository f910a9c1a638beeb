"""``hetsched plan`` (plan from files) and ``hetsched compare`` (the paper's comparison). No logic: planner does it."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from hetsched.errors import fail
from planner import report
from planner.api import make_plan
from planner.client import TOKEN_ENV, PlannerClient, PlannerClientError
from planner.errors import PlanningError
from planner.files import load_plan_request
from planner.model import Plan
from planner.strategies import DEFAULT_STRATEGY, STRATEGIES


def plan_tables(plan: Plan) -> list[Table]:
    """The plan as rich tables: summary, components, instances, machines."""
    summary = Table(title=f"Plan for {plan.topology} ({plan.strategy})", show_header=False)
    summary.add_column(justify="left")
    summary.add_column(justify="right")
    for label, value in (
        ("input rate R (tuples/s)", f"{plan.input_rate:.3f}"),
        ("total throughput (sum of IR over components)", f"{plan.total_throughput:.3f}"),
        ("sink throughput", f"{plan.sink_throughput:.3f}"),
        ("weighted utilisation (paper eq. 7-8)", f"{plan.weighted_utilization:.1f} %"),
        ("bottleneck", plan.bottleneck or "-"),
        ("planning time", f"{plan.stats.get('elapsed_ms', 0.0):.1f} ms"),
    ):
        summary.add_row(label, value)
    memory = plan.stats.get("memory")
    if memory is not None:
        summary.add_row("memory over (machine: used of MB)", _memory_rows(memory.get("over", [])))
        summary.add_row("memory binds (no room for one more)", _memory_rows(memory.get("binding", [])))

    components = Table(title="Components")
    for col in ("component", "instances", "input rate / instance", "machines"):
        components.add_column(col, justify="left" if col in ("component", "machines") else "right")
    by_component: dict[str, list] = {}
    for a in plan.assignments:
        by_component.setdefault(a.component, []).append(a)
    for component, n in plan.instances.items():
        rows = by_component.get(component, [])
        rates = sorted({round(a.input_rate, 3) for a in rows})
        where = Counter(a.machine for a in rows)
        components.add_row(
            component, str(n), " / ".join(f"{r:g}" for r in rates),
            ", ".join(f"{m}" + (f" x{k}" if k > 1 else "") for m, k in sorted(where.items())),
        )

    instances = Table(title="Instances")
    for col in ("component", "index", "machine", "input rate (tuples/s)", "CPU %"):
        instances.add_column(col, justify="left" if col in ("component", "machine") else "right")
    for a in plan.assignments:
        instances.add_row(a.component, str(a.index), a.machine, f"{a.input_rate:.3f}", f"{a.cpu:.1f}")

    machines = Table(title="Machines")
    with_memory = any(m.memory_mb is not None for m in plan.machines)
    for col in ("machine", "type", "utilisation %", "instances") + (("memory MB", "of MB") if with_memory else ()):
        machines.add_column(col, justify="left" if col in ("machine", "type") else "right")
    for m in plan.machines:
        memory_cells = (f"{m.memory_mb:.0f}" if m.memory_mb is not None else "-",
                        f"{m.memory_capacity_mb:.0f}" if m.memory_capacity_mb is not None else "-")
        machines.add_row(m.id, m.type, f"{m.utilization:.1f}", str(m.instances), *(memory_cells if with_memory else ()))
    return [summary, components, instances, machines]


def _memory_rows(rows: list[dict]) -> str:
    """``machine: used of capacity`` for each machine of a ``stats.memory`` list, or ``-``."""
    return ", ".join(f"{r['machine']}: {r['used_mb']:.0f} of {r['capacity_mb']:.0f}" for r in rows) or "-"


def plan_command(
    topology: Path = typer.Option(..., "--topology", help="Topology file (YAML or JSON)."),
    cluster: Path = typer.Option(..., "--cluster", help="Cluster file (YAML or JSON)."),
    profiles: Path = typer.Option(..., "--profiles", help="Profile set, or a list of profile entries (YAML or JSON)."),
    strategy: Optional[str] = typer.Option(
        None, "--strategy", help=f"One of {', '.join(sorted(STRATEGIES))} [default: {DEFAULT_STRATEGY}]."
    ),
    options: Optional[Path] = typer.Option(None, "--options", help="Plan options file (YAML or JSON), e.g. max_utilization."),
    as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON (the API's Plan)."),
    planner: Optional[str] = typer.Option(None, "--planner", help="Send the same files to the planning service at this URL (the plan is stored there)."),
    token: Optional[str] = typer.Option(None, "--token", envvar=TOKEN_ENV, help="Bearer token for --planner."),
) -> None:
    """Plan instance counts and placement for a topology on a heterogeneous cluster."""
    try:
        request = load_plan_request(topology, cluster, profiles, strategy, options)
        if planner is not None:
            with PlannerClient(planner, token) as client:
                plan = client.plan(request)
        else:
            entries = request.profiles.entries or []  # load_plan_request always puts the profiles inline
            plan = make_plan(request.topology, request.cluster, entries, request.strategy, request.options)
    except (PlanningError, PlannerClientError) as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(plan.model_dump_json(indent=2))
        return
    console = Console()
    for table in plan_tables(plan):
        console.print(table)


def compare(
    optimal_time_limit: Optional[float] = typer.Option(
        None, "--optimal-time-limit", min=0.1,
        help="Also run the exact optimal strategy, up to this many seconds per scenario (slow).",
    ),
    thread_caps: bool = typer.Option(
        True, "--thread-caps/--no-thread-caps", help="Keep the per-thread cap (100/cores) of the paper clusters' machine types."
    ),
) -> None:
    """Plan the paper's scenarios (Tables 3-4, Fig. 5) with every strategy and compare them."""
    console = Console(width=max(Console().width, 140))
    with console.status("planning the paper's scenarios") as status:
        results = report.compare_scenarios(
            optimal_time_limit_s=optimal_time_limit, progress=lambda what: status.update(f"planning {what}"),
            thread_caps=thread_caps,
        )
    console.print(report.rate_table(results))
    console.print(report.throughput_table(results))
    console.print(report.instances_table(results))
    for line in report.errors(results):
        console.print(f"[yellow]note:[/yellow] {line}")
