"""What no run of a topology can beat: the LP fluid bound and the compute bound on its input rate R (tuples/s).

Both are taken for free-running spouts (``spouts_held``), as every run is predicted. A bench file carries its
cluster spec and profile entries, so the bounds of a bench written before they were recorded can be computed again.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

from cluster.spec import ClusterSpec, parse_spec
from planner.bounds import compute_bound, lp_upper_bound
from planner.errors import PlanningError
from planner.model import Cluster, PlanOptions, ProfileEntry
from planner.profiles import ProfileTable
from topologies.catalog import lookup, planner_topology


def fluid_bound(entry, cluster: Cluster, entries: Iterable[ProfileEntry]) -> float | None:
    """The LP fluid bound (planner.bounds: any split of every stream, whole instances relaxed) on the planner's
    cluster (base load taken off): what neither plan can beat. None where the LP has none."""
    return _finite(lambda: lp_upper_bound(planner_topology(entry), cluster, ProfileTable.from_entries(entries),
                                          PlanOptions(spouts_held=True)))


def full_quota_bound(entry, spec: ClusterSpec, entries: Iterable[ProfileEntry]) -> float | None:
    """The compute bound: every machine at its full quota (no base load, utilisation 1) doing only the components'
    per-tuple work (no MET), any split. The gap to the fluid bound is what workers and instances cost to run."""
    return _finite(lambda: compute_bound(planner_topology(entry), spec.planner_cluster({}),
                                         ProfileTable.from_entries(entries),
                                         PlanOptions(spouts_held=True, max_utilization=1.0)))


def compute_bounds_of(data: dict[str, Any]) -> dict[str, float | None]:
    """Per topology of a bench file, its compute bound: recorded, else computed from its spec and profile entries."""
    if "compute_bounds" in data:
        return data["compute_bounds"]
    spec, entries = (data.get("cluster") or {}).get("spec"), (data.get("profile_set") or {}).get("entries")
    if not spec or not entries:
        return {}
    cluster_spec = parse_spec(spec, "the bench file's cluster spec")
    profile_entries = [ProfileEntry.model_validate(e) for e in entries]
    names = dict.fromkeys(r["topology"] for r in data.get("runs", []))
    return {t: full_quota_bound(lookup(t), cluster_spec, profile_entries) for t in names}


def _finite(solve) -> float | None:
    try:
        rate = solve()
    except PlanningError:
        return None
    return rate if math.isfinite(rate) else None
