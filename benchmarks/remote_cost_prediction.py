"""Each run of a ``hetsched bench`` result predicted with and without the remote-tuple cost, against its measurement.

Reads a bench.json, re-evaluates every run's placement (the executors where Storm ran them) with two profile sets,
one with ``remote_send`` / ``remote_receive`` and one without (the same set otherwise), on the planner's cluster
(capacity 100 less each type's base load, as the bench plans), and prints the measured input rate beside both
predictions and their errors (issue 18 part 2).

    .venv/bin/python benchmarks/remote_cost_prediction.py BENCH_JSON --with SET.json --without profiles/default-cluster.json \
        [--spouts-held] [--out file.txt]

``--spouts-held`` predicts with ``options.spouts_held`` (spouts charged no MET, as ``hetsched bench`` predicts its
free-running runs, docs/model.md). Errors are the bench's: (measured - predicted) / predicted.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench.profiles import fill_pass_through_alphas  # noqa: E402
from cluster.spec import load_spec  # noqa: E402
from planner.api import evaluate_assignments  # noqa: E402
from planner.model import InstanceAssignment, PlanOptions, ProfileSet  # noqa: E402
from bench.measure import relative_error  # noqa: E402
from planner.profiles import machine_base_load  # noqa: E402
from topologies.catalog import lookup, planner_topology  # noqa: E402


def predict(run: dict, profile_set: ProfileSet, spec, spouts_held: bool = False) -> tuple[float, dict]:
    """The closed-form rate of the run's placement with this set, and what remote tuples cost each machine there."""
    topology = planner_topology(lookup(run["topology"]))
    profile_set, _ = fill_pass_through_alphas(profile_set, [run["topology"]])
    cluster = spec.planner_cluster(machine_base_load(profile_set))
    executors = run["placement"]["executors"]
    assignments = [InstanceAssignment(component=c.id, machine=m) for c in topology.components
                   for m in executors.get(c.id, [])]
    evaluation = evaluate_assignments(topology, cluster, profile_set.entries, assignments,
                                      PlanOptions(spouts_held=spouts_held))
    return evaluation.input_rate, evaluation.stats.get("remote_cpu", {})


def _error(measured: float, predicted: float) -> str:
    error = relative_error(measured, predicted)
    return "no rate predicted" if error is None else f"{error:+.1%}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", type=Path)
    parser.add_argument("--with", dest="with_remote", type=Path, required=True)
    parser.add_argument("--without", type=Path, required=True)
    parser.add_argument("--spouts-held", action="store_true", help="predict with options.spouts_held")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    console = Console(width=160, record=True, highlight=False)
    bench = json.loads(args.bench.read_text())
    sets = {name: ProfileSet.model_validate_json(path.read_text())
            for name, path in (("with", args.with_remote), ("without", args.without))}
    spec = load_spec()
    table = Table(title=f"{args.bench}: measured input rate against the prediction of the same placement")
    for column in ("run", "placement", "measured", "predicted without", "error", "predicted with remote", "error",
                   "bench's own prediction", "remote CPU at R (percent of each machine)"):
        table.add_column(column, justify="right")
    for run in bench["runs"]:
        if run.get("status") != "ok":
            continue
        measured = run["measured"]["input_rate"]
        without, _ = predict(run, sets["without"], spec, args.spouts_held)
        with_remote, remote = predict(run, sets["with"], spec, args.spouts_held)
        placement = ", ".join(f"{c} {'/'.join(m.split('-')[0][0] for m in ms)}"
                              for c, ms in run["placement"]["executors"].items() if not c.startswith("__"))
        table.add_row(run["name"], placement, f"{measured:.2f}", f"{without:.2f}", _error(measured, without),
                      f"{with_remote:.2f}", _error(measured, with_remote),
                      f"{run['predicted']['input_rate']:.2f}",
                      ", ".join(f"{m} {v:.2f}" for m, v in sorted(remote.items())))
    console.print(table)
    console.print(("spouts held (no spout MET); " if args.spouts_held else "spouts charged their MET; ")
                  + "error = (measured - predicted) / predicted; placement: each component's executors by machine "
                  "(s small-1, m medium-1, l large-1)")
    if args.out:
        args.out.write_text(console.export_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
