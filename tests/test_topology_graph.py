"""Any running topology as the planner sees it, from Nimbus's Thrift structure (observe.topology_graph)."""
from __future__ import annotations

import pytest
from streamparse import thrift as st

from observe.topology_graph import TopologyGraphError, grouping_name, planner_topology

JAVA = st.ComponentObject(serialized_java=b"java")


def _common(inputs: dict, hint: int = 1) -> st.ComponentCommon:
    return st.ComponentCommon(inputs={st.GlobalStreamId(componentId=c, streamId=s): g for (c, s), g in inputs.items()},
                              streams={}, parallelism_hint=hint)


@pytest.mark.parametrize("grouping, name", [
    (st.Grouping(shuffle=st.NullStruct()), "shuffle"),
    (st.Grouping(fields=["word"]), "fields"),
    (st.Grouping(fields=[]), "global"),
    (st.Grouping(all=st.NullStruct()), "all"),
    (st.Grouping(none=st.NullStruct()), "none"),
    (st.Grouping(direct=st.NullStruct()), "direct"),
    (st.Grouping(local_or_shuffle=st.NullStruct()), "local_or_shuffle"),
    (st.Grouping(custom_serialized=b"\xac\xed..org.apache.storm.grouping.PartialKeyGrouping..."), "partial_key"),
    (st.Grouping(custom_serialized=b"com.example.MyGrouping"), "shuffle"),
    (None, "shuffle"),
])
def test_each_storm_grouping_has_the_planner_s_name(grouping, name):
    assert grouping_name(grouping) == name


def test_a_running_topology_becomes_the_planner_s_topology_with_its_executor_counts_fixed():
    storm = st.StormTopology(
        spouts={"words": st.SpoutSpec(spout_object=JAVA, common=_common({}, hint=2))},
        bolts={
            "split": st.Bolt(bolt_object=JAVA, common=_common({("words", "default"): st.Grouping(shuffle=st.NullStruct())})),
            "count": st.Bolt(bolt_object=JAVA, common=_common({("split", "default"): st.Grouping(fields=["word"]),
                                                               ("split", "ticks"): st.Grouping(all=st.NullStruct()),
                                                               ("__system", "__tick"): st.Grouping(shuffle=st.NullStruct())},
                                                              hint=4)),
            "__acker": st.Bolt(bolt_object=JAVA, common=_common({("count", "__ack_ack"): st.Grouping(fields=["id"])})),
        },
        state_spouts={})
    conf = {"hetsched.component.profiles": {"count": "highCompute"}}
    topology = planner_topology("words-cpu", storm, conf, {"words": 2, "split": 3, "count": 4})

    assert [(c.id, c.kind, c.profile, c.parallelism) for c in topology.components] == [
        ("words", "spout", "words", 2), ("count", "bolt", "highCompute", 4), ("split", "bolt", "split", 3)]
    # one stream per (from, to): the first by stream id (the default one) gives the grouping
    assert [(s.source, s.target, s.grouping) for s in topology.streams] == [
        ("split", "count", "fields"), ("words", "split", "shuffle")]


def test_executor_counts_fall_back_to_the_parallelism_hint():
    storm = st.StormTopology(spouts={"s": st.SpoutSpec(spout_object=JAVA, common=_common({}, hint=3))}, bolts={},
                             state_spouts={})
    assert planner_topology("t", storm, {}, {}).components[0].parallelism == 3


@pytest.mark.parametrize("storm, conf, message", [
    (st.StormTopology(spouts={}, bolts={}, state_spouts={}), {}, "t has no spout or bolt of its own"),
    (st.StormTopology(spouts={"s": st.SpoutSpec(spout_object=JAVA, common=_common({}))}, bolts={}, state_spouts={}),
     {"hetsched.component.profiles": ["high"]}, "hetsched.component.profiles of t must map component ids"),
])
def test_a_structure_that_cannot_be_planned_is_named(storm, conf, message):
    with pytest.raises(TopologyGraphError, match=message):
        planner_topology("t", storm, conf, {})
