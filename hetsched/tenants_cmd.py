"""``hetsched ledger`` and ``hetsched priority``: the topologies sharing the cluster, and changing who comes first."""
from __future__ import annotations

from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from hetsched.errors import fail
from hetsched.options import PlannerOption, TokenOption
from planner.client import PlannerClient, PlannerClientError
from planner.ledger import Eviction, Ledger

MESSAGE_TIMEOUT = "topology.message.timeout.secs"
DEFAULT_MESSAGE_TIMEOUT_S = 30


def ledger_tables(ledger: Ledger) -> list[Table]:
    """Per machine each topology's predicted load and what is free; per topology its priority and share."""
    topologies = [t.topology for t in ledger.tenants]
    machines = Table(title=f"Machines (percent of the machine; shares: {ledger.mode})")
    machines.add_column("machine")
    machines.add_column("type")
    machines.add_column("capacity", justify="right")
    for name in topologies:
        machines.add_column(name, justify="right")
    machines.add_column("free", justify="right")
    machines.add_column("slots used", justify="right")
    for m in ledger.machines:
        slots = f"{m.slots_used}" if m.slots is None else f"{m.slots_used} of {m.slots}"
        machines.add_row(m.id, m.type, f"{m.capacity:.1f}", *(f"{m.loads[t]:.1f}" if t in m.loads else "-" for t in topologies),
                         f"[red]{m.free:.1f}[/red]" if m.free < 0 else f"{m.free:.1f}",
                         f"[red]{slots}[/red]" if m.slots is not None and m.slots_used > m.slots else slots)
    tenants = Table(title="Topologies")
    for column in ("topology", "priority", "min rate", "target rate", "status", "rate (tuples/s)", "plan", "heartbeat"):
        tenants.add_column(column, justify="right" if column in ("priority", "min rate", "target rate", "rate (tuples/s)") else "left")
    for t in ledger.tenants:
        status = t.status if t.reason is None else f"{t.status}: {t.reason}; a min rate up to {t.fits_rate:g} would fit"
        tenants.add_row(t.topology, str(t.priority), f"{t.min_rate:g}", "-" if t.target_rate is None else f"{t.target_rate:g}",
                        status, f"{t.rate:.2f}", t.plan_id or "-", f"{t.heartbeat_age_s:.0f} s ago")
    return [machines, tenants]


def evicted_line(evicted: list[Eviction]) -> str | None:
    """One line naming the tenants a change refused, which the plugin evicts at its next heartbeat; None for none."""
    if not evicted:
        return None
    named = "; ".join(f"{e.topology} (a min rate up to {e.fits_rate:g} tuples/s would fit)" for e in evicted)
    return f"evicted at the plugin's next heartbeat: {named}"


def ledger(planner: Optional[str] = PlannerOption, token: Optional[str] = TokenOption) -> None:
    """The topologies sharing the cluster: each machine's load per topology and what is free, each topology's share."""
    try:
        with PlannerClient(planner, token) as client:
            answer = client.ledger()
    except PlannerClientError as exc:
        raise fail(str(exc)) from None
    console = Console()
    if not answer.tenants:
        console.print("no topology is registered: none is placed by plan on a shared cluster")
        return
    for table in ledger_tables(answer):
        console.print(table)


def rebalance_drained(nimbus: str | None, topology: str) -> int:
    """Re-place a running topology through Nimbus's rebalance, waiting its message timeout first so tuples in flight
    are acked (the plugin then plans it again on what the others leave); returns the wait in seconds.

    One small function on purpose: the re-planning work (issue #15) brings its own drained re-placement to swap in.
    """
    from observe.nimbus import NimbusError, connect
    from streamparse.thrift import RebalanceOptions
    from topologies.locate import nimbus_address

    address = nimbus_address(nimbus)
    with connect(address) as client:
        running = client.find(topology)
        if running is None:
            raise NimbusError(f"no topology named {topology!r} is running on {address}")
        wait_s = int(client.topology_conf(running.id).get(MESSAGE_TIMEOUT, DEFAULT_MESSAGE_TIMEOUT_S))
        client._call(f"rebalance {topology!r}", lambda c: c.rebalance(topology, RebalanceOptions(wait_secs=wait_s)),
                     repeatable=False)
    return wait_s


def priority(
    topology: str = typer.Argument(..., help="The topology's name."),
    level: int = typer.Argument(..., min=0, help="Its new priority: 0 most important (Storm's topology.priority)."),
    replace: bool = typer.Option(True, "--replace/--no-replace", help="Re-place the topologies whose share changed."),
    nimbus: Optional[str] = typer.Option(None, "--nimbus", help="Nimbus host:port (default: $HETSCHED_NIMBUS, else the local cluster's)."),
    planner: Optional[str] = PlannerOption,
    token: Optional[str] = TokenOption,
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON (the API's PriorityAnswer); the other lines go to stderr."),
) -> None:
    """Change a topology's priority; the topologies whose share changed are re-planned and re-placed (drained)."""
    try:
        with PlannerClient(planner, token) as client:
            answer = client.set_priority(topology, level)
    except PlannerClientError as exc:
        raise fail(str(exc)) from None
    console = Console(stderr=as_json)
    affected = ", ".join(answer.affected) or "none"
    console.print(f"{topology}: priority {answer.priority}; shares changed: {affected}", highlight=False)
    evicted = evicted_line(answer.evicted)
    if evicted:
        console.print(evicted, highlight=False, soft_wrap=True)
    if as_json:
        typer.echo(answer.model_dump_json(indent=2))
    if not replace or not answer.affected:
        return
    try:
        from observe.nimbus import NimbusError
    except ImportError:
        raise fail("re-placing needs the storm extra (streamparse); or pass --no-replace") from None
    for name in answer.affected:
        try:
            wait_s = rebalance_drained(nimbus, name)
        except NimbusError as exc:
            raise fail(f"re-placing {name} failed: {exc}") from None
        console.print(f"{name}: re-placed by Nimbus's rebalance after a {wait_s} s drain")
