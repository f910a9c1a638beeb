"""Shared fixtures. Each area keeps its fixtures in its own module under tests/fixtures/.

A bare ``pytest`` runs the unit suite (pyproject.toml's addopts: ``-m "not live and not slow"``);
``make test`` runs every test with ``-m ""``. A test that asks for the live Storm cluster or the
Spark standalone cluster is marked ``live`` here, whatever its module says, so that the fast run
can never start one by a missing marker.
"""
import pytest

from hetsched.cli import _register

_register()  # every command on hetsched.cli.app, as `hetsched` has them, whichever test module runs first

pytest_plugins = [
    "tests.fixtures.paper",
    "tests.fixtures.service",
    "tests.fixtures.cluster",
    "tests.fixtures.spark",
    "tests.fixtures.bench",
]

LIVE_FIXTURES = frozenset({"live_cluster", "live_cluster_options", "spark_standalone"})
"""Fixtures that start a cluster: a test that uses one (even indirectly) is ``live``."""


def pytest_collection_modifyitems(items):
    for item in items:
        if LIVE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.live)


@pytest.fixture
def sleepers(tmp_path):
    """Stand-in daemons (``sleep``) started through the local cluster's real start path; stopped after the test."""
    from cluster import processes

    started = []

    def start(cluster, daemon: str):
        pid_file = cluster.layout.pid_file(daemon)
        started.append(pid_file)
        return processes.start(["sleep", "120"], env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path,
                               console_file=cluster.layout.console_file(daemon), pid_file=pid_file)

    yield start
    for pid_file in started:
        processes.stop(pid_file, grace_s=2)
