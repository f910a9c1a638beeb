"""Which fixed costs hold on a saturated machine? A bench result re-predicted with each kind of fixed cost scaled.

Issue 18, part 0: the model charges every instance its MET (the CPU it takes at no input) and every
machine its base load (daemons and idle workers) in full, and the placements Storm's schedulers make
(``default-naive``: one instance of everything on every machine) run up to 5x faster than predicted.
This script takes a ``hetsched bench`` result (its placements as Storm ran them and what they measured)
and predicts every run again with the spouts' MET, the bolts' MET and the machines' base load each
scaled by a factor, so you see which fixed cost, if it did not hold, would explain the measurements.
No cluster runs: it is the simulator on recorded placements.

    .venv/bin/python benchmarks/fixed_cost_sensitivity.py [--bench docs/results/bench/bench.json]
        [--profiles profiles/default-cluster.json] [--factors 1,0.5,0]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import predicted_throughputs  # noqa: E402
from bench.profiles import fill_pass_through_alphas  # noqa: E402
from cluster.spec import load_spec  # noqa: E402
from planner.api import evaluate_assignments  # noqa: E402
from planner.model import InstanceAssignment, ProfileEntry, ProfileSet  # noqa: E402
from planner.profiles import machine_base_load  # noqa: E402
from topologies.catalog import lookup, planner_topology  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPOUT_PROFILE = "spout"
SHORT = {"default": "def", "default-naive": "naive", "planned": "plan", "resource_aware": "ras"}


def scaled(entries: list[ProfileEntry], spout_met: float, bolt_met: float) -> list[ProfileEntry]:
    return [e.model_copy(update={"met": e.met * (spout_met if e.profile == SPOUT_PROFILE else bolt_met)})
            for e in entries]


def predicted_sink(run: dict, entries: list[ProfileEntry], base_load: dict[str, float], spec) -> float:
    """The sink throughput the simulator predicts for the placement the run recorded, tuples/s."""
    entry = lookup(run["topology"])
    topology = planner_topology(entry, run["parallelism"])
    ids = {c.id for c in topology.components}
    assignments = [InstanceAssignment(component=c, machine=m)
                   for c, machines in run["placement"]["executors"].items() if c in ids for m in machines]
    evaluation = evaluate_assignments(topology, spec.planner_cluster(base_load), entries, assignments)
    return predicted_throughputs(evaluation, entry.spout_ids).sink_throughput


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", type=Path, default=ROOT / "docs/results/bench/bench.json")
    parser.add_argument("--profiles", type=Path, default=ROOT / "profiles/default-cluster.json")
    parser.add_argument("--factors", default="1,0.5,0", help="factors tried for each kind of fixed cost")
    args = parser.parse_args()
    console = Console(width=200)
    try:
        bench = json.loads(args.bench.read_text())
        runs = [r for r in bench["runs"] if r.get("measured") and r.get("placement")]
        profile_set = ProfileSet.model_validate(json.loads(args.profiles.read_text()))
        factors = [float(f) for f in args.factors.split(",")]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        parser.error(f"cannot read {args.bench} (a hetsched bench.json), {args.profiles} (a profile set) or "
                     f"--factors {args.factors!r}: {str(exc).splitlines()[0]}")
    if not runs:
        parser.error(f"{args.bench} has no run with a measurement and a placement")
    profile_set, _ = fill_pass_through_alphas(profile_set, sorted({r["topology"] for r in runs}))
    base = machine_base_load(profile_set)
    spec = load_spec()
    variants = [(s, b, g) for s in factors for b in factors for g in factors]

    table = Table(title=f"measured / predicted sink throughput - 1, {args.bench.name} re-predicted "
                        "(spout MET x s, bolt MET x b, base load x g)", title_justify="left")
    for column in ("s", "b", "g", *[f"{r['topology'][:3]}/{SHORT.get(r['scheduler'], r['scheduler'])}" for r in runs], "max |err|", "median |err|"):
        table.add_column(column, justify="right")
    for spout_met, bolt_met, gamma in variants:
        entries = scaled(profile_set.entries, spout_met, bolt_met)
        errors = [r["measured"]["sink_throughput"] / predicted_sink(r, entries, {k: v * gamma for k, v in base.items()},
                                                                   spec) - 1 for r in runs]
        table.add_row(f"{spout_met:g}", f"{bolt_met:g}", f"{gamma:g}", *[f"{100 * e:+.0f}%" for e in errors],
                      f"{100 * max(abs(e) for e in errors):.0f}%", f"{100 * statistics.median(abs(e) for e in errors):.0f}%")
    console.print(table)
    console.print(f"profile set {profile_set.name} ({args.profiles.name}); base load {base}; "
                  f"bench of {bench.get('started_at', '?')}", highlight=False)


if __name__ == "__main__":
    main()
