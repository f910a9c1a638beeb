"""``hetsched bench`` (the end-to-end benchmark on the local cluster) and ``hetsched demo`` (the main job).

No logic here: :mod:`bench` does the work; this module reads options, shows progress and prints the result.
"""
from __future__ import annotations

import datetime as dt
import logging
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from hetsched.errors import fail

console = Console(width=None if sys.stdout.isatty() else 200)


def _default_out(kind: str) -> Path:
    return Path("var") / kind / dt.datetime.now().strftime("%Y%m%dT%H%M%S")


def _run_and_report(settings) -> int:
    """Run the bench with progress (it writes bench.json as it goes), then plot, print the tables; the exit code."""
    from bench import report
    from bench.errors import BenchError
    from bench.experiment import run_bench
    from cluster.errors import ClusterError
    from observe.progress import RichReporter

    logging.basicConfig(level=logging.WARNING)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    try:
        with Progress(*columns, console=console, transient=True) as progress:
            result = run_bench(settings, RichReporter(progress))
    except (BenchError, ClusterError) as exc:  # a bad --spec is the cluster's sentence
        raise fail(str(exc)) from None
    data = report.result_dict(result)
    if result.saved_to is not None:
        _plot(data, result.saved_to)
    _print(data)
    if result.saved_to is None:
        console.print(f"[red]error:[/red] the results above are not saved: {result.error}", highlight=False)
    else:
        console.print(f"results: {result.saved_to}")
    for p in data["plots"]:
        console.print(f"plot: {p}")
    if result.interrupted:
        return 130
    return 1 if result.error else 0


def _plot(data: dict, json_path: Path, rewrite: bool = True) -> None:
    """Draw the plots beside the saved result and (``rewrite``) add their paths to it.

    The data is on disk before this starts: a plot that fails, for whatever reason, costs the plots only,
    said in one sentence.
    """
    from bench import plots, report
    from bench.errors import BenchError

    try:
        drawn = [str(p) for p in plots.all_plots(data, json_path.parent)]
    except Exception as exc:  # noqa: BLE001  matplotlib can fail in many ways; the data is already safe
        console.print(f"[yellow]plots not drawn ({type(exc).__name__}: {exc}); the results are kept in {json_path}[/yellow]",
                      highlight=False)
        return
    data["plots"] = drawn
    if rewrite:
        try:
            report.write_json(data, json_path)
        except BenchError as exc:
            console.print(f"[yellow]{exc}; the plots are drawn, the result without their paths is kept[/yellow]",
                          highlight=False)


def _print(data: dict) -> None:
    from bench import report

    cut_short = report.cut_short_line(data)
    if cut_short:
        console.print(f"[yellow]{cut_short}[/yellow]", highlight=False)
    console.print(report.runs_table(data))
    for line in report.failure_lines(data):
        console.print(f"[red]{line}[/red]", highlight=False)
    console.print(report.targets_table(data))
    for line in report.headline_lines(data) + report.bounds_lines(data):
        console.print(f"[bold]{line}[/bold]", highlight=False)
    for line in report.settings_lines(data):
        console.print(line, highlight=False)


def _topology_conf(items: Optional[List[str]]) -> dict:
    from bench.errors import BenchError
    from topologies.errors import TopologyError
    from topologies.submission import parse_conf

    try:
        return parse_conf(items)
    except TopologyError as exc:
        raise BenchError(str(exc)) from None


def bench(
    topologies: Optional[str] = typer.Option(None, "--topologies", help="Comma-separated catalog topologies [default: linear,diamond,star]; rolling_count and unique_visitor need --profile-now."),
    schedulers: Optional[str] = typer.Option(
        None, "--schedulers", help="Comma-separated: default,default-naive,resource_aware,planned [default: all four], "
                             "also planned-weighted (a plan made with weighted shares, on the weighted groupings, issue 33) and sps,dps,ras-priority (docs/concepts/baselines.md)."),
    profiles: str = typer.Option("default-cluster", "--profiles", help="A shipped profile set's name (profiles/NAME.json) or a ProfileSet file."),
    profile_now: bool = typer.Option(False, "--profile-now", help="Measure the profile set on the cluster first (hetsched profile) instead."),
    fill_by_speed: bool = typer.Option(
        False, "--fill-by-speed", help="Estimate the (profile, machine type) pairs the set lacks from the same profile on "
                                       "the other machine types, scaled by their measured speed (said in the report), "
                                       "instead of refusing the set."),
    window: float = typer.Option(60.0, "--window", help="Measurement window per run, seconds."),
    warmup: float = typer.Option(30.0, "--warmup", help="Seconds after every component handles tuples, before the window."),
    settle_max: float = typer.Option(300.0, "--settle-max", help="After the warm-up, the longest a run waits for a steady "
                                                                 "flow (two 30 s windows in a row with the sinks' share of the "
                                                                 "spouts' tuples as the placement gives it, within 5%, and no tree "
                                                                 "failed) before its "
                                                                 "window, seconds; 0: no wait."),
    max_spout_pending: int = typer.Option(100, "--max-spout-pending", help="topology.max.spout.pending of every run (flow control)."),
    load_aware: bool = typer.Option(False, "--load-aware", help="Keep Storm's load-aware, locality-preferring shuffle (default: plain even shuffle, as the planner models it)."),
    strategy: Optional[str] = typer.Option(None, "--strategy", help="Planner strategy of 'planned' [default: the planner's best]."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for bench.json, the plots, the cluster's logs [default: var/bench/<time>]."),
    spec: Optional[Path] = typer.Option(None, "--spec", help="Cluster spec YAML [default: cluster/specs/default.yaml]."),
    home: Optional[Path] = typer.Option(None, "--home", help="The bench cluster's home [default: OUT/cluster]."),
    port_base: Optional[int] = typer.Option(None, "--port-base", help="The bench cluster's first port [default: a free range]."),
    start_timeout: float = typer.Option(300.0, "--start-timeout", help="Seconds a topology may take to handle its first tuples."),
    report_file: Optional[Path] = typer.Option(
        None, "--report", help="Only print (and re-plot) a result written before: a bench's folder or its bench.json, "
                               "also of a bench cut short (its finished runs)."),
    scenario: Optional[str] = typer.Option(
        None, "--scenario", help="'multi-tenant': Linear, Diamond and Star sharing the cluster with priorities and "
                                 "minimums under each scheduler, and a priority change mid-run (docs/concepts/baselines.md); "
                                 "'machine-loss': a machine killed under Linear and returned, under planned, "
                                 "planned-contingency, default and resource_aware (docs/operations/cluster.md)."),
    min_rates: Optional[str] = typer.Option(
        None, "--min-rates", help="multi-tenant: topology=tuples/s pairs [default: a quarter of each one's solo plan]."),
    after: Optional[float] = typer.Option(
        None, "--after", help="Seconds watched after the priority change (multi-tenant, 120) or after the machine "
                              "returns (machine-loss, 240)."),
    down: float = typer.Option(150.0, "--down", help="machine-loss: seconds the machine stays down."),
    victim: Optional[str] = typer.Option(None, "--victim", help="machine-loss: the machine killed [default: the largest]."),
    repeats: int = typer.Option(1, "--repeats", help="machine-loss: rounds, the schedulers alternated; median and range."),
    conf: Optional[List[str]] = typer.Option(
        None, "--conf", "-c", help="Topology config key=value for every run and for --profile-now's rounds (JSON "
                                   "values), e.g. hetsched.cpu.ms.rollingCount=0.5; repeatable."),
    cluster: str = typer.Option("local", "--cluster", help="local: the cgroup cluster of processes; compose: the same "
                                                           "machines as docker-compose containers (docs/docker-compose.md)."),
) -> None:
    """Run topologies under Storm's schedulers and hetsched's plan on the local heterogeneous cluster; compare."""
    from bench import report
    from bench.errors import BenchError
    from bench.profiles import load_profile_set
    from bench.settings import KNOWN_SCHEDULERS, KNOWN_TOPOLOGIES, TOPOLOGIES, BenchSettings, SCHEDULERS, parse_names

    if scenario is not None and cluster != "local":
        raise fail(f"the {scenario} scenario runs on the local cluster only (--cluster local)")
    if scenario == "machine-loss":
        _machine_loss(schedulers, profiles, window if window != 60.0 else 40.0, warmup, down,
                      240.0 if after is None else after, victim, repeats, max_spout_pending, out, spec, port_base,
                      start_timeout, report_file)
        return
    if scenario is not None:
        if scenario != "multi-tenant":
            raise fail(f"unknown scenario {scenario!r}; known: multi-tenant, machine-loss")
        _multi_tenant(schedulers, profiles, window if window != 60.0 else 30.0, warmup if warmup != 30.0 else 20.0,
                      120.0 if after is None else after, min_rates, max_spout_pending, out, spec, port_base,
                      start_timeout, report_file)
        return
    try:
        if report_file is not None:
            path = report.result_path(report_file)
            data = report.read_json(path)
            _plot(data, path, rewrite=False)
            _print(data)
            for p in data.get("plots") or []:
                console.print(f"plot: {p}")
            return
        settings = BenchSettings(
            out_dir=out or _default_out("bench"),
            topologies=parse_names(topologies, KNOWN_TOPOLOGIES, "topology") if topologies else TOPOLOGIES,
            schedulers=parse_names(schedulers, KNOWN_SCHEDULERS, "scheduler") if schedulers else SCHEDULERS,
            profiles=profiles, profile_now=profile_now, window_s=window, warmup_s=warmup, settle_max_s=settle_max,
            max_spout_pending=max_spout_pending, load_aware=load_aware, strategy=strategy,
            start_timeout_s=start_timeout, spec_path=spec, home=home, port_base=port_base, cluster=cluster,
            topology_conf=_topology_conf(conf), fill_by_speed=fill_by_speed,
        )
        if not profile_now:
            load_profile_set(settings.profiles)
    except BenchError as exc:
        raise fail(str(exc)) from None
    code = _run_and_report(settings)
    if code:
        raise typer.Exit(code)


def _run_scenario(module, report_file, make_settings):
    """A scenario's result: read again (``--report``) or run with progress; its path. Faults are one sentence."""
    from bench.errors import BenchError
    from cluster.errors import ClusterError
    from observe.progress import RichReporter

    try:
        if report_file is not None:
            path = report_file / module.RESULT_FILE if report_file.is_dir() else report_file
            return module.read_result(path), path
        settings = make_settings()
        logging.basicConfig(level=logging.WARNING)
        columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=True) as progress:
            data = module.run_scenario(settings, RichReporter(progress))
        return data, Path(data["saved_to"])
    except (BenchError, ClusterError) as exc:  # a bad --spec is the cluster's sentence
        raise fail(str(exc)) from None


def _show_scenario(data: dict, path: Path, plot, tables, headlines) -> None:
    """Plots beside the result (a failure costs the plots only), the tables, the headlines; a run's error exits 1."""
    try:
        drawn = plot(data, path.parent)
    except Exception as exc:  # noqa: BLE001  matplotlib can fail in many ways; the data is already safe
        console.print(f"[yellow]plots not drawn ({type(exc).__name__}: {exc})[/yellow]", highlight=False)
        drawn = []
    for table in tables:
        console.print(table(data))
    for line in headlines(data):
        console.print(f"[bold]{line}[/bold]", highlight=False)
    console.print(f"results: {path}")
    for p in drawn:
        console.print(f"plot: {p}")
    if data.get("error"):
        raise fail(data["error"])


def _multi_tenant(schedulers, profiles, window, warmup, after, min_rates, max_spout_pending, out, spec, port_base,
                  start_timeout, report_file) -> None:
    from bench import multitenant, multitenant_report
    from bench.settings import parse_names

    data, path = _run_scenario(multitenant, report_file, lambda: multitenant.ScenarioSettings(
        out_dir=out or _default_out("multi-tenant"),
        schedulers=parse_names(schedulers, multitenant.SCHEDULERS, "scheduler"),
        profiles=profiles, min_rates=multitenant.parse_min_rates(min_rates), window_s=window,
        warmup_s=warmup, after_s=after, start_timeout_s=start_timeout, max_spout_pending=max_spout_pending,
        spec_path=spec, port_base=port_base))
    _show_scenario(data, path, multitenant_report.plots,
                   (multitenant_report.tenants_table, multitenant_report.summary_table), multitenant_report.headline_lines)


def _machine_loss(schedulers, profiles, window, warmup, down, after, victim, repeats, max_spout_pending, out, spec,
                  port_base, start_timeout, report_file) -> None:
    from bench import machineloss, machineloss_report
    from bench.settings import parse_names

    data, path = _run_scenario(machineloss, report_file, lambda: machineloss.ScenarioSettings(
        out_dir=out or _default_out("machine-loss"),
        schedulers=parse_names(schedulers, machineloss.SCHEDULERS, "scheduler"),
        repeats=repeats, profiles=profiles, victim=victim, warmup_s=warmup, window_s=window, down_s=down,
        after_s=after, start_timeout_s=start_timeout, max_spout_pending=max_spout_pending, spec_path=spec,
        port_base=port_base))
    _show_scenario(data, path, machineloss_report.plot,
                   (machineloss_report.runs_table, machineloss_report.summary_table, machineloss_report.steps_table),
                   machineloss_report.headline_lines)


def demo(
    profile_now: bool = typer.Option(False, "--profile-now", help="Profile the cluster now instead of using the shipped profile set."),
    window: float = typer.Option(60.0, "--window", help="Measurement window per run, seconds."),
    warmup: float = typer.Option(20.0, "--warmup", help="Warm-up per run, seconds."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for the results and plots [default: var/demo/<time>]."),
    simulate: bool = typer.Option(False, "--simulate", help="Only the planner's paper comparison, no cluster (hetsched compare)."),
) -> None:
    """The main job: bring the local cluster up, run Linear under Storm's default scheduler and hetsched's plan, compare, bring it down."""
    from bench.errors import BenchError
    from bench.profiles import load_profile_set, shipped_names
    from bench.settings import DEFAULT_PROFILES, BenchSettings

    if simulate:
        from hetsched.plan_cmd import compare

        compare(optimal_time_limit=None, thread_caps=True)
        return
    if not profile_now and DEFAULT_PROFILES not in shipped_names():
        console.print(f"no profile set is shipped as profiles/{DEFAULT_PROFILES}.json: measuring one on the cluster first "
                      "(as with --profile-now; this takes longer)")
        profile_now = True
    try:
        settings = BenchSettings(
            out_dir=out or _default_out("demo"), topologies=("linear",), schedulers=("default", "planned"),
            profiles=DEFAULT_PROFILES, profile_now=profile_now, window_s=window, warmup_s=warmup,
        )
        if not profile_now:
            load_profile_set(settings.profiles)
    except BenchError as exc:
        raise fail(str(exc)) from None
    if profile_now:
        console.print("profile set: measured now on the cluster (--profile-now)")
    elif DEFAULT_PROFILES in shipped_names():
        console.print(f"profile set: profiles/{DEFAULT_PROFILES}.json, shipped for the default local cluster "
                      "(--profile-now measures one instead)")
    console.print(f"Linear under Storm's default scheduler and under hetsched's plan; results in {settings.out_dir}")
    code = _run_and_report(settings)
    if code:
        raise typer.Exit(code)
