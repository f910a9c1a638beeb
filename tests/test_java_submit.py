"""``hetsched submit --jar/--class`` and ``--flux``: the client JVM's command line and conf, the Flux file, the errors.

No cluster: the JVM tests run Storm's client class path against no Nimbus (Flux's --dry-run, a class without main).
"""
from __future__ import annotations

import json
import os
import re
import stat
import zipfile
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import unquote_plus

import pytest
from typer.testing import CliRunner

import hetsched.topology_cmd  # noqa: F401  registers submit on app
from hetsched.cli import app
from observe.nimbus import NimbusAddress
from topologies import conf as keys
from topologies.errors import TopologyError
from topologies.flux_topology import (
    FLUX_MAIN, flux_args, parse_flux, parse_properties, planner_topology, read_flux, substitute, with_plan, write_flux,
)
from topologies.java_submit import (
    JavaSubmitRequest, JavaSubmitResult, check_request, java_conf, parse_profile_keys, plan_client_run,
)
from topologies.storm_client import (
    ClientRun, check_jar, check_main_class, client_class_path, client_failure, client_storm_yaml, java_command,
    run_client, storm_options,
)

REPO = Path(__file__).resolve().parents[1]
FLUX_FILE = REPO / "topologies" / "flux" / "words-cpu.yaml"
JAVA_JAR = REPO / "topologies" / "java" / "target" / "hetsched-java-topologies.jar"
ADDRESS = NimbusAddress("127.0.0.1", 6627, "--nimbus")
runner = CliRunner()


def _storm_decode(options: str) -> dict:
    """Storm's Utils.readCommandLineOpts: split on commas, URL-decode each pair, the value as JSON else text."""
    result = {}
    for pair in options.split(","):
        key, _, value = unquote_plus(pair).partition("=")
        try:
            result[key] = json.loads(value)
        except ValueError:
            result[key] = value
    return result


def _jar(path: Path, *classes: str) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
        for name in classes:
            zf.writestr(name.replace(".", "/") + ".class", b"\xca\xfe\xba\xbe")
    return path


def _storm_home(tmp_path: Path) -> Path:
    home = tmp_path / "storm"
    (home / "lib-worker").mkdir(parents=True)
    (home / "extlib").mkdir()
    _jar(home / "lib-worker" / "storm-client-2.8.3.jar", "org.apache.storm.StormSubmitter")
    return home


# ---- storm.options, the command line -------------------------------------------------------------


def test_storm_options_survive_storms_decoding_with_maps_lists_commas_and_plus_signs():
    conf = {
        "hetsched.plan.id": "p-1", "topology.auto.task.hooks": ["a.B", "c.D"],
        "hetsched.component.profiles": {"cpu": "cpuWork5ms", "count": "x,y"}, "topology.stats.sample.rate": 1.0,
        "topology.workers": 2, "note": "a+b c=d", "flag": False,
    }
    encoded = storm_options(conf)
    assert "%2C" in encoded and " " not in encoded
    assert _storm_decode(encoded) == conf


def test_java_command_runs_the_main_class_on_storms_client_class_path_with_the_jar_and_the_conf(tmp_path):
    home = _storm_home(tmp_path)
    jar = _jar(tmp_path / "app.jar", "com.example.Main")
    run = ClientRun("com.example.Main", ["in", "--fast"], jar, [jar], {"hetsched.profiles": "micro"})
    command = java_command(run, home, tmp_path / "storm.yaml")
    assert command[-3:] == ["com.example.Main", "in", "--fast"]
    assert f"-Dstorm.jar={jar}" in command and f"-Dstorm.conf.file={tmp_path / 'storm.yaml'}" in command
    options = next(a for a in command if a.startswith("-Dstorm.options="))
    assert _storm_decode(options.split("=", 1)[1]) == {"hetsched.profiles": "micro"}
    class_path = command[command.index("-cp") + 1].split(os.pathsep)
    assert class_path == [f"{home / 'lib-worker'}/*", f"{home / 'extlib'}/*", str(jar)]
    assert not any(entry.startswith(f"{home / 'lib'}/") for entry in class_path), "not the daemons' lib/"


def test_the_storm_jar_joins_the_class_path_when_only_other_jars_are_named(tmp_path):
    home = _storm_home(tmp_path)
    run = ClientRun(FLUX_MAIN, [], tmp_path / "flux-core.jar", [tmp_path / "flux-wrappers.jar"])
    assert client_class_path(home, run).split(os.pathsep)[-2:] == [str(tmp_path / "flux-wrappers.jar"),
                                                                   str(tmp_path / "flux-core.jar")]


def test_the_clients_storm_yaml_names_the_clusters_nimbus():
    assert client_storm_yaml(NimbusAddress("10.0.0.5", 7000)) == {"nimbus.seeds": ["10.0.0.5"], "nimbus.thrift.port": 7000}


# ---- errors before and after the JVM ---------------------------------------------------------------


def test_a_missing_or_broken_jar_is_one_sentence(tmp_path):
    with pytest.raises(TopologyError, match=r"^the app jar .*nope.jar does not exist$"):
        check_jar(tmp_path / "nope.jar", "the app jar")
    (tmp_path / "text.jar").write_text("not a zip")
    with pytest.raises(TopologyError, match=r"text.jar is not a jar \(not a zip file\)$"):
        check_jar(tmp_path / "text.jar", "the app jar")


def test_a_main_class_is_looked_for_in_the_app_jar_and_storms_client_jars(tmp_path):
    home = _storm_home(tmp_path)
    jar = _jar(tmp_path / "app.jar", "com.example.Main")
    run = ClientRun("com.example.Main", [], jar, [jar])
    check_main_class("com.example.Main", run, home)
    check_main_class("org.apache.storm.StormSubmitter", run, home)
    with pytest.raises(TopologyError, match=r"^class com.example.Other is not in .*app.jar nor on Storm's client class path$"):
        check_main_class("com.example.Other", run, home)
    with pytest.raises(TopologyError, match="is not a Java class name"):
        check_main_class("com/example/Main.class", run, home)


def test_client_failures_name_the_class_nimbus_or_the_apps_last_stderr_lines(tmp_path):
    run = ClientRun("com.example.Main", [], tmp_path / "app.jar", [])
    missing = client_failure(run, ADDRESS, 1, "Error: Could not find or load main class com.example.Main\n")
    assert str(missing).startswith("class com.example.Main could not be loaded")
    down = client_failure(run, ADDRESS, 1, "Exception in thread \"main\" org.apache.storm.utils.NimbusLeaderNotFoundException: "
                                           "Could not find leader nimbus from seed hosts [127.0.0.1]\n\tat x\n")
    assert str(down).startswith("Nimbus at 127.0.0.1:6627 (from --nimbus) did not answer the client JVM of com.example.Main")
    alive = client_failure(run, ADDRESS, 1, "org.apache.storm.generated.AlreadyAliveException: words is already alive\n")
    assert "already running" in str(alive)
    taken = client_failure(run, ADDRESS, 1, "Exception in thread \"main\" java.lang.RuntimeException: Topology name "
                                            "words-cpu-java is either not allowed or it already exists on the cluster\n")
    assert str(taken).startswith("com.example.Main submitted topology 'words-cpu-java', whose name is already running")
    lines = "\n".join(f"line {i}" for i in range(20))
    own = str(client_failure(run, ADDRESS, 3, lines + "\nIllegalArgumentException: bad count\n"))
    assert own.startswith("com.example.Main exited with code 3; its last lines of stderr:")
    assert own.endswith("IllegalArgumentException: bad count") and "line 13" in own and "line 12" not in own
    dependency = str(client_failure(run, ADDRESS, 1, "java.lang.NoClassDefFoundError: com/acme/Parser\n"))
    assert "class com.acme.Parser is on no class path" in dependency


def test_run_client_reports_a_main_that_exits_non_zero_with_its_stderr(tmp_path):
    home = _storm_home(tmp_path)
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\necho 'starting' >&2\necho 'java.io.FileNotFoundException: input.txt' >&2\nexit 2\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    jar = _jar(tmp_path / "app.jar", "com.example.Main")
    with pytest.raises(TopologyError) as fault:
        run_client(ClientRun("com.example.Main", [], jar, [jar]), ADDRESS, home, java=str(java))
    assert str(fault.value) == ("com.example.Main exited with code 2; its last lines of stderr:\n"
                                "starting\njava.io.FileNotFoundException: input.txt")


# ---- the conf the topology gets ---------------------------------------------------------------------


def test_java_conf_carries_the_plan_profiles_keys_and_metrics_and_keeps_the_topologys_hooks():
    request = JavaSubmitRequest(jar=Path("a.jar"), main_class="M", plan_id="p-1", profiles="micro",
                                planner_url="http://planner:8765", metrics_url="http://planner:8765",
                                conf={"topology.max.spout.pending": 50}, workers=2)
    conf = java_conf(request, {"cpu": "cpuWork5ms"}, base={keys.TASK_HOOKS: ["com.acme.Hook"]})
    assert conf[keys.PLAN_ID] == "p-1" and conf[keys.PROFILES] == "micro" and conf[keys.PLANNER_URL] == "http://planner:8765"
    assert conf[keys.COMPONENT_PROFILES] == {"cpu": "cpuWork5ms"} and conf[keys.WORKERS] == 2
    assert conf[keys.STATS_SAMPLE_RATE] == 1.0 and conf["topology.max.spout.pending"] == 50
    assert conf[keys.TASK_HOOKS] == ["com.acme.Hook", keys.METRICS_HOOK_CLASS]
    assert conf[keys.METRICS_URL] == "http://planner:8765"
    quiet = java_conf(JavaSubmitRequest(jar=Path("a.jar"), main_class="M", metrics=False), {})
    assert keys.TASK_HOOKS not in quiet and keys.COMPONENT_PROFILES not in quiet and keys.PLAN_ID not in quiet


def test_requests_that_mix_the_forms_are_refused():
    cases = [
        (JavaSubmitRequest(), "give either --class (with --jar) or --flux"),
        (JavaSubmitRequest(main_class="M", flux=Path("f.yaml")), "give either --class"),
        (JavaSubmitRequest(main_class="M"), "--class M needs --jar"),
        (JavaSubmitRequest(jar=Path("a.jar"), main_class="M", name="x"), "--name applies to --flux only"),
        (JavaSubmitRequest(jar=Path("a.jar"), main_class="M", env_filter=True), "apply to --flux only"),
        (JavaSubmitRequest(flux=Path("f.yaml"), workers=0), "--workers must be at least 1"),
        (JavaSubmitRequest(flux=Path("f.yaml"), sample_rate=0), "sample rate must be in"),
    ]
    for request, sentence in cases:
        with pytest.raises(TopologyError, match=re.escape(sentence)):
            check_request(request)


def test_profile_keys_parse_and_refuse_what_is_not_component_equals_key():
    assert parse_profile_keys("cpu=cpuWork5ms, count=wordCount") == {"cpu": "cpuWork5ms", "count": "wordCount"}
    for text, sentence in (("cpu", "is not component=profileKey"), ("cpu=", "is not component=profileKey"),
                           ("cpu=a,cpu=b", "names 'cpu' twice")):
        with pytest.raises(TopologyError, match=sentence):
            parse_profile_keys(text)


# ---- the Flux file ----------------------------------------------------------------------------------


def test_the_shipped_flux_file_reads_as_storms_testing_components_and_the_cpu_bolt():
    flux = read_flux(FLUX_FILE)
    assert flux.name == "words-cpu" and flux.spouts == ["words"] and flux.bolts == ["cpu", "count"]
    assert flux.parallelism == {"words": 2, "cpu": 2, "count": 1}
    assert flux.streams == [("words", "cpu", "shuffle"), ("cpu", "count", "fields")]
    assert flux.profiles() == {"words": "testWordSpout", "cpu": "cpuWork5ms", "count": "testWordCounter"}
    classes = {e["id"]: e["className"] for e in flux.document["spouts"] + flux.document["bolts"]}
    assert classes == {"words": "org.apache.storm.testing.TestWordSpout", "cpu": "org.hetsched.topologies.CpuWorkBolt",
                       "count": "org.apache.storm.testing.TestWordCounter"}
    graph = planner_topology(flux, {"cpu": 3})
    assert [(c.id, c.kind, c.profile, c.parallelism) for c in graph.components] == [
        ("words", "spout", "testWordSpout", None), ("cpu", "bolt", "cpuWork5ms", 3), ("count", "bolt", "testWordCounter", None)]


def test_the_plan_rewrites_a_copy_and_leaves_the_file_alone(tmp_path):
    flux = read_flux(FLUX_FILE)
    before = FLUX_FILE.read_text()
    copy = write_flux(with_plan(flux, {"words": 1, "cpu": 3, "count": 1}, name="other"), tmp_path / "copy.yaml")
    again = read_flux(copy)
    assert again.name == "other" and again.parallelism == {"words": 1, "cpu": 3, "count": 1}
    assert again.document["bolts"][0]["constructorArgs"] == [5000] and again.profiles() == flux.profiles()
    assert FLUX_FILE.read_text() == before
    with pytest.raises(TopologyError, match=r"has no component sink; its components are words, cpu, count"):
        with_plan(flux, {"sink": 2})


def test_a_plan_for_another_graph_is_refused_before_the_jvm(tmp_path):
    request = JavaSubmitRequest(flux=FLUX_FILE, plan_id="p-9")
    plan = SimpleNamespace(id="p-9", topology="linear", instances={"spout": 1, "low": 2, "__acker": 1})
    with pytest.raises(TopologyError, match=r"^plan p-9 \(topology 'linear'\) does not match topology words-cpu: it has "
                                            r"no instances for words, cpu, count and places components"):
        plan_client_run(request, tmp_path, tmp_path, [tmp_path / "flux-core.jar"], plan)


def test_an_app_jar_with_a_plan_keeps_its_own_counts_and_says_which_differ(tmp_path):
    home = _storm_home(tmp_path)
    jar = _jar(tmp_path / "app.jar", "com.example.Main")
    plan = SimpleNamespace(id="p-2", topology="words", instances={"words": 1, "cpu": 3, "__acker": 1})
    run, name, planned, _ = plan_client_run(JavaSubmitRequest(jar=jar, main_class="com.example.Main", plan_id="p-2"),
                                            tmp_path, home, [], plan)
    assert name is None and planned == {"words": 1, "cpu": 3} and run.options[keys.PLAN_ID] == "p-2"
    result = JavaSubmitResult(name="words", topology_id="words-1-1", main_class="com.example.Main",
                              executors={"words": 1, "cpu": 2}, planned=planned, profiles={}, conf={}, nimbus="x")
    assert result.unplanned() == {"cpu": (2, 3)}


@pytest.mark.parametrize("text, sentence", [
    ("name: x\nspouts: [\n", r"is not valid YAML at line 3, column 1"),
    ("- just\n- a list\n", r"is not a Flux topology"),
    ("spouts: [{id: s, className: a.S}]\n", r"has no topology name"),
    ("name: x\nbolts: [{id: b, className: a.B}]\n", r"has no spouts"),
    ("name: x\nspouts: [{id: s}]\n", r"spouts entry 1 needs an id and a className"),
    ("name: x\nspouts: [{id: s, className: a.S}]\nbolts: [{id: s, className: a.B}]\n", r"names s more than once"),
    ("name: x\nspouts: [{id: s, className: a.S, parallelism: 0}]\n", r"parallelism of 's' must be a whole number"),
    ("name: x\nspouts: [{id: s, className: a.S, parallelism: '${p}'}]\n", r"uses \$\{p\}, which --filter does not define"),
    ("name: ${ENV-NAME}\nspouts: [{id: s, className: a.S}]\n", r"uses \$\{ENV-NAME\}, which --filter or --env-filter does not"),
    ("name: x\nspouts: [{id: s, className: a.S}]\nstreams: [{from: s, to: b, grouping: {type: SHUFFLE}}]\n",
     r"stream 1 \(s -> b\) names b, which is not a spout or bolt"),
    ("name: x\nspouts: [{id: s, className: a.S}]\nbolts: [{id: b, className: a.B}]\n"
     "streams: [{from: s, to: b, grouping: {type: ROUND_ROBIN}}]\n", r"has no grouping type Flux knows"),
    ("name: x\nincludes: [{resource: false, file: other.yaml}]\nspouts: [{id: s, className: a.S}]\n", r"uses includes"),
])
def test_a_bad_flux_file_is_one_sentence_naming_the_file(tmp_path, text, sentence):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(TopologyError, match=r"^the Flux file .*bad.yaml.*" + sentence):
        read_flux(path)


def test_filters_substitute_properties_and_the_environment_as_flux_does(tmp_path, monkeypatch):
    props = tmp_path / "dev.properties"
    props.write_text("# parallelism\nspout.parallelism=3\nbolt.class : a.B\n! comment\n")
    assert parse_properties(props.read_text()) == {"spout.parallelism": "3", "bolt.class": "a.B"}
    monkeypatch.setenv("TOPOLOGY_NAME", "from-env")
    path = tmp_path / "t.yaml"
    path.write_text("name: ${ENV-TOPOLOGY_NAME}\nspouts: [{id: s, className: a.S, parallelism: ${spout.parallelism}}]\n"
                    "bolts: [{id: b, className: ${bolt.class}}]\n")
    flux = read_flux(path, props, env_filter=True)
    assert flux.name == "from-env" and flux.parallelism == {"s": 3, "b": 1}
    assert substitute("${ENV-TOPOLOGY_NAME} ${x}", {}, None) == "${ENV-TOPOLOGY_NAME} ${x}"
    with pytest.raises(TopologyError, match="the --filter properties file .* does not exist"):
        read_flux(path, tmp_path / "none.properties")
    assert flux_args(path, props, True) == ["--remote", "--no-splash", "--filter", str(props), "--env-filter", str(path)]


def test_a_missing_flux_file_is_one_sentence(tmp_path):
    with pytest.raises(TopologyError, match=r"^the Flux file .*none.yaml does not exist$"):
        read_flux(tmp_path / "none.yaml")
    with pytest.raises(TopologyError, match="is not a Flux topology"):
        parse_flux("just text", tmp_path / "t.yaml")


# ---- the real client JVM, no Nimbus ------------------------------------------------------------------


def _real_storm() -> tuple[Path, list[Path]]:
    from cluster.storm_home import flux_jars, storm_home_path

    home, jars = storm_home_path(), flux_jars()
    if not (home / "lib-worker").is_dir() or not all(j.is_file() for j in jars) or not JAVA_JAR.is_file():
        pytest.skip("STORM_HOME, Flux's jars or the Java topologies jar are missing (make setup)")
    return home, jars


@pytest.mark.slow
def test_flux_builds_the_planned_copy_with_storms_classes_and_the_projects_bolt(tmp_path):
    home, jars = _real_storm()
    copy = write_flux(with_plan(read_flux(FLUX_FILE), {"words": 1, "cpu": 3, "count": 1}), tmp_path / "words-cpu.yaml")
    result = run_client(ClientRun(FLUX_MAIN, ["--dry-run", "--no-splash", str(copy)], JAVA_JAR, jars + [JAVA_JAR]),
                        ADDRESS, home)
    assert "words [1] (org.apache.storm.testing.TestWordSpout)" in result.stdout
    assert "cpu [3] (org.hetsched.topologies.CpuWorkBolt)" in result.stdout
    assert "count [1] (org.apache.storm.testing.TestWordCounter)" in result.stdout
    assert "cpu --FIELDS--> count" in result.stdout


@pytest.mark.slow
def test_a_class_without_main_exits_non_zero_and_says_so(tmp_path):
    home, _ = _real_storm()
    with pytest.raises(TopologyError, match=r"^org.hetsched.topologies.CpuWork exited with code 1; its last lines of "
                                            r"stderr:\n.*Main method not found"):
        run_client(ClientRun("org.hetsched.topologies.CpuWork", [], JAVA_JAR, [JAVA_JAR]), ADDRESS, home)


# ---- the command line --------------------------------------------------------------------------------


@pytest.mark.parametrize("args, sentence", [
    (["--flux", str(FLUX_FILE), "--rate", "5"], "--rate applies to the catalog's topologies only"),
    (["--flux", str(FLUX_FILE), "extra"], "--flux takes no arguments, got extra"),
    (["--jar", "app.jar"], "--jar app.jar needs --class"),
    (["--jar", "app.jar", "--class", "com.example.Main", "--force"], "--force applies to --flux only"),
    (["linear", "--profile-keys", "low=x"], "apply to --flux or --jar/--class only"),
    ([], "give one topology of the catalog"),
    (["--jar", "/nonexistent/app.jar", "--class", "com.example.Main", "--nimbus", "127.0.0.1:1"],
     "the app jar /nonexistent/app.jar does not exist"),
])
def test_the_command_refuses_mixed_or_missing_forms_in_one_sentence(args, sentence):
    result = runner.invoke(app, ["submit", *args])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert sentence in " ".join(result.output.split())
