"""A profile set's CPU cost of tuples that cross workers, from bench/remote_tuple_cost.py's figures. Pure.

The cost is measured per machine type, not per profile key (the benchmark moves Linear-sized tuples: one
number each), so every entry of a machine type gets its type's ``remote_send`` and ``remote_receive``
(docs/concepts/model.md, "Remote tuples"). A measured median below zero (noise around a cost too small to see) is
taken as 0 and the set's ``source`` says so.
"""
from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from planner.errors import PlanningError
from planner.model import ProfileSet

REMOTE_COST = "remote_cost"
"""Key of a ProfileSet's ``source``: what the entries' remote costs were set from."""


class RemoteCost(BaseModel):
    """One machine type's cost per tuple crossing workers, seconds of the machine's whole CPU (as ``e``)."""

    model_config = ConfigDict(extra="forbid")
    remote_send: float = Field(allow_inf_nan=False)
    remote_receive: float = Field(allow_inf_nan=False)


class RemoteCostFile(BaseModel):
    """The part of bench/remote_tuple_cost.py's JSON this module reads."""

    model_config = ConfigDict(extra="ignore")
    script: str = ""
    remote_cost: dict[str, RemoteCost] = Field(min_length=1)


def with_remote_costs(profile_set: ProfileSet, costs: Mapping[str, RemoteCost], origin: str) -> ProfileSet:
    """The set with every entry of a measured machine type given that type's remote costs (negatives as 0).

    A machine type of the set that was not measured is a fault: its entries would keep a cost of 0 and plans
    would favour it for no reason.
    """
    types = {e.machine_type for e in profile_set.entries}
    missing = sorted(types - set(costs))
    if missing:
        raise PlanningError(f"{origin} has no remote cost for machine type{'s' if len(missing) > 1 else ''} "
                            f"{', '.join(missing)} of profile set {profile_set.name}")
    clamped = sorted(f"{field}@{t}" for t, c in costs.items() if t in types
                     for field in ("remote_send", "remote_receive") if getattr(c, field) < 0)
    used = {t: {"remote_send": max(0.0, c.remote_send), "remote_receive": max(0.0, c.remote_receive)}
            for t, c in costs.items() if t in types}
    entries = [e.model_copy(update=used[e.machine_type]) for e in profile_set.entries]
    source = {**profile_set.source, REMOTE_COST: {"from": origin, "per_machine_type": used, "clamped_to_0": clamped}}
    return profile_set.model_copy(update={"entries": entries, "source": source, "version": None})


__all__ = ["REMOTE_COST", "RemoteCost", "RemoteCostFile", "with_remote_costs"]
