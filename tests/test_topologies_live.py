"""The submit path on the session's live Storm cluster: all five topologies run, reach their sinks and are killed.

Submitted at a low rate side by side (one worker each), so the whole check takes about as long as the
slowest worker takes to start.
"""
from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

from hetsched.cli import app
import hetsched.topology_cmd  # noqa: F401  registers submit/kill/topologies on app
from observe.nimbus import NimbusAddress, connect
from topologies import conf as keys
from topologies.catalog import CATALOG, lookup
from topologies.measure import roles
from topologies.workers import component_groups

pytestmark = pytest.mark.live

runner = CliRunner()
RATE = 5.0
FLOW_TIMEOUT_S = 300.0
PREFIX = "live-"


def _invoke(*args: str):
    result = runner.invoke(app, list(args))
    assert "Traceback" not in result.output
    return result


@pytest.fixture(scope="module")
def nimbus(live_cluster) -> str:
    return f"{live_cluster.layout.nimbus_host}:{live_cluster.layout.nimbus_port}"


@pytest.fixture(scope="module")
def submitted(nimbus):
    """Every catalog topology submitted under ``live-<name>``; all killed afterwards."""
    names = {}
    for topology in CATALOG:
        name = PREFIX + topology
        parallelism = "low=2" if topology == "linear" else None
        # --metrics: this session's cluster is not the checkout's own (its home is a temporary folder), so submit
        # cannot tell its workers have the plugin jar; they do
        args = ["submit", topology, "--name", name, "--rate", str(RATE), "--workers", "1", "--metrics", "--nimbus", nimbus]
        if parallelism:
            args += ["--parallelism", parallelism]
        result = _invoke(*args)
        assert result.exit_code == 0, result.output
        names[topology] = name
    yield names
    for name in names.values():
        runner.invoke(app, ["kill", name, "--nimbus", nimbus])


def _address(nimbus: str) -> NimbusAddress:
    host, port = nimbus.split(":")
    return NimbusAddress(host, int(port), "live_cluster")


def test_every_topology_runs_and_its_sinks_receive_tuples(live_cluster, nimbus, submitted):
    waiting = dict(submitted)
    sink_counts: dict[str, dict[str, int]] = {}
    deadline = time.monotonic() + FLOW_TIMEOUT_S
    with connect(_address(nimbus)) as client:
        while waiting and time.monotonic() < deadline:
            for topology, name in list(waiting.items()):
                entry = lookup(topology)
                running = client.find(name)
                assert running is not None and running.status == "ACTIVE"
                sinks = [c for c, role in roles(entry).items() if role == "sink"]
                handled = client.counts(running.id).totals()
                counts = {c: handled.get(c, 0) for c in sinks}
                if all(n > 0 for n in counts.values()):
                    sink_counts[topology] = counts
                    del waiting[topology]
            time.sleep(3)
        assert not waiting, f"no tuples reached the sinks of {sorted(waiting)} within {FLOW_TIMEOUT_S:.0f} s"

        linear = client.find(submitted["linear"])
        conf = client.topology_conf(linear.id)
        assert conf[keys.COMPONENT_PROFILES] == lookup("linear").profiles()
        assert conf[keys.STATS_SAMPLE_RATE] == 1.0 and conf[keys.SPOUT_RATE] == RATE
        assert conf[keys.TOPOLOGY] == "linear"
        placed = client.counts(linear.id).totals(lambda e: 1)
        assert placed["low"] == 2 and placed["high"] == 1

    groups = {g.label: g for g in component_groups(lookup("linear"), linear.id)}
    assert len(groups["low"].processes) == 2
    machines = {live_cluster.machine_of_pid(p.pid) for g in groups.values() for p in g.processes}
    assert None not in machines, "a Python process of the topology runs outside the cluster's machines"
    assert sink_counts


def test_listing_shows_every_submitted_topology(nimbus, submitted):
    result = _invoke("topologies", "--nimbus", nimbus)
    assert result.exit_code == 0
    for name in submitted.values():
        assert name[:12] in result.output
    with connect(_address(nimbus)) as client:
        said = {t.name: t.scheduler_status for t in client.topologies() if t.name in submitted.values()}
    for name, status in said.items():
        if status:  # the hetsched plugin always says how it placed a topology; Storm's DefaultScheduler says nothing
            assert f"{name}: {status}" in " ".join(result.output.split()), f"the scheduler status of {name} is not listed"


def test_a_running_name_is_refused_then_replaced_with_force(nimbus, submitted):
    name = submitted["diamond"]
    with connect(_address(nimbus)) as client:
        before = client.find(name).id
    refused = _invoke("submit", "diamond", "--name", name, "--metrics", "--nimbus", nimbus)
    assert refused.exit_code == 1
    assert f"a topology named '{name}' is already running" in refused.output and "--force" in refused.output
    replaced = _invoke("submit", "diamond", "--name", name, "--rate", str(RATE), "--workers", "1", "--force",
                       "--metrics", "--nimbus", nimbus)
    assert replaced.exit_code == 0, replaced.output
    with connect(_address(nimbus)) as client:
        after = client.find(name)
    assert after is not None and after.id != before


def test_kill_waits_until_gone_and_unknown_names_are_refused(nimbus, submitted):
    name = submitted["star"]
    result = _invoke("kill", name, "--wait", "--nimbus", nimbus)
    assert result.exit_code == 0, result.output
    with connect(_address(nimbus)) as client:
        assert client.find(name) is None
    again = _invoke("kill", name, "--nimbus", nimbus)
    assert again.exit_code == 1
    assert f"no topology named '{name}' is running on Nimbus {nimbus}" in again.output
