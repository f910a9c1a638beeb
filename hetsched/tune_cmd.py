"""``hetsched tune TOPOLOGY``: profile a running topology from its own worker records, plan it, re-place it drained,
measure, and put it back if the plan measures worse; ``--watch`` keeps doing it. The workflow is
:mod:`hetsched.tuning`; this module parses options and prints."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from hetsched.errors import fail
from hetsched.ops_cmd import NimbusOption, StormYamlOption, planner_of
from planner.client import TOKEN_ENV, URL_ENV

console = Console(width=None if sys.stdout.isatty() else 160)


def _figures_table(report) -> Table:
    table = Table(title=f"{report.topology}: throughput, tuples/s", title_justify="left")
    for column in ("", "input rate R", "spout emit", "sink"):
        table.add_column(column, justify="left" if not column else "right")

    def row(label: str, t) -> None:
        if t is not None:
            table.add_row(label, f"{t.input_rate:.2f}", f"{t.spout_emit_rate:.2f}", f"{t.sink_throughput:.2f}")

    row("before (measured, the starting placement)", report.before)
    if report.predicted_start is not None:
        table.add_row("before (predicted)", f"{report.predicted_start:.2f}", "", "")
    if report.plan is not None:
        table.add_row("plan (predicted)", f"{report.plan.input_rate:.2f}", "", f"{report.plan.sink_throughput:.2f}")
    row("after (measured, the plan)", report.after)
    row("back on the starting placement (measured)", report.back)
    return table


def _pairs_table(report) -> Table | None:
    cov = report.coverage
    if cov is None:
        return None
    table = Table(title="what was measured where", title_justify="left")
    for column in ("profile key", "machine type", "source"):
        table.add_column(column)
    live = set(cov.live)
    for profile, machine_type in cov.needed:
        pair = f"{profile}@{machine_type}"
        if pair in report.estimated:
            source = f"live, estimated from one operating point ({report.estimated[pair]['rate']} tuples/s)"
        elif (profile, machine_type) in live:
            source = "live, fitted"
        elif pair in report.from_fallback:
            source = "fallback set"
        elif pair in report.by_speed:
            source = "estimated by machine speed"
        else:
            source = "none"
        table.add_row(profile, machine_type, source)
    return table


def tune(
    topology: str = typer.Argument(..., help="The running topology's name: any topology Nimbus runs (Python, Java or Flux)."),
    store: Path = typer.Option(..., "--store", help="The planning service's records store (its records folder or data directory)."),
    window: float = typer.Option(60.0, "--window", min=20.0, help="Seconds each measurement lasts (before, after, each watch look)."),
    warmup: float = typer.Option(45.0, "--warmup", min=0.0, help="Seconds after a re-placement before measuring."),
    idle: float = typer.Option(20.0, "--idle-seconds", min=0.0, help="Seconds the topology is kept inactive after each measured placement, so every executor's CPU at rate 0 is recorded (0: no idle probe)."),
    explore: bool = typer.Option(True, "--explore/--no-explore", help="Lend executors to the machine types a component was never measured on, one drained re-placement per round."),
    explore_seconds: float = typer.Option(60.0, "--explore-seconds", min=20.0, help="Seconds each explore round runs."),
    fallback: Optional[str] = typer.Option(None, "--fallback", help="Stored profile set for the pairs the live records do not cover (e.g. a lab set)."),
    fill_by_speed: bool = typer.Option(True, "--fill-by-speed/--no-fill-by-speed", help="Estimate a pair no set has from the same profile key on the other machine types, scaled by their measured relative speed, instead of making no plan."),
    put: Optional[str] = typer.Option(None, "--put", metavar="NAME", help="Name to store the profile set under (default: <topology>-tuned)."),
    strategy: Optional[str] = typer.Option(None, "--strategy", help="Planner strategy (default: the planner's best)."),
    min_gain: float = typer.Option(0.05, "--min-gain", min=0.0, help="Apply a plan only if its predicted input rate is at least this much above the running placement's (0.05: 5%)."),
    noise: float = typer.Option(0.10, "--noise", min=0.0, max=0.9, help="Keep the plan unless it measures more than this much under the starting placement (0.10: 10%); else put the topology back."),
    max_drain: Optional[float] = typer.Option(None, "--max-drain", min=0.0, help="Seconds to wait for in-flight tuples after deactivating (default: the topology's topology.message.timeout.secs)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Measure, profile and plan, but move nothing (no idle probe, no explore rounds)."),
    min_samples: int = typer.Option(5, "--min-samples", min=2, help="Fewest intervals a (profile, machine type) pair needs."),
    outage: float = typer.Option(90.0, "--outage-seconds", min=0.0, help="How long a planner that does not answer is waited for before the tune gives up (and puts the topology back)."),
    watch_on: bool = typer.Option(False, "--watch", help="After the tune, keep measuring; re-plan when the rate drifts from the prediction (Ctrl-C stops)."),
    watch_interval: float = typer.Option(60.0, "--watch-interval", min=20.0, help="--watch: seconds of each look."),
    watch_threshold: float = typer.Option(0.25, "--watch-threshold", min=0.01, help="--watch: drift from the calibrated prediction that counts (0.25: 25%)."),
    watch_patience: int = typer.Option(2, "--watch-patience", min=1, help="--watch: looks in a row the drift must last before a re-plan."),
    watch_min_interval: float = typer.Option(600.0, "--watch-min-interval", min=0.0, help="--watch: least seconds between two re-placements."),
    watch_minutes: Optional[float] = typer.Option(None, "--watch-minutes", min=0.0, help="--watch: stop after this many minutes (default: until Ctrl-C)."),
    watch_log: Optional[Path] = typer.Option(None, "--watch-log", help="--watch: append every decision to this file, one JSON object a line (default: var/tune/<topology>-watch.jsonl)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON at the end."),
    planner: Optional[str] = typer.Option(None, "--planner", envvar=URL_ENV, help="The planning service (default: a compose cluster's own, published here, else the topology's hetsched.planner.url, else http://127.0.0.1:8765)."),
    token: Optional[str] = typer.Option(None, "--token", envvar=TOKEN_ENV, help="Bearer token, where the planner needs one."),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (default local[*])."),
    nimbus: Optional[str] = NimbusOption,
    storm_yaml: Optional[List[Path]] = StormYamlOption,
) -> None:
    """Profile TOPOLOGY from its own worker records (exploring the machine types it never ran on), plan it, re-place it
    drained by the plan, and measure; a plan that measures worse than the starting placement is undone."""
    from hetsched.replan import ReplanError
    from hetsched.replan_cmd import read_running
    from hetsched.tuning import Interference, Tuner, TuneError, TuneSettings
    from hetsched.watch import WatchSettings, watch
    from observe.nimbus import NimbusError
    from observe.replacement import ReplacementError
    from observe.topology_graph import TopologyGraphError
    from planner.client import PlannerClient, PlannerClientError
    from spark_profiling.errors import ProfilingError
    from topologies.errors import TopologyError

    started = time.monotonic()

    def say(line: str) -> None:
        minutes, seconds = divmod(int(time.monotonic() - started), 60)
        console.print(f"[dim]{minutes:02d}:{seconds:02d}[/dim] {line}", highlight=False, soft_wrap=True)

    settings = TuneSettings(
        store=store, set_name=put or f"{topology}-tuned", window_s=window, warmup_s=warmup, idle_s=idle, explore=explore,
        explore_s=explore_seconds, min_samples=min_samples, fallback=fallback, fill_by_speed=fill_by_speed, strategy=strategy, min_gain=min_gain,
        noise=noise, max_drain_s=max_drain, dry_run=dry_run, master=master, outage_s=outage)
    faults = (TuneError, ProfilingError, TopologyError, TopologyGraphError, ReplanError, NimbusError, PlannerClientError,
              ReplacementError)
    tuner = None
    try:
        state = read_running(nimbus, topology, storm_yaml)
        url, found_token = planner_of(state.address, state.conf, planner)
        with PlannerClient(url, token or found_token) as client:
            tuner = Tuner(state, client, settings, say, lambda: read_running(nimbus, topology, storm_yaml))
            report = tuner.run()
            console.print(_figures_table(report))
            pairs = _pairs_table(report)
            if pairs is not None:
                console.print(pairs)
            say(report.outcome)
            if as_json:
                print(json.dumps(report.as_dict(), indent=2))
            if watch_on:
                if report.plan is None or report.returned or dry_run:
                    raise TuneError("--watch needs a plan the topology runs on, and this tune left none: " + report.outcome)
                log = watch_log or Path("var/tune") / f"{topology}-watch.jsonl"
                say(f"watching {topology}: a look every {watch_interval:g} s, decisions in {log}")
                watch(tuner, report.plan, WatchSettings(watch_interval, watch_threshold, watch_patience,
                                                        watch_min_interval, watch_minutes, log))
    except Interference as exc:
        raise fail(str(exc)) from None
    except faults as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        if tuner is not None and tuner.moved and not watch_on:
            try:
                tuner.back_to_start("interrupted")
            except Exception as exc:  # noqa: BLE001
                raise fail(f"interrupted, and putting {topology} back failed: {exc}") from None
        raise fail("interrupted" + (f"; {topology} is back on its starting placement" if tuner and tuner.report.returned else ""),
                   130) from None
