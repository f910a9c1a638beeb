"""A topology's profiles from its own worker records (the service's records store) next to the lab set.

For every (profile key, machine type) pair the live records cover: the live ``e`` and ``MET`` (or,
for a pair left out, its verdict and what the line would have given), the lab set's (default
profiles/default-cluster.json), and both sets' CPU at the rate the topology ran at, percent of the
machine (``100 * e * IR + MET``, IR the middle of the pair's live rates). Lab ``e`` charges the
machine's whole cgroup CPU (the worker JVM's work per tuple too); live ``e`` the executor's thread
and shell subprocess only (``cpu_basis: thread``).

One rate cannot tell ``e`` from ``MET``; ``--rates`` first runs Linear on the local cluster at several
paced rates (one submission, the spout's rate file stepped, ``--step-s`` each after ``--warmup-s``),
pinned by the plugin to one plan of the lab set, with the workers' metrics hook on, then compares the
records of that run only:

    .venv/bin/python -m benchmarks.live_vs_lab --home $H --rates 6,12,20,28 --step-s 90 --store $P/records \\
        --topology live-rates --out var/live-vs-lab-rates.txt
    .venv/bin/python -m benchmarks.live_vs_lab --store /tmp/s5-aggregate/live/records --topology metrics-records \\
        --out var/live-vs-lab-one-rate.txt

The first needs a local cluster started with ``--scheduler plugin --conf hetsched.planner.url=URL``
whose planner keeps its records in ``--store``, and nothing else running on it.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from planner.model import ProfileSet
from spark_profiling.aggregate import aggregate
from spark_profiling.errors import ProfilingError
from spark_profiling.inputs import resolve_inputs, store_topology_folders
from spark_profiling.session import spark_session

REPO = Path(__file__).resolve().parents[1]


def parse_rates(text: str) -> list[float]:
    """``6,12,20`` -> [6.0, 12.0, 20.0]; every rate above 0 (0 would pause the spout)."""
    try:
        rates = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"error: --rates {text!r} is not a comma-separated list of numbers") from None
    if len(rates) < 2 or any(r <= 0 for r in rates):
        raise SystemExit(f"error: --rates needs at least two rates above 0 (tuples/s), not {text!r}")
    return rates


def step_rates(records: list[dict[str, Any]], steps: list[dict[str, Any]], component: str) -> list[float | None]:
    """Per step, the tuples/s ``component``'s executors emitted from their records inside it (summed over executors)."""
    out: list[float | None] = []
    for step in steps:
        total, seen = 0.0, False
        by_executor: dict[tuple, list[dict[str, Any]]] = {}
        for r in records:
            if r.get("component") == component and step["start"] <= r["ts"] <= step["end"]:
                by_executor.setdefault((r["task_id"], r["pid"]), []).append(r)
        for samples in by_executor.values():
            samples.sort(key=lambda r: r["ts"])
            first, last = samples[0], samples[-1]
            if last["ts"] > first["ts"]:
                emitted = (last.get("emitted") or 0) - (first.get("emitted") or 0)
                total += emitted / (last["ts"] - first["ts"])
                seen = True
        out.append(round(total, 2) if seen else None)
    return out


def collect(args: argparse.Namespace, rates: list[float]) -> dict[str, Any]:
    """Linear pinned to one plan of the lab set, metrics on, its spout stepped through ``rates``; then killed."""
    from bench.run import _kill_quietly, _wait_until_running, submit
    from bench.run import RunResult
    from topologies.catalog import lookup
    from topologies.rate_control import RATE_FILE, write_rate

    from benchmarks.worker_metrics import Setup, records_of

    setup = Setup(args.home, args.planner, window_s=args.step_s, warmup_s=args.warmup_s)
    rate_file = (args.work_dir / f"{args.topology}.rate.json").resolve()
    rate_file.parent.mkdir(parents=True, exist_ok=True)
    write_rate(rate_file, rates[0])
    spec = setup.spec(args.topology, metrics=True, extra={RATE_FILE: str(rate_file), "hetsched.spout.rate": rates[0]})
    result = RunResult(topology="linear", scheduler="planned", name=args.topology, note="live rates", parallelism={})
    steps: list[dict[str, Any]] = []
    started = time.time()
    try:
        submitted_at = time.monotonic()
        result.topology_id, result.parallelism, _ = submit(spec, setup.ctx)
        placement = _wait_until_running(spec, setup.ctx, result.topology_id, lookup("linear"), submitted_at)
        print(f"{result.topology_id} running on " + ", ".join(
            f"{m} ({', '.join(sorted(set(cs)))})" for m, cs in sorted(placement.machines_used().items())), flush=True)
        time.sleep(args.warmup_s)
        for rate in rates:
            write_rate(rate_file, rate)
            start = time.time()
            time.sleep(args.step_s)
            steps.append({"rate": rate, "start": start, "end": time.time()})
            print(f"step {rate:g} tuples/s: {steps[-1]['end'] - start:.0f} s", flush=True)
    finally:
        _kill_quietly(args.topology, setup.ctx, result)
    time.sleep(2 * 5)  # the last batches of the hook (every 5 s) reach the store
    records = records_of(args.store if (args.store / f"topology={args.topology}").is_dir() else args.store / "records",
                         args.topology, result.topology_id)
    for step, emitted in zip(steps, step_rates(records, steps, "spout")):
        step["spout_emitted_per_s"] = emitted
    return {"topology_id": result.topology_id, "plan_id": setup.plan.id, "parallelism": result.parallelism,
            "placement": {m: sorted(cs) for m, cs in placement.machines_used().items()},
            "started": started, "warmup_s": args.warmup_s, "step_s": args.step_s, "steps": steps,
            "records": len(records)}


def compare(store: Path, topology: str, lab_path: Path, min_samples: int, since: float | None) -> tuple[str, dict]:
    """The live set of ``topology``'s records (from ``since``) next to the lab set: the text table and the live set's source."""
    lab = ProfileSet.model_validate_json(lab_path.read_text())
    lab_by = {(e.profile, e.machine_type): e for e in lab.entries}
    with spark_session("local[2]", {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"}) as spark:
        inputs = resolve_inputs(store_topology_folders(store, topology, since))
        try:
            live = aggregate(spark, inputs, "live", min_samples, since=since)
            entries, skipped, source = live.entries, live.source["skipped_pairs"], live.source
        except ProfilingError as exc:
            # Every pair left out: the job's sentence names them; rerun with no criteria to show the would-be values.
            from spark_profiling.fit import FitCriteria

            loose = aggregate(spark, inputs, "live", min_samples,
                              FitCriteria(min_rate_spread=0.0, max_e_error=float("inf")), since=since)
            entries, skipped, source = [], [
                {"profile": e.profile, "machine_type": e.machine_type, "samples": e.samples, "verdict": "left_out",
                 "reason": str(exc), "fitted": {"e": e.e, "met": e.met, "r2": e.r2, "rate_min": e.rate_range[0],
                                                "rate_max": e.rate_range[1]}} for e in loose.entries], loose.source
    lines = [f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} live_vs_lab: store {store}, topology "
             f"{topology}, runs {source.get('runs')}, lab set {lab_path.name}",
             f"{'profile':<12} {'type':<7} {'live e':>9} {'lab e':>9} {'e diff':>7} {'live MET':>8} {'lab MET':>8} "
             f"{'IR':>7} {'rates':>11} {'R2':>5} {'CPU live':>8} {'CPU lab':>8} samples  verdict"]

    def row(profile, machine_type, e, met, rate_min, rate_max, r2, samples, verdict):
        ref = lab_by.get((profile, machine_type))
        rate = (rate_min + rate_max) / 2
        cpu_live = 100 * e * rate + met
        span = f"{rate_min:.1f}..{rate_max:.1f}"
        r2_text = f"{r2:.2f}" if r2 is not None else "-"
        if ref is None:
            lines.append(f"{profile:<12} {machine_type:<7} {e:>9.4g} {'-':>9} {'-':>7} {met:>8.2f} {'-':>8} {rate:>7.2f} "
                         f"{span:>11} {r2_text:>5} {cpu_live:>8.2f} {'-':>8} {samples:>7}  {verdict}")
            return
        lines.append(f"{profile:<12} {machine_type:<7} {e:>9.4g} {ref.e:>9.4g} {e / ref.e - 1:>+7.0%} {met:>8.2f} "
                     f"{ref.met:>8.2f} {rate:>7.2f} {span:>11} {r2_text:>5} {cpu_live:>8.2f} "
                     f"{100 * ref.e * rate + ref.met:>8.2f} {samples:>7}  {verdict}")

    for e in entries:
        row(e.profile, e.machine_type, e.e, e.met, e.rate_range[0], e.rate_range[1], e.r2, e.samples, "kept")
    for s in skipped:
        f = s.get("fitted") or {}
        if f.get("e") is not None:
            row(s["profile"], s["machine_type"], f["e"], f["met"], f["rate_min"], f["rate_max"], f.get("r2"),
                s["samples"], f"{s['verdict']} (would-be values)")
        else:
            lines.append(f"{s['profile']:<12} {s['machine_type']:<7} left out: {s['reason']}")
    lines.append(f"worker rest (median, % of machine): {json.dumps(source.get('worker_rest'))}")
    lines.append(f"bad rows {source.get('bad_rows')}, intervals {source.get('intervals')}, outliers {source.get('outliers')}")
    if skipped and skipped[0].get("verdict") == "left_out":
        lines.append(f"the job's answer: {skipped[0]['reason']}")
    return "\n".join(lines) + "\n", {"entries": [e.model_dump() for e in entries], "source": source}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="the planner's records store (or its data directory)")
    parser.add_argument("--topology", required=True, help="the topology name whose records to read (with --rates: to run under)")
    parser.add_argument("--lab", type=Path, default=REPO / "profiles/default-cluster.json")
    parser.add_argument("--out", type=Path, required=True, help="the table (text); with --rates, the run's steps and live set go to OUT.json too")
    parser.add_argument("--min-samples", type=int, default=5)
    parser.add_argument("--rates", default=None, help="first run Linear at these spout rates, tuples/s (e.g. 6,12,20,28)")
    parser.add_argument("--step-s", type=float, default=90.0, help="--rates: seconds at each rate")
    parser.add_argument("--warmup-s", type=float, default=30.0, help="--rates: seconds before the first step")
    parser.add_argument("--home", type=Path, default=None, help="--rates: the local cluster's home")
    parser.add_argument("--planner", default=None, help="--rates: the planner (default: Nimbus's hetsched.planner.url)")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/hetsched-live-vs-lab"), help="--rates: where the rate file goes")
    args = parser.parse_args()
    run: dict[str, Any] | None = None
    since = None
    if args.rates:
        run = collect(args, parse_rates(args.rates))
        since = run["started"]
    text, live = compare(args.store, args.topology, args.lab, args.min_samples, since)
    if run is not None:
        text += "steps (asked -> the spout's emitted rate from its records): " + ", ".join(
            f"{s['rate']:g} -> {s['spout_emitted_per_s']}" for s in run["steps"]) + "\n"
        text += f"placement ({run['topology_id']}, plan {run['plan_id']}): {json.dumps(run['placement'])}\n"
    print(text, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    if run is not None:
        args.out.with_suffix(".json").write_text(json.dumps({"run": run, "live": live}, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
