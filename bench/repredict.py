"""Stored ``hetsched bench`` runs predicted again with a profile set, as the bench predicts them now (offline).

Each run's placement (the one Storm ran, Storm's ackers included) is scored as ``bench/run.py`` scores it:
spouts held, the profile set's base load off every capacity, the cluster of the bench itself. Prints each run's
measured input rate R and sink throughput next to the prediction stored with the bench and the one now, and the
summary (every run within 15 %, ``planned`` within 5 %), also over the runs whose window was steady
(``bench.measure.steady``: the flow within 5 %, no tree failed); given several benches, each run's median error over them, and the
summary of those medians. ``--machines`` adds, per run, each machine's measured CPU against what the model charges
it at the rate the run measured (``planner.api.machine_cpu_at``): where a machine below its quota measured less
than its charge, its profiles over-charge it, whatever held the run's rate.

    .venv/bin/python -m bench.repredict BENCH_JSON [BENCH_JSON ...]
        [--profiles profiles/default-cluster.json] [--machines] [--out FILE.txt]
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.measure import STEADY_WITHIN, Throughputs, flow_imbalance, predicted_throughputs, relative_error
from bench.measure import steady as steady_window
from bench.report import failed_trees
from bench.placement import ActualPlacement
from bench.run import prediction_request
from bench.profiles import fill_pass_through_alphas
from cluster.spec import ClusterSpec, load_spec
from planner.api import evaluate_assignments, machine_cpu_at
from planner.model import ProfileRef, ProfileSet
from planner.profiles import machine_base_load
from topologies.catalog import lookup

REPO = Path(__file__).resolve().parents[1]

PROFILES = REPO / "profiles/default-cluster.json"
WITHIN, PLANNED_WITHIN = 0.15, 0.05
AT_QUOTA = 95.0
"""A machine measured at this percent of its quota or more was held there: its charge may be above what it used."""


def bench_setting(bench: dict[str, Any], profile_set: ProfileSet) -> tuple[ClusterSpec, ProfileSet]:
    """The cluster a stored bench ran on (this repository's default for benches that did not store it), and the
    profile set with the pass-through alphas of the bench's topologies filled in, as the bench planned."""
    spec = ClusterSpec.model_validate(bench["cluster"]["spec"]) if bench.get("cluster", {}).get("spec") else load_spec()
    sets, _ = fill_pass_through_alphas(profile_set, sorted({r["topology"] for r in bench["runs"]}))
    return spec, sets


def _request(run: dict[str, Any], profile_set: ProfileSet, spec: ClusterSpec):
    entry = lookup(run["topology"])
    placement = ActualPlacement(executors=run["placement"]["executors"])
    return prediction_request(entry, placement, spec.planner_cluster(machine_base_load(profile_set)),
                              ProfileRef(name=profile_set.name), run.get("parallelism"))


def predict(run: dict[str, Any], profile_set: ProfileSet, spec: ClusterSpec) -> Throughputs:
    """What the bench would predict now for the run's placement."""
    request = _request(run, profile_set, spec)
    evaluation = evaluate_assignments(request.topology, request.cluster, profile_set.entries, request.assignments,
                                      request.options)
    return predicted_throughputs(evaluation, lookup(run["topology"]).spout_ids)


def charged_at_measured_rate(run: dict[str, Any], profile_set: ProfileSet, spec: ClusterSpec) -> dict[str, float]:
    """Machine -> the percent of its quota the model charges it at the run's measured input rate (its type's base
    load in where a worker runs, as the bench's ``predicted_machine_cpu``)."""
    request = _request(run, profile_set, spec)
    base = machine_base_load(profile_set)
    types = {m.id: m.type for m in request.cluster.machines}
    hosting = ActualPlacement(executors=run["placement"]["executors"]).machines_used()
    charged = machine_cpu_at(request.topology, request.cluster, profile_set.entries, request.assignments,
                             run["measured"]["input_rate"], request.options)
    return {m: cpu + (base.get(types[m], 0.0) if m in hosting else 0.0) for m, cpu in charged.items()}


def machines_table(title: str, runs: list[dict[str, Any]], profile_set: ProfileSet, spec: ClusterSpec) -> tuple[Table, dict[str, list[float]]]:
    """Each run's machines, measured / charged at the measured rate; and per machine type, measured - charged
    (points) of the machines below :data:`AT_QUOTA`."""
    machine_ids = list(dict.fromkeys(m["machine"] for r in runs for m in r["machines"]))
    table = Table(title=title, title_justify="left")
    for column in ("run", "measured R", *[f"{m}: measured / charged %" for m in machine_ids]):
        table.add_column(column, justify="right")
    below: dict[str, list[float]] = {}
    for run in runs:
        charged = charged_at_measured_rate(run, profile_set, spec)
        cells = []
        for m in machine_ids:
            measured = next((x for x in run["machines"] if x["machine"] == m), None)
            if measured is None or m not in charged:
                cells.append("-")
                continue
            gap = measured["utilization"] - charged[m]
            held = measured["utilization"] >= AT_QUOTA
            if not held:
                below.setdefault(measured["type"], []).append(gap)
            cells.append(f"{measured['utilization']:.1f} / {charged[m]:.1f} ({gap:+.1f}{', at quota' if held else ''})")
        table.add_row(f"{run['topology']}-{run['scheduler']}", f"{run['measured']['input_rate']:.2f}", *cells)
    return table, below


def summary(errors: list[tuple[str, float]]) -> str:
    planned = [e for s, e in errors if s == "planned"]
    within = sum(abs(e) <= WITHIN for _, e in errors)
    return (f"{within}/{len(errors)} runs within {WITHIN:.0%} (largest |error| {max(abs(e) for _, e in errors):.1%}); "
            f"planned {sum(abs(e) <= PLANNED_WITHIN for e in planned)}/{len(planned)} within {PLANNED_WITHIN:.0%} "
            f"(largest {max((abs(e) for e in planned), default=0.0):.1%})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bench", type=Path, nargs="+")
    parser.add_argument("--profiles", type=Path, default=PROFILES)
    parser.add_argument("--machines", action="store_true",
                        help="also each machine's measured CPU against the model's charge at the measured rate")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    console = Console(record=True, width=160)
    try:
        profile_set = ProfileSet.model_validate_json(args.profiles.read_text())
        benches = [(path, json.loads(path.read_text())) for path in args.bench]
    except (OSError, ValueError) as exc:
        parser.error(f"cannot read the profile set {args.profiles} or a bench result: {str(exc).splitlines()[0]}")
    per_placement: dict[tuple[str, str, tuple], list[float]] = {}  # the same placement -> its measured R per bench
    per_run: dict[tuple[str, str], list[float]] = {}  # (topology, scheduler) -> its error now in every bench
    steady_per_run: dict[tuple[str, str], list[float]] = {}  # the same, steady windows only
    gaps: dict[str, list[float]] = {}  # machine type -> measured - charged, points, below the quota, every bench
    for path, bench in benches:
        spec, sets = bench_setting(bench, profile_set)
        runs = [r for r in bench["runs"] if r.get("status") == "ok" and r.get("placement") and r.get("measured")]
        table = Table(title=f"{path} ({bench.get('started_at', '?')}), profiles {args.profiles.name}", title_justify="left")
        for column in ("run", "measured R", "stored prediction", "error", "prediction now", "error now",
                       "sink measured", "sink now", "sink error now", "flow"):
            table.add_column(column, justify="right")
        stored_errors, errors, sink_errors, steady_errors = [], [], [], []  # (scheduler, error) of this bench
        for run in runs:
            now = predict(run, sets, spec)
            rate, sink = now.input_rate, now.sink_throughput
            measured = run["measured"]
            imbalance = flow_imbalance(Throughputs(**measured), now)
            is_steady = imbalance is not None and steady_window(imbalance, failed_trees(run))
            stored = (run.get("predicted") or {}).get("input_rate")
            e_stored = relative_error(measured["input_rate"], stored) if stored else None
            e_now = relative_error(measured["input_rate"], rate)
            e_sink = relative_error(measured["sink_throughput"], sink)
            if e_stored is not None:
                stored_errors.append((run["scheduler"], e_stored))
            if is_steady:
                per_placement.setdefault(placement_key(run), []).append(measured["input_rate"])
            if e_now is not None:
                errors.append((run["scheduler"], e_now))
                per_run.setdefault((run["topology"], run["scheduler"]), []).append(e_now)
                if is_steady:
                    steady_errors.append((run["scheduler"], e_now))
                    steady_per_run.setdefault((run["topology"], run["scheduler"]), []).append(e_now)
            if e_sink is not None:
                sink_errors.append((run["scheduler"], e_sink))
            table.add_row(f"{run['topology']}-{run['scheduler']}", f"{measured['input_rate']:.2f}",
                          "-" if stored is None else f"{stored:.2f}", _pct(e_stored), f"{rate:.2f}", _pct(e_now),
                          f"{measured['sink_throughput']:.2f}", f"{sink:.2f}", _pct(e_sink),
                          _pct(imbalance) + ("" if imbalance is None or is_steady else " not steady"))
        console.print(table)
        if stored_errors:
            console.print(f"stored predictions: {summary(stored_errors)}")
        if errors:
            console.print(f"predictions now:    {summary(errors)}")
            console.print(f"sink, now:          {summary(sink_errors)}")
            if steady_errors:
                console.print(f"steady runs, now:   {summary(steady_errors)} (flow within {STEADY_WITHIN:.0%}, no tree failed)")
        if args.machines and runs:
            table, below = machines_table(f"{path}: machine CPU, measured / charged at the measured R, % of the quota",
                                          runs, sets, spec)
            console.print(table)
            for machine_type, values in below.items():
                gaps.setdefault(machine_type, []).extend(values)
        console.print()
    if len(args.bench) > 1:
        console.print(across(per_run, len(args.bench)))
        medians = [(scheduler, statistics.median(errors)) for (_, scheduler), errors in sorted(per_run.items())]
        console.print(f"median over the benches, per run: {summary(medians)}")
        steady = [(scheduler, statistics.median(errors)) for (_, scheduler), errors in sorted(steady_per_run.items())]
        if steady:
            console.print(across(steady_per_run, len(args.bench), "the steady runs only"))
            console.print(f"median over the steady runs only: {summary(steady)} "
                          f"({len(steady)} of {len(medians)} runs had a steady window in some bench)")
    if len(args.bench) > 1:
        console.print(repeated(per_placement))
    for machine_type, values in sorted(gaps.items()):
        console.print(f"{machine_type}, below {AT_QUOTA:g} % of its quota: measured - charged at the measured R, median "
                      f"{statistics.median(values):+.1f} points ({min(values):+.1f} to {max(values):+.1f}, {len(values)} runs)")
    if args.out:
        args.out.write_text(console.export_text())
    return 0


def across(per_run: dict[tuple[str, str], list[float]], benches: int, which: str = "every run") -> Table:
    """Each run's error now over the benches: median and range (a placement of Storm's differs from bench to bench,
    each is predicted for the placement it had)."""
    table = Table(title=f"error now over {benches} benches, per run ({which})", title_justify="left")
    for column in ("run", "benches", "median", "range"):
        table.add_column(column, justify="right")
    for (topology, scheduler), errors in sorted(per_run.items()):
        table.add_row(f"{topology}-{scheduler}", str(len(errors)), _pct(statistics.median(errors)),
                      f"{min(errors):+.1%} to {max(errors):+.1%}")
    return table


def placement_key(run: dict[str, Any]) -> tuple[str, str, tuple]:
    """(topology, scheduler, where every executor ran): equal keys, one placement, so one prediction."""
    executors = run["placement"]["executors"]
    return run["topology"], run["scheduler"], tuple(sorted((c, tuple(sorted(m))) for c, m in executors.items()))


def spread_bound(within: float = WITHIN) -> float:
    """The largest max/min of one placement's measured rates that one prediction can hold all within ``within``:
    (1 + within) / (1 - within), 1.35 for 15 %."""
    return (1 + within) / (1 - within)


def repeated(per_placement: dict[tuple[str, str, tuple], list[float]]) -> Table:
    """Placements measured steady in several benches: their measured R's spread. A model predicts a placement one
    rate, so where the spread is above :func:`spread_bound`, no model has every one of those runs within 15 %."""
    table = Table(title="the same placement measured steady in several benches: its measured R (a prediction is "
                        f"one rate: above {spread_bound():.2f}x, no prediction is within {WITHIN:.0%} of every one)",
                  title_justify="left")
    for column in ("run", "benches", "measured R", "max / min", f"<= {spread_bound():.2f}x",
                   f"<= {spread_bound(PLANNED_WITHIN):.3f}x (planned)"):
        table.add_column(column, justify="right")
    for (topology, scheduler, _), rates in sorted(per_placement.items(), key=lambda kv: kv[0][:2]):
        if len(rates) < 2:
            continue
        spread = max(rates) / min(rates)
        table.add_row(f"{topology}-{scheduler}", str(len(rates)), ", ".join(f"{r:.2f}" for r in rates), f"{spread:.3f}",
                      "yes" if spread <= spread_bound() else "[red]no[/red]",
                      "yes" if spread <= spread_bound(PLANNED_WITHIN) else "[red]no[/red]")
    return table


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


if __name__ == "__main__":
    raise SystemExit(main())
