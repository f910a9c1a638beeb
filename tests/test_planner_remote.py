"""Tuples that cross workers cost CPU (docs/concepts/model.md, "Remote tuples"): the simulator's charge by hand, its two forms
agreeing, old profile sets unchanged, and the strategies weighing co-location against balance."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from hetsched.cli import _register, app
from planner.api import evaluate_assignments, make_plan
from planner.brute_force import brute_force
from planner.model import (
    Cluster,
    Component,
    InstanceAssignment,
    Machine,
    MachineType,
    PlanOptions,
    ProfileEntry,
    ProfileSet,
    Stream,
    Topology,
)
from planner.problem import Problem
from planner.profiles import ProfileTable
from planner.random_requests import random_request, with_remote_cost
from planner.remote_cost import RemoteCost, with_remote_costs
from planner.simulator import HostedModel, linear_loads, loads_at_problem_rate
from planner.storage import content_digest
from planner.strategies.fast import plan as fast_plan

SEND, RECEIVE = 0.002, 0.001  # s of the machine's CPU per remote tuple: 0.2 and 0.1 percent per tuple/s


def _pair(grouping: str = "shuffle", bolts: int = 2, send: float = SEND, receive: float = RECEIVE,
          e_bolt: float = 0.004) -> tuple[Topology, Cluster, list[ProfileEntry]]:
    """spout -> bolt (``bolts`` fixed instances) on two machines of one type."""
    topology = Topology(name="pair", components=[
        Component(id="spout", kind="spout", profile="s", parallelism=1),
        Component(id="bolt", kind="bolt", profile="b", parallelism=bolts),
    ], streams=[Stream(source="spout", target="bolt", grouping=grouping)])
    cluster = Cluster(machine_types=[MachineType(name="t")], machines=[Machine(id="m1", type="t"),
                                                                       Machine(id="m2", type="t")])
    entries = [ProfileEntry(profile="s", machine_type="t", e=0.001, met=1.0, remote_send=send, remote_receive=receive),
               ProfileEntry(profile="b", machine_type="t", e=e_bolt, met=1.0, remote_send=send, remote_receive=receive)]
    return topology, cluster, entries


def _problem(topology: Topology, cluster: Cluster, entries: list[ProfileEntry]) -> Problem:
    return Problem.build(topology, cluster, ProfileTable.from_entries(entries), PlanOptions())


def _assign(placement: dict[str, list[str]]) -> list[InstanceAssignment]:
    return [InstanceAssignment(component=c, machine=m) for c, ms in placement.items() for m in ms]


def test_a_shuffle_split_over_two_machines_pays_for_the_half_that_crosses():
    problem = _problem(*_pair())
    loads = linear_loads(problem, {"spout": ["m1"], "bolt": ["m1", "m2"]})
    # Per unit R: the spout emits 1, half to the bolt on m2; that bolt takes its 1/2 from m1.
    by = {(problem.component_ids[c], int(i)): float(r) for c, i, r in zip(loads.comp, loads.inst, loads.remote_i)}
    assert by[("spout", 0)] == pytest.approx(100 * SEND * 0.5)
    assert by[("bolt", 0)] == 0.0
    assert by[("bolt", 1)] == pytest.approx(100 * RECEIVE * 0.5)
    own = 100 * np.array([0.001 + 0.004 / 2, 0.004 / 2])
    assert loads.a_w == pytest.approx(own + [100 * SEND * 0.5, 100 * RECEIVE * 0.5])


def test_all_and_global_streams_cross_per_copy_and_per_instance_zero():
    problem = _problem(*_pair("all", bolts=3))
    loads = linear_loads(problem, {"spout": ["m1"], "bolt": ["m1", "m2", "m2"]})
    remote = dict(zip(zip(loads.comp.tolist(), loads.inst.tolist()), loads.remote_i))
    assert remote[(0, 0)] == pytest.approx(100 * SEND * 2)  # a copy to each of the two bolts on m2
    assert [remote[(1, i)] for i in range(3)] == pytest.approx([0.0, 100 * RECEIVE, 100 * RECEIVE])

    problem = _problem(*_pair("global", bolts=2))
    loads = linear_loads(problem, {"spout": ["m1"], "bolt": ["m2", "m1"]})
    remote = dict(zip(zip(loads.comp.tolist(), loads.inst.tolist()), loads.remote_i))
    assert remote[(0, 0)] == pytest.approx(100 * SEND)  # all of it to instance 0, on m2
    assert [remote[(1, 0)], remote[(1, 1)]] == pytest.approx([100 * RECEIVE, 0.0])


def test_a_placement_in_one_worker_costs_what_it_cost_before():
    topology, cluster, entries = _pair()
    together = {"spout": ["m1"], "bolt": ["m1", "m1"]}
    with_cost = evaluate_assignments(topology, cluster, entries, _assign(together))
    without = evaluate_assignments(topology, cluster, [e.model_copy(update={"remote_send": 0.0, "remote_receive": 0.0})
                                                       for e in entries], _assign(together))
    assert with_cost.input_rate == pytest.approx(without.input_rate)
    assert with_cost.stats["remote_cpu"] == {}
    spread = evaluate_assignments(topology, cluster, entries, _assign({"spout": ["m1"], "bolt": ["m1", "m2"]}))
    assert set(spread.stats["remote_cpu"]) == {"m1", "m2"}
    assert sum(a.cpu for a in spread.assignments) == pytest.approx(sum(m.utilization for m in spread.machines))


def test_old_profile_entries_load_with_no_remote_cost_and_plan_as_before():
    entry = ProfileEntry.model_validate({"profile": "s", "machine_type": "t", "e": 0.001})
    assert (entry.remote_send, entry.remote_receive) == (0.0, 0.0)
    with open("profiles/default-cluster.json") as f:
        shipped = ProfileSet.model_validate(json.load(f))
    assert all(e.remote_send == 0.0 == e.remote_receive for e in shipped.entries)
    topology, cluster, entries = _pair()
    old = [ProfileEntry.model_validate(e.model_dump(exclude={"remote_send", "remote_receive"})) for e in entries]
    problem = _problem(topology, cluster, old)
    assert not problem.has_remote_cost
    assert linear_loads(problem, {"spout": ["m1"], "bolt": ["m1", "m2"]}).remote_i is None


def test_the_digest_of_a_set_without_remote_costs_is_the_one_stored_before_the_fields_existed():
    entries = [ProfileEntry(profile="s", machine_type="t", e=0.001, met=1.0)]
    body = ProfileSet(name="x", entries=entries, source={"k": 1})
    before = {"entries": [{k: v for k, v in e.items() if k not in ("remote_send", "remote_receive")}
                          for e in body.model_dump(mode="json", by_alias=True)["entries"]], "source": {"k": 1}}
    import hashlib
    canonical = json.dumps(before, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert content_digest(body) == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    costly = body.model_copy(update={"entries": [entries[0].model_copy(update={"remote_send": 0.001})]})
    assert content_digest(costly) != content_digest(body)


@pytest.mark.parametrize("seed", range(12))
def test_the_hosted_and_the_per_instance_forms_agree(seed):
    request = with_remote_cost(random_request(seed), seed)
    problem = Problem.build(request.topology, request.cluster, ProfileTable.from_entries(request.entries),
                            request.options)
    assert problem.has_remote_cost
    rng = np.random.default_rng(seed)
    placement = {c: [str(m) for m in rng.choice(problem.machine_ids, size=int(rng.integers(1, 4)))]
                 for c in problem.component_ids}
    loads = linear_loads(problem, placement)
    comp, inst, mach = problem.placement_arrays(placement)
    hosts = np.zeros((problem.n_components, problem.n_machines), dtype=np.int64)
    np.add.at(hosts, (comp, mach), 1)
    first = np.array([mach[(comp == c) & (inst == 0)][0] for c in range(problem.n_components)])
    a, b, _ = HostedModel.of(problem).loads(hosts, first)
    assert a == pytest.approx(loads.a_w)
    assert b == pytest.approx(loads.b_w)
    assert loads.remote_i.sum() > 0


def test_the_thread_cap_counts_the_executors_own_work_only():
    topology, cluster, entries = _pair(e_bolt=0.004)
    cluster = cluster.model_copy(update={"machine_types": [MachineType(name="t", cores=4)]})
    problem = _problem(topology, cluster, entries)
    placement = {"spout": ["m1"], "bolt": ["m1", "m2"]}
    rate = 50.0
    loads = loads_at_problem_rate(problem, placement, rate)
    bolt_on_m2 = next(i for i in loads[1].instances if i.component == "bolt")
    own = 100 * 0.004 * rate / 2 + 1.0
    assert bolt_on_m2.cpu == pytest.approx(own + 100 * RECEIVE * rate / 2)
    assert bolt_on_m2.over_by == pytest.approx(max(0.0, own - 25.0))


def test_fast_gathers_a_pair_whose_remote_tuples_cost_more_than_spreading_gains():
    # The bolt split over two machines would halve its load on m1, but every tuple it moves costs 2% + 2% more.
    topology, cluster, entries = _pair(bolts=2, send=0.02, receive=0.02, e_bolt=0.01)
    topology = topology.model_copy(update={"components": [
        topology.components[0], topology.components[1].model_copy(update={"parallelism": None})]})
    plan = make_plan(topology, cluster, entries, "fast")
    machines = {a.machine for a in plan.assignments}
    assert len(machines) == 1, plan.assignments
    problem = _problem(topology, cluster, entries)
    assert plan.input_rate == pytest.approx(brute_force(problem, 3).input_rate, rel=1e-6)
    blind = fast_plan(dataclasses.replace(problem, has_remote_cost=False)).placement
    blind_rate = evaluate_assignments(topology, cluster, entries, _assign(blind)).input_rate
    assert plan.input_rate > blind_rate * 1.2


@pytest.mark.parametrize("seed", [1, 3])
def test_fast_with_remote_costs_never_ends_below_its_remote_blind_plan(seed):
    request = with_remote_cost(random_request(seed), seed)
    problem = Problem.build(request.topology, request.cluster, ProfileTable.from_entries(request.entries),
                            request.options)
    aware = make_plan(request.topology, request.cluster, request.entries, "fast", request.options)
    blind = fast_plan(dataclasses.replace(problem, has_remote_cost=False)).placement
    blind_rate = evaluate_assignments(request.topology, request.cluster, request.entries, _assign(blind),
                                      request.options).input_rate
    assert aware.input_rate >= blind_rate * (1 - 1e-9)


def test_optimal_says_it_ignored_the_remote_cost_and_is_scored_with_it():
    topology, cluster, entries = _pair(send=0.02, receive=0.02, e_bolt=0.01)
    topology = topology.model_copy(update={"components": [
        topology.components[0], topology.components[1].model_copy(update={"parallelism": None})]})
    plan = make_plan(topology, cluster, entries, "optimal")
    assert plan.stats["remote_cost_ignored"] is True and plan.stats["proven_optimal"] is False
    assert plan.input_rate <= plan.stats["optimal_input_rate_without_remote_cost"] * (1 + 1e-9)
    assert plan.input_rate <= brute_force(_problem(topology, cluster, entries), 3).input_rate * (1 + 1e-9)


def test_measured_costs_go_to_every_entry_of_their_type_and_negatives_to_zero(tmp_path):
    shipped = ProfileSet.model_validate(json.loads(open("profiles/default-cluster.json").read()))
    costs = {"small": RemoteCost(remote_send=2e-4, remote_receive=3e-4),
             "medium": RemoteCost(remote_send=1e-4, remote_receive=-1e-5),
             "large": RemoteCost(remote_send=5e-5, remote_receive=6e-5)}
    updated = with_remote_costs(shipped, costs, "run.json")
    for e in updated.entries:
        expected = costs[e.machine_type]
        assert e.remote_send == max(0.0, expected.remote_send)
        assert e.remote_receive == max(0.0, expected.remote_receive)
    assert updated.source["remote_cost"]["clamped_to_0"] == ["remote_receive@medium"]
    assert updated.source["machine_base_load"] == shipped.source["machine_base_load"]
    with pytest.raises(Exception, match="no remote cost for machine type large"):
        with_remote_costs(shipped, {k: v for k, v in costs.items() if k != "large"}, "run.json")

    measured = tmp_path / "run.json"
    measured.write_text(json.dumps({"script": "bench/remote_tuple_cost.py",
                                    "remote_cost": {t: c.model_dump() for t, c in costs.items()}}))
    out = tmp_path / "with-remote.json"
    _register()
    result = CliRunner().invoke(app, ["profiles", "remote-cost", str(measured), "profiles/default-cluster.json",
                                      "--output", str(out)])
    assert result.exit_code == 0, result.output
    written = ProfileSet.model_validate_json(out.read_text())
    assert written.name == "default-cluster"
    assert {(e.machine_type, e.remote_send) for e in written.entries} == {
        (t, max(0.0, c.remote_send)) for t, c in costs.items()}


def _windows(costs: dict[str, dict[str, float]], machines: dict[str, str], drift: float = 0.0) -> list[dict]:
    """Synthetic windows of bench/remote_tuple_cost.py: each machine's cores = idle + drift * position + slope *
    rate, with the slopes the costs (core ms per tuple) imply; the drift differs from one (slot, machine) to the next."""
    slope = {}
    for t, m in machines.items():
        c = costs[t]
        slope[("alone", m)] = c["alone"]
        slope[("local", m)] = c["alone"] + c["sink_local"]
        slope[("send", m)] = c["alone"] + c["send"]
        slope[("receive", m)] = c["sink_local"] + c["recv"]
    windows = []
    for n, ((slot, m), s) in enumerate(slope.items()):
        for k in range(3):
            for i, rate in enumerate((0.0, 150.0, 400.0)):
                windows.append({"slot": slot, "machine": m, "repeat": k, "rate": rate, "tuples_per_s": rate,
                                "cores": 0.05 - drift * (n % 3) * (3 * k + i) + s / 1000 * rate})
    return windows


def test_the_remote_tuple_benchmark_recovers_send_and_receive_costs_from_its_windows():
    from bench.remote_tuple_cost import drift_fit, estimates

    machines = {"small": "small-1", "large": "large-1"}
    costs = {"small": {"alone": 0.05, "sink_local": 0.08, "send": 0.12, "recv": 0.2},
             "large": {"alone": 0.03, "sink_local": 0.06, "send": 0.09, "recv": 0.15}}
    for repeat in estimates(_windows(costs, machines), machines):
        for t in machines:
            assert repeat[t]["send"] == pytest.approx(costs[t]["send"])
            assert repeat[t]["recv"] == pytest.approx(costs[t]["recv"])
    drifting = _windows(costs, machines, drift=0.002)
    assert estimates(drifting, machines)[0]["small"]["send"] != pytest.approx(costs["small"]["send"], rel=0.05)
    fitted = drift_fit(drifting, machines)
    for t in machines:
        assert fitted[t]["send"] == pytest.approx(costs[t]["send"])
        assert fitted[t]["recv"] == pytest.approx(costs[t]["recv"])
