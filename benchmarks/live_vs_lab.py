"""A topology's profiles from its own worker records (the service's records store) next to the lab set.

For every (profile key, machine type) pair the live records cover: the live ``e`` and ``MET`` (or,
for a pair left out, its verdict and what the line would have given), the lab set's (default
profiles/default-cluster.json), and both sets' CPU at the rate the topology ran at, percent of the
machine (``100 * e * IR + MET``, IR the middle of the pair's live rates). Lab ``e`` charges the
machine's whole cgroup CPU (the worker JVM's work per tuple too); live ``e`` the executor's thread
and shell subprocess only (``cpu_basis: thread``).

    .venv/bin/python benchmarks/live_vs_lab.py --store /tmp/s5-aggregate/live/records --topology metrics-records \\
        --out docs/results/measurements/issue19/live-vs-lab-one-rate.txt
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from planner.model import ProfileSet  # noqa: E402
from spark_profiling.aggregate import aggregate  # noqa: E402
from spark_profiling.errors import ProfilingError  # noqa: E402
from spark_profiling.inputs import resolve_inputs, store_topology_folders  # noqa: E402
from spark_profiling.session import spark_session  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--topology", required=True)
    parser.add_argument("--lab", type=Path, default=REPO / "profiles/default-cluster.json")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--min-samples", type=int, default=5)
    args = parser.parse_args()
    lab = ProfileSet.model_validate_json(args.lab.read_text())
    lab_by = {(e.profile, e.machine_type): e for e in lab.entries}
    with spark_session("local[2]", {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"}) as spark:
        try:
            live = aggregate(spark, resolve_inputs(store_topology_folders(args.store, args.topology)), "live", args.min_samples)
            entries, skipped, source = live.entries, live.source["skipped_pairs"], live.source
        except ProfilingError as exc:
            # Every pair left out: the job's sentence names them; rerun with no criteria to show the would-be values.
            from spark_profiling.fit import FitCriteria

            loose = aggregate(spark, resolve_inputs(store_topology_folders(args.store, args.topology)), "live",
                              args.min_samples, FitCriteria(min_rate_spread=0.0, max_e_error=float("inf")))
            entries, skipped, source = [], [
                {"profile": e.profile, "machine_type": e.machine_type, "samples": e.samples, "verdict": "left_out",
                 "reason": str(exc), "fitted": {"e": e.e, "met": e.met, "r2": e.r2, "rate_min": e.rate_range[0],
                                                "rate_max": e.rate_range[1]}} for e in loose.entries], loose.source
    lines = [f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} live_vs_lab: store {args.store}, topology "
             f"{args.topology}, runs {source.get('runs')}, lab set {args.lab.name}",
             f"{'profile':<12} {'type':<7} {'live e':>9} {'lab e':>9} {'e diff':>7} {'live MET':>8} {'lab MET':>8} "
             f"{'IR':>7} {'CPU live':>8} {'CPU lab':>8} samples  verdict"]

    def row(profile, machine_type, e, met, rate, samples, verdict):
        ref = lab_by.get((profile, machine_type))
        cpu_live = 100 * e * rate + met
        if ref is None:
            lines.append(f"{profile:<12} {machine_type:<7} {e:>9.4g} {'-':>9} {'-':>7} {met:>8.2f} {'-':>8} {rate:>7.2f} "
                         f"{cpu_live:>8.2f} {'-':>8} {samples:>7}  {verdict}")
            return
        lines.append(f"{profile:<12} {machine_type:<7} {e:>9.4g} {ref.e:>9.4g} {e / ref.e - 1:>+7.0%} {met:>8.2f} "
                     f"{ref.met:>8.2f} {rate:>7.2f} {cpu_live:>8.2f} {100 * ref.e * rate + ref.met:>8.2f} {samples:>7}  {verdict}")

    for e in entries:
        row(e.profile, e.machine_type, e.e, e.met, sum(e.rate_range) / 2, e.samples, "kept")
    for s in skipped:
        f = s.get("fitted") or {}
        if f.get("e") is not None:
            row(s["profile"], s["machine_type"], f["e"], f["met"], (f["rate_min"] + f["rate_max"]) / 2, s["samples"],
                f"{s['verdict']} (would-be values)")
        else:
            lines.append(f"{s['profile']:<12} {s['machine_type']:<7} left out: {s['reason']}")
    lines.append(f"worker rest (median, % of machine): {json.dumps(source.get('worker_rest'))}")
    lines.append(f"bad rows {source.get('bad_rows')}, intervals {source.get('intervals')}")
    if skipped and skipped[0].get("verdict") == "left_out":
        lines.append(f"the job's answer: {skipped[0]['reason']}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
