"""Every fault validation names, one sentence each; and the single-value faults the model rejects."""
from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from planner.errors import PlanningError
from planner.model import Cluster, Component, MachineType, PlanOptions, ProfileEntry, Topology
from planner.profiles import ProfileTable
from planner.validation import validate
from tests.fixtures.paper import entries, make_cluster, make_topology

TYPES = [{"name": "m1"}, {"name": "m2"}]
MACHINES = {"a": "m1", "b": "m2"}
PROFILES = {("src", "m1"): (0.001,), ("src", "m2"): (0.001,), ("K", "m1"): (0.01, 1.0), ("K", "m2"): (0.02, 1.0)}


def check(topology: Topology, cluster: Cluster | None = None, profiles=None, options: PlanOptions | None = None) -> None:
    validate(
        topology,
        cluster or make_cluster(MACHINES, TYPES),
        ProfileTable.from_entries(entries(profiles or PROFILES)),
        options or PlanOptions(),
    )


def good_topology() -> Topology:
    return make_topology([("s", "spout", "src"), ("x", "bolt", "K"), ("y", "bolt", "K")], [("s", "x"), ("x", "y")])


def test_a_good_request_passes():
    check(good_topology())


@pytest.mark.parametrize(
    ("components", "streams", "message"),
    [
        ([("s", "spout", "src"), ("s", "bolt", "K")], [], "the topology declares component s twice"),
        ([("s", "spout", "src")], [("s", "ghost")], "a stream goes to unknown component ghost \\(from s\\)"),
        ([("s", "spout", "src")], [("ghost", "s")], "a stream comes from unknown component ghost \\(to s\\)"),
        ([("s", "spout", "src"), ("t", "spout", "src")], [("s", "t")], "the stream s -> t goes into a spout"),
        ([("s", "spout", "src"), ("x", "bolt", "K")], [("s", "x"), ("s", "x", "fields")], "the stream s -> x is declared 2 times"),
        ([("x", "bolt", "K")], [], "the topology has no spout"),
        (
            [("s", "spout", "src"), ("a", "bolt", "K"), ("b", "bolt", "K")],
            [("s", "a"), ("a", "b"), ("b", "a")],
            "the topology has a cycle: a -> b -> a",
        ),
        ([("s", "spout", "src"), ("x", "bolt", None)], [("s", "x")], "component x has no profile key"),
    ],
)
def test_topology_faults(components, streams, message):
    with pytest.raises(PlanningError, match=message):
        check(make_topology(components, streams))


def test_a_self_loop_is_a_cycle():
    with pytest.raises(PlanningError, match="the topology has a cycle: x -> x"):
        check(make_topology([("s", "spout", "src"), ("x", "bolt", "K")], [("s", "x"), ("x", "x")]))


def test_a_bolt_with_a_weight():
    topology = Topology(
        name="t",
        components=[Component(id="s", kind="spout", profile="src"), Component(id="x", kind="bolt", profile="K", weight=2)],
        streams=[{"from": "s", "to": "x"}],
    )
    with pytest.raises(PlanningError, match="component x is a bolt but declares a weight"):
        check(topology)


def test_system_components_need_no_profile():
    check(make_topology([("s", "spout", "src"), ("__acker", "bolt", None)], [("s", "__acker")]))


def test_missing_profile_pair_names_profile_and_type():
    profiles = dict(PROFILES)
    del profiles[("K", "m2")]
    with pytest.raises(PlanningError, match="no profile for K on machine type m2 \\(component x\\)"):
        check(good_topology(), profiles=profiles)


def test_profile_pair_of_an_unused_type_is_not_needed():
    cluster = make_cluster({"a": "m1"}, TYPES)
    profiles = {k: v for k, v in PROFILES.items() if k[1] == "m1"}
    check(good_topology(), cluster=cluster, profiles=profiles)


def test_duplicate_profile_pair():
    with pytest.raises(PlanningError, match="the profiles give K on machine type m1 twice"):
        ProfileTable.from_entries(entries(PROFILES) + [ProfileEntry(profile="K", machine_type="m1", e=0.5)])


@pytest.mark.parametrize(
    ("machines", "types", "message"),
    [
        ({"a": "m9"}, TYPES, "machine a is of unknown machine type m9"),
        ({"a": "m1"}, [{"name": "m1"}, {"name": "m1"}], "the cluster declares machine type m1 twice"),
    ],
)
def test_cluster_faults(machines, types, message):
    with pytest.raises(PlanningError, match=message):
        check(good_topology(), cluster=make_cluster(machines, types))


def test_duplicate_machine():
    cluster = Cluster(machine_types=[MachineType(name="m1")], machines=[{"id": "a", "type": "m1"}, {"id": "a", "type": "m1"}])
    with pytest.raises(PlanningError, match="the cluster declares machine a twice"):
        check(good_topology(), cluster=cluster)


def test_unknown_reference_machine_type():
    with pytest.raises(PlanningError, match="the reference machine type big is not a machine type of the cluster"):
        check(good_topology(), options=PlanOptions(reference_machine_type="big"))


def test_cluster_too_small_for_one_instance_by_met():
    profiles = dict(PROFILES)
    profiles[("K", "m1")] = (0.01, 150.0)
    profiles[("K", "m2")] = (0.01, 150.0)
    with pytest.raises(PlanningError, match="the cluster cannot host one instance of component x"):
        check(good_topology(), profiles=profiles)


def test_cluster_too_small_for_all_components_together():
    profiles = dict(PROFILES)
    profiles[("K", "m1")] = (0.01, 90.0)
    profiles[("K", "m2")] = (0.01, 90.0)
    topology = make_topology(
        [("s", "spout", "src"), ("x", "bolt", "K"), ("y", "bolt", "K"), ("z", "bolt", "K")], [("s", "x"), ("x", "y"), ("y", "z")]
    )
    with pytest.raises(PlanningError, match="the cluster cannot host one instance of every component"):
        check(topology, profiles=profiles)


def test_thread_cap_counts_when_hosting_one_instance():
    cluster = make_cluster(MACHINES, [{"name": "m1", "cores": 4}, {"name": "m2", "cores": 4}])
    profiles = dict(PROFILES)
    profiles[("K", "m1")] = (0.01, 30.0)  # fits the machine, not one thread (25 %)
    profiles[("K", "m2")] = (0.01, 30.0)
    with pytest.raises(PlanningError, match="than any machine \\(or one thread\\) offers"):
        check(good_topology(), cluster=cluster, profiles=profiles)


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_model_rejects_negative_and_non_finite_numbers(bad):
    with pytest.raises(ValidationError):
        ProfileEntry(profile="K", machine_type="m1", e=bad)
    with pytest.raises(ValidationError):
        ProfileEntry(profile="K", machine_type="m1", e=0.1, met=bad)
    with pytest.raises(ValidationError):
        MachineType(name="m1", capacity=bad)
    with pytest.raises(ValidationError):
        PlanOptions(initial_rate=bad)


@pytest.mark.parametrize(
    "build",
    [
        lambda: MachineType(name="m1", capacity=0),
        lambda: MachineType(name="m1", cores=0),
        lambda: PlanOptions(initial_rate=0),
        lambda: PlanOptions(max_utilization=0),
        lambda: PlanOptions(max_utilization=1.5),
        lambda: Component(id="s", kind="spout", profile="src", weight=0),
        lambda: Component(id="x", kind="bolt", profile="K", parallelism=0),
    ],
)
def test_model_rejects_zero_where_it_means_nothing(build):
    with pytest.raises(ValidationError):
        build()
