"""``hetsched serve``: the token from a file, and no listening beyond loopback without a token."""
from __future__ import annotations

import httpx
import pytest
from typer.testing import CliRunner

from hetsched.cli import _register, app
from planner.service.scopes import TokenFileError, read_token_file
from planner.service.scopes import ALL_SCOPES

_register()


def _serve(*args: str, env: dict | None = None):
    return CliRunner().invoke(app, ["serve", "--port", "0", *args], env={"HETSCHED_PLANNER_TOKEN": "", **(env or {})})


def _token_file(folder, text: str = "s3cret-from-a-file\n", mode: int = 0o600):
    path = folder / "token"
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "planner.example.org"])
def test_serve_refuses_a_non_loopback_address_without_a_token(tmp_path, host):
    result = _serve("--host", host, "--db", str(tmp_path / "db.sqlite"))
    assert result.exit_code == 2
    assert result.output == (f"error: refusing to listen on {host} without a token: anyone who can reach it could plan "
                             "and overwrite profile sets; give --token-file (or --token), or --insecure-no-token if you mean it\n")
    assert not (tmp_path / "db.sqlite").exists(), "refused before anything was opened"


@pytest.mark.parametrize("text, mode, fault", [
    (None, 0o600, "does not exist"),
    ("\n  \n", 0o600, "is empty"),
    ("s3cret", 0o640, "is readable by group or others (mode 0640); chmod 600 it"),
    ("s3cret", 0o604, "is readable by group or others (mode 0604); chmod 600 it"),
    ("two words", 0o600, "line 1 names scope 'two'; scopes are read, plan, bind, profiles, records, all"),
    ("read a b", 0o600, "line 1 is not 'scope[,scope] TOKEN'"),
    ("plan t1\nread t1", 0o600, "line 2 repeats a token of an earlier line"),
    ("t\u00e9", 0o600, "line 1 has a token an HTTP header cannot carry"),
])
def test_serve_refuses_a_token_file_naming_it_and_the_fault(tmp_path, text, mode, fault):
    path = tmp_path / "token" if text is None else _token_file(tmp_path, text, mode)
    result = _serve("--token-file", str(path), "--db", str(tmp_path / "db.sqlite"))
    assert result.exit_code == 2
    assert result.output.startswith(f"error: the token file {path} {fault}"), result.output
    assert "Traceback" not in result.output


def test_serve_takes_a_token_or_a_token_file_not_both(tmp_path):
    result = _serve("--token", "t", "--token-file", str(_token_file(tmp_path)), "--db", str(tmp_path / "db.sqlite"))
    assert result.exit_code == 2
    assert result.output == "error: give --token or --token-file, not both\n"


def test_read_token_file_gives_a_lone_token_every_scope_and_refuses_a_folder(tmp_path):
    assert read_token_file(_token_file(tmp_path, "  abc-DEF_123\n", 0o400)) == {"abc-DEF_123": ALL_SCOPES}
    with pytest.raises(TokenFileError, match="is not a regular file"):
        read_token_file(tmp_path)


def test_beyond_loopback_with_a_token_file_every_v1_call_needs_that_token(start_planner_service, tmp_path):
    token_file = _token_file(tmp_path, "from-the-file\n")
    service = start_planner_service(extra_args=["--host", "0.0.0.0", "--token-file", str(token_file)])
    assert service.url.startswith("http://0.0.0.0:")
    url = service.url.replace("0.0.0.0", "127.0.0.1")
    assert httpx.get(f"{url}/v1/profiles", timeout=30).status_code == 401
    assert httpx.get(f"{url}/v1/profiles", headers={"Authorization": "Bearer from-the-file"}, timeout=30).status_code == 200
    assert "from-the-file" not in " ".join(service.process.args), "the token is not on the command line"


def test_insecure_no_token_starts_and_says_so(start_planner_service):
    service = start_planner_service(extra_args=["--host", "0.0.0.0", "--insecure-no-token"])
    assert "without a token (--insecure-no-token)" in service.log()


def test_client_commands_read_their_token_from_hetsched_token_file(start_planner_service, tmp_path):
    """`hetsched --token-file F COMMAND`: the one token in F is sent by every client command; a command's own --token
    still wins; a file of several tokens (the service's) is refused in one sentence."""
    (tmp_path / "service").mkdir()
    service_file = _token_file(tmp_path / "service", "read reader-token\nall operator-token\n")
    service = start_planner_service(extra_args=["--token-file", str(service_file)])
    client_file = _token_file(tmp_path, "read reader-token\n")
    env = {"HETSCHED_PLANNER_TOKEN": "", "HETSCHED_CLIENT_TOKEN_FILE": ""}

    def hetsched(*args: str):
        return CliRunner().invoke(app, list(args), env=env)

    assert hetsched("--token-file", str(client_file), "profiles", "list", "--planner", service.url).exit_code == 0
    refused = hetsched("profiles", "list", "--planner", service.url)
    assert refused.exit_code != 0 and "(401)" in refused.output
    (tmp_path / "wrong").mkdir()
    wrong = _token_file(tmp_path / "wrong", "not-the-token\n")
    assert hetsched("--token-file", str(wrong), "profiles", "list", "--planner", service.url,
                    "--token", "reader-token").exit_code == 0, "the command's own --token wins over the file"
    several = hetsched("--token-file", str(service_file), "profiles", "list", "--planner", service.url)
    assert several.exit_code == 2
    assert several.output == (f"error: the token file {service_file} holds 2 tokens; a client sends one: give a file "
                              "of one token\n")
