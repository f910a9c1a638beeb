"""Two bench results side by side (e.g. the local cgroup cluster and the compose cluster), as a Markdown table.

Per run: measured and predicted sink throughput (tuples/s), the prediction error
((measured - predicted) / predicted), whether the placement was the plan, and each machine's CPU
(measured / predicted utilization, percent of its quota). Reads only the two ``bench.json`` files.

    .venv/bin/python -m benchmarks.bench_side_by_side LOCAL/bench.json COMPOSE/bench.json [--names local,compose]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def _runs(path: Path) -> dict[tuple[str, str], dict]:
    data = json.loads(path.read_text())
    return {(r["topology"], r["scheduler"]): r for r in data["runs"]}


def _cell(run: dict | None) -> list[str]:
    if run is None:
        return ["not run", "", "", "", ""]
    if run["status"] != "ok":
        return [f"failed: {run['reason']}", "", "", "", ""]
    measured = run["measured"]["sink_throughput"]
    predicted = run["predicted"]["sink_throughput"]
    error = run["relative_error"]["sink_throughput"]
    placed = "-" if run["scheduler"] != "planned" else ("as planned" if not run["plan_mismatches"] else
                                                         f"{len(run['plan_mismatches'])} off plan")
    cpu = ", ".join(f"{m['machine']} {m['utilization']:.0f}/{m['predicted_utilization'] or 0:.0f}" for m in run["machines"])
    return [f"{measured:.2f}", f"{predicted:.2f}", f"{error:+.1%}", placed, cpu]


def table(first: Path, second: Path, names: tuple[str, str]) -> str:
    a, b = _runs(first), _runs(second)
    keys = list(dict.fromkeys([*a, *b]))
    head = ["topology", "scheduler"] + [f"{n} {c}" for n in names for c in
                                         ("sink tuples/s", "predicted", "error", "placement", "CPU % measured/predicted")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in keys:
        lines.append("| " + " | ".join([*key, *_cell(a.get(key)), *_cell(b.get(key))]) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--names", default="local,compose")
    args = parser.parse_args()
    names = tuple(args.names.split(",", 1))
    print(table(args.first, args.second, (names[0], names[1])))


if __name__ == "__main__":
    main()
