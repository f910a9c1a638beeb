"""Each machine type's idle executor thread, measured on saturated machines, into a profile set's ``idle_met``.

An executor thread with nothing to do runs its wait strategy (``hetsched submit`` sets it to sleep 1 ms at a time)
and costs CPU even at no input. On the local cluster that cost depends on the machine's load, not the thread's own
work: 1.1-1.2 % of a core on a machine at 30-45 % of its quota, 0.2-0.9 % on one at its quota, where the cgroup
throttles every thread (docs/results/README.md, "Idle executor threads"). The planner predicts the rate at
which the bottleneck machine reaches its quota, so the saturated level is the one that decides R: it becomes every
entry's ``idle_met`` (percent of the machine), the least the model charges an instance (docs/model.md, "Idle
executor threads").

The level of a type is the median thread CPU of ``--component``'s executors on machines at ``--min-utilization``
percent of their quota or more, in ``benchmarks/saturated_executor_cpu.py`` runs (its JSON, ``--saturated``).

    .venv/bin/python -m bench.idle_met --saturated FILE.json [FILE.json ...] [--component high]
        [--min-utilization 90] [--profiles profiles/default-cluster.json] [--out FILE.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

from planner.model import ProfileSet
from planner.profiles import with_idle_met

REPO = Path(__file__).resolve().parents[1]

PROFILES = REPO / "profiles/default-cluster.json"


def saturated_executors(runs: list[dict[str, Any]], component: str, min_utilization: float) -> Iterator[dict[str, Any]]:
    """``component``'s executor rows, in ``benchmarks/saturated_executor_cpu.py`` runs, on machines at or over
    ``min_utilization`` percent of their quota."""
    for run in runs:
        busy = {m["machine"] for m in run["machines"] if m["measured_pct"] >= min_utilization}
        yield from (x for x in run["executors"] if x["component"] == component and x["machine"] in busy)


def saturated_levels(runs: list[dict[str, Any]], component: str, min_utilization: float) -> dict[str, list[float]]:
    """Machine type -> the thread CPU (percent of the machine) of ``component``'s executors on machines at or over
    ``min_utilization`` percent of their quota."""
    levels: dict[str, list[float]] = defaultdict(list)
    for x in saturated_executors(runs, component, min_utilization):
        levels[x["machine_type"]].append(float(x["thread_pct"]))
    return dict(levels)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--saturated", type=Path, nargs="+", required=True,
                        help="benchmarks/saturated_executor_cpu.py JSON files (the shipped set's came from the run named in its source.idle_met)")
    parser.add_argument("--component", default="high")
    parser.add_argument("--min-utilization", type=float, default=90.0)
    parser.add_argument("--profiles", type=Path, default=PROFILES)
    parser.add_argument("--out", type=Path, help="where the set goes (default: --profiles, rewritten)")
    args = parser.parse_args(argv)
    try:
        runs = [run for path in args.saturated for run in json.loads(path.read_text())["runs"]]
        levels = saturated_levels(runs, args.component, args.min_utilization)
        profile_set = ProfileSet.model_validate_json(args.profiles.read_text())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        parser.error(f"cannot read the saturated runs ({', '.join(map(str, args.saturated))}) or the profile set "
                     f"{args.profiles}: {str(exc).splitlines()[0]}")
    if not levels:
        print(f"no {args.component} executor ran on a machine at {args.min_utilization:g}% of its quota or more in "
              f"{', '.join(map(str, args.saturated))}", file=sys.stderr)
        return 1
    medians = {t: statistics.median(v) for t, v in sorted(levels.items())}
    for t, values in sorted(levels.items()):
        print(f"{t}: idle_met {medians[t]:.3f} % of the machine (median of {len(values)}: "
              + ", ".join(f"{v:.3f}" for v in sorted(values)) + ")")
    measured_in = ", ".join(str(p.resolve().relative_to(REPO)) if p.resolve().is_relative_to(REPO) else str(p)
                            for p in args.saturated)
    updated = with_idle_met(profile_set, medians, f"{measured_in}: median thread CPU of {args.component}'s executors "
                            f"on machines at {args.min_utilization:g}% of their quota or more")
    out = args.out or args.profiles
    out.write_text(json.dumps(updated.model_dump(mode="json", exclude_unset=True), indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
