"""The bench's reaction to faults: a failed run is reported and the others go on; the cluster and the
planner always come down, also on Ctrl-C and SIGTERM. The cluster is a stand-in here (these tests are
about our reaction), the planner is the real service."""
from __future__ import annotations

import os
import signal

import httpx
import pytest

from bench import experiment
from bench import run as run_module
from bench.run import RunContext, RunResult
from bench.schedulers import RunSpec
from tests.fixtures.bench import bench
from planner.model import ProfileEntry, ProfileSet
from topologies.errors import TopologyError

def planner_stopped(result) -> bool:
    try:
        httpx.get(f"{result.planner_url}/healthz", timeout=2)
    except httpx.HTTPError:
        return True
    return False


def test_a_failed_run_is_reported_and_the_others_go_on(tmp_path, profiles_file, stand_in, monkeypatch):
    seen = []

    def fake_run(spec: RunSpec, ctx, plan=None):
        seen.append((spec.topology, spec.scheduler))
        result = RunResult(spec.topology, spec.scheduler, spec.name, spec.note, dict(spec.parallelism), spec.plan_id)
        if spec.scheduler == "default":
            result.reason = "Storm placed no executor within 300 s"
        else:
            result.status = "ok"
        return result

    monkeypatch.setattr(experiment, "run", fake_run)
    result = experiment.run_bench(bench(tmp_path, profiles_file))
    assert result.error is None and not result.interrupted
    assert seen == [("linear", "default"), ("linear", "planned"), ("star", "default"), ("star", "planned"),
                    ("linear", "resource_aware"), ("star", "resource_aware")], "plugin runs first, then RAS"
    failed = [r for r in result.runs if not r.ok]
    assert [(r.topology, r.reason) for r in failed] == [("linear", "Storm placed no executor within 300 s"),
                                                        ("star", "Storm placed no executor within 300 s")]
    [cluster] = stand_in.instances
    assert cluster.calls == ["up plugin", "down", "up resource_aware", "down"]
    assert planner_stopped(result)
    assert set(result.plans) == {"linear", "star"} and all(p.id for p in result.plans.values())


def test_a_cluster_that_does_not_start_stops_the_bench_with_its_reason(tmp_path, profiles_file, stand_in):
    stand_in.fail_up = "Supervisor small-1 did not register within 420 s."
    result = experiment.run_bench(bench(tmp_path, profiles_file))
    assert result.error == "Supervisor small-1 did not register within 420 s."
    assert stand_in.instances[0].calls == ["up plugin", "down"]
    assert planner_stopped(result) and result.runs == []


@pytest.mark.parametrize("interrupt", ["ctrl-c", "sigterm"])
def test_an_interrupt_brings_the_cluster_and_planner_down(tmp_path, profiles_file, stand_in, monkeypatch, interrupt):
    def fake_run(spec, ctx, plan=None):
        if interrupt == "ctrl-c":
            raise KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM should have interrupted the run")

    monkeypatch.setattr(experiment, "run", fake_run)
    handler_before = signal.getsignal(signal.SIGTERM)
    result = experiment.run_bench(bench(tmp_path, profiles_file))
    assert signal.getsignal(signal.SIGTERM) == handler_before, "the bench puts the SIGTERM handler back"
    assert result.interrupted and result.error.startswith("interrupted")
    assert stand_in.instances[0].calls == ["up plugin", "down"]
    assert planner_stopped(result)
    assert len(result.runs) == 6 and all(r.reason.startswith("not run: interrupted") for r in result.runs)


def test_a_run_whose_submit_fails_says_why_and_is_still_killed(monkeypatch):
    killed = []

    def failing(spec, ctx, plan, result):
        raise TopologyError("Nimbus rejected topology 'bench-linear-default': no such component")

    monkeypatch.setattr(run_module, "_run", failing)
    monkeypatch.setattr(run_module, "_kill_quietly", lambda name, ctx, result: killed.append(name))
    spec = RunSpec("linear", "default", "bench-linear-default", {"spout": 1}, {})
    ctx = RunContext(cluster=None, planner_url="http://127.0.0.1:1", profile_set="x", window_s=20, warmup_s=0,
                     start_timeout_s=10)
    result = run_module.run(spec, ctx)
    assert not result.ok and result.reason == "Nimbus rejected topology 'bench-linear-default': no such component"
    assert killed == ["bench-linear-default"]


def test_a_profile_set_without_this_clusters_machine_types_is_refused_before_anything_starts(tmp_path, stand_in):
    path = tmp_path / "other.json"
    path.write_text(ProfileSet(name="other", entries=[ProfileEntry(profile="spout", machine_type="tiny", e=0.01)])
                    .model_dump_json())
    result = experiment.run_bench(bench(tmp_path, str(path)))
    assert "lacks" in result.error and "spout on large" in result.error
    assert stand_in.instances[0].calls == [] and result.planner_url is None


def test_ras_that_cannot_place_the_declared_cpu_is_tried_again_with_less(monkeypatch):
    from bench.schedulers import CPU_POINTS

    declared = []

    def unplaceable_twice(spec, ctx, plan, result):
        declared.append(spec.component_conf["high"][CPU_POINTS])
        if len(declared) < 3:
            raise run_module.Unschedulable("Storm did not place it: Not enough resources to schedule")

    monkeypatch.setattr(run_module, "_run", unplaceable_twice)
    monkeypatch.setattr(run_module, "_kill_quietly", lambda name, ctx, result: None)
    spec = RunSpec("linear", "resource_aware", "bench-linear-resource-aware", {"high": 2}, {},
                   component_conf={"high": {CPU_POINTS: 50.0}}, note="Storm RAS, CPU points on small: high 50",
                   fallback_scales=(0.9, 0.8, 0.7))
    ctx = RunContext(cluster=None, planner_url="http://127.0.0.1:1", profile_set="x", window_s=20, warmup_s=0,
                     start_timeout_s=10)
    result = run_module.run(spec, ctx)
    assert declared == [50.0, 45.0, 40.0]
    assert result.ok and "x0.8" in result.note


def test_ras_that_never_fits_fails_with_the_schedulers_reason(monkeypatch):
    def unplaceable(spec, ctx, plan, result):
        raise run_module.Unschedulable("Storm did not place it: Not enough resources to schedule")

    monkeypatch.setattr(run_module, "_run", unplaceable)
    monkeypatch.setattr(run_module, "_kill_quietly", lambda name, ctx, result: None)
    spec = RunSpec("linear", "resource_aware", "bench-linear-resource-aware", {"high": 2}, {},
                   component_conf={"high": {"topology.component.cpu.pcore.percent": 50.0}}, fallback_scales=(0.9,))
    ctx = RunContext(cluster=None, planner_url="http://127.0.0.1:1", profile_set="x", window_s=20, warmup_s=0,
                     start_timeout_s=10)
    result = run_module.run(spec, ctx)
    assert not result.ok and result.reason == "Storm did not place it: Not enough resources to schedule"


def _flow(spout_per_s: float, sink_per_s: float):
    from observe.rates import ComponentRate

    return [ComponentRate("spout", "spout", 1, 1, int(spout_per_s * 30), 0, 0, 30.0, spout_per_s),
            ComponentRate("high", "sink", 1, 1, int(sink_per_s * 30), 0, 0, 30.0, sink_per_s)]


class _Nimbus:
    def __init__(self, address):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _settle(monkeypatch, flows: list, settle_max_s: float):
    from bench import measure

    windows = iter(flows)
    clock = [0.0]
    logged: list[str] = []

    def one_window(nimbus, topology_id, window_s, roles, **kw):
        clock[0] += window_s
        return []

    monkeypatch.setattr(run_module, "Nimbus", _Nimbus)
    monkeypatch.setattr(run_module, "sample_window", one_window)
    monkeypatch.setattr(run_module, "component_rates", lambda samples, roles: next(windows))
    monkeypatch.setattr(run_module.time, "monotonic", lambda: clock[0])
    ctx = RunContext(cluster=None, planner_url="http://127.0.0.1:1", profile_set="x", window_s=20, warmup_s=0,
                     start_timeout_s=10, settle_max_s=settle_max_s)
    monkeypatch.setattr(RunContext, "handle", property(lambda self: type("H", (), {"nimbus": "127.0.0.1:1"})()))
    ctx.reporter.log = logged.append  # type: ignore[method-assign]
    predicted = measure.Throughputs(input_rate=10.0, spout_emit_rate=10.0, sink_throughput=10.0, bolt_throughput=10.0,
                                    total_throughput=20.0)
    waited = run_module._settle(ctx, "t-1", {"spout": "spout", "high": "sink"}, predicted, "linear/default-naive")
    return waited, logged


def test_a_run_waits_for_a_steady_flow_before_its_window(monkeypatch):
    # the spouts emit into a queue the sinks do not see yet, then the pending tuples bind
    flows = [_flow(14.0, 11.0), _flow(11.1, 11.0), _flow(12.0, 11.0), _flow(11.1, 11.0), _flow(11.0, 11.2)]
    waited, logged = _settle(monkeypatch, flows, 300.0)
    assert waited == 150.0, "two steady windows in a row"
    assert len(logged) == 2 and "not steady yet after 30 s (the sinks' flow -21% off the spouts')" in logged[0]


def test_a_run_never_steady_is_measured_after_the_longest_wait_and_says_so(monkeypatch):
    waited, logged = _settle(monkeypatch, [_flow(14.0, 11.0)] * 10, 60.0)
    assert waited == 60.0 and logged[-1].endswith("not steady after 60 s[/yellow]; measuring anyway")
    assert _settle(monkeypatch, [], 0.0) == (0.0, []), "0: no wait"
