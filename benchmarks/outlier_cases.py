"""The outlier and weak-pair cases of the aggregation, before and after (issue 19 part 3), on records with known answers.

Before = every interval fitted and every pair with a positive slope emitted (the job as it was:
no outlier band, no rate-spread or standard-error criteria); after = the job as it is. Cases, each
a store of worker records in the service's layout (spark_profiling.synthetic.generate_workers):

- clean: nothing wrong;
- glitch: one interval of one executor counts 100x the tuples it executed (CPU as true);
- steady: the topology left at one rate (narrow range);
- noisy, noisier: CPU readings with 40% and 100% noise over a wide range, few intervals (poor fit).

After the table, the glitched pair's own ``e`` before and after.

    .venv/bin/python benchmarks/outlier_cases.py --out docs/results/measurements/issue19
Spark local mode only (no cluster; no lock needed).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from spark_profiling.aggregate import aggregate  # noqa: E402
from spark_profiling.errors import ProfilingError  # noqa: E402
from spark_profiling.fit import FitCriteria  # noqa: E402
from spark_profiling.inputs import resolve_inputs, store_topology_folders  # noqa: E402
from spark_profiling.session import spark_session  # noqa: E402
from spark_profiling.synthetic import default_truth, generate_workers, write_store  # noqa: E402

BEFORE = FitCriteria(min_rate_spread=0.0, max_e_error=float("inf"))
CASES = {
    "clean": {},
    "glitch": {"rate_glitches": 1},
    "steady": {"steady": True},
    "noisy": {"cpu_noise": 0.4, "samples_per_step": 2},
    "noisier": {"cpu_noise": 1.0, "samples_per_step": 2},
}


def run_case(spark, root: Path, topology: str, before: bool):
    inputs = resolve_inputs(store_topology_folders(root, topology))
    try:
        return aggregate(spark, inputs, f"{topology}-{'before' if before else 'after'}",
                         criteria=BEFORE if before else None, drop_outliers=not before)
    except ProfilingError as exc:
        return str(exc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/s5-aggregate/outlier-cases"))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    truth = {(t.profile, t.machine_type): t for t in default_truth()}
    lines = [f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} outlier_cases seed {args.seed}",
             "case    when    pairs  left-out  outliers  worst |e/e_true - 1| (pair)         verdicts"]
    raw = {}
    with spark_session("local[2]", {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"}) as spark:
        for case, options in CASES.items():
            root = args.work / case
            if not root.exists():
                write_store(generate_workers(seed=args.seed, topology=case, **options), root)
            for when, before in (("before", True), ("after", False)):
                result = run_case(spark, root, case, before)
                if isinstance(result, str):
                    lines.append(f"{case:<7} {when:<7} no set: {result[:150]}")
                    raw[f"{case}/{when}"] = result
                    continue
                worst = max(result.entries, key=lambda e: abs(e.e / truth[(e.profile, e.machine_type)].e - 1))
                error = abs(worst.e / truth[(worst.profile, worst.machine_type)].e - 1)
                verdicts = sorted({s.get("verdict", "?") for s in result.source["skipped_pairs"]})
                lines.append(f"{case:<7} {when:<7} {len(result.entries):>5}  {len(result.source['skipped_pairs']):>8}  "
                             f"{result.source['intervals'].get('outlier', 0):>8}  {error:>10.3g} "
                             f"({worst.profile}, {worst.machine_type}) e={worst.e:.4g}".ljust(90) + f" {','.join(verdicts) or '-'}")
                raw[f"{case}/{when}"] = json.loads(result.model_dump_json())
    after = raw.get("glitch/after")
    if isinstance(after, dict):
        for pair in after["source"]["outliers"]:
            profile, _, machine_type = pair.partition("@")
            true_e = truth[(profile, machine_type)].e
            for when in ("before", "after"):
                found = raw[f"glitch/{when}"]
                e = next((x["e"] for x in found["entries"] if (x["profile"], x["machine_type"]) == (profile, machine_type)), None)
                skipped = next((x["reason"] for x in found["source"]["skipped_pairs"]
                                if (x["profile"], x["machine_type"]) == (profile, machine_type)), None)
                shown = f"e={e:.4g} ({e / true_e:.3g}x the true {true_e:.4g})" if e is not None else f"left out: {skipped}"
                lines.append(f"glitched pair ({profile}, {machine_type}) {when}: {shown}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    (args.out / "outlier-cases.txt").write_text(text)
    (args.out / "outlier-cases.json").write_text(json.dumps(raw, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
