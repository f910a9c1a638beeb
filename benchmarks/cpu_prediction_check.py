"""Does a profile predict a machine's CPU? highCompute alone on each machine type, light to saturated (the paper's Fig. 6).

For every machine type of the running local cluster, the profiled kind (default highCompute)
runs alone on that type's machine, pinned by the hetsched plugin, fed by the rest of Linear on
the other machines (their own work set to 0 ms, so they keep up with any rate). The spout steps
through rates from light to past the saturating rate the profile predicts. Each step gives one
point: the machine's cgroup CPU against TCU = 100 e IR + MET of the profile at the input rate the
instance really handled. Prints a table per point and the mean and worst absolute error per machine
type, in percentage points and relative to the measured CPU; draws a PNG.

    .venv/bin/python -m benchmarks.cpu_prediction_check [--profiles profiles/default-cluster.json]
        [--home CLUSTER_HOME] [--planner URL] [--fractions 0.1,0.3,0.5,0.7,0.9,1.1] [--step-seconds 30]
        [--out profiles/cpu-prediction-check]

Needs a local cluster started with ``--scheduler plugin --conf hetsched.planner.url=URL`` and nothing
else running on it. The paper reports 92% accuracy and a worst error under 8%.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from cluster import running_cluster
from cluster.errors import ClusterError
from cluster.handle import LocalClusterHandle
from observe.machines import load_average
from observe.progress import RichReporter
from planner.errors import PlanningError
from planner.model import ProfileEntry, ProfileSet
from planner.profiles import machine_base_load
from planner.simulator import entry_cpu_pct, entry_rate_at_cpu
from spark_profiling.collector.prediction import PredictionPoint, by_machine_type, point
from spark_profiling.collector.runner import Experiment, ExperimentOptions
from spark_profiling.collector.workflow import check_cluster, nimbus_planner_url, stop_on_signals
from spark_profiling.errors import ProfilingError
from topologies import conf as keys
from topologies.catalog import lookup

console = Console(width=150)
REPO = Path(__file__).resolve().parents[1]
COMPONENT = {"highCompute": "high", "midCompute": "mid", "lowCompute": "low"}


def saturating_rate(entry: ProfileEntry, base_load: float = 0.0) -> float:
    """Input rate at which the profile says the machine is full: (100 - base load - MET) / (100 e)."""
    return max(0.5, min(entry_rate_at_cpu(entry, 100.0 - base_load), 1e9))


def run_type(cluster, planner_url: str, kind: str, entry: ProfileEntry, base_load: float, fractions: list[float],
             step_seconds: float, out_dir: Path) -> list[PredictionPoint]:
    """One round: ``kind`` alone on the machine of ``entry.machine_type`` at each fraction of its saturating rate."""
    rate_sat = saturating_rate(entry, base_load)
    rates = [round(f * rate_sat, 2) for f in fractions]
    helpers = {keys.cpu_ms_key(p): 0.0 for p in keys.DEFAULT_CPU_MS if p != kind}
    options = ExperimentOptions(topology="linear", kinds=[kind], types=[entry.machine_type], rates=rates,
                                step_seconds=step_seconds, warmup_seconds=20.0, stop_at_saturation=False,
                                conf=helpers, name_prefix="hetsched-check")
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), TextColumn("left"),
                  TimeRemainingColumn(), console=console, transient=True) as bar, stop_on_signals():
        report = Experiment(cluster, planner_url, out_dir, options, RichReporter(bar)).run()
    (round_,) = report.rounds
    machine = round_.measured[COMPONENT[kind]]
    points = []
    for step in round_.steps:
        if machine in step.machine_cpu and COMPONENT[kind] in step.handled:
            points.append(point(entry, step.offered, step.handled[COMPONENT[kind]], step.machine_cpu[machine],
                                base_load))
    return points


def plot(points: list[PredictionPoint], entries: dict[str, ProfileEntry], base_load: dict[str, float], kind: str,
         path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    types = list(dict.fromkeys(p.machine_type for p in points))
    fig, axes = plt.subplots(1, len(types), figsize=(4.5 * len(types), 4), squeeze=False)
    for ax, machine_type in zip(axes[0], types):
        mine = [p for p in points if p.machine_type == machine_type]
        entry = entries[machine_type]
        top = max(p.input_rate for p in mine) * 1.1
        base = base_load.get(machine_type, 0.0)
        ax.plot([0, top], [base + entry_cpu_pct(entry, 0.0), base + entry_cpu_pct(entry, top)], "-",
                label="base load + 100 e IR + MET")
        ax.plot([p.input_rate for p in mine], [p.measured for p in mine], "o", label="measured (machine cgroup)")
        ax.axhline(100, color="grey", lw=0.8, ls=":")
        ax.set_title(f"{kind} on {machine_type}")
        ax.set_xlabel("input rate (tuples/s)")
        ax.set_ylabel("CPU (% of the machine)")
        ax.set_ylim(0, 115)
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=Path, default=REPO / "profiles" / "default-cluster.json")
    parser.add_argument("--kind", default="highCompute", choices=sorted(COMPONENT))
    parser.add_argument("--home", type=Path, default=None, help="the local cluster's home (default: $HETSCHED_CLUSTER_HOME)")
    parser.add_argument("--planner", default=None, help="default: Nimbus's hetsched.planner.url")
    parser.add_argument("--fractions", default="0.1,0.3,0.5,0.7,0.9,1.1",
                        help="spout rates as fractions of the saturating rate the profile predicts")
    parser.add_argument("--step-seconds", type=float, default=30.0)
    parser.add_argument("--types", default=None, help="machine types to check, comma-separated (default: all)")
    parser.add_argument("--out", type=Path, default=REPO / "var" / "benchmarks" / "cpu-prediction-check",
                        help="writes OUT.png and OUT.json")
    args = parser.parse_args()
    try:
        fractions = [float(f) for f in args.fractions.split(",")]
        profile_set = ProfileSet.model_validate_json(args.profiles.read_text())
        local = running_cluster(args.home)
        if local is None:
            raise ProfilingError("no local cluster is running (give --home).")
        cluster = LocalClusterHandle(local)
        planner_url = args.planner or nimbus_planner_url(cluster)
        check_cluster(cluster, planner_url or "")
        entries = {e.machine_type: e for e in profile_set.entries if e.profile == args.kind}
        base_load = machine_base_load(profile_set)
        types = args.types.split(",") if args.types else [m.type for m in cluster.machines()]
        missing = [t for t in types if t not in entries]
        if missing:
            raise ProfilingError(f"{args.profiles} has no {args.kind} profile for {', '.join(missing)}.")
        lookup("linear")
    except (OSError, ValueError, ProfilingError, ClusterError, PlanningError) as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        return 1

    load_before = load_average()
    points: list[PredictionPoint] = []
    try:
        with tempfile.TemporaryDirectory(prefix="hetsched-check-") as tmp:
            for machine_type in dict.fromkeys(types):
                entry = entries[machine_type]
                base = base_load.get(machine_type, 0.0)
                console.print(f"{args.kind} on {machine_type}: e={entry.e:.5g} s/tuple, MET={entry.met:.1f}%, "
                              f"machine base load {base:.1f}%, saturating at {saturating_rate(entry, base):.1f} "
                              "tuples/s by the profile", highlight=False)
                points += run_type(cluster, planner_url, args.kind, entry, base, fractions, args.step_seconds, Path(tmp))
    except ProfilingError as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        return 1
    load_after = load_average()

    table = Table(title=f"{args.kind}: machine CPU measured vs predicted by {args.profiles.name}", title_justify="left")
    for column in ("machine type", "offered", "input rate", "measured %", "predicted %", "error (pp)", "error (ratio)"):
        table.add_column(column, justify="left" if column == "machine type" else "right")
    for p in points:
        table.add_row(p.machine_type, f"{p.offered:.1f}", f"{p.input_rate:.2f}", f"{p.measured:.1f}",
                      f"{p.predicted:.1f}", f"{p.error_points:+.1f}", f"{p.error_ratio:.1%}")
    console.print(table)
    summary = Table(title="errors per machine type", title_justify="left")
    for column in ("machine type", "points", "mean |error| pp", "worst |error| pp", "mean |error| ratio",
                   "worst |error| ratio", "accuracy"):
        summary.add_column(column, justify="left" if column == "machine type" else "right")
    summaries = by_machine_type(points) if points else []
    for s in summaries:
        summary.add_row(s.machine_type, str(s.points), f"{s.mean_abs_points:.2f}", f"{s.worst_abs_points:.2f}",
                        f"{s.mean_ratio:.1%}", f"{s.worst_ratio:.1%}", f"{s.accuracy:.1%}")
    console.print(summary)
    console.print(f"host load average {load_before} before, {load_after} after (2 cores, shared)", highlight=False)
    png, data = args.out.with_suffix(".png"), args.out.with_suffix(".json")
    if points:
        plot(points, entries, base_load, args.kind, png)
        data.write_text(json.dumps({
            "profiles": str(args.profiles), "kind": args.kind, "machine_base_load": base_load, "fractions": fractions, "step_seconds": args.step_seconds,
            "load_average": {"before": load_before, "after": load_after},
            "points": [{**p.__dict__, "error_points": p.error_points, "error_ratio": p.error_ratio} for p in points],
            "summary": [{**s.__dict__, "accuracy": s.accuracy} for s in summaries],
        }, indent=2) + "\n")
        console.print(f"wrote {png} and {data}")
    return 0 if points else 1


if __name__ == "__main__":
    sys.exit(main())
