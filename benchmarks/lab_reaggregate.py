"""``hetsched profile``'s own records through today's aggregation: the same pairs and figures as the set it made?

Re-aggregates the lab records of docs/results/profiling-rerun/ (a real ``hetsched profile linear``
run on the local cluster) with the job as it is now (outlier band, weak-pair criteria) and prints
each pair's ``e`` and ``MET`` next to the set that run stored, with what was left out or dropped.

    .venv/bin/python benchmarks/lab_reaggregate.py --out docs/results/measurements/issue19
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from planner.model import ProfileSet  # noqa: E402
from spark_profiling.aggregate import aggregate  # noqa: E402
from spark_profiling.inputs import resolve_inputs  # noqa: E402
from spark_profiling.session import spark_session  # noqa: E402

RUN = REPO / "docs/results/profiling-rerun"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    stored = ProfileSet.model_validate_json((RUN / "profiles.json").read_text())
    with spark_session("local[2]", {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"}) as spark:
        now = aggregate(spark, resolve_inputs([str(RUN / "records.jsonl.gz")]), "now", stored.source.get("min_samples", 5))
    old = {(e.profile, e.machine_type): e for e in stored.entries}
    new = {(e.profile, e.machine_type): e for e in now.entries}
    lines = [f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} lab_reaggregate of {RUN.relative_to(REPO)}",
             f"{'profile':<12} {'type':<7} {'e stored':>10} {'e now':>10} {'diff':>7} {'MET stored':>10} {'MET now':>8} samples"]
    for pair in sorted(old.keys() | new.keys()):
        a, b = old.get(pair), new.get(pair)
        if a is None or b is None:
            lines.append(f"{pair[0]:<12} {pair[1]:<7} {'only in the stored set' if b is None else 'only now'}")
            continue
        lines.append(f"{pair[0]:<12} {pair[1]:<7} {a.e:>10.5g} {b.e:>10.5g} {b.e / a.e - 1:>+7.1%} {a.met:>10.3f} {b.met:>8.3f} "
                     f"{a.samples}->{b.samples}")
    lines.append(f"left out now: {now.source['skipped_pairs']}")
    lines.append(f"outliers now: {now.source['outliers']}; base load stored {stored.source.get('machine_base_load')} "
                 f"now {now.source.get('machine_base_load')}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    (args.out / "lab-reaggregate.txt").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
