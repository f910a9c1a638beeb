"""docker-compose.yml against the local cluster spec, the plugin's own settings and the network rules.

Nothing is started here (tests/test_compose_live.py starts it): ``docker-compose config``
(Debian's package, installed by ``make setup``) checks and resolves the file, and the tests hold
every service to the spec (machines, CPU limits, scheduler meta), to the plugin's Java source
(scheduler class, ``hetsched.*`` keys, jar location in the image) and to the network rules
(an internal cluster network, ports published on 127.0.0.1 only).
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import tomllib
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from typer.testing import CliRunner

from cluster import compose
from cluster.errors import ClusterError
from cluster.spec import DEFAULT_SPEC, load_spec, parse_spec
from cluster.storm_config import SUPERVISOR_MAIN
from cluster.storm_home import STORM_VERSION
from hetsched.cli import _register, app
from tests.fixtures.docs import (
    NIMBUS_SETTINGS_FILE,
    java_string_constant,
    plugin_scheduler_class,
    plugin_settings,
)

REPO = Path(__file__).resolve().parents[1]
CONF_TARGET = "/etc/hetsched/storm.yaml"

NO_COMPOSE_TOOL = "docker-compose is not installed (make setup installs Debian's docker-compose where apt can be used)"
needs_compose_tool = pytest.mark.skipif(shutil.which("docker-compose") is None, reason=NO_COMPOSE_TOOL)


def docker_compose_config(project: Path) -> dict:
    """The file as docker-compose resolves it: validated, variables filled in, paths made absolute."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HETSCHED_PLANNER_TOKEN")}
    done = subprocess.run(["docker-compose", "--project-directory", str(project), "-f", str(project / "docker-compose.yml"),
                           "config"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, f"docker-compose config refused the file:\n{done.stderr}"
    return yaml.safe_load(done.stdout)


@pytest.fixture(scope="module")
def resolved() -> dict:
    """docker-compose.yml of the repository as docker-compose resolves it, no token set."""
    if shutil.which("docker-compose") is None:
        pytest.skip(NO_COMPOSE_TOOL)
    return docker_compose_config(REPO)


def mounted_storm_conf(service: dict) -> dict:
    """The storm.yaml a resolved service mounts at /etc/hetsched/storm.yaml and names with -Dstorm.conf.file."""
    assert f"-Dstorm.conf.file={CONF_TARGET}" in service["command"]
    sources = [v["source"] for v in service["volumes"] if isinstance(v, dict) and v["target"] == CONF_TARGET]
    assert len(sources) == 1, f"one storm.yaml mount expected, got {sources}"
    assert all(v.get("read_only") for v in service["volumes"] if isinstance(v, dict))
    return yaml.safe_load(Path(sources[0]).read_text())


def supervisors(config: dict) -> dict[str, dict]:
    return {name: s for name, s in config["services"].items() if SUPERVISOR_MAIN in s.get("command", [])}


def host_port(published) -> tuple[str, str]:
    """(host address, host port) of a published port, in compose v1's short form or v2's long one."""
    if isinstance(published, dict):
        return published.get("host_ip", ""), str(published["published"])
    parts = str(published).split("/")[0].split(":")
    return (parts[0], parts[1]) if len(parts) == 3 else ("", parts[0])


def storm_daemons(config: dict) -> dict[str, dict]:
    """Services that run a Storm daemon (they read a storm.yaml): Nimbus and the supervisors."""
    return {name: s for name, s in config["services"].items()
            if s.get("command", [""])[0] == "java" and f"-Dstorm.conf.file={CONF_TARGET}" in s["command"]
            and name != "zookeeper"}


def run_hetsched(*args: str):
    """The ``hetsched`` command line in this process (every command registered, as ``main`` does)."""
    _register()
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_committed_files_are_what_the_default_spec_gives():
    stale = compose.stale_files(load_spec())
    assert stale == [], f"out of date, run `hetsched cluster compose`: {stale}"


def test_docker_compose_accepts_the_file_and_it_has_every_part(resolved):
    config = resolved
    spec = load_spec()
    expected = {"zookeeper", "nimbus", "planner"} | {f"supervisor-{m}" for m, _ in spec.machine_ids()}
    assert set(config["services"]) == expected
    for name in expected - {"planner"}:
        assert config["services"][name]["image"] == f"hetsched-storm:{STORM_VERSION}", "built here, not pulled"
    assert config["services"]["planner"]["image"] == compose.PLANNER_IMAGE
    assert all("build" not in s for s in config["services"].values()), "images are built by hetsched (cluster/compose_images.py)"


def test_only_the_project_s_networks_and_only_loopback_ports(resolved):
    """Every container on the internal cluster network; Nimbus and the planner also on the NAT-less edge
    network, only to publish their ports, on 127.0.0.1; nothing else is published."""
    networks = resolved["networks"]
    assert networks[compose.CLUSTER_NETWORK].get("internal") is True
    edge = networks[compose.EDGE_NETWORK]
    assert edge["driver_opts"]["com.docker.network.bridge.enable_ip_masquerade"] == "false"
    assert edge["driver_opts"]["com.docker.network.bridge.host_binding_ipv4"] == "127.0.0.1"
    for name, service in resolved["services"].items():
        on = set(service["networks"])
        assert compose.CLUSTER_NETWORK in on, name
        published = [host_port(p) for p in service.get("ports", [])]
        if name in ("nimbus", "planner"):
            assert on == {compose.CLUSTER_NETWORK, compose.EDGE_NETWORK}
            assert published and all(ip == "127.0.0.1" for ip, _port in published), f"{name}: {published}"
        else:
            assert on == {compose.CLUSTER_NETWORK}, f"{name} is only on the internal network"
            assert not published, f"{name} publishes {published}"
        assert service.get("network_mode") is None and not service.get("extra_hosts"), name


def test_published_ports_follow_the_run_s_variables():
    if shutil.which("docker-compose") is None:
        pytest.skip(NO_COMPOSE_TOOL)
    env = {**os.environ, compose.NIMBUS_PORT_VARIABLE: "23456", compose.PLANNER_PORT_VARIABLE: "23457"}
    done = subprocess.run(["docker-compose", "--project-directory", str(REPO), "-f", str(REPO / "docker-compose.yml"),
                           "config"], capture_output=True, text=True, env=env, timeout=120)
    services = yaml.safe_load(done.stdout)["services"]
    assert [host_port(p) for p in services["nimbus"]["ports"]] == [("127.0.0.1", "23456")]
    assert [host_port(p) for p in services["planner"]["ports"]] == [("127.0.0.1", "23457")]


def test_supervisors_are_the_spec_machines_with_their_cpu_limits_and_types(resolved):
    config = resolved
    spec = load_spec()
    nimbus_conf = mounted_storm_conf(config["services"]["nimbus"])
    defaults = {s.constant: s.default for s in plugin_settings()}
    type_key = nimbus_conf.get("hetsched.machine.type.key", defaults["MACHINE_TYPE_KEY"])
    id_key = nimbus_conf.get("hetsched.machine.id.key", defaults["MACHINE_ID_KEY"])
    cores_key = java_string_constant("Machine.java", "CORES_KEY")

    found = supervisors(config)
    assert len(found) == sum(t.count for t in spec.machine_types)
    smallest = min(t.cpu_cores for t in spec.machine_types)
    for machine_id, machine_type in spec.machine_ids():
        name = f"supervisor-{machine_id}"
        service, conf = found[name], mounted_storm_conf(found[name])
        assert float(service["cpus"]) == pytest.approx(machine_type.cpu_cores)
        assert float(service["cpus"]) / smallest == pytest.approx(machine_type.cpu_cores / smallest)
        assert service["image"] == f"hetsched-storm:{STORM_VERSION}"
        meta = conf["supervisor.scheduler.meta"]
        assert meta[type_key] == machine_type.name
        assert meta[id_key] == machine_id, "plans made with the spec's machine ids must fit these supervisors"
        assert float(meta[cores_key]) == pytest.approx(machine_type.cpu_cores)
        assert conf["supervisor.cpu.capacity"] == pytest.approx(machine_type.cpu_cores * 100)
        assert conf["supervisor.memory.capacity.mb"] == pytest.approx(machine_type.memory_mb)
        assert len(conf["supervisor.slots.ports"]) == machine_type.slots
        assert conf["storm.local.hostname"] == service["hostname"] == name
    capacities = sorted(mounted_storm_conf(s)["supervisor.cpu.capacity"] for s in found.values())
    assert capacities == sorted(t.cpu_cores * 100 for t in spec.machine_types for _ in range(t.count))


def test_nimbus_runs_the_plugin_against_the_planner_service(resolved):
    config = resolved
    nimbus = config["services"]["nimbus"]
    conf = mounted_storm_conf(nimbus)
    assert conf["storm.scheduler"] == plugin_scheduler_class()

    nimbus_keys = {s.key for s in plugin_settings() if s.scope == "nimbus"}
    used = {k for k in conf if k.startswith("hetsched.")}
    assert used <= nimbus_keys, f"keys the plugin does not read from storm.yaml: {used - nimbus_keys}"

    url = urlparse(conf[java_string_constant(NIMBUS_SETTINGS_FILE, "PLANNER_URL")])
    assert url.scheme == "http" and url.hostname in config["services"]
    planner = config["services"][url.hostname]
    published = {p["target"] for p in planner["ports"]} if isinstance(planner["ports"][0], dict) else {
        int(str(p).split(":")[-1].split("/")[0]) for p in planner["ports"]}
    assert url.port in published
    assert all(p.get("host_ip", "127.0.0.1") == "127.0.0.1" for p in planner["ports"] if isinstance(p, dict))

    pom = (REPO / "storm-plugin" / "pom.xml").read_text()
    jar_name = re.search(r"<finalName>([^<]+)</finalName>", pom).group(1) + ".jar"
    assert re.search(r"<storm.version>([^<]+)</storm.version>", pom).group(1) == STORM_VERSION
    dockerfile = (REPO / "docker" / "storm.Dockerfile").read_text()
    for folder in ("extlib-daemon", "extlib"):  # Nimbus's scheduler; the workers' metrics hook
        assert f"COPY {jar_name} /apache-storm/{folder}/{jar_name}" in dockerfile
    assert compose.PLUGIN_JAR_NAME == jar_name
    class_path = nimbus["command"][nimbus["command"].index("-cp") + 1].split(":")
    assert "/apache-storm/extlib-daemon/*" in class_path and "/apache-storm/extlib/*" in class_path

    daemons = storm_daemons(config)
    assert set(daemons) == {"nimbus"} | set(supervisors(config))
    for name, service in daemons.items():
        daemon_conf = mounted_storm_conf(service)
        assert daemon_conf["storm.zookeeper.servers"] == ["zookeeper"], name
        assert daemon_conf["nimbus.seeds"] == ["nimbus"], name


def test_the_token_reaches_the_planner_and_nimbus_as_files_never_on_a_command_line(resolved):
    services = resolved["services"]
    for name, service in services.items():
        assert not any("token" in word.lower() for word in service.get("command", [])), f"{name} has a token in argv"
        assert not {k for k in service.get("environment") or {} if k == "HETSCHED_PLANNER_TOKEN"}, name
    secrets = resolved["secrets"]
    planner, nimbus = services["planner"], services["nimbus"]

    planner_secret = compose.PLANNER_TOKEN
    assert [s["source"] for s in planner["secrets"]] == [planner_secret.secret]
    assert Path(secrets[planner_secret.secret]["file"]) == REPO / "docker" / "secrets" / planner_secret.file_name
    assert planner["environment"]["HETSCHED_PLANNER_TOKEN_FILE"] == f"/run/secrets/{planner_secret.secret}"

    nimbus_secret = compose.NIMBUS_TOKEN
    assert [s["source"] for s in nimbus["secrets"]] == [nimbus_secret.secret]
    assert Path(secrets[nimbus_secret.secret]["file"]) == REPO / "docker" / "secrets" / nimbus_secret.file_name
    conf = mounted_storm_conf(nimbus)
    assert conf[java_string_constant(NIMBUS_SETTINGS_FILE, "PLANNER_TOKEN_FILE")] == f"/run/secrets/{nimbus_secret.secret}"
    assert java_string_constant(NIMBUS_SETTINGS_FILE, "PLANNER_TOKEN") not in conf, "an inline token is shown by getNimbusConf"
    assert (REPO / ".gitignore").read_text().count("/docker/secrets/") == 1


def test_the_workers_of_every_supervisor_ship_metrics_to_the_planner_with_a_records_only_token(resolved):
    """Workers read their supervisor's storm.yaml: the hook's URL must name the planner's service, its token the
    workers' secret, never Nimbus's (the workers run user code)."""
    secret = compose.WORKERS_TOKEN
    planner_url = mounted_storm_conf(resolved["services"]["nimbus"])[java_string_constant(NIMBUS_SETTINGS_FILE, "PLANNER_URL")]
    for name, service in supervisors(resolved).items():
        assert [s["source"] for s in service["secrets"]] == [secret.secret], name
        conf = mounted_storm_conf(service)
        assert conf[java_string_constant("metrics/MetricsSettings.java", "METRICS_URL")] == planner_url, name
        assert conf[java_string_constant("metrics/MetricsSettings.java", "METRICS_TOKEN_FILE")] == secret.in_container, name
        # not the plugin's key: Nimbus merges its storm.yaml into every topology's conf, where it would win
        assert java_string_constant(NIMBUS_SETTINGS_FILE, "PLANNER_TOKEN_FILE") not in conf, name
        assert urlparse(planner_url).hostname in {n for n, s in resolved["services"].items() if "cluster" in s["networks"]}
    assert Path(resolved["secrets"][secret.secret]["file"]) == REPO / "docker" / "secrets" / secret.file_name


def test_the_committed_supervisors_name_the_workers_token_not_nimbus_s():
    """The same without docker-compose, on the generated files themselves."""
    deployment = compose.deployment(load_spec())
    for name, service in deployment.compose["services"].items():
        if name.startswith("supervisor-"):
            assert service["secrets"] == [compose.WORKERS_TOKEN.secret], name
            conf = deployment.storm_confs[f"{name}.yaml"]
            assert conf[compose.METRICS_TOKEN_FILE_SETTING] == compose.WORKERS_TOKEN.in_container, name
            assert compose.TOKEN_FILE_SETTING not in conf, name  # Nimbus's, merged into every topology's conf
    assert deployment.compose["services"]["nimbus"]["secrets"] == [compose.NIMBUS_TOKEN.secret]
    assert set(deployment.compose["secrets"]) == {t.secret for t in compose.TOKEN_SECRETS}


def _plugin_calls() -> set[tuple[str, str]]:
    """(method, path) of every planner call in the plugin's PlannerClient, from its call labels."""
    source = (REPO / "storm-plugin/src/main/java/org/hetsched/storm/PlannerClient.java").read_text()
    calls = {(m, p) for m, p in re.findall(r'"(GET|POST|PUT|DELETE) (/v1/[A-Za-z/]+)"', source)}
    for path, method in re.findall(r'String path = "(/v1/[A-Za-z/]+)".*?"(GET|POST|PUT|DELETE) " \+ path', source, re.S):
        calls.add((method, path + "x"))
    return calls


def test_nimbus_s_token_has_the_scopes_of_every_call_the_plugin_makes_and_no_more():
    from planner.service.scopes import required_scope

    calls = _plugin_calls()
    assert {("PUT", "/v1/assignments/x"), ("POST", "/v1/tenants/alive"), ("GET", "/v1/profiles/")} <= calls
    needed = {required_scope(method, path) for method, path in calls}
    assert None not in needed, "a call of the plugin needs an all-scope token"
    assert needed == set(compose.NIMBUS_SCOPES)


def test_the_planner_s_file_gives_each_holder_its_scopes_and_each_holder_s_file_holds_its_token_alone():
    from planner.service.scopes import ALL_SCOPES, Scope, parse_token_lines

    tokens = compose.ComposeTokens(operator="op-token", nimbus="nimbus-token", workers="workers-token")
    texts = compose.token_file_texts(tokens)
    grants = parse_token_lines(texts[compose.PLANNER_TOKEN.file_name], "planner-token")
    assert grants == {"op-token": ALL_SCOPES, "nimbus-token": frozenset({Scope.READ, Scope.PLAN, Scope.BIND}),
                      "workers-token": frozenset({Scope.RECORDS})}
    assert texts[compose.NIMBUS_TOKEN.file_name] == "nimbus-token\n"
    assert texts[compose.WORKERS_TOKEN.file_name] == "workers-token\n"
    assert texts[compose.OPERATOR_TOKEN_FILE] == "op-token\n"


def test_each_token_file_belongs_to_the_user_its_image_runs_as():
    planner = (REPO / "docker" / "planner.Dockerfile").read_text()
    assert re.search(rf"useradd .*--uid {compose.PLANNER_UID} hetsched", planner)
    assert re.search(r"^USER hetsched$", planner, re.M)
    assert compose.NIMBUS_TOKEN.uid == compose.STORM_UID and compose.PLANNER_TOKEN.uid == compose.PLANNER_UID
    assert compose.WORKERS_TOKEN.uid == compose.STORM_UID


def test_new_token_files_are_private_hold_their_tokens_and_name_their_owner(tmp_path, monkeypatch):
    secrets = compose.TOKEN_SECRETS
    given_away = []
    monkeypatch.setattr(os, "chown", lambda path, uid, gid: given_away.append((Path(path).name, uid)))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    first = compose.ComposeTokens(operator="op", nimbus="nim", workers="work")
    assert compose.write_token_files(tmp_path, first) == []
    assert sorted(given_away) == sorted((s.file_name, s.uid) for s in secrets), "root gives each service file to its user"
    assert stat.S_IMODE((tmp_path / "docker" / "secrets").stat().st_mode) == 0o700
    for name, text in compose.token_file_texts(first).items():
        path = tmp_path / compose.SECRETS_FOLDER / name
        assert path.read_text() == text
        assert stat.S_IMODE(path.stat().st_mode) == 0o600

    given_away.clear()
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    left = compose.write_token_files(tmp_path)
    assert given_away == []
    alone = [(tmp_path / s.source).read_text().strip() for s in (compose.NIMBUS_TOKEN, compose.WORKERS_TOKEN)]
    alone.append((tmp_path / compose.SECRETS_FOLDER / compose.OPERATOR_TOKEN_FILE).read_text().strip())
    assert len(set(alone)) == 3 and all(len(t) >= 40 for t in alone), "three new random tokens"
    assert "nim" not in alone
    expected = [f"{tmp_path / s.source} must belong to uid {s.uid}, whom its container runs as: "
                f"sudo chown {s.uid} {tmp_path / s.source}" for s in secrets if (tmp_path / s.source).stat().st_uid != s.uid]
    assert left == expected and expected, "a user who is not root is told whom each file must belong to"


def test_a_compose_cluster_s_operator_token_has_every_scope_and_an_older_home_s_bare_token_still_reads(tmp_path):
    from cluster.compose_cluster import ComposeCluster

    cluster = ComposeCluster(home=tmp_path / "home")
    compose.write_token_files(cluster.home, compose.ComposeTokens("op", "nim", "work"), secrets_folder=Path("secrets"))
    assert cluster.planner_token() == "op"

    older = ComposeCluster(home=tmp_path / "older")
    (older.home / "secrets").mkdir(parents=True)
    (older.home / "secrets" / compose.PLANNER_TOKEN.file_name).write_text("one-for-all\n")
    assert older.planner_token() == "one-for-all"


def test_images_use_the_project_pins():
    from cluster.compose_images import STREAMPARSE_PINS

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = {re.split(r"[<>=!]", d, maxsplit=1)[0]: d for d in project["optional-dependencies"]["topologies"]}
    storm = (REPO / "docker" / "storm.Dockerfile").read_text()
    for package in ("streamparse", "setuptools"):
        assert f'"{pins[package]}"' in storm, f"storm.Dockerfile must pin {pins[package]}"
        assert pins[package] in STREAMPARSE_PINS, "the wheels built for the image are the pinned ones"
    assert "--no-index" in storm, "no build step reaches the network"
    for dockerfile in ("storm.Dockerfile", "planner.Dockerfile"):
        text = (REPO / "docker" / dockerfile).read_text()
        assert re.search(r"^ARG BASE_IMAGE=hetsched-base:bookworm$", text, re.M) and "FROM ${BASE_IMAGE}" in text
        assert "apt-get" not in text and "pip install -q --no-index" in text
    assert compose.BASE_IMAGE == "hetsched-base:bookworm" and compose.STORM_IMAGE == f"hetsched-storm:{STORM_VERSION}"

    planner = (REPO / "docker" / "planner.Dockerfile").read_text()
    cmd = re.search(r"^CMD (\[.*\])$", planner, re.M).group(1)
    assert yaml.safe_load(cmd) == ["hetsched", "serve", "--host", "0.0.0.0", "--port", str(compose.PLANNER_PORT)]
    venv = "/opt/hetsched/venv"
    assert f"VIRTUAL_ENV={venv}" in planner and f"VIRTUAL_ENV={venv}" in storm


@needs_compose_tool
def test_another_spec_gives_a_consistent_deployment_elsewhere(tmp_path):
    spec_path = tmp_path / "two-types.yaml"
    spec_path.write_text(yaml.safe_dump({
        "name": "two-types",
        "machine_types": [{"name": "slow", "cpu_cores": 0.5, "slots": 1, "count": 2},
                          {"name": "fast", "cpu_cores": 1.5, "slots": 3, "count": 1}],
        "storm_conf": {"topology.stats.sample.rate": 1.0},
    }))
    out = tmp_path / "deploy"
    out.mkdir()
    (out / "docker" / "storm").mkdir(parents=True)
    (out / "docker" / "storm" / "supervisor-gone-1.yaml").write_text("stale: true\n")
    spec = load_spec(spec_path)
    compose.write(spec, spec_path, out)

    assert not (out / "docker" / "storm" / "supervisor-gone-1.yaml").exists()
    assert compose.stale_files(spec, spec_path, out) == []
    config = docker_compose_config(out)
    found = supervisors(config)
    assert {n: float(s["cpus"]) for n, s in found.items()} == {
        "supervisor-slow-1": 0.5, "supervisor-slow-2": 0.5, "supervisor-fast-1": 1.5}
    for service in found.values():
        conf = mounted_storm_conf(service)
        assert conf["topology.stats.sample.rate"] == 1.0
    assert f"--spec {spec_path}" in (out / "docker-compose.yml").read_text()


def test_a_setting_about_the_local_host_is_refused_not_written(monkeypatch):
    real = compose.daemon_conf

    def with_local_folder(layout, daemon, scheduler, extra):
        return {**real(layout, daemon, scheduler, extra), "storm.workers.artifacts.dir": str(layout.home / "artifacts")}

    monkeypatch.setattr(compose, "daemon_conf", with_local_folder)
    with pytest.raises(ClusterError, match="storm.workers.artifacts.dir"):
        compose.deployment(load_spec())


def test_command_checks_and_writes(tmp_path):
    checked = run_hetsched("cluster", "compose", "--check")
    assert checked.exit_code == 0, checked.stderr
    assert "matches" in checked.stdout

    stale = run_hetsched("cluster", "compose", "--check", "--out", str(tmp_path))
    assert stale.exit_code == 1
    assert "out of date" in stale.stderr and "docker-compose.yml" in stale.stderr

    written = run_hetsched("cluster", "compose", "--out", str(tmp_path))
    assert written.exit_code == 0, written.stderr
    assert (tmp_path / "docker-compose.yml").is_file()
    assert run_hetsched("cluster", "compose", "--check", "--out", str(tmp_path)).exit_code == 0

    missing = run_hetsched("cluster", "compose", "--spec", str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 1
    assert "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    assert DEFAULT_SPEC.is_file()


def test_a_run_s_nimbus_may_run_another_scheduler_and_nothing_else_changes():
    from cluster.storm_config import SCHEDULERS

    spec = load_spec()
    plugin, ras = compose.deployment(spec), compose.deployment(spec, scheduler="resource_aware", nimbus_extra={"x.y": 1})
    assert ras.storm_confs["nimbus.yaml"]["storm.scheduler"] == SCHEDULERS["resource_aware"]
    assert ras.storm_confs["nimbus.yaml"]["x.y"] == 1
    assert {k: v for k, v in ras.storm_confs.items() if k != "nimbus.yaml"} == {
        k: v for k, v in plugin.storm_confs.items() if k != "nimbus.yaml"}
    assert ras.compose == plugin.compose


def test_bad_input_is_refused_in_one_sentence_naming_the_fault(tmp_path):
    from cluster.compose_cluster import ComposeCluster

    with pytest.raises(ClusterError, match=r"^Unknown scheduler 'fastest'; choose one of default, "):
        ComposeCluster(load_spec(), home=tmp_path).up(scheduler="fastest")
    bench = run_hetsched("bench", "--cluster", "kubernetes", "--out", str(tmp_path / "b"))
    assert bench.exit_code == 1
    assert "unknown cluster 'kubernetes'; known: local, compose" in bench.stderr
    assert "Traceback" not in bench.output
    multi = run_hetsched("bench", "--cluster", "compose", "--scenario", "multi-tenant", "--out", str(tmp_path / "m"))
    assert multi.exit_code == 1 and "runs on the local cluster only" in multi.stderr


def test_a_machine_type_with_a_memory_limit_gets_it_in_its_container():
    spec = parse_spec({"machine_types": [
        {"name": "small", "cpu_cores": 0.2, "memory_mb": 512, "memory_limit_mb": 768},
        {"name": "large", "cpu_cores": 0.8}]})
    services = compose.deployment(spec, ".").compose["services"]
    small = next(s for name, s in services.items() if "small" in name)
    large = next(s for name, s in services.items() if "large" in name)
    assert (small["mem_limit"], small["memswap_limit"]) == ("768m", "768m")
    assert "mem_limit" not in large


def test_a_spec_other_than_the_committed_one_runs_from_a_compose_file_generated_into_the_home(tmp_path):
    from cluster.compose_cluster import REPO_ROOT, ComposeCluster

    assert ComposeCluster(load_spec(), home=tmp_path / "default", port_base=25000).deployment_dir() == REPO_ROOT
    raw = yaml.safe_load(DEFAULT_SPEC.read_text())
    next(t for t in raw["machine_types"] if t["name"] == "medium")["count"] = 2
    four = ComposeCluster(parse_spec({**raw, "name": "plus-medium"}), home=tmp_path / "four", port_base=25000)
    folder = four.deployment_dir()
    assert folder == tmp_path / "four" / "compose" / "deployment"
    four._write_deployment()
    services = yaml.safe_load((folder / compose.COMPOSE_FILE).read_text())["services"]
    assert {compose.supervisor_service(m) for m in ("small-1", "medium-1", "medium-2", "large-1")} <= set(services)
    assert [p.name for p in four.supervisor_conf_files()] == [
        f"{compose.supervisor_service(m.id)}.yaml" for m in four.layout.machines]
    assert not compose.stale_files(load_spec()), "the committed files are left as they are"
