"""The bind-address shim for operators' supervisors: HETSCHED_BIND_ADDRESS may name an interface instead of an address."""
from __future__ import annotations

import os

import pytest

from cluster.bind_address import BIND_ADDRESS_ENV, machine_environment, shim_library
from tests.test_cluster_bind_address import probe


@pytest.fixture(scope="module")
def library():
    built, why_not = shim_library()
    if built is None:
        pytest.skip(why_not)
    return built


def test_an_interface_name_binds_wildcards_to_its_address(library):
    env = machine_environment(dict(os.environ), "lo", library)
    assert probe(env) == {"v4": "127.0.0.1", "v6": "::ffff:127.0.0.1", "explicit": "127.0.0.1"}


def test_an_interface_that_does_not_exist_changes_nothing(library):
    env = machine_environment(dict(os.environ), "no-such-if0", library)
    assert env[BIND_ADDRESS_ENV] == "no-such-if0"
    assert probe(env)["v4"] == "0.0.0.0"
