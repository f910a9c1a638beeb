"""``hetsched aggregate`` (raw worker records -> the planner's ProfileSet) and ``hetsched profile`` (measure, then aggregate)."""
from __future__ import annotations

import logging
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

from hetsched.errors import fail
from planner.client import TOKEN_ENV, URL_ENV, put_summary

console = Console(width=None if sys.stdout.isatty() else 160)
"""Wide when piped, so a log keeps every digit of the table."""


class InputFormat(str, Enum):
    jsonl = "jsonl"
    parquet = "parquet"


def _entries_table(profile_set) -> Table:
    table = Table(title=f"profile set {profile_set.name}")
    for column in ("profile", "machine type", "e (s/tuple)", "MET (%)", "idle MET (%)", "alpha", "R²", "samples",
                   "rates (tuples/s)"):
        table.add_column(column, justify="left" if column in ("profile", "machine type") else "right")
    for e in profile_set.entries:
        low, high = e.rate_range or (0.0, 0.0)
        table.add_row(
            e.profile, e.machine_type, f"{e.e:.6g}", f"{e.met:.3f}", f"{e.idle_met:.3f}" if e.idle_met else "-",
            f"{e.alpha:.3f}",
            "-" if e.r2 is None else f"{e.r2:.3f}", str(e.samples), f"{low:.1f}..{high:.1f}",
        )
    return table


def aggregate(
    inputs: Optional[List[str]] = typer.Argument(None, help="Raw record files or folders: JSON lines (.jsonl, .gz) or Parquet."),
    store: Optional[Path] = typer.Option(None, "--store", help="The service's records store (its records folder or data directory): read --topology's records from it."),
    topology: Optional[str] = typer.Option(None, "--topology", "-t", help="With --store: the topology whose records to aggregate."),
    since: Optional[str] = typer.Option(None, "--since", help="Only samples from then on: a duration back from now (30m, 2h, 1d) or an ISO time."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Where to write the ProfileSet (JSON; default with --store: <topology>-live.json)."),
    name: Optional[str] = typer.Option(None, "--name", help="The set's name (default: --put NAME, else the output file's stem)."),
    put: Optional[str] = typer.Option(None, "--put", metavar="NAME", help="Also store the set in the planner under NAME."),
    planner: Optional[str] = typer.Option(None, "--planner", envvar=URL_ENV, help="The planning service (default http://127.0.0.1:8765)."),
    token: Optional[str] = typer.Option(None, "--token", envvar=TOKEN_ENV, help="Bearer token, where the planner needs one."),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (default local[*])."),
    min_samples: int = typer.Option(5, "--min-samples", min=2, help="Fewest intervals a (profile, machine type) pair needs."),
    min_rate_spread: float = typer.Option(0.3, "--min-rate-spread", min=0.0, max=1.0, help="Least (greatest - least rate) / greatest rate of a pair's intervals; under it e and MET cannot be told apart."),
    max_e_error: float = typer.Option(0.5, "--max-e-error", min=0.0, help="Greatest standard error of e relative to e; over it the fit is poor."),
    input_format: Optional[InputFormat] = typer.Option(None, "--format", help="Force the input format (default: by file name)."),
    conf: Optional[List[str]] = typer.Option(None, "--conf", "-c", help="Spark setting KEY=VALUE; repeatable."),
) -> None:
    """Fit e, MET and alpha per (profile key, machine type) from raw worker records with PySpark."""
    import time

    from spark_profiling.aggregate import parse_conf, run, set_name
    from spark_profiling.errors import ProfilingError
    from spark_profiling.fit import FitCriteria
    from spark_profiling.inputs import parse_since, store_topology_folders
    from spark_profiling.publish import put_profile_set
    from spark_profiling.report import headline, notes

    logging.basicConfig(level=logging.INFO, format="%(message)s", handlers=[RichHandler(console=Console(stderr=True), show_path=False)])
    logging.getLogger("py4j").setLevel(logging.WARNING)
    try:
        since_ts = parse_since(since, time.time()) if since else None
        if store is not None:
            if inputs:
                raise ProfilingError("give record files or --store, not both.")
            if not topology:
                raise ProfilingError("--store needs --topology NAME (the store holds records per topology).")
            inputs = store_topology_folders(store, topology, since_ts)
            out = out or Path(f"{topology}-live.json")
        elif topology:
            raise ProfilingError("--topology reads from a records store: give --store DIR too.")
        if not inputs:
            raise ProfilingError("give record files or folders, or --store DIR --topology NAME.")
        if out is None:
            raise ProfilingError("give --out FILE for the profile set.")
        profile_set_name = set_name(out, name, put)
        criteria = FitCriteria(min_samples=min_samples, min_rate_spread=min_rate_spread, max_e_error=max_e_error)
        title = f"aggregating {len(inputs)} input(s) with Spark"
        with console.status(f"{title} ...") as status:
            profile_set = run(
                inputs, out, profile_set_name, min_samples,
                input_format.value if input_format else None, master, parse_conf(conf or []),
                progress=lambda line: status.update(f"{title}: {line}"), criteria=criteria, since=since_ts,
            )
        console.print(_entries_table(profile_set))
        console.print(headline(profile_set), highlight=False)
        for line in notes(profile_set):
            console.print(f"[yellow]{line}[/yellow]", highlight=False)
        console.print(f"wrote {out}")
        if put:
            stored = put_profile_set(profile_set, put, planner, token)
            console.print(put_summary(stored, "in the planner"), highlight=False)
    except ProfilingError as exc:
        raise fail(str(exc)) from None


def _names(values: Optional[List[str]]) -> Optional[List[str]]:
    """``--kinds a,b --kinds c`` -> ``[a, b, c]``."""
    names = [n.strip() for v in values or [] for n in v.split(",") if n.strip()]
    return names or None


def _steps(text: Optional[str]) -> tuple[int, Optional[List[float]]]:
    """``--steps 5`` (rate steps per round) or ``--steps 2,5,10`` (fixed spout rates, tuples/s)."""
    from spark_profiling.errors import ProfilingError

    if not text:
        return 5, None
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if len(parts) == 1 and parts[0].isdigit():
        count = int(parts[0])
        if not 1 <= count <= 50:
            raise ProfilingError(f"--steps must be from 1 to 50 steps, not {count}.")
        return count, None
    try:
        rates = [float(p) for p in parts]
    except ValueError:
        raise ProfilingError(f"--steps {text!r} is neither a number of steps nor a list of rates like 2,5,10.") from None
    if not rates or any(not (0 < r < 1e6) for r in rates):
        raise ProfilingError(f"--steps rates must be tuples/s above 0, not {text!r}.")
    return len(rates), rates


def profile(
    topology: str = typer.Argument(..., help="The catalog topology whose kinds of work to profile (linear, diamond, ...)."),
    planner: Optional[str] = typer.Option(None, "--planner", help="The planner the cluster's Nimbus plugin reads plans from (default: Nimbus's hetsched.planner.url)."),
    token: Optional[str] = typer.Option(None, "--token", envvar=TOKEN_ENV, help="Bearer token, where the planner needs one."),
    out: Path = typer.Option(Path("var/profiling"), "--out", "-o", help="Folder for the raw records, the experiment report and the profile set."),
    kinds: Optional[List[str]] = typer.Option(None, "--kinds", help="Profile keys to measure, comma-separated or repeated (default: all of the topology's)."),
    types: Optional[List[str]] = typer.Option(None, "--types", help="Machine types to measure on (default: all of the cluster's)."),
    steps: Optional[str] = typer.Option(None, "--steps", help="Rate steps per round (default 5, the last past saturation), or fixed spout rates such as 2,5,10."),
    spout_steps: int = typer.Option(3, "--spout-steps", min=1, max=50, help="Rate steps of each spout round (the spouts are measured in rounds of their own)."),
    step_seconds: float = typer.Option(20.0, "--step-seconds", min=5.0, help="Seconds per rate step (Nimbus gets counts every executor.metrics.frequency.secs)."),
    warmup_seconds: float = typer.Option(20.0, "--warmup-seconds", min=0.0, help="Seconds after tuples flow before the first record of a round."),
    no_stop: bool = typer.Option(False, "--no-stop", help="Run every step even after a machine saturated."),
    conf: Optional[List[str]] = typer.Option(None, "--conf", "-c", help="Topology config key=value for every round (JSON values); repeatable."),
    put: Optional[str] = typer.Option(None, "--put", metavar="NAME", help="Store the aggregated set in the planner under NAME."),
    name: Optional[str] = typer.Option(None, "--name", help="The set's name (default: --put NAME, else profiles-<run id>)."),
    min_samples: int = typer.Option(5, "--min-samples", min=2, help="Fewest intervals a (profile, machine type) pair needs."),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (default local[*])."),
    no_aggregate: bool = typer.Option(False, "--no-aggregate", help="Only collect the raw records."),
    home: Optional[Path] = typer.Option(None, "--home", envvar="HETSCHED_CLUSTER_HOME", help="The local cluster's home (default: var/clusters/<name>)."),
    spec: Optional[Path] = typer.Option(None, "--spec", help="The cluster's spec YAML (default: cluster/specs/default.yaml)."),
) -> None:
    """Measure every kind of work of TOPOLOGY on every machine type of the running cluster, then aggregate with Spark."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from cluster import running_cluster
    from cluster.errors import ClusterError
    from cluster.handle import LocalClusterHandle
    from observe.progress import RichReporter
    from spark_profiling.collector.runner import ExperimentOptions
    from spark_profiling.collector.workflow import nimbus_planner_url, profile as run_profile
    from spark_profiling.errors import ProfilingError
    from spark_profiling.report import notes
    from topologies.errors import TopologyError
    from topologies.submission import parse_conf as parse_topology_conf

    logging.basicConfig(level=logging.WARNING, format="%(message)s", handlers=[RichHandler(console=Console(stderr=True), show_path=False)])
    try:
        step_count, rates = _steps(steps)
        options = ExperimentOptions(
            topology=topology, kinds=_names(kinds), types=_names(types), steps=step_count, rates=rates,
            spout_steps=spout_steps,
            step_seconds=step_seconds, warmup_seconds=warmup_seconds, stop_at_saturation=not no_stop,
            conf=parse_topology_conf(conf),
        )
        local = running_cluster(home, spec)
        if local is None:
            raise ProfilingError("no local cluster is running (give --home, or start one with "
                                 "'hetsched cluster up --scheduler plugin --conf hetsched.planner.url=URL').")
        cluster = LocalClusterHandle(local)
        planner_url = planner or nimbus_planner_url(cluster)
        if not planner_url:
            raise ProfilingError("no planner: give --planner URL (Nimbus's storm.yaml names none).")
        columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
        with Progress(*columns, console=console, transient=True) as bar:
            result = run_profile(
                cluster, planner_url, out, options, name=name, put=put, token=token, min_samples=min_samples,
                master=master, aggregate=not no_aggregate, reporter=RichReporter(bar),
            )
    except (ProfilingError, TopologyError, ClusterError) as exc:
        raise fail(str(exc)) from None
    report = result.experiment
    console.print(f"collected {sum(r.records for r in report.rounds)} records of {len(report.pairs)} pairs in "
                  f"{report.collection_s:g} s ({len(report.rounds)} rounds); load average "
                  f"{report.load_average_start} -> {report.load_average_end}", highlight=False)
    console.print(f"wrote {report.records_path} and {result.experiment_path}")
    if result.profile_set is not None:
        console.print(_entries_table(result.profile_set))
        console.print(f"aggregated with Spark in {result.aggregation_s:g} s; wrote {result.profile_path}", highlight=False)
        for line in notes(result.profile_set):
            console.print(f"[yellow]{line}[/yellow]", highlight=False)
    if result.stored_as:
        console.print(f"stored profile set {result.stored_as} in the planner at {planner_url}")
