"""``hetsched aggregate --master spark://...`` on a real Spark standalone cluster gives the set local mode gives."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from planner.model import ProfileSet
from spark_profiling.synthetic import default_truth, generate_workers, write_store

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.live, pytest.mark.slow]


def hetsched_aggregate(store: Path, out: Path, *extra: str) -> ProfileSet:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "hetsched"), "aggregate", "--store", str(store), "--topology", "linear",
         "--out", str(out), "-c", "spark.ui.enabled=false", "-c", "spark.sql.shuffle.partitions=4",
         "-c", "spark.executor.memory=512m", *extra],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return ProfileSet.model_validate_json(out.read_text())


def test_standalone_cluster_gives_the_local_mode_profile_set(spark_standalone, tmp_path):
    assert spark_standalone.alive_workers() == 2
    truth = default_truth()
    store = tmp_path / "records"
    write_store(generate_workers(truth=tuple(t for t in truth if t.machine_type != "large"), seed=19, rate_glitches=1,
                                 topology="linear"), store)
    write_store(generate_workers(truth=tuple(t for t in truth if t.machine_type == "large"), seed=20, steady=True,
                                 topology="linear", run_id="linear-2-1700000000"), store, seed=1)

    local = hetsched_aggregate(store, tmp_path / "local.json")
    remote = hetsched_aggregate(store, tmp_path / "standalone.json", "--master", spark_standalone.url)

    assert remote.source["spark"]["master"] == spark_standalone.url
    assert local.source["spark"]["master"].startswith("local")
    pairs = {(e.profile, e.machine_type): e for e in local.entries}
    assert {(e.profile, e.machine_type) for e in remote.entries} == set(pairs) and len(pairs) == 6
    for entry in remote.entries:
        mine = pairs[(entry.profile, entry.machine_type)]
        for field in ("e", "met", "alpha"):
            assert getattr(entry, field) == pytest.approx(getattr(mine, field), rel=1e-9, abs=1e-12)
        assert entry.samples == mine.samples
    for key in ("skipped_pairs", "outliers", "worker_rest", "intervals"):
        assert remote.source[key] == local.source[key], key
    assert remote.source["intervals"]["outlier"] == 1
    assert {s["verdict"] for s in remote.source["skipped_pairs"]} == {"narrow_range"}
