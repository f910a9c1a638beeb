"""``hetsched tune TOPOLOGY``: measure a running topology, profile it from its own worker records, plan, re-place it
drained by the plan (as ``hetsched replan`` does), measure again."""
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
from hetsched.ops_cmd import NimbusOption, StormYamlOption, planner_of
from observe.nimbus import NimbusAddress, connect
from observe.replacement import SpoutTally, replace_drained
from planner.client import TOKEN_ENV, URL_ENV, put_summary

console = Console(width=None if sys.stdout.isatty() else 160)

APPLIED_BY = ("a drained re-placement (deactivate, wait for the tuples in flight to be acked, Storm's rebalance onto "
              "the plan bound to the topology, activate), as `hetsched replan` applies its plans; nothing is resubmitted")


def _fail(message: str) -> typer.Exit:
    Console(stderr=True).print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(1)


def _measure(address: NimbusAddress, topology: str, window_s: float):
    """The topology's throughputs over the next ``window_s`` seconds, from Nimbus's counts."""
    from bench.measure import measured_throughputs
    from topologies.measure import window_rates

    with connect(address) as client:
        return measured_throughputs(window_rates(client, topology, None, window_s))


def _spout_tally(address: NimbusAddress, topology: str) -> SpoutTally | None:
    """The spouts' counts as Nimbus last heard them (None when the topology is gone)."""
    with connect(address) as client:
        running = client.find(topology)
        return SpoutTally.of(client.counts(running.id)) if running is not None else None


def _figures_table(before, current, plan, after) -> Table:
    table = Table(title="throughput, tuples/s", title_justify="left")
    for column in ("", "input rate R", "spout emit", "sink", "total"):
        table.add_column(column, justify="left" if not column else "right")

    def row(label: str, t) -> None:
        table.add_row(label, f"{t.input_rate:.2f}", f"{t.spout_emit_rate:.2f}", f"{t.sink_throughput:.2f}",
                      f"{t.total_throughput:.2f}")

    def predicted(label: str, e) -> None:
        table.add_row(label, f"{e.input_rate:.2f}", "", f"{e.sink_throughput:.2f}", f"{e.total_throughput:.2f}")

    row("before (measured)", before)
    if current is not None:
        predicted("before (predicted, the placement it ran)", current)
    if plan is not None:
        predicted("predicted (plan)", plan)
    if after is not None:
        row("after (measured)", after)
    return table


@app.command("tune")
def tune(
    topology: str = typer.Argument(..., help="The running topology's name: any topology Nimbus runs (Python, Java or Flux)."),
    store: Path = typer.Option(..., "--store", help="The planning service's records store (its records folder or data directory)."),
    window: float = typer.Option(120.0, "--window", min=20.0, help="Seconds to measure before (and after) and to collect records over."),
    warmup: float = typer.Option(60.0, "--warmup", min=0.0, help="Seconds after the re-placement before measuring again."),
    fallback: Optional[str] = typer.Option(None, "--fallback", help="Stored profile set for the pairs the live records do not cover (e.g. a lab set)."),
    put: Optional[str] = typer.Option(None, "--put", metavar="NAME", help="Name to store the profile set under (default: <topology>-tuned)."),
    strategy: Optional[str] = typer.Option(None, "--strategy", help="Planner strategy (default: the planner's best)."),
    min_gain: float = typer.Option(0.0, "--min-gain", help="Apply the plan only if its predicted input rate is at least this much above the running placement's (0.10: 10%)."),
    max_drain: Optional[float] = typer.Option(None, "--max-drain", min=0.0, help="Seconds to wait for in-flight tuples after deactivating (default: the topology's topology.message.timeout.secs)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Measure, profile and plan, but re-place nothing (no --explore rounds either)."),
    explore: bool = typer.Option(False, "--explore", help="First place the pairs never observed, one drained re-placement per round, so they are measured."),
    explore_seconds: float = typer.Option(120.0, "--explore-seconds", min=20.0, help="Seconds each --explore round runs."),
    min_samples: int = typer.Option(5, "--min-samples", min=2, help="Fewest intervals a (profile, machine type) pair needs."),
    planner: Optional[str] = typer.Option(None, "--planner", envvar=URL_ENV, help="The planning service (default: a compose cluster's own, published here, else the topology's hetsched.planner.url, else http://127.0.0.1:8765)."),
    token: Optional[str] = typer.Option(None, "--token", envvar=TOKEN_ENV, help="Bearer token, where the planner needs one."),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (default local[*])."),
    nimbus: Optional[str] = NimbusOption,
    storm_yaml: Optional[List[Path]] = StormYamlOption,
) -> None:
    """Profile TOPOLOGY from its own worker records, plan it, re-place it drained by the plan, and print throughput
    before, predicted and after."""
    from hetsched.replan import (
        ReplanError,
        current_evaluation_request,
        gain,
        placement_of_plan,
        plan_request,
        plan_within_tasks,
        planner_cluster,
        planner_conf_overrides,
    )
    from hetsched.replan_cmd import _print_replacement, read_running
    from observe.nimbus import NimbusError
    from observe.replacement import ReplacementError
    from observe.topology_graph import TopologyGraphError
    from planner.client import PlannerClient, PlannerClientError
    from planner.profiles import machine_base_load
    from spark_profiling.aggregate import run as aggregate_run
    from spark_profiling.errors import NoPairError, ProfilingError
    from spark_profiling.inputs import store_topology_folders
    from spark_profiling.tune import complete, coverage, coverage_lines, explore_placement
    from topologies.errors import TopologyError

    logging.basicConfig(level=logging.WARNING, format="%(message)s", handlers=[RichHandler(console=Console(stderr=True), show_path=False)])
    set_name = put or f"{topology}-tuned"
    try:
        state = read_running(nimbus, topology, storm_yaml)
        graph = state.planner_topology()
        machines_by_type: dict[str, list[str]] = {}
        for row in state.rows:
            if row.machine_id and row.machine_type:
                machines_by_type.setdefault(row.machine_type, []).append(row.machine_id)
        url, found_token = planner_of(state.address, state.conf, planner)
        token = token or found_token

        def measure(label: str):
            with console.status(f"measuring {topology} for {window:g} s ({label}) ..."):
                return _measure(state.address, topology, window)

        def apply(client, plan, profiles: str, reason: str):
            """Bind the plan and re-place the topology drained onto it; the conf gains a profile set where it had none."""
            client.bind(topology, plan.id, reason)
            with connect(state.address) as nimbus_client:
                return replace_drained(
                    nimbus_client, topology, placement_of_plan(plan), state.machine_of_host, max_drain_s=max_drain,
                    conf_overrides=planner_conf_overrides(state.conf, profiles),
                    on_step=lambda step: console.print(f"{topology}: {step}", highlight=False))

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
        needed_profiles = {c.profile for c in graph.components}
        cov = coverage(needed_profiles, set(machines_by_type), live, left_out)

        with PlannerClient(url, token) as client:
            if explore and cov.never_observed and not dry_run:
                rounds = explore_placement(cov, machines_by_type)
                explore_started = time.time()
                for label, pairs in rounds.items():
                    console.print(f"--explore {label}: placing " + ", ".join(f"({p}, {t})" for p, t in pairs), highlight=False)
                    bias = _explore_set(pairs, cov, machines_by_type, f"{topology}-explore")
                    client.put_profile_set(bias)
                    # executors only move (counts as they run), so every round is one drained rebalance
                    plan = client.plan(plan_request(graph, planner_cluster(state.rows, {}), bias.name, {},
                                                    keep_counts=state.now.executors))
                    _print_replacement(apply(client, plan, bias.name, f"hetsched tune --explore {label}"))
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
            cluster = planner_cluster(state.rows, machine_base_load(done.profile_set))
            current = client.evaluate(current_evaluation_request(graph, cluster, set_name, state.now))
            plan, capped = plan_within_tasks(client.plan, graph, cluster, set_name, state.now.tasks, strategy)
            predicted_gain = gain(current.input_rate, plan.input_rate)
            console.print(f"plan {plan.id} ({plan.strategy}): " + ", ".join(f"{c} x{n}" for c, n in plan.instances.items())
                          + f"; predicted input rate {current.input_rate:.2f} -> {plan.input_rate:.2f} tuples/s "
                          f"({predicted_gain:+.1%})", highlight=False)
            if capped:
                console.print(f"capped at a divisor of their task counts (a rebalance cannot give a component more "
                              f"executors than tasks, and executors with unequal tasks get unequal shares of a "
                              f"shuffle; `hetsched submit --spare-tasks` leaves room): {capped}", highlight=False)
            after = result = None
            if dry_run:
                console.print("--dry-run: the plan is not applied", highlight=False)
            elif predicted_gain < min_gain:
                console.print(f"not applied: predicted gain {predicted_gain:+.1%} is below --min-gain {min_gain:.0%}",
                              highlight=False)
            else:
                console.print(f"applying by {APPLIED_BY}", highlight=False)
                result = apply(client, plan, set_name, f"hetsched tune: predicted {current.input_rate:.2f} -> "
                                                       f"{plan.input_rate:.2f} tuples/s ({predicted_gain:+.1%})")
        if result is not None:
            _print_replacement(result)
            time.sleep(warmup)
            after = measure("after")
            since = _spout_tally(state.address, topology)
            if since is not None:
                console.print(f"spout tuples failed: {result.failed_during_drain} during the drain, "
                              f"{result.in_flight_at_rebalance} in flight when the old workers stopped, {since.failed} "
                              f"in the new workers since (of {since.emitted} emitted, {since.acked} acked)", highlight=False)
        console.print(_figures_table(before, current, plan, after))
    except (ProfilingError, TopologyError, TopologyGraphError, ReplanError, NimbusError,
            PlannerClientError, ReplacementError) as exc:
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
