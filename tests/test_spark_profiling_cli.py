"""``hetsched aggregate`` and ``spark-submit spark_profiling/aggregate.py``: files in, ProfileSet out, faults as one sentence."""
from __future__ import annotations

import gzip
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hetsched.cli import _register, app
from planner.model import ProfileSet
from spark_profiling.aggregate import main as submit_main
from spark_profiling.synthetic import BAD_KINDS, generate

REPO = Path(__file__).resolve().parents[1]
_register()  # every subcommand, as ``hetsched`` has them (with one alone Typer would drop the name)


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> Path:
    run = generate(seed=31, resets_per_task=1, bad_rows={kind: 1 for kind in BAD_KINDS})
    return run.write(tmp_path_factory.mktemp("records") / "records.jsonl")


def invoke(*args: str):
    return CliRunner().invoke(app, ["aggregate", *args])


def assert_clear_failure(result, *phrases: str) -> None:
    assert result.exit_code == 1, result.output
    assert "error:" in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    for phrase in phrases:
        assert phrase in result.output.replace("\n", " "), result.output


def test_aggregate_writes_a_profile_set_and_reports_the_run(spark, records, tmp_path):
    out = tmp_path / "sets" / "micro.json"
    result = invoke(str(records), "--out", str(out))
    assert result.exit_code == 0, result.output
    profile_set = ProfileSet.model_validate_json(out.read_text())
    assert profile_set.name == "micro"
    assert len(profile_set.entries) == 9
    assert profile_set.source["bad_rows"] == {kind: 1 for kind in BAD_KINDS}
    assert profile_set.source["inputs"] == [
        {"path": str(records), "format": "jsonl", "rows": profile_set.source["rows"], "bad_rows": len(BAD_KINDS)}
    ]
    assert "bad rows skipped: 1 malformed_json" in result.output
    assert f"wrote {out}" in result.output.replace("\n", "")


def test_missing_input_file(tmp_path):
    missing = tmp_path / "nope.jsonl"
    assert_clear_failure(invoke(str(missing), "--out", str(tmp_path / "o.json")), f"input file {missing} does not exist")
    assert not (tmp_path / "o.json").exists()


def test_empty_folder_and_unmatched_pattern(tmp_path):
    (tmp_path / "empty").mkdir()
    assert_clear_failure(invoke(str(tmp_path / "empty"), "--out", str(tmp_path / "o.json")), "holds no data files")
    assert_clear_failure(invoke(str(tmp_path / "*.jsonl"), "--out", str(tmp_path / "o.json")), "matches no file")


def test_unreadable_parquet_file(spark, tmp_path):
    fake = tmp_path / "records.parquet"
    fake.write_bytes(b"this is not parquet at all\n" * 10)
    assert_clear_failure(invoke(str(fake), "--out", str(tmp_path / "o.json")), f"cannot read {fake} as Parquet")


def test_corrupt_gzip_file(spark, tmp_path):
    good = gzip.compress(("\n".join(generate(seed=1).lines) + "\n").encode())
    broken = tmp_path / "records.jsonl.gz"
    broken.write_bytes(good[: len(good) // 2] + b"\x00garbage" * 50)
    assert_clear_failure(invoke(str(broken), "--out", str(tmp_path / "o.json")), "reading the inputs failed")


def test_permission_denied_is_named(tmp_path, monkeypatch):
    # Tests may run as root, which reads any file: make opening this one fail as it would for a user.
    locked = tmp_path / "locked.jsonl"
    locked.write_text("{}\n")
    real_open = Path.open

    def refusing_open(self, *args, **kwargs):
        if self == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refusing_open)
    assert_clear_failure(invoke(str(locked), "--out", str(tmp_path / "o.json")), f"input file {locked} is not readable")


def test_output_that_cannot_be_written(records, tmp_path):
    (tmp_path / "taken").mkdir()
    assert_clear_failure(invoke(str(records), "--out", str(tmp_path / "taken")), "is a folder")
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert_clear_failure(invoke(str(records), "--out", str(blocker / "o.json")), "is not a writable folder")


def test_option_faults(records, tmp_path):
    out = str(tmp_path / "o.json")
    assert_clear_failure(invoke(str(records), "--out", out, "--name", "a", "--put", "b"), "--name a and --put b differ")
    assert_clear_failure(invoke(str(records), "--out", out, "--conf", "spark.x"), "is not KEY=VALUE")
    assert_clear_failure(invoke("--out", out), "give record files or folders, or --store DIR --topology NAME")
    assert_clear_failure(invoke(str(records)), "give --out FILE")
    assert_clear_failure(invoke(str(records), "--out", out, "--store", str(tmp_path)), "not both")
    assert_clear_failure(invoke("--store", str(tmp_path)), "--store needs --topology")
    assert_clear_failure(invoke("--topology", "linear", "--out", out), "give --store DIR too")
    assert_clear_failure(invoke(str(records), "--out", out, "--since", "yesterday"), "--since 'yesterday' is neither")


@pytest.mark.slow  # a Spark job of many seconds
def test_put_stores_the_set_in_the_planner(spark, records, tmp_path, planner_service):
    out = tmp_path / "p.json"
    result = invoke(str(records), "--out", str(out), "--put", "measured", "--planner", planner_service.url)
    assert result.exit_code == 0, result.output
    assert "stored profile set measured (9 entries)" in result.output
    with planner_service.client() as client:
        stored = client.get_profile_set("measured")
    written = ProfileSet.model_validate_json(out.read_text())
    assert stored.name == written.name == "measured"
    assert stored.entries == written.entries
    assert stored.source["bad_rows"] == written.source["bad_rows"]


@pytest.mark.slow  # a Spark job of many seconds
def test_put_with_a_wrong_token_fails_clearly_and_keeps_the_file(spark, records, tmp_path, start_planner_service):
    service = start_planner_service(token="s3cret")
    out = tmp_path / "t.json"
    refused = invoke(str(records), "--out", str(out), "--put", "tok", "--planner", service.url, "--token", "wrong")
    assert_clear_failure(refused, "profile set 'tok' was not stored", "401")
    assert ProfileSet.model_validate_json(out.read_text()).name == "tok"
    accepted = invoke(str(records), "--out", str(out), "--put", "tok", "--planner", service.url, "--token", "s3cret")
    assert accepted.exit_code == 0, accepted.output
    with service.client() as client:
        assert client.get_profile_set("tok").entries == ProfileSet.model_validate_json(out.read_text()).entries


@pytest.mark.slow  # a Spark job of many seconds
def test_put_to_no_planner_fails_clearly(spark, records, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nobody listens there
    result = invoke(str(records), "--out", str(tmp_path / "o.json"), "--put", "x", "--planner", f"http://127.0.0.1:{port}")
    assert_clear_failure(result, "was not stored", f"no planner at http://127.0.0.1:{port}")


def test_submit_entry_point_reports_faults_in_one_sentence(tmp_path, capsys):
    assert submit_main([str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: input file") and "does not exist" in err and "Traceback" not in err


def test_hetsched_registers_aggregate(tmp_path):
    done = subprocess.run(
        [str(Path(sys.executable).parent / "hetsched"), "aggregate", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o.json")],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1
    assert "does not exist" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_spark_submit_runs_the_job(records, tmp_path):
    spark_submit = Path(sys.executable).parent / "spark-submit"
    out = tmp_path / "submitted.json"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [str(spark_submit), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.sql.shuffle.partitions=2", "spark_profiling/aggregate.py", str(records), "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600, env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    profile_set = ProfileSet.model_validate_json(out.read_text())
    assert len(profile_set.entries) == 9
    assert profile_set.source["spark"]["master"] == "local[1]"
    assert "profile set 'submitted'" in done.stdout


@pytest.mark.slow
def test_ctrl_c_after_an_aggregation_is_a_keyboard_interrupt_again():
    """SparkContext's SIGINT handler outlives the session: a Ctrl-C in `hetsched tune --watch` after its first
    aggregation crashed with AttributeError instead of putting the topology back (seen live, 2026-11-28)."""
    import subprocess
    import sys

    script = (
        "import signal\n"
        "from spark_profiling.session import spark_session\n"
        "before = signal.getsignal(signal.SIGINT)\n"
        "with spark_session(master='local[1]') as s:\n"
        "    s.range(3).count()\n"
        "assert signal.getsignal(signal.SIGINT) is before, signal.getsignal(signal.SIGINT)\n"
        "try:\n"
        "    signal.raise_signal(signal.SIGINT)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("interrupted")
