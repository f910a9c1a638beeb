"""The held-out topologies (benchmarks/heldout/): their definitions build, name classes and scripts that exist, and
the drift bolt's cost doubles when it should. Fast, no cluster; the local-mode runs are in
``python -m benchmarks.heldout.run local NAME`` (benchmarks/heldout/README.md)."""
from __future__ import annotations

import importlib.util
import io
import time
import zipfile
from collections import deque
from pathlib import Path

import pytest

from benchmarks.heldout import run, sensor_components as sensors
from topologies import conf as keys
from topologies.errors import TopologyError
from topologies.flux_topology import read_flux
from topologies.submission import SubmitRequest

HELDOUT = Path(run.__file__).resolve().parent
SCRIPTS = HELDOUT / "shell" / "scripts"
STORM_HOME = run.ROOT / ".cache" / "storm-2.8.3"
FLUX_WRAPPERS = run.ROOT / ".cache" / "flux-2.8.3" / "flux-wrappers-2.8.3.jar"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _jar_has_class(jar: Path, class_name: str) -> bool:
    with zipfile.ZipFile(jar) as zf:
        return class_name.replace(".", "/") + ".class" in zf.namelist()


# --- heldout-shell ------------------------------------------------------------------------------------------------

def test_shell_flux_file_is_the_documented_graph():
    flux = read_flux(run.FLUX_FILE)
    assert flux.name == "heldout-shell"
    assert flux.spouts == ["sentences"] and flux.bolts == ["split", "tag", "count"]
    assert flux.streams == [("sentences", "split", "shuffle"), ("split", "tag", "fields"), ("tag", "count", "fields")]
    assert flux.config[keys.MAX_SPOUT_PENDING] == 100
    assert set(flux.profiles().values()) == {"heldoutShellSentences", "heldoutShellSplit", "heldoutShellRegexJson",
                                             "heldoutShellWordCounter"}
    for section in ("spouts", "bolts"):
        for entry in flux.document[section]:
            assert entry["numTasks"] > entry["parallelism"], f"{entry['id']} has spare tasks for a rebalance"


def test_shell_components_name_scripts_that_exist_and_are_packed_into_the_jar():
    flux = read_flux(run.FLUX_FILE)
    shells = [e for s in ("spouts", "bolts") for e in flux.document[s] if "FluxShell" in e["className"]]
    assert len(shells) == 3
    for entry in shells:
        command, fields = entry["constructorArgs"]
        assert command[0] == "python3" and (SCRIPTS / command[1]).is_file(), command
        assert fields, f"{entry['id']} declares its output fields"
    assert "../shell/scripts" in run.POM.read_text() and "<targetPath>resources</targetPath>" in run.POM.read_text()


@pytest.mark.skipif(not (FLUX_WRAPPERS.is_file() and (STORM_HOME / "lib-worker").is_dir()),
                    reason="Storm and Flux are not assembled in .cache/ (make setup)")
def test_shell_flux_classes_exist_in_storm_and_flux():
    flux = read_flux(run.FLUX_FILE)
    client = STORM_HOME / "lib-worker" / "storm-client-2.8.3.jar"
    for entry in flux.document["spouts"] + flux.document["bolts"]:
        name = entry["className"]
        assert _jar_has_class(FLUX_WRAPPERS if "flux.wrappers" in name else client, name), name


def test_split_and_tag_do_what_their_docstrings_say():
    split, tag, sentences = _script("heldout_split"), _script("heldout_tag"), _script("heldout_sentences")
    assert split.words("Storm, nimbus! #ops alice@example.org v2.8.3.") == ["storm", "nimbus", "#ops",
                                                                             "alice@example.org", "v2.8.3"]
    assert tag.tag("alice@example.org", 1)["tags"] == ["email"]
    assert tag.tag("v2.8.3", 1)["tags"] == ["version"]
    assert "storm" in tag.tag("workers", 1)["tags"]
    assert tag.tag("2024", 3) == tag.record("2024")  # JSON round trips change nothing
    import random
    rng = random.Random(1)
    counts = [len(split.words(sentences.sentence(rng))) for _ in range(2000)]
    assert min(counts) >= 4 and max(counts) <= 12 and 7 < sum(counts) / len(counts) < 9


# --- heldout-java ---------------------------------------------------------------------------------------------------

@pytest.mark.skipif(not run.JAR.is_file(), reason="the heldout jar is not built (python -m benchmarks.heldout.run build)")
def test_heldout_jar_holds_the_main_class_the_shell_scripts_and_flux_wrappers():
    with zipfile.ZipFile(run.JAR) as zf:
        names = set(zf.namelist())
    assert run.JAVA_MAIN.replace(".", "/") + ".class" in names
    assert {n for n in names if n.startswith("resources/") and not n.endswith("/")} == \
        {f"resources/{p.name}" for p in SCRIPTS.glob("*.py")}, "our scripts, not flux-wrappers' samples"
    # the workers' class path (lib-worker/) has no Flux: the topology jar must bring the shell wrappers
    for wrapper in ("org.apache.storm.flux.wrappers.spouts.FluxShellSpout", "org.apache.storm.flux.wrappers.bolts.FluxShellBolt"):
        assert _jar_has_class(run.JAR, wrapper), wrapper


def test_submit_commands_are_hetsched_submit():
    java = run.hetsched_submit_command("heldout-java", ["--workers", "2"])
    assert java[1:] == ["submit", "--jar", str(run.JAR), "--class", run.JAVA_MAIN, "--workers", "2", "--", "heldout-java"]
    shell = run.hetsched_submit_command("heldout-shell", [])
    assert shell[1:] == ["submit", "--flux", str(run.FLUX_FILE), "--jar", str(run.JAR)]
    assert "--profiles" not in java + shell
    with pytest.raises(TopologyError):
        run.hetsched_submit_command("heldout-streamparse", [])


# --- heldout-streamparse --------------------------------------------------------------------------------------------

def test_streamparse_submission_is_hetsched_submits_conf_without_a_catalog_name():
    submission = run.streamparse_submission(SubmitRequest(topology="heldout-streamparse", metrics=True,
                                                          spare_tasks=run.STREAMPARSE_SPARE_TASKS,
                                                          conf={"heldout.double.after.secs": 600}))
    conf = submission.conf
    assert keys.TOPOLOGY not in conf, "not in the catalog: no hetsched command may look it up there"
    assert conf[keys.MAX_SPOUT_PENDING] == 100 and conf["heldout.double.after.secs"] == 600
    assert keys.METRICS_HOOK_CLASS in conf[keys.TASK_HOOKS]
    assert conf[keys.COMPONENT_PROFILES] == {"readings": "heldoutSensorSpout", "gate": "heldoutGate",
                                             "window": "heldoutWindow", "drift": "heldoutDrift"}
    assert not any(k.startswith(keys.CPU_MS_PREFIX) for k in conf), "no catalog CPU-time settings"
    assert submission.parallelism == {"readings": 1, "gate": 1, "window": 2, "drift": 1}
    assert submission.tasks == {"readings": 2, "gate": 2, "window": 4, "drift": 2}
    topology = submission.topology
    assert [g.fields for g in topology.bolts["window"].common.inputs.values()] == [["sensor"]]
    for component_id, spec in {**topology.spouts, **topology.bolts}.items():
        shell = (spec.spout_object if component_id in topology.spouts else spec.bolt_object).shell
        assert shell.execution_command == "streamparse_run"
        assert shell.script.startswith("benchmarks.heldout.sensor_components.")
    # the submission is a copy: the class's own Thrift structure keeps no spare tasks
    assert keys.TASKS not in (run.sensor_entry().topology.thrift_topology.bolts["window"].common.json_conf or "")


def test_streamparse_submission_refuses_unknown_components():
    with pytest.raises(TopologyError, match="no component nope"):
        run.streamparse_submission(SubmitRequest(topology="heldout-streamparse", parallelism={"nope": 2}))


def test_sensor_jar_holds_every_module_the_workers_import(tmp_path):
    jar = run.sensor_jar(tmp_path / "h.jar")
    with zipfile.ZipFile(jar) as zf:
        names = set(zf.namelist())
    for spec in run.sensor_entry().topology.specs:
        module = spec.component_cls.__module__
        assert f"resources/{module.replace('.', '/')}.py" in names  # where streamparse_run looks
    assert {"resources/benchmarks/__init__.py", "resources/benchmarks/heldout/__init__.py"} <= names


def test_sensor_flux_document_mirrors_the_streamparse_graph():
    document = run.sensor_flux_document({})
    assert [s["id"] for s in document["spouts"]] == ["readings"]
    assert [b["id"] for b in document["bolts"]] == ["gate", "window", "drift"]
    drift = document["bolts"][-1]
    assert drift["constructorArgs"] == [["streamparse_run", "benchmarks.heldout.sensor_components.DriftBolt"]]
    assert {"from": "gate", "to": "window", "grouping": {"type": "FIELDS", "args": ["sensor"]}} in document["streams"]


# --- the drift bolt's switch ----------------------------------------------------------------------------------------

def test_switch_time_from_launch_or_absolute_and_off_by_default():
    storm_id = "heldout-streamparse-3-1795821259"
    assert sensors.launch_time(storm_id) == 1795821259.0
    assert sensors.launch_time("no-launch-time") is None
    assert sensors.switch_time({"storm.id": storm_id}) is None
    assert sensors.switch_time({"storm.id": storm_id, sensors.DOUBLE_AFTER_S: 600}) == 1795821859.0
    assert sensors.switch_time({"storm.id": storm_id, sensors.DOUBLE_AFTER_S: 600, sensors.DOUBLE_AT: 5.0}) == 5.0
    with pytest.raises(ValueError, match="no launch time"):
        sensors.switch_time({sensors.DOUBLE_AFTER_S: 600})
    assert sensors.cost_factor(99.0, 100.0) == 1 and sensors.cost_factor(100.0, 100.0) == 2
    assert sensors.cost_factor(1e12, None) == 1


def test_drift_bolt_does_twice_the_rounds_from_the_switch(monkeypatch):
    bolt = sensors.DriftBolt(input_stream=io.BytesIO(), output_stream=io.BytesIO())
    bolt.component_name, bolt.task_id = "drift", 7
    logged = []
    monkeypatch.setattr(bolt, "log", logged.append)
    bolt.initialize({"storm.id": "x-1-1000000000", sensors.DOUBLE_AFTER_S: 60, sensors.DRIFT_ROUNDS: 5}, {})
    rounds = []
    monkeypatch.setattr(sensors, "compress_rounds", lambda payload, n: rounds.append(n))

    class Tup:
        values = ["s1", 20.0, 30.0]

    for now in (1000000000.0, 1000000059.9, 1000000060.0, 1000000500.0):
        monkeypatch.setattr(sensors.time, "time", lambda now=now: now)
        bolt.process(Tup())
    assert rounds == [5, 5, 10, 10]
    assert bolt.processed == [2, 2]
    assert sum("doubled (5 -> 10 rounds)" in line for line in logged) == 1


def test_drift_work_takes_twice_the_cpu_at_twice_the_rounds():
    payload = b"s12:20.1234:29.0000;" * 512

    def cpu(rounds: int) -> float:
        best = float("inf")
        for _ in range(5):
            start = time.thread_time()
            sensors.compress_rounds(payload, rounds)
            best = min(best, time.thread_time() - start)
        return best

    ratio = cpu(2 * 16) / cpu(16)
    assert 1.6 < ratio < 2.5, ratio


def test_window_summary_reads_a_sorted_copy():
    history = deque([float(v) for v in range(100)], maxlen=100)
    median, p95, checksum = sensors.window_summary(history, 1 << 16)
    assert (median, p95) == (50.0, 95.0) and checksum > 0
    assert list(history) == [float(v) for v in range(100)], "the history itself is not reordered"


# --- local-mode log reading -----------------------------------------------------------------------------------------

def test_local_counts_take_each_tasks_last_line():
    log = "\n".join([
        "23:14:34 o.a.s.s.ShellSpout [INFO] ShellLog pid:1, name:sentences heldout spout sentences:5: emitted 516 acked 417 failed 0 pending 99",
        "23:14:34 o.a.s.s.ShellSpout [INFO] ShellLog pid:2, name:sentences heldout spout sentences:6: emitted 543 acked 443 failed 0 pending 100",
        "23:14:44 o.a.s.s.ShellSpout [INFO] ShellLog pid:1, name:sentences heldout spout sentences:5: emitted 869 acked 770 failed 2 pending 99",
        "23:14:45 o.a.s.t.ShellBolt [INFO] ShellLog pid:3, name:drift heldout drift drift:2: cost per tuple doubled (16 -> 32 rounds)",
    ])
    counts = run.local_counts(log)
    assert (counts.tasks, counts.emitted, counts.acked, counts.failed) == (2, 869 + 543, 770 + 443, 2)
    assert not counts.ok
    assert counts.drift_lines == ["heldout drift drift:2: cost per tuple doubled (16 -> 32 rounds)"]
