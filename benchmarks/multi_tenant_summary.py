"""Median and range over repeated multi-tenant scenario results (``hetsched bench --scenario multi-tenant``).

Each round is one output folder (or its multi-tenant.json); rounds are run one after another,
each scheduler once per round, so schedulers alternate across rounds:

    .venv/bin/python -m benchmarks.multi_tenant_summary OUT1 OUT2 [--json summary.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from bench.errors import BenchError
from bench.multitenant import RESULT_FILE, read_result


def summarize(rounds: list[dict]) -> dict[str, dict]:
    """Scheduler -> figure -> {median, low, high, n} over the rounds that ran it."""
    figures: dict[str, dict[str, list[float]]] = {}
    for data in rounds:
        for scheduler, run in data.get("runs", {}).items():
            if not run.get("tenants"):
                continue
            into = figures.setdefault(scheduler, {})
            into.setdefault("weighted_throughput", []).append(run["weighted_throughput"])
            into.setdefault("weighted_throughput_after", []).append(run["weighted_throughput_after"])
            into.setdefault("minimums_met", []).append(run["minimums_met"])
            into.setdefault("failed_since_change", []).append(run["failed_since_change"])
            for t in run["tenants"]:
                into.setdefault(f"{t['topology']}.input_rate", []).append(t["input_rate"])
                into.setdefault(f"{t['topology']}.cpu_share", []).append(t["cpu_share"])
                into.setdefault(f"{t['topology']}.after_input_rate", []).append(t["after"]["input_rate"])
                if t["after"]["replaced_s"] is not None:
                    into.setdefault(f"{t['topology']}.replaced_s", []).append(t["after"]["replaced_s"])
    return {s: {k: {"median": round(statistics.median(v), 3), "low": min(v), "high": max(v), "n": len(v)}
                for k, v in f.items()} for s, f in figures.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rounds", nargs="+", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    try:
        rounds = [read_result(p / RESULT_FILE if p.is_dir() else p) for p in args.rounds]
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    summary = summarize(rounds)
    for scheduler, figures in summary.items():
        print(scheduler)
        for name, f in figures.items():
            print(f"  {name:28} median {f['median']:>9.3f}  range {f['low']:.3f}-{f['high']:.3f}  (n={f['n']})")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
