"""``hetsched submit`` before anything reaches Nimbus: the profile set against the topology's pairs, the load-aware
shuffle of a planned topology, and whether the workers can load the metrics hook."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import hetsched.submit_checks as checks
import hetsched.topology_cmd  # noqa: F401  registers submit on app
import topologies.java_submit as java_submit
import topologies.submit as catalog_submit
from hetsched.cli import app
from observe.nimbus import NimbusAddress
from planner.client import PlannerClient
from planner.model import ProfileSet
from tests.fixtures.service import small_profiles
from topologies.errors import TopologyError

runner = CliRunner()
NIMBUS = NimbusAddress("127.0.0.1", 1)
FOREIGN = checks.ClusterMachines(None, "", False)
FLUX_FILE = Path("topologies/flux/words-cpu.yaml")


def one_line(text: str) -> str:
    return " ".join(text.split())


def supervisor_yaml(folder: Path, name: str, machine_type: str | None) -> Path:
    meta = {"machine-id": name} | ({"machine-type": machine_type} if machine_type else {})
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"storm.local.hostname": name, "supervisor.scheduler.meta": meta}))
    return path


@pytest.fixture(scope="module")
def stored_set(planner_service) -> str:
    with PlannerClient(planner_service.url) as client:
        client.put_profile_set(ProfileSet.model_validate(small_profiles("submit-checks")))
    return "submit-checks"


@pytest.fixture
def stopped(monkeypatch):
    """Every submission that got past the checks, stopped before Nimbus."""
    asked = []

    def stop(request, address, **kwargs):
        asked.append(request)
        raise TopologyError("stopped before Nimbus")

    monkeypatch.setattr(catalog_submit, "submit", stop)
    monkeypatch.setattr(java_submit, "submit_java", stop)
    return asked


def test_missing_pairs_name_the_components_every_type_and_what_to_do():
    profile_set = ProfileSet.model_validate(small_profiles("lab"))
    keys = {"spout": "spout", "low": "lowCompute", "mid": "midCompute", "high": "highCompute", "high2": "highCompute"}
    assert checks.missing_pairs(profile_set, keys, {"slow", "fast"}) == {"midCompute": ["fast", "slow"]}
    assert checks.missing_pairs(profile_set, keys, {"slow", "tiny"}) == {
        k: ["tiny"] for k in ("highCompute", "lowCompute", "midCompute", "spout")} | {"midCompute": ["slow", "tiny"]}
    assert checks.missing_pairs(profile_set, keys, None) == {"midCompute": []}  # types unknown: keys only
    sentence = checks.missing_sentence("lab", {"midCompute": ["fast", "slow"], "highCompute": ["tiny"]}, keys, "linear")
    assert sentence == ("profile set 'lab' has no profile for mid (profile key midCompute) on machine types fast, slow; "
                        "for high, high2 (profile key highCompute) on machine type tiny: omit --profiles to place linear "
                        "evenly, then profile it live with `hetsched tune linear --store DIR --explore` (its workers' "
                        "records flow from the even placement), or add these pairs to the set")


def test_machine_types_come_from_the_supervisors_files(tmp_path):
    files = [supervisor_yaml(tmp_path, "a", "slow"), supervisor_yaml(tmp_path, "b", None)]
    machines = checks.cluster_machines(NIMBUS, files)
    assert machines.types == {"slow", "default"} and not machines.workers_have_plugin
    (tmp_path / "bad.yaml").write_text("[1, 2")
    with pytest.raises(TopologyError, match="--storm-yaml .*bad.yaml is not YAML"):
        checks.cluster_machines(NIMBUS, [tmp_path / "bad.yaml"])
    assert checks.cluster_machines(NIMBUS).types is None  # no files, no cluster of this checkout at that address


def test_a_set_without_the_topologys_pairs_is_refused_at_submit_with_exit_code_1(planner_service, stored_set, tmp_path,
                                                                                  stopped):
    files = [supervisor_yaml(tmp_path, "m1", "slow"), supervisor_yaml(tmp_path, "m2", "fast")]
    result = runner.invoke(app, ["submit", "linear", "--profiles", stored_set, "--planner", planner_service.url,
                                 "--storm-yaml", str(files[0]), "--storm-yaml", str(files[1]), "--no-metrics",
                                 "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1, result.output
    assert one_line(result.output) == one_line(
        f"error: profile set '{stored_set}' has no profile for mid (profile key midCompute) on machine types fast, "
        "slow: omit --profiles to place linear evenly, then profile it live with `hetsched tune linear --store DIR "
        "--explore` (its workers' records flow from the even placement), or add these pairs to the set")
    assert stopped == []  # nothing reached Nimbus


def test_an_unknown_set_is_one_sentence_with_what_to_do(planner_service, stopped):
    result = runner.invoke(app, ["submit", "linear", "--profiles", "nosuchset", "--planner", planner_service.url,
                                 "--no-metrics", "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1
    text = one_line(result.output)
    assert f"the planner at {planner_service.url} has no profile set 'nosuchset'" in text
    assert "omit --profiles to place linear evenly, then profile it live with `hetsched tune linear" in text
    assert stopped == []


def test_a_flux_files_pairs_are_checked_before_its_jvm_starts(planner_service, stored_set, tmp_path, stopped):
    files = [supervisor_yaml(tmp_path, "m1", "slow")]
    result = runner.invoke(app, ["submit", "--flux", str(FLUX_FILE), "--profiles", stored_set, "--planner",
                                 planner_service.url, "--storm-yaml", str(files[0]), "--no-metrics",
                                 "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1
    assert f"profile set '{stored_set}' has no profile for" in one_line(result.output)
    assert "on machine type slow" in one_line(result.output) and stopped == []


def test_with_the_machine_types_unknown_the_keys_are_checked_and_the_rest_is_said(planner_service, stored_set,
                                                                                    stopped):
    result = runner.invoke(app, ["submit", "linear", "-p", "mid=1", "--profiles", stored_set, "--planner",
                                 planner_service.url, "--no-metrics", "--nimbus", "127.0.0.1:1"])
    assert "has no profile for mid (profile key midCompute) on any machine type" in one_line(result.output)
    with PlannerClient(planner_service.url) as client:
        full = small_profiles("submit-checks-full")
        full["entries"] += [{"profile": "midCompute", "machine_type": t, "e": 0.008, "met": 1.0} for t in ("slow", "fast")]
        client.put_profile_set(ProfileSet.model_validate(full))
    result = runner.invoke(app, ["submit", "linear", "--profiles", "submit-checks-full", "--planner",
                                 planner_service.url, "--no-metrics", "--nimbus", "127.0.0.1:1"])
    assert "does not know the cluster's machine types" in one_line(result.output)
    assert len(stopped) == 1  # a note, not a refusal


def test_a_planned_submission_turns_the_load_aware_shuffle_off_unless_asked(planner_service, stopped):
    base = ["submit", "linear", "--plan", "p1", "--planner", planner_service.url, "--no-metrics", "--nimbus",
            "127.0.0.1:1"]
    runner.invoke(app, base)
    runner.invoke(app, [*base, "--load-aware"])
    runner.invoke(app, [*base, "--conf", "topology.disable.loadaware.messaging=false"])
    runner.invoke(app, ["submit", "linear", "--no-metrics", "--nimbus", "127.0.0.1:1"])
    assert [r.conf.get(checks.LOAD_AWARE_KEY) for r in stopped] == [True, False, False, None]
    result = runner.invoke(app, ["submit", "linear", "--load-aware", "--no-metrics", "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1 and "--load-aware applies to a topology the planner places" in one_line(result.output)
    result = runner.invoke(app, [*base, "--load-aware", "--conf", "topology.disable.loadaware.messaging=true"])
    assert result.exit_code == 1 and "give one of them" in one_line(result.output)


def test_the_metrics_hook_is_on_where_the_workers_have_the_jar_and_asked_for_elsewhere(monkeypatch):
    ours = checks.ClusterMachines(frozenset({"small"}), "the local cluster's spec", True)
    assert checks.metrics_choice(None, ours, NIMBUS) is True
    assert checks.metrics_choice(False, ours, NIMBUS) is False
    assert checks.metrics_choice(True, FOREIGN, NIMBUS) is True
    assert checks.metrics_choice(None, FOREIGN, NIMBUS) is True  # no Nimbus answers there: submit says so itself
    monkeypatch.setattr(checks, "try_summary", lambda address: object())  # a Nimbus this checkout did not start
    with pytest.raises(TopologyError) as refused:
        checks.metrics_choice(None, FOREIGN, NimbusAddress("storm.example.org", 6627))
    sentence = one_line(str(refused.value))
    assert sentence.startswith("cannot tell whether the workers of Nimbus storm.example.org:6627 have the plugin jar "
                               "in extlib/")
    assert "submit with --metrics, or submit with --no-metrics" in sentence


def test_a_foreign_cluster_without_a_metrics_choice_is_refused_before_nimbus(monkeypatch, stopped):
    monkeypatch.setattr(checks, "try_summary", lambda address: object())
    result = runner.invoke(app, ["submit", "linear", "--nimbus", "127.0.0.1:1"])
    assert result.exit_code == 1 and "cannot tell whether the workers" in one_line(result.output)
    assert stopped == []
    runner.invoke(app, ["submit", "linear", "--metrics", "--nimbus", "127.0.0.1:1"])
    runner.invoke(app, ["submit", "--flux", str(FLUX_FILE), "--no-metrics", "--nimbus", "127.0.0.1:1"])
    assert [r.metrics for r in stopped] == [True, False]


def test_the_local_cluster_this_checkout_runs_gives_its_machine_types_and_the_workers_jar(monkeypatch):
    import cluster

    class Layout:
        nimbus_host, nimbus_port = "127.0.0.1", 16701
        machines = [type("M", (), {"type": t})() for t in ("small", "medium", "large", "small")]

    monkeypatch.setattr(cluster, "running_cluster", lambda: type("LocalCluster", (), {"layout": Layout})())
    machines = checks.cluster_machines(NimbusAddress("127.0.0.1", 16701))
    assert machines == checks.ClusterMachines(frozenset({"small", "medium", "large"}), "the local cluster's spec", True)
    assert checks.cluster_machines(NimbusAddress("127.0.0.1", 16702)).types is None  # another Nimbus
