"""``hetsched profiles``, ``hetsched plans`` and ``hetsched plan --planner`` against a real service, and their one-line errors."""
from __future__ import annotations

import json
import re
import socket

import pytest
import yaml
from typer.testing import CliRunner

from hetsched.cli import _register, app
from tests.fixtures.service import GUARDED_TOKEN, small_plan_request, small_profiles

_register()
runner = CliRunner()


def _run(*args: str, env: dict | None = None):
    return runner.invoke(app, list(args), env=env or {})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_profiles_put_get_list_round_trip(planner_service, tmp_path):
    source = small_profiles("whatever-the-file-says")
    yaml_file = tmp_path / "micro.yaml"
    yaml_file.write_text(yaml.safe_dump(source))
    result = _run("profiles", "put", "cli-micro", str(yaml_file), "--planner", planner_service.url)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == (f"stored profile set cli-micro ({len(source['entries'])} entries) as version 1 "
                                     f"at {planner_service.url}")

    listing = _run("profiles", "list", "--planner", planner_service.url)
    assert "cli-micro" in listing.output.splitlines()

    got = _run("profiles", "get", "cli-micro", "--planner", planner_service.url)
    assert got.exit_code == 0
    body = json.loads(got.output)
    assert body["name"] == "cli-micro"
    assert [e["e"] for e in body["entries"]] == [e["e"] for e in source["entries"]]


def test_profiles_put_accepts_a_bare_list_of_entries_and_the_url_from_the_environment(planner_service, tmp_path):
    json_file = tmp_path / "entries.json"
    json_file.write_text(json.dumps(small_profiles()["entries"]))
    result = _run("profiles", "put", "cli-list", str(json_file), env={"HETSCHED_PLANNER_URL": planner_service.url})
    assert result.exit_code == 0, result.output
    out = tmp_path / "back.json"
    assert _run("profiles", "get", "cli-list", "-o", str(out), "--planner", planner_service.url).exit_code == 0
    assert len(json.loads(out.read_text())["entries"]) == len(small_profiles()["entries"])


def test_profiles_versions_get_by_version_and_delete(planner_service, tmp_path):
    url = ("--planner", planner_service.url)
    first, second = tmp_path / "v1.json", tmp_path / "v2.json"
    first.write_text(json.dumps(small_profiles("cli-ver")))
    second.write_text(json.dumps({**small_profiles("cli-ver"), "source": {"run": 2}}))
    assert _run("profiles", "put", "cli-ver", str(first), *url).output.startswith("stored profile set cli-ver (6 entries) as version 1")
    assert _run("profiles", "put", "cli-ver", str(second), *url).output.startswith("stored profile set cli-ver (6 entries) as version 2")
    unchanged = _run("profiles", "put", "cli-ver", str(second), *url)
    assert unchanged.exit_code == 0
    assert unchanged.output.strip() == f"profile set cli-ver (6 entries) unchanged at {planner_service.url}: version 2 holds the same content"

    listing = _run("profiles", "versions", "cli-ver", *url)
    assert listing.exit_code == 0, listing.output
    rows = [re.fullmatch(r"version (\d+)  stored (\S+Z)  6 entries  0 plans  (sha256:[0-9a-f]{12})", line)
            for line in listing.output.strip().splitlines()]
    assert all(rows) and [row[1] for row in rows] == ["1", "2"] and rows[0][3] != rows[1][3]

    old = json.loads(_run("profiles", "get", "cli-ver", "--version", "1", *url).output)
    assert old["version"] == 1 and old["source"] == small_profiles()["source"]
    assert json.loads(_run("profiles", "get", "cli-ver", *url).output)["version"] == 2

    assert _run("profiles", "delete", "cli-ver", "--version", "2", *url).output.strip() == "deleted version 2 of profile set cli-ver"
    assert json.loads(_run("profiles", "get", "cli-ver", *url).output)["version"] == 1


def test_plans_get_and_delete(planner_service):
    with planner_service.http() as http:
        http.put("/v1/profiles/cli-plans", json=small_profiles("cli-plans"))
        plan = http.post("/v1/plans", json=small_plan_request(profiles={"name": "cli-plans"})).json()
    url = ("--planner", planner_service.url)
    shown = _run("plans", "get", plan["id"], *url)
    assert shown.exit_code == 0 and json.loads(shown.output)["profiles"] == {"name": "cli-plans", "version": 1}
    refused = _run("profiles", "delete", "cli-plans", "--version", "1", *url)
    assert refused.exit_code == 1
    assert refused.output.strip() == (f"error: profile set 'cli-plans' version 1 is named by 1 stored plan ({plan['id']}): "
                                      "delete it first")
    assert _run("plans", "delete", plan["id"], *url).output.strip() == f"deleted plan {plan['id']}"
    assert _run("plans", "get", plan["id"], *url).output.strip() == f"error: plan '{plan['id']}' does not exist"
    assert _run("profiles", "delete", "cli-plans", "--version", "1", *url).exit_code == 0


@pytest.mark.parametrize("args, message", [
    (("profiles", "get", "no-such-set"), "error: profile set 'no-such-set' does not exist"),
    (("profiles", "versions", "no-such-set"), "error: profile set 'no-such-set' does not exist"),
    (("profiles", "get", "no-such-set", "--version", "2"), "error: profile set 'no-such-set' does not exist"),
    (("profiles", "delete", "no-such-set", "--version", "2"), "error: profile set 'no-such-set' does not exist"),
    (("plans", "delete", "no-such-plan"), "error: plan 'no-such-plan' does not exist"),
])
def test_server_answers_become_one_line(planner_service, args, message):
    result = _run(*args, "--planner", planner_service.url)
    assert result.exit_code == 1
    assert result.output.strip() == message


def test_bad_file_is_one_line(planner_service, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"entries": [{"profile": "p", "machine_type": "t", "e": -2}]}))
    result = _run("profiles", "put", "x", str(bad), "--planner", planner_service.url)
    assert result.exit_code == 1
    assert result.output.strip().startswith(f"error: {bad}: entries.0.e: Input should be greater than or equal to 0")
    missing = _run("profiles", "put", "x", str(tmp_path / "nope.yaml"), "--planner", planner_service.url)
    assert missing.exit_code == 1 and "cannot read" in missing.output and len(missing.output.strip().splitlines()) == 1


def test_no_planner_at_the_url_is_one_line():
    url = f"http://127.0.0.1:{_free_port()}"
    result = _run("profiles", "list", "--planner", url)
    assert result.exit_code == 1
    assert result.output.strip() == f"error: no planner at {url} (connection refused): start one with `hetsched serve`"


@pytest.mark.parametrize("args", [["profiles", "list"], ["plans", "get", "p-1"], ["ledger"], ["plan", "--topology", "t.yaml",
                                                                                             "--cluster", "c", "--profiles", "p"]])
def test_the_old_url_option_still_names_the_planner_with_a_warning_and_is_hidden(args):
    url = f"http://127.0.0.1:{_free_port()}"
    for alias in (["--url", url], [f"--url={url}"]):
        result = _run(*args, *alias)
        assert "warning: --url is deprecated; use --planner" in result.output
        assert "No such option" not in result.output
    assert "--url" not in _run(*args, "--help").output


def test_refused_token_is_one_line(guarded_planner_service):
    url = guarded_planner_service.url
    result = _run("profiles", "list", "--planner", url)
    assert result.exit_code == 1
    assert "refused the call (401)" in result.output and len(result.output.strip().splitlines()) == 1
    assert _run("profiles", "list", "--planner", url, "--token", GUARDED_TOKEN).exit_code == 0
    assert _run("profiles", "list", "--planner", url, env={"HETSCHED_PLANNER_TOKEN": GUARDED_TOKEN}).exit_code == 0


def _paper_files() -> list[str]:
    from planner.fixtures import fixture_path

    return ["--topology", str(fixture_path("paper_topology_linear.yaml")),
            "--cluster", str(fixture_path("paper_cluster_1.yaml")),
            "--profiles", str(fixture_path("paper_profiles.yaml"))]


def test_plan_with_planner_sends_the_same_files_to_the_service(planner_service):
    local = _run("plan", *_paper_files(), "--json")
    remote = _run("plan", *_paper_files(), "--json", "--planner", planner_service.url)
    assert local.exit_code == 0 and remote.exit_code == 0, remote.output
    local_plan, remote_plan = json.loads(local.output), json.loads(remote.output)
    assert remote_plan["id"] and local_plan["id"] is None
    assert remote_plan["strategy"] == local_plan["strategy"]
    assert remote_plan["instances"] == local_plan["instances"]
    assert remote_plan["input_rate"] == pytest.approx(local_plan["input_rate"])
    with planner_service.http() as http:
        assert http.get(f"/v1/plans/{remote_plan['id']}").json()["instances"] == local_plan["instances"]


def test_plan_with_planner_reports_the_servers_sentence_and_an_absent_planner(planner_service):
    bad = _run("plan", *_paper_files(), "--strategy", "clairvoyant", "--planner", planner_service.url)
    assert bad.exit_code == 1 and len(bad.output.strip().splitlines()) == 1
    assert bad.output.startswith("error: ") and "clairvoyant" in bad.output
    url = f"http://127.0.0.1:{_free_port()}"
    absent = _run("plan", *_paper_files(), "--planner", url)
    assert absent.exit_code == 1 and f"no planner at {url}" in absent.output


def test_serve_with_an_unusable_database_path_is_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = _run("serve", "--db", str(blocker / "plans.db"))
    assert result.exit_code == 2
    assert result.output.startswith(f"error: cannot open the plan database {blocker / 'plans.db'}")
    assert len(result.output.strip().splitlines()) == 1


def test_serve_on_a_port_in_use_says_so(planner_service, tmp_path):
    import subprocess
    import sys

    from tests.fixtures.service import HETSCHED

    port = planner_service.url.rsplit(":", 1)[1]
    done = subprocess.run([sys.executable, "-c", HETSCHED, "serve", "--port", port, "--db", str(tmp_path / "db")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "address already in use" in done.stderr
