"""``hetsched capacity``: what to buy for target rates, the next machine to add, each loss. No logic: planner.capacity."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from cluster.errors import ClusterError
from cluster.spec import load_spec
from hetsched.errors import fail
from planner.capacity import plan_capacity
from planner.capacity_model import CapacityAnswer, CapacityRequest, CapacityTopology, OfferedType
from planner.errors import PlanningError
from planner.files import describe_validation_error, load_cluster, load_options, load_profile_entries, load_topology, parse_as, read_document
from planner.model import Cluster, ProfileRef


def _prices(pairs: list[str]) -> dict[str, float]:
    """``TYPE=PRICE`` options as a map; a malformed one is a PlanningError sentence."""
    prices: dict[str, float] = {}
    for pair in pairs:
        name, eq, value = pair.partition("=")
        try:
            prices[name.strip()] = float(value)
        except ValueError:
            raise PlanningError(f"--price {pair} is not TYPE=PRICE (e.g. --price small=1.5)") from None
        if not eq or not name.strip():
            raise PlanningError(f"--price {pair} is not TYPE=PRICE (e.g. --price small=1.5)")
    return prices


def _spec_cluster(path: Path) -> Cluster:
    try:
        return load_spec(path).planner_cluster()
    except (ClusterError, OSError, ValueError) as exc:
        raise PlanningError(f"the cluster spec {path} cannot be read: {str(exc).splitlines()[0]}") from None


def build_request(request: Path | None, topologies: list[Path], targets: list[float], cluster: Path | None,
                  cluster_spec: Path | None, profiles: Path | None, prices: list[str], owned: bool,
                  options: Path | None, lose: list[str]) -> CapacityRequest:
    """The request from a request file, or from a topology, a cluster (file or spec), profiles and prices."""
    if request is not None:
        if topologies or cluster or cluster_spec or prices:
            raise PlanningError("give either --request or --topology with --cluster or --cluster-spec, not both")
        loaded = parse_as(CapacityRequest, read_document(request, "capacity request"), request, "capacity request")
        if profiles is not None:
            loaded = loaded.model_copy(update={"profiles": ProfileRef(entries=load_profile_entries(profiles))})
        if loaded.profiles.entries is None:
            raise PlanningError(f"the capacity request {request} names a stored profile set; give its entries with --profiles")
        return loaded.model_copy(update={"lose": lose}) if lose else loaded
    if not topologies or (cluster is None) == (cluster_spec is None) or profiles is None:
        raise PlanningError("give --request FILE, or --topology with --target-rate, one of --cluster and "
                            "--cluster-spec, --profiles and a --price for every machine type")
    if len(targets) != len(topologies):
        raise PlanningError(f"give one --target-rate per --topology: {len(topologies)} topologies, {len(targets)} rates")
    priced = _prices(prices)
    base = load_cluster(cluster) if cluster is not None else _spec_cluster(cluster_spec)  # type: ignore[arg-type]
    unknown = sorted(set(priced) - {t.name for t in base.machine_types})
    if unknown:
        raise PlanningError(f"--price names machine type {unknown[0]}, which the cluster does not declare")
    try:
        return CapacityRequest(
            topologies=[CapacityTopology(topology=load_topology(p), target_rate=r) for p, r in zip(topologies, targets)],
            machine_types=[OfferedType(**t.model_dump(), price=priced.get(t.name)) for t in base.machine_types],
            owned=list(base.machines) if owned else [], profiles=ProfileRef(entries=load_profile_entries(profiles)),
            options=load_options(options), lose=lose or None)
    except ValidationError as exc:
        raise PlanningError(f"the capacity request is not valid: {describe_validation_error(exc)}") from None


def answer_tables(answer: CapacityAnswer) -> list[Table]:
    """The answer as rich tables: the purchase, the next machine, the losses."""
    p = answer.purchase
    purchase = Table(title="Cheapest machines that sustain the rates", show_header=False)
    purchase.add_column(justify="left")
    purchase.add_column(justify="right")
    for label, value in (
        ("buy", ", ".join(f"{n} x {t}" for t, n in p.buy.items()) or "nothing"),
        ("cost", f"{p.cost:g}"),
        ("cost lower bound (fluid MILP)", f"{p.cost_lower_bound:g}"),
        ("proven cheapest", "yes" if p.proven else "no"),
        ("machines", str(len(p.cluster.machines))),
        ("scale of the required rates", f"{p.scale:.3f}"),
        *((f"rate of {name} (tuples/s)", f"{rate:.3f}") for name, rate in p.rates.items()),
        ("bottleneck", p.bottleneck or "-"),
        ("gap to the LP bound", f"{p.lp_gap:.1%}"),
    ):
        purchase.add_row(label, value)
    tables = [purchase]
    if answer.add_next:
        nxt = Table(title="One machine to add next (largest gain first)")
        for col in ("machine type", "price", "scale", "gain", "bottleneck", "gap to LP bound"):
            nxt.add_column(col, justify="left" if col in ("machine type", "bottleneck") else "right")
        for a in answer.add_next:
            nxt.add_row(a.machine_type, f"{a.price:g}", f"{a.scale:.3f}", f"{a.gain:+.3f}", a.bottleneck or "-",
                        f"{a.lp_gap:.1%}")
        tables.append(nxt)
    if answer.losses:
        names = list(p.rates)
        losses = Table(title="If one machine is lost (rates in tuples/s)")
        for col in ("machine", "type", *names, "bottleneck", "gap to LP bound"):
            losses.add_column(col, justify="left" if col in ("machine", "type", "bottleneck") else "right")
        for loss in answer.losses:
            cells = [f"{loss.rates.get(n, 0.0):.3f}" + (" (refused)" if n in loss.refused else "") for n in names]
            losses.add_row(loss.machine, loss.machine_type, *cells, loss.bottleneck or "-", f"{loss.lp_gap:.1%}")
        tables.append(losses)
    return tables


def capacity(
    request: Optional[Path] = typer.Option(None, "--request", help="A capacity request file (YAML or JSON), as POST /v1/capacity takes it."),
    topology: list[Path] = typer.Option([], "--topology", metavar="PATH", help="Topology file (YAML or JSON); repeat for several."),
    target_rate: list[float] = typer.Option([], "--target-rate", metavar="RATE", help="Input rate the topology of the same position must sustain, tuples/s."),
    cluster: Optional[Path] = typer.Option(None, "--cluster", help="Cluster file (YAML or JSON): its machine types are offered, its machines owned."),
    cluster_spec: Optional[Path] = typer.Option(None, "--cluster-spec", help="A cluster spec (cluster/specs/*.yaml) instead of --cluster."),
    profiles: Optional[Path] = typer.Option(None, "--profiles", help="Profile set, or a list of profile entries (YAML or JSON)."),
    price: list[str] = typer.Option([], "--price", metavar="TYPE=PRICE", help="TYPE=PRICE: what one machine of the type costs; one per machine type."),
    owned: bool = typer.Option(True, "--owned/--none-owned", help="Count the cluster's machines as owned (free), or start from none."),
    options: Optional[Path] = typer.Option(None, "--options", help="Plan options file (YAML or JSON), e.g. max_utilization, time_limit_s."),
    lose: list[str] = typer.Option([], "--lose", metavar="MACHINE", help="A machine of the answer whose loss to predict; repeat for several."),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON (the API's CapacityAnswer)."),
) -> None:
    """The cheapest machines that sustain every topology's target rate, the one to add next, and each machine's loss."""
    try:
        built = build_request(request, topology, target_rate, cluster, cluster_spec, profiles, price, owned, options, lose)
        answer = plan_capacity(built, built.profiles.entries or [])
    except PlanningError as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(answer.model_dump_json(indent=2))
        return
    console = Console()
    for table in answer_tables(answer):
        console.print(table)
