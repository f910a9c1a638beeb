"""The bind-address shim (cluster/native/bind_address.c) really moves wildcard binds, and only those."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cluster.bind_address import BIND_ADDRESS_ENV, machine_environment, shim_library

PROBE = """
import json, socket
found = {}
for name, family, address in (("v4", socket.AF_INET, "0.0.0.0"), ("v6", socket.AF_INET6, "::"),
                              ("explicit", socket.AF_INET, "127.0.0.1")):
    s = socket.socket(family)
    s.bind((address, 0))
    s.listen()
    found[name] = s.getsockname()[0]
    if name == "v4":
        socket.create_connection((found[name], s.getsockname()[1]), timeout=5).close()
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def library():
    built, why_not = shim_library()
    if built is None:
        pytest.skip(why_not)
    return built


def probe(env: dict[str, str]) -> dict[str, str]:
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_wildcard_binds_go_to_the_machines_address_and_others_are_kept(library):
    env = machine_environment(dict(os.environ), "127.0.0.5", library)
    assert probe(env) == {"v4": "127.0.0.5", "v6": "::ffff:127.0.0.5", "explicit": "127.0.0.1"}


def test_without_an_address_or_with_a_bad_one_nothing_changes(library):
    env = machine_environment(dict(os.environ), "not-an-address", library)
    assert probe(env)["v4"] == "0.0.0.0"
    env.pop(BIND_ADDRESS_ENV)
    assert probe(env) == {"v4": "0.0.0.0", "v6": "::", "explicit": "127.0.0.1"}


def test_an_existing_preload_is_kept(library):
    env = machine_environment({"LD_PRELOAD": "/lib/other.so"}, "127.0.0.5", library)
    assert env["LD_PRELOAD"] == f"{library} /lib/other.so"
    assert env[BIND_ADDRESS_ENV] == "127.0.0.5"
