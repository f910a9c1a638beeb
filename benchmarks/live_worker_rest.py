"""Each worker's rest (its JVM's CPU outside every executor thread), % of its machine, per rate step of a
``live_vs_lab.py --rates`` run.

Live ``e`` charges only an executor's own thread and subprocess; were the rest to grow with the rate, that growth
would be per-tuple work the live profile misses (the lab's machine-wide ``e`` has it). Prints the median rest per
step and its least-squares slope against the spout's rate.

    .venv/bin/python benchmarks/live_worker_rest.py STORE_RECORDS_DIR TOPOLOGY RUN.json
"""
from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def read_records(store: Path, topology: str) -> list[dict]:
    """Every worker record of the topology in the service's store (JSON lines, partitioned by topology and day)."""
    return [json.loads(line) for path in sorted(store.glob(f"topology={topology}/day=*/*.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


def rest_points(series: dict[float, list[dict]], steps: list[dict], cores: float) -> list[tuple[float, float]]:
    """(spout rate, rest % of the machine) for every pair of consecutive reports within one rate step."""
    points = []
    times = sorted(series)
    for a, b in zip(times, times[1:]):
        before = {r["task_id"]: r for r in series[a]}
        after = {r["task_id"]: r for r in series[b]}
        if set(before) != set(after):
            continue  # an executor came or went between the reports
        any_task = next(iter(after))
        worker_s = after[any_task]["worker_cpu_seconds"] - before[any_task]["worker_cpu_seconds"]
        threads_s = sum(after[t]["thread_cpu_seconds"] - before[t]["thread_cpu_seconds"] for t in after)
        step = [s for s in steps if s["start"] <= a and b <= s["end"]]
        if step:
            points.append((step[0]["rate"], 100 * (worker_s - threads_s) / (b - a) / cores))
    return points


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of the rest against the rate, % of the machine per tuple/s."""
    xs = [x for x, _ in points]
    mx, my = statistics.mean(xs), statistics.mean(y for _, y in points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    store, topology, run_file = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    steps = json.loads(run_file.read_text())["run"]["steps"]
    by_worker: dict[str, dict[float, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for record in read_records(store, topology):
        by_worker[record["worker_id"]][round(record["ts"], 1)].append(record)
    print(f"{'worker':<16} {'machine':<9} " + " ".join(f"{s['rate']:>7g}/s" for s in steps) + "  slope %/(tuple/s)")
    for worker, series in sorted(by_worker.items()):
        first = series[min(series)][0]
        points = rest_points(series, steps, first["machine_cores"])
        per_step = {s["rate"]: [p for r, p in points if r == s["rate"]] for s in steps}
        cells = " ".join(f"{statistics.median(v):>9.2f}" if v else f"{'-':>9}" for v in per_step.values())
        print(f"{worker:<16} {first['machine']:<9} {cells}  {slope(points):+.3f}")


if __name__ == "__main__":
    main()
