"""Planned against each other scheduler over repeated ``hetsched bench`` results: median (range) of the speed-ups.

One bench is one sample on a shared host (the same placement measures up to a third apart from bench to bench), so
a headline figure is the median over several benches of each bench's own ratio: the planned run's sink throughput
over the other scheduler's run of the same topology in the same bench, where both ran.

    .venv/bin/python -m benchmarks.bench_speedups BENCH_JSON [BENCH_JSON ...] [--against default,resource_aware]
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any


def sink_throughputs(bench: dict[str, Any]) -> dict[tuple[str, str], float]:
    """(topology, scheduler) -> measured sink throughput of the bench's runs that finished."""
    return {(r["topology"], r["scheduler"]): float(r["measured"]["sink_throughput"])
            for r in bench["runs"] if r.get("status") == "ok" and r.get("measured")}


def speedups(benches: list[dict[str, Any]], against: list[str]) -> dict[tuple[str, str], list[float]]:
    """(topology, other scheduler) -> planned / other, one ratio per bench where both ran."""
    ratios: dict[tuple[str, str], list[float]] = {}
    for bench in benches:
        sinks = sink_throughputs(bench)
        for (topology, scheduler), planned in sinks.items():
            if scheduler != "planned":
                continue
            for other in against:
                base = sinks.get((topology, other))
                if base:
                    ratios.setdefault((topology, other), []).append(planned / base)
    return ratios


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_speedups", description=__doc__.split("\n")[0])
    parser.add_argument("bench", type=Path, nargs="+", help="bench.json files of hetsched bench")
    parser.add_argument("--against", default="default,resource_aware", help="schedulers to compare planned with")
    args = parser.parse_args(argv)
    try:
        benches = [json.loads(path.read_text()) for path in args.bench]
    except (OSError, ValueError) as exc:
        parser.error(f"cannot read a bench result: {str(exc).splitlines()[0]}")
    ratios = speedups(benches, [s for s in args.against.split(",") if s])
    if not ratios:
        print("no bench has a planned run and one of theirs for the same topology")
        return 1
    print("planned / other, sink throughput: median (range) over the benches where both ran")
    for (topology, other), values in sorted(ratios.items()):
        print(f"{topology:8} vs {other:15} {statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f}), "
              f"{len(values)} benches")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
