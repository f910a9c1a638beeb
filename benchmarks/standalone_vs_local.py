"""The aggregation of one records store in Spark local mode and on a real Spark standalone cluster, side by side.

Writes a store of worker records in the service's layout (synthetic, with known answers; one
interval at 100x the rate and one machine type left at a steady rate, so the outlier and
narrow-range cases are in it), runs ``hetsched aggregate --store`` on it ``--repeats`` times
alternately in ``local[2]`` and against a master and two workers started on loopback from the
pyspark package, and prints per pair the largest difference between the sets and the elapsed
times (median, range). Run it holding the machine-wide lock:

    flock /work/wt/live.lock .venv/bin/python -m benchmarks.standalone_vs_local --out var/standalone-vs-local
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from planner.model import ProfileSet
from spark_profiling.standalone import StandaloneCluster
from spark_profiling.synthetic import default_truth, generate_workers, write_store

REPO = Path(__file__).resolve().parents[1]

SPARK_CONF = ("spark.ui.enabled=false", "spark.sql.shuffle.partitions=4", "spark.executor.memory=512m",
              "spark.driver.host=127.0.0.1")


def build_store(root: Path) -> None:
    truth = default_truth()
    write_store(generate_workers(truth=tuple(t for t in truth if t.machine_type != "large"), seed=19, rate_glitches=1,
                                 topology="linear"), root)
    write_store(generate_workers(truth=tuple(t for t in truth if t.machine_type == "large"), seed=20, steady=True,
                                 topology="linear", run_id="linear-2-1700000000"), root, seed=1)


def aggregate(store: Path, out: Path, master: str | None) -> tuple[ProfileSet, float, str]:
    command = [str(Path(sys.executable).parent / "hetsched"), "aggregate", "--store", str(store), "--topology", "linear",
               "--out", str(out)]
    for conf in SPARK_CONF:
        command += ["-c", conf]
    if master:
        command += ["--master", master]
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"hetsched aggregate failed ({master or 'local'}): {done.stderr[-2000:]}")
    return ProfileSet.model_validate_json(out.read_text()), elapsed, done.stdout


def differences(a: ProfileSet, b: ProfileSet) -> dict[str, float]:
    """Largest relative difference of e, MET and alpha over the pairs, and whether both sets hold the same pairs."""
    pa = {(e.profile, e.machine_type): e for e in a.entries}
    pb = {(e.profile, e.machine_type): e for e in b.entries}
    if set(pa) != set(pb):
        return {"same_pairs": 0.0}

    def rel(x: float, y: float) -> float:
        return abs(x - y) / max(abs(x), abs(y), 1e-12)

    return {
        "same_pairs": 1.0,
        "e": max(rel(pa[k].e, pb[k].e) for k in pa),
        "met": max(rel(pa[k].met, pb[k].met) for k in pa),
        "alpha": max(rel(pa[k].alpha, pb[k].alpha) for k in pa),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the raw output")
    parser.add_argument("--work", type=Path, default=Path("/tmp/s5-aggregate/standalone"))
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    store = args.work / "records"
    if not store.exists():
        build_store(store)
    lines = [f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} standalone_vs_local, store {store}"]
    elapsed: dict[str, list[float]] = {"local": [], "standalone": []}
    sets: dict[str, ProfileSet] = {}
    with StandaloneCluster(args.work / "cluster") as cluster:
        lines.append(f"standalone master {cluster.url}, {cluster.alive_workers()} workers alive")
        for i in range(args.repeats):
            for mode, master in (("local", None), ("standalone", cluster.url)):
                result, seconds, stdout = aggregate(store, args.out / f"standalone-vs-local-{mode}.json", master)
                elapsed[mode].append(seconds)
                sets[mode] = result
                if i == 0:
                    (args.out / f"standalone-vs-local-{mode}.txt").write_text(stdout)
                lines.append(f"run {i + 1} {mode:<10} master={result.source['spark']['master']:<24} {seconds:6.1f} s "
                             f"{len(result.entries)} pairs, {len(result.source['skipped_pairs'])} left out, "
                             f"{result.source['intervals']['outlier']} outlier(s)")
    for mode, values in elapsed.items():
        lines.append(f"{mode}: median {statistics.median(values):.1f} s, range {min(values):.1f}..{max(values):.1f} s "
                     f"(whole command, Spark start included)")
    diff = differences(sets["local"], sets["standalone"])
    lines.append("largest relative difference standalone vs local: " + json.dumps({k: round(v, 12) for k, v in diff.items()}))
    same = (diff.get("same_pairs") == 1.0 and max(diff["e"], diff["met"], diff["alpha"]) < 1e-9
            and sets["local"].source["skipped_pairs"] == sets["standalone"].source["skipped_pairs"]
            and sets["local"].source["outliers"] == sets["standalone"].source["outliers"])
    lines.append(f"same profile set (entries within 1e-9, same pairs left out, same outliers): {same}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with (args.out / "standalone-vs-local.txt").open("a") as handle:
        handle.write(text)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
