"""Which executor holds a stored ``hetsched bench`` run back: each bolt executor's rate as an input rate R.

A run's R is its spouts' emit rate. In a steady run every bolt executor handles its share of the flow at that R.
Where a queue grows in front of one (a multi-lang bolt on a machine at its quota), that executor handles less, and
what it handles, divided by its share of the flow per unit R, is the R it keeps up with: the placement sustains no
more. So per run: each bolt executor's ``per_second`` (``bench.json``'s ``executors``; older benches do not keep them) over
its component's predicted input per instance per unit R (the bench's own evaluation of the placement; shuffle and
fields split a component's input evenly), the least of them with its machine, and that R's error against the
prediction beside the error of the emit rate.

    .venv/bin/python -m benchmarks.slowest_executor BENCH_JSON [BENCH_JSON ...] [--profiles SET] [--out FILE.txt]
"""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.report import failed_trees
from bench.repredict import PROFILES, _request, bench_setting, summary
from cluster.spec import ClusterSpec
from planner.api import evaluate_assignments
from planner.model import ProfileSet


@dataclass(frozen=True)
class KeptUp:
    """The input rate one bolt executor kept up with in a run's window."""

    component: str
    task: int
    machine: str
    per_second: float
    input_rate: float
    """per_second over the executor's share of the flow per unit R."""


def kept_up(run: dict[str, Any], share_per_unit_r: dict[str, float]) -> list[KeptUp]:
    """Each bolt executor of the run (those with a share), slowest first; a pure function of the stored run."""
    found = [KeptUp(e["component"], e["task"], e["machine"], e["per_second"], e["per_second"] / share_per_unit_r[e["component"]])
             for e in run.get("executors") or [] if share_per_unit_r.get(e["component"], 0.0) > 0]
    return sorted(found, key=lambda k: k.input_rate)


def shares(run: dict[str, Any], profile_set: ProfileSet, spec: ClusterSpec) -> tuple[float, dict[str, float]]:
    """The predicted R of the run's placement, and each bolt's input per instance per unit R."""
    request = _request(run, profile_set, spec)
    evaluation = evaluate_assignments(request.topology, request.cluster, profile_set.entries, request.assignments,
                                      request.options)
    bolts = {c.id for c in request.topology.components if c.kind == "bolt"}
    per: dict[str, list[float]] = {}
    for a in evaluation.assignments:
        if a.component in bolts:
            per.setdefault(a.component, []).append(a.input_rate)
    r = evaluation.input_rate
    return r, {c: sum(rates) / len(rates) / r for c, rates in per.items()} if r > 0 else {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bench", type=Path, nargs="+")
    parser.add_argument("--profiles", type=Path, default=PROFILES)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    try:
        profile_set = ProfileSet.model_validate_json(args.profiles.read_text())
        benches = [(path, json.loads(path.read_text())) for path in args.bench]
    except (OSError, ValueError) as exc:
        parser.error(f"cannot read the profile set {args.profiles} or a bench result: {str(exc).splitlines()[0]}")
    console = Console(record=True, width=170)
    emitted, sustained = [], []
    for path, bench in benches:
        spec, sets = bench_setting(bench, profile_set)
        table = Table(title=f"{path}: the slowest bolt executor of each run, as an input rate", title_justify="left")
        for column in ("run", "predicted R", "emitted R", "error", "slowest executor", "its R", "error",
                       "fastest executor's R", "trees failed"):
            table.add_column(column, justify="right")
        runs = [r for r in bench["runs"] if r.get("status") == "ok" and r.get("executors") and r.get("placement")]
        if not runs:
            console.print(f"{path}: no run keeps its executors' rates (benches before session 15 do not)")
            continue
        for run in runs:
            predicted, per_unit = shares(run, sets, spec)
            executors = kept_up(run, per_unit)
            if predicted <= 0 or not executors:
                continue
            slowest, fastest = executors[0], executors[-1]
            measured = run["measured"]["input_rate"]
            emitted.append((run["scheduler"], measured / predicted - 1))
            sustained.append((run["scheduler"], slowest.input_rate / predicted - 1))
            table.add_row(f"{run['topology']}-{run['scheduler']}", f"{predicted:.2f}", f"{measured:.2f}",
                          f"{measured / predicted - 1:+.1%}", f"{slowest.component}:{slowest.task} on {slowest.machine}",
                          f"{slowest.input_rate:.2f}", f"{slowest.input_rate / predicted - 1:+.1%}",
                          f"{fastest.input_rate:.2f}", str(failed_trees(run)))
        console.print(table)
    if emitted:
        console.print(f"emitted R:           {summary(emitted)}")
        console.print(f"slowest executor's R: {summary(sustained)}")
    if args.out:
        args.out.write_text(console.export_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
