"""Submitting with weighted groupings (issue 33): a plan's shares into the topology conf, the streams they name onto
the plugin jar's weighted groupings. Pure.

The workers read ``hetsched.grouping.shares`` (stream ``from->to`` -> machine -> share) in
``org.hetsched.storm.grouping.GroupingShares``. A worker sees each target task's supervisor id and host, not the
machine ids plans use, so machine ids are written as hosts where the caller knows them (the local cluster's
layout); on a cluster whose hosts are its machine ids nothing needs translating.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from streamparse import Grouping

from planner.model import Evaluation
from planner.stream_shares import CONF_KEY, machine_shares

WEIGHTED_SHUFFLE = "org.hetsched.storm.grouping.WeightedShuffleGrouping"
WEIGHTED_FIELDS = "org.hetsched.storm.grouping.WeightedFieldsGrouping"
"""The plugin jar's groupings (on the workers' class path from ``extlib/``); the fields one takes its fields as one
comma-separated text."""


def shares_conf(plan: Evaluation, host_of: Mapping[str, str] | None = None) -> dict[str, dict[str, float]]:
    """The conf value of ``hetsched.grouping.shares`` for a plan's shares, machines named by host where known."""
    hosts = host_of or {}
    return {stream: {hosts.get(m, m): share for m, share in per_machine.items()}
            for stream, per_machine in machine_shares(plan).items()}


def with_hosts(conf_value: Mapping[str, Mapping[str, float]], host_of: Mapping[str, str]) -> dict[str, dict[str, float]]:
    """A shares conf value with its machine ids replaced by hosts where known."""
    return {stream: {host_of.get(m, m): float(v) for m, v in per_machine.items()} for stream, per_machine in conf_value.items()}


def weighted_streams(conf: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(from, to) of every stream the conf's shares name."""
    named = conf.get(CONF_KEY) or {}
    return {tuple(stream.split("->", 1)) for stream in named if "->" in stream}  # type: ignore[misc]


def weight_thrift_topology(topology: Any, streams: set[tuple[str, str]]) -> list[str]:
    """Rewrite, in place, the shuffle, none and fields groupings of ``streams`` to the weighted groupings.

    ``topology`` is a streamparse Thrift ``StormTopology``; returns the streams rewritten (``from->to``).
    """
    rewritten = []
    for target, bolt in topology.bolts.items():
        for stream_id, grouping in list(bolt.common.inputs.items()):
            if (stream_id.componentId, target) not in streams:
                continue
            if grouping.fields:  # a fields grouping (an empty list is Storm's global grouping: left alone)
                bolt.common.inputs[stream_id] = Grouping.custom_object(WEIGHTED_FIELDS, [",".join(grouping.fields)])
            elif grouping.shuffle is not None or grouping.none is not None:
                bolt.common.inputs[stream_id] = Grouping.custom_object(WEIGHTED_SHUFFLE, [])
            else:
                continue
            rewritten.append(f"{stream_id.componentId}->{target}")
    return sorted(set(rewritten))


def weight_flux_document(document: dict[str, Any], streams: set[tuple[str, str]]) -> dict[str, Any]:
    """A Flux document whose SHUFFLE, NONE and FIELDS streams among ``streams`` use the weighted groupings."""
    out = copy.deepcopy(document)
    for stream in out.get("streams") or []:
        if (stream.get("from"), stream.get("to")) not in streams:
            continue
        grouping = stream.get("grouping") or {}
        kind = str(grouping.get("type", "")).upper()
        if kind in ("SHUFFLE", "NONE"):
            custom: dict[str, Any] = {"className": WEIGHTED_SHUFFLE}
        elif kind == "FIELDS" and grouping.get("args"):
            custom = {"className": WEIGHTED_FIELDS, "constructorArgs": [",".join(map(str, grouping["args"]))]}
        else:
            continue
        stream["grouping"] = {k: v for k, v in grouping.items() if k not in ("type", "args")} | {
            "type": "CUSTOM", "customClass": custom}
    return out
