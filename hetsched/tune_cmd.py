"""``hetsched tune TOPOLOGY``: measure a running topology, profile it from its own worker records, plan, apply, measure again."""
from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

from hetsched.cli import app
from planner.client import TOKEN_ENV, URL_ENV, put_summary

console = Console(width=None if sys.stdout.isatty() else 160)

APPLIED_BY = ("kill and resubmit with the plan id (a catalog topology submitted afresh; `hetsched replan` re-places a "
              "running topology drained instead, without a restart)")


def _fail(message: str) -> typer.Exit:
    Console(stderr=True).print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(1)


def _figures_table(before, after, plan) -> Table:
    table = Table(title="throughput, tuples/s", title_justify="left")
    for column in ("", "input rate R", "spout emit", "sink", "total"):
        table.add_column(column, justify="left" if not column else "right")

    def row(label: str, t) -> None:
        table.add_row(label, f"{t.input_rate:.2f}", f"{t.spout_emit_rate:.2f}", f"{t.sink_throughput:.2f}",
                      f"{t.total_throughput:.2f}")

    row("before (measured)", before)
    if plan is not None:
        table.add_row("predicted (plan)", f"{plan.input_rate:.2f}", "", f"{plan.sink_throughput:.2f}",
                      f"{plan.total_throughput:.2f}")
    if after is not None:
        row("after (measured)", after)
    return table


@app.command("tune")
def tune(
    topology: str = typer.Argument(..., help="The running topology's name (a catalog topology, e.g. linear)."),
    store: Path = typer.Option(..., "--store", help="The planning service's records store (its records folder or data directory)."),
    catalog_name: Optional[str] = typer.Option(None, "--catalog", help="The catalog topology it runs (default: TOPOLOGY)."),
    window: float = typer.Option(120.0, "--window", min=20.0, help="Seconds to measure before (and after) and to collect records over."),
    warmup: float = typer.Option(60.0, "--warmup", min=0.0, help="Seconds after the resubmit before measuring again."),
    fallback: Optional[str] = typer.Option(None, "--fallback", help="Stored profile set for the pairs the live records do not cover (e.g. a lab set)."),
    put: Optional[str] = typer.Option(None, "--put", metavar="NAME", help="Name to store the profile set under (default: <topology>-tuned)."),
    rate: Optional[float] = typer.Option(None, "--rate", help="Spout rate, tuples/s, to resubmit with (as it was submitted)."),
    conf: Optional[List[str]] = typer.Option(None, "--conf", "-c", help="Topology config key=value to resubmit with (as it was submitted, e.g. topology.disable.loadaware.messaging=true); repeatable."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Measure, profile and plan, but do not apply the plan."),
    explore: bool = typer.Option(False, "--explore", help="First place the pairs never observed, one round each, so they are measured."),
    explore_seconds: float = typer.Option(120.0, "--explore-seconds", min=20.0, help="Seconds each --explore round runs."),
    min_samples: int = typer.Option(5, "--min-samples", min=2, help="Fewest intervals a (profile, machine type) pair needs."),
    planner: Optional[str] = typer.Option(None, "--planner", envvar=URL_ENV, help="The planning service (default http://127.0.0.1:8765)."),
    token: Optional[str] = typer.Option(None, "--token", envvar=TOKEN_ENV, help="Bearer token, where the planner needs one."),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (default local[*])."),
    home: Optional[Path] = typer.Option(None, "--home", envvar="HETSCHED_CLUSTER_HOME", help="The local cluster's home."),
    spec: Optional[Path] = typer.Option(None, "--spec", help="The cluster's spec YAML (default: cluster/specs/default.yaml)."),
) -> None:
    """Profile TOPOLOGY from its own worker records, plan it, apply the plan, and print throughput before, predicted and after."""
    from bench.measure import measured_throughputs
    from cluster import running_cluster
    from cluster.errors import ClusterError
    from observe.nimbus import NimbusError, connect
    from planner.client import PlannerClient, PlannerClientError
    from planner.model import PlanRequest, ProfileRef
    from planner.profiles import machine_base_load
    from spark_profiling.aggregate import run as aggregate_run
    from spark_profiling.errors import NoPairError, ProfilingError
    from spark_profiling.inputs import store_topology_folders
    from spark_profiling.tune import complete, coverage, coverage_lines, explore_placement
    from topologies.catalog import lookup, planner_topology
    from topologies.errors import TopologyError
    from topologies.measure import window_rates
    from topologies.submission import SubmitRequest, parse_conf
    from topologies.submit import submit

    logging.basicConfig(level=logging.WARNING, format="%(message)s", handlers=[RichHandler(console=Console(stderr=True), show_path=False)])
    set_name = put or f"{topology}-tuned"
    try:
        resubmit_conf = parse_conf(conf)
        entry = lookup(catalog_name or topology)
        local = running_cluster(home, spec)
        if local is None:
            raise ProfilingError("no local cluster is running (give --home, or start one with 'hetsched cluster up').")
        cluster_spec = local.spec
        machines_by_type: dict[str, list[str]] = {}
        for machine_id, machine_type in cluster_spec.machine_ids():
            machines_by_type.setdefault(machine_type.name, []).append(machine_id)
        address = local.nimbus_address

        def measure(label: str):
            with console.status(f"measuring {topology} for {window:g} s ({label}) ..."), connect(address) as nimbus:
                return measured_throughputs(window_rates(nimbus, topology, entry, window))

        def resubmit(plan_id: str, profiles: str) -> None:
            # metrics on, as `hetsched submit` has them: the topology goes on profiling itself under the new plan.
            request = SubmitRequest(topology=entry.name, name=topology, rate=rate, plan_id=plan_id, profiles=profiles,
                                    planner_url=planner, metrics=True, conf=dict(resubmit_conf))
            submit(request, address, force=True)

        left_out: dict = {}
        """Pairs seen but weak, from aggregations that gave no set at all (coverage would call them never observed)."""

        def profile_since(since: float):
            out = store.parent / f"{topology}-live.json" if store.name == "records" else store / f"{topology}-live.json"
            try:
                inputs = store_topology_folders(store, topology, since)
            except ProfilingError as exc:
                console.print(f"[yellow]{exc}[/yellow]", highlight=False)
                return None
            try:
                with console.status("aggregating the records with Spark ..."):
                    return aggregate_run(inputs, out, f"{topology}-live", min_samples, master=master, since=since)
            except NoPairError as exc:
                left_out.update(exc.left_out)
                console.print(f"[yellow]no live profile: {exc}[/yellow]", highlight=False)
                return None
            except ProfilingError as exc:
                console.print(f"[yellow]no live profile: {exc}[/yellow]", highlight=False)
                return None

        started = time.time()
        before = measure("before")
        live = profile_since(started)
        needed_profiles = {c.profile for c in planner_topology(entry).components}
        cov = coverage(needed_profiles, set(machines_by_type), live, left_out)

        with PlannerClient(planner, token) as client:
            if explore and cov.never_observed:
                rounds = explore_placement(cov, machines_by_type)
                explore_started = time.time()
                for label, pairs in rounds.items():
                    console.print(f"--explore {label}: placing " + ", ".join(f"({p}, {t})" for p, t in pairs), highlight=False)
                    bias = _explore_set(pairs, cov, machines_by_type, f"{topology}-explore")
                    client.put_profile_set(bias)
                    plan = client.plan(PlanRequest(topology=planner_topology(entry), cluster=cluster_spec.planner_cluster(),
                                                   profiles=ProfileRef(name=bias.name)))
                    resubmit(plan.id, bias.name)
                    time.sleep(explore_seconds)
                explored = profile_since(explore_started)
                live = _merge(live, explored)
                cov = coverage(needed_profiles, set(machines_by_type), live, left_out)
            fallback_set = client.get_profile_set(fallback) if fallback else None
            done = complete(live, fallback_set, cov, set_name)
            for line in coverage_lines(cov, done):
                console.print(line, highlight=False)
            if done.uncovered:
                raise ProfilingError("no plan: " + coverage_lines(cov, done)[-1])
            stored = client.put_profile_set(done.profile_set)
            console.print(put_summary(stored, "in the planner"), highlight=False)
            plan = client.plan(PlanRequest(
                topology=planner_topology(entry), cluster=cluster_spec.planner_cluster(machine_base_load(done.profile_set)),
                profiles=ProfileRef(name=set_name),
            ))
        console.print(f"plan {plan.id} ({plan.strategy}): " + ", ".join(f"{c} x{n}" for c, n in plan.instances.items()),
                      highlight=False)
        after = None
        if dry_run:
            console.print("--dry-run: the plan is not applied", highlight=False)
        else:
            console.print(f"applying by {APPLIED_BY}", highlight=False)
            resubmit(plan.id, set_name)
            time.sleep(warmup)
            after = measure("after")
        console.print(_figures_table(before, after, plan))
    except (ProfilingError, TopologyError, ClusterError, NimbusError, PlannerClientError) as exc:
        raise _fail(str(exc)) from None


def _explore_set(pairs, cov, machines_by_type, name):
    """A profile set that makes each pair's machine type cheap for its profile key and every other type dear.

    The planner then puts the key's instances on that type (the way the lab collector pins, by
    profile rather than by machine); keys not being explored cost the same everywhere.
    """
    from planner.model import ProfileEntry, ProfileSet
    from spark_profiling.collector.pinning import CHEAP_E, CHEAP_MET, DEAR_E, DEAR_MET

    wanted = dict(pairs)
    entries = []
    for profile in sorted({p for p, _ in cov.needed}):
        for machine_type in sorted(machines_by_type):
            cheap = wanted.get(profile) in (None, machine_type)
            entries.append(ProfileEntry(profile=profile, machine_type=machine_type, alpha=1.0,
                                        e=CHEAP_E if cheap else DEAR_E, met=CHEAP_MET if cheap else DEAR_MET))
    return ProfileSet(name=name, entries=entries, source={"kind": "hetsched.tune.explore", "pairs": [f"{p}@{t}" for p, t in pairs]})


def _merge(live, explored):
    """The live set's entries with the explored ones added (an explored pair replaces nothing already live)."""
    if explored is None:
        return live
    if live is None:
        return explored
    have = {(e.profile, e.machine_type) for e in live.entries}
    entries = live.entries + [e for e in explored.entries if (e.profile, e.machine_type) not in have]
    skipped = [s for s in live.source.get("skipped_pairs", []) + explored.source.get("skipped_pairs", [])
               if (s["profile"], s["machine_type"]) not in {(e.profile, e.machine_type) for e in entries}]
    return live.model_copy(update={"entries": entries, "source": {**live.source, "skipped_pairs": skipped}})
