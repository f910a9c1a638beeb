"""What each scheduler's run submits to Storm: instance counts, topology config, component resources. Pure.

Every run of one topology gets the same topology config (flow control, acking,
stats, grouping); only what the scheduler needs differs:

- ``default``: Storm's DefaultScheduler, the plan's instance counts, one worker per machine;
- ``default-naive``: Storm's DefaultScheduler, one executor of every component per machine
  (what a user without a plan would pick on this cluster), one worker per machine;
- ``resource_aware``: Storm's RAS, the plan's instance counts, every component declaring the CPU
  points its profile implies on the reference machine type at the plan's rate;
- ``planned``: the hetsched plugin, the plan's instance counts and placement (``hetsched.plan.id``);
- ``planned-weighted``: the hetsched plugin, a plan of its own made with ``options.weighted_shares`` (instance
  counts, placement and shares chosen together), its shares in ``hetsched.grouping.shares`` (machine ids, made hosts
  at submit), so its streams use the weighted groupings; a topology no share can split runs ``planned``'s plan;
- ``sps``, ``dps``: the thesis's Static and Dynamic Priority Schedulers (the plugin jar's
  ``org.hetsched.storm.baselines``), the plan's instance counts, whole machines per topology;
- ``ras-priority``: Storm's RAS as ``resource_aware``, with ``topology.priority`` and a user pool
  (``user-resource-pools.yaml`` in Nimbus's conf folder) guaranteeing the submitting user the whole cluster.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from planner.model import SYSTEM_PREFIX, Cluster, Plan, PlanOptions, PlanRequest, ProfileEntry, ProfileRef
from planner.stream_shares import CONF_KEY as SHARES_KEY, WEIGHTABLE_GROUPINGS, machine_shares
from planner.profiles import ProfileTable
from planner.simulator import entry_cpu_pct
from bench.errors import BenchError
from bench.settings import BenchSettings
from topologies import conf as keys
from topologies.catalog import CatalogEntry, planner_topology

CPU_POINTS = "topology.component.cpu.pcore.percent"
RESOURCES_MAP = "topology.component.resources.map"
ACKER_CPU_POINTS = "topology.acker.cpu.pcore.percent"
DEFAULT_ACKER_POINTS = 1.0
"""An acker only XORs a few ids per tuple: declared at 1% of a core, not Storm's default 10%, which
would take half of a 0.2-core machine for nothing."""
RAS_FALLBACK_SCALES = (0.9, 0.8, 0.7, 0.6)
"""A user whose declared CPU does not fit the cluster declares less: every component's points times
0.9, then 0.8, ..., until RAS places the topology."""
DISABLE_LOAD_AWARE = "topology.disable.loadaware.messaging"
MESSAGE_TIMEOUT = "topology.message.timeout.secs"

CLUSTER_SCHEDULER = {"default": "plugin", "default-naive": "plugin", "planned": "plugin", "planned-weighted": "plugin",
                     "planned-strict": "plugin", "planned-contingency": "plugin", "resource_aware": "resource_aware",
                     "sps": "sps", "dps": "dps", "ras-priority": "resource_aware-pool"}
"""What Nimbus must run for each (a phase of the bench): the plugin schedules topologies without
``hetsched.profiles`` exactly as Storm's DefaultScheduler; every other phase restarts Nimbus."""
PHASES = ("plugin", "sps", "dps", "resource_aware", "resource_aware-pool")
"""Phases in the order the bench runs them."""
POOLS_FILE = "user-resource-pools.yaml"
USER_POOLS = "resource.aware.scheduler.user.pools"
DPS_PRIORITIES_FILE = "hetsched.dps.priorities.file"
SPS_NODES = "hetsched.sps.nodes"
SPS_MIN_NODES = "hetsched.sps.nodes.min"
DPS_NODES = "hetsched.dps.nodes"
PRIORITY = "topology.priority"


@dataclass(frozen=True)
class NimbusSetup:
    """How Nimbus runs for one phase: its scheduler's short name, storm.yaml extras, files beside its conf."""

    scheduler: str
    conf: dict[str, Any]
    conf_files: dict[str, str] = field(default_factory=dict)
    """File name -> text, written into the cluster's conf folder (on Nimbus's class path) before it starts."""


def user_pools(user: str, cpu_points: float, memory_mb: float) -> dict[str, Any]:
    """RAS's user pools: ``user`` guaranteed ``cpu_points`` (percent of a core) and ``memory_mb``."""
    return {USER_POOLS: {user: {"cpu": round(cpu_points, 1), "memory": round(memory_mb, 1)}}}


def nimbus_setup(phase: str, planner_url: str | None, dps_priorities: Path | None = None,
                 pools: dict[str, Any] | None = None) -> NimbusSetup:
    """What Nimbus needs for ``phase`` (a value of :data:`CLUSTER_SCHEDULER`)."""
    if phase == "plugin":
        return NimbusSetup("plugin", {"hetsched.planner.url": planner_url} if planner_url else {})
    if phase == "dps":
        return NimbusSetup("dps", {DPS_PRIORITIES_FILE: str(dps_priorities)} if dps_priorities else {})
    if phase == "resource_aware-pool":
        if not pools:
            raise BenchError("ras-priority needs a user pool (user-resource-pools.yaml)")
        return NimbusSetup("resource_aware", dict(pools), {POOLS_FILE: yaml.safe_dump(pools, sort_keys=True)})
    if phase in ("sps", "resource_aware"):
        return NimbusSetup(phase, {})
    raise BenchError(f"unknown bench phase {phase!r}; known: {', '.join(PHASES)}")


@dataclass(frozen=True)
class RunSpec:
    """One run: a topology under one scheduler, as it is submitted."""

    topology: str
    scheduler: str
    name: str
    """The topology's name on Storm."""
    parallelism: dict[str, int]
    conf: dict[str, Any]
    component_conf: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Extra ``json_conf`` of components (RAS CPU points)."""
    plan_id: str | None = None
    profiles: str | None = None
    note: str = ""
    fallback_scales: tuple[float, ...] = ()
    """Where the scheduler cannot place the run as declared: try again with the CPU points times each of these."""

    @property
    def cluster_scheduler(self) -> str:
        return CLUSTER_SCHEDULER[self.scheduler]

    def scaled(self, scale: float) -> "RunSpec":
        """The same run with every component's declared CPU points times ``scale`` (no further fallbacks)."""
        component_conf = {
            c: {**extra, CPU_POINTS: round(extra[CPU_POINTS] * scale, 2),
                RESOURCES_MAP: {CPU_POINTS: round(extra[CPU_POINTS] * scale, 2)}}
            for c, extra in self.component_conf.items()
        }
        points = ", ".join(f"{c} {e[CPU_POINTS]:g}" for c, e in component_conf.items())
        return replace(self, component_conf=component_conf, fallback_scales=(),
                       note=f"{self.note.split(' CPU points')[0]} CPU points x{scale:g} "
                            f"(the full points did not fit): {points}")


def common_conf(settings: BenchSettings) -> dict[str, Any]:
    """The topology config every run shares, whatever the scheduler."""
    return {
        keys.MAX_SPOUT_PENDING: settings.max_spout_pending,
        MESSAGE_TIMEOUT: settings.message_timeout_s,
        DISABLE_LOAD_AWARE: not settings.load_aware,
        keys.STATS_SAMPLE_RATE: 1.0,
        **settings.topology_conf,
    }


def plan_counts(plan: Plan) -> dict[str, int]:
    return {c: n for c, n in plan.instances.items() if not c.startswith(SYSTEM_PREFIX)}


def plan_request(entry: CatalogEntry, cluster: Cluster, profile_set: str, strategy: str | None,
                 weighted_shares: bool = False) -> PlanRequest:
    """What the bench asks the planner for one topology; ``weighted_shares`` for ``planned-weighted``, whose counts and
    placement are chosen for the shares it will run with, not taken from ``planned``."""
    return PlanRequest(topology=planner_topology(entry), cluster=cluster, profiles=ProfileRef(name=profile_set),
                       strategy=strategy, options=PlanOptions(weighted_shares=weighted_shares))


def weightable(entry: CatalogEntry) -> bool:
    """Whether any stream of the topology is grouped so that the plugin jar's weighted groupings can split it."""
    return any(s.grouping in WEIGHTABLE_GROUPINGS for s in planner_topology(entry).streams)


def weighted_fallback(topology: str, weighted: Plan | None) -> str | None:
    """Why ``planned-weighted`` runs ``planned``'s plan with Storm's groupings, one sentence; None where it has shares."""
    if weighted is None:
        return (f"{topology} has no shuffle, fields or none stream a weighted grouping could split, so "
                "planned-weighted runs planned's plan with Storm's groupings")
    if not machine_shares(weighted):
        return (f"the plan made with weighted shares for {topology} kept every stream even, so planned-weighted runs "
                "planned's plan with Storm's groupings")
    return None


def run_name(topology: str, scheduler: str) -> str:
    return f"bench-{topology}-{scheduler}".replace("_", "-")


def ras_cpu_points(plan: Plan, entry: CatalogEntry, entries: list[ProfileEntry], reference_type: str,
                   reference_cores: float, rate_scale: float = 1.0) -> dict[str, float]:
    """CPU points (percent of one core) of one executor of each component, as RAS wants them.

    From the profile on the reference machine type at the rate one instance gets in the plan (times
    ``rate_scale``: a tenant declares what its guaranteed rate needs, not what the whole cluster gives):
    ``TCU = 100 * e * IR + MET`` percent of that machine, times its cores.
    """
    table = ProfileTable.from_entries(entries)
    profiles = entry.profiles()
    rates: dict[str, list[float]] = {}
    for a in plan.assignments:
        rates.setdefault(a.component, []).append(a.input_rate)
    points: dict[str, float] = {}
    for component in entry.component_ids:
        profile = table.get(profiles[component], reference_type)
        if profile is None:
            raise BenchError(f"the profile set has no {profiles[component]} on the reference machine type {reference_type}")
        per_instance = rates.get(component) or [0.0]
        rate = rate_scale * sum(per_instance) / len(per_instance)
        tcu = entry_cpu_pct(profile, rate)
        points[component] = round(max(0.5, tcu * reference_cores), 2)
    return points


def run_specs(
    settings: BenchSettings,
    entry: CatalogEntry,
    plan: Plan,
    entries: list[ProfileEntry],
    machines: int,
    reference_type: str,
    reference_cores: float,
    planner_url: str,
    profile_set: str,
    weighted: Plan | None = None,
) -> list[RunSpec]:
    """The runs of one topology, in ``settings.schedulers`` order (``weighted``: the plan made with weighted shares,
    which ``planned-weighted`` runs; without it, or without shares in it, that run is ``planned``'s)."""
    counts = plan_counts(plan)
    base = {**common_conf(settings), keys.WORKERS: machines}
    specs: list[RunSpec] = []
    for scheduler in settings.schedulers:
        name = run_name(entry.name, scheduler)
        if scheduler == "default":
            specs.append(RunSpec(entry.name, scheduler, name, counts, dict(base),
                                 note=f"Storm DefaultScheduler, plan's instance counts, {machines} workers"))
        elif scheduler == "default-naive":
            naive = {c: machines for c in entry.component_ids}
            specs.append(RunSpec(entry.name, scheduler, name, naive, dict(base),
                                 note=f"Storm DefaultScheduler, {machines} executors per component "
                                      f"(one per machine), {machines} workers"))
        elif scheduler in ("sps", "dps"):
            nodes = {SPS_NODES: machines, SPS_MIN_NODES: 1} if scheduler == "sps" else {DPS_NODES: machines}
            specs.append(RunSpec(entry.name, scheduler, name, counts, {**base, **nodes},
                                 note=f"the thesis's {scheduler.upper()}, plan's instance counts, {machines} workers "
                                      f"on up to {machines} whole machines"))
        elif scheduler in ("resource_aware", "ras-priority"):
            points = ras_cpu_points(plan, entry, entries, reference_type, reference_cores)
            component_conf = {c: {CPU_POINTS: p, RESOURCES_MAP: {CPU_POINTS: p}} for c, p in points.items()}
            conf = {k: v for k, v in base.items() if k != keys.WORKERS}
            conf[ACKER_CPU_POINTS] = DEFAULT_ACKER_POINTS
            specs.append(RunSpec(entry.name, scheduler, name, counts, conf, component_conf,
                                 note=("Storm RAS with a user pool" if scheduler == "ras-priority" else "Storm RAS")
                                      + ", plan's instance counts, CPU points on "
                                      f"{reference_type}: " + ", ".join(f"{c} {p:g}" for c, p in points.items()),
                                 fallback_scales=RAS_FALLBACK_SCALES))
        elif scheduler == "planned":
            conf = {k: v for k, v in base.items() if k != keys.WORKERS}
            conf[keys.PLANNER_URL] = planner_url
            specs.append(RunSpec(entry.name, scheduler, name, counts, conf, plan_id=plan.id, profiles=profile_set,
                                 note=f"hetsched plugin, plan {plan.id} ({plan.strategy})"))
        elif scheduler == "planned-weighted":
            conf = {k: v for k, v in base.items() if k != keys.WORKERS}
            conf[keys.PLANNER_URL] = planner_url
            fallback = weighted_fallback(entry.name, weighted)
            if weighted is None or fallback is not None:
                specs.append(RunSpec(entry.name, scheduler, name, counts, conf, plan_id=plan.id, profiles=profile_set,
                                     note=f"hetsched plugin, plan {plan.id} ({plan.strategy}): {fallback}"))
                continue
            conf[SHARES_KEY] = machine_shares(weighted)
            specs.append(RunSpec(entry.name, scheduler, name, plan_counts(weighted), conf, plan_id=weighted.id,
                                 profiles=profile_set,
                                 note=f"hetsched plugin, plan {weighted.id} ({weighted.strategy}) made with weighted "
                                      f"shares (counts, placement and shares together), weighted groupings: R = "
                                      f"{weighted.input_rate:.2f} tuples/s predicted with its shares "
                                      f"(planned {plan.input_rate:.2f})"))
    return specs


MT_WORKERS = 2
"""Workers (and, for SPS/DPS, desired whole machines) of each multi-tenant topology: 6 of the scenario's
9 slots (3 per machine), so the DefaultScheduler always has a slot for each tenant's workers."""


def tenant_spec(scheduler: str, entry: CatalogEntry, plan: Plan, priority: int, min_rate: float,
                settings: BenchSettings, entries: list[ProfileEntry], reference_type: str, reference_cores: float,
                profile_set: str) -> RunSpec:
    """One topology of the multi-tenant scenario as ``scheduler`` wants it submitted.

    Every tenant carries ``topology.priority`` and ``hetsched.min.rate`` whatever the scheduler; what
    else each needs: ``default`` and ``sps``/``dps`` a worker count (and whole machines wanted), RAS
    CPU points for the tenant's minimum rate (what it is guaranteed, not what the cluster alone
    would give), ``planned`` the profile set, so the plugin asks the planner (and its ledger) at submit.
    """
    counts = plan_counts(plan)
    name = f"mt-{entry.name}-{scheduler}".replace("_", "-")
    base = {**common_conf(settings), PRIORITY: priority, keys.MIN_RATE: round(min_rate, 3)}
    if scheduler == "default":
        return RunSpec(entry.name, scheduler, name, counts, {**base, keys.WORKERS: MT_WORKERS},
                       note=f"Storm DefaultScheduler, plan's instance counts, {MT_WORKERS} workers")
    if scheduler in ("sps", "dps"):
        nodes = {SPS_NODES: MT_WORKERS, SPS_MIN_NODES: 1} if scheduler == "sps" else {DPS_NODES: MT_WORKERS}
        return RunSpec(entry.name, scheduler, name, counts, {**base, keys.WORKERS: MT_WORKERS, **nodes},
                       note=f"{scheduler.upper()}: {MT_WORKERS} workers, {MT_WORKERS} whole machines wanted"
                            + (", 1 at least" if scheduler == "sps" else ""))
    if scheduler in ("resource_aware", "ras-priority"):
        scale = min(1.0, min_rate / plan.input_rate) if plan.input_rate > 0 else 1.0
        points = ras_cpu_points(plan, entry, entries, reference_type, reference_cores, rate_scale=scale)
        component_conf = {c: {CPU_POINTS: p, RESOURCES_MAP: {CPU_POINTS: p}} for c, p in points.items()}
        return RunSpec(entry.name, scheduler, name, counts, {**base, ACKER_CPU_POINTS: DEFAULT_ACKER_POINTS},
                       component_conf,
                       note=("RAS with a user pool" if scheduler == "ras-priority" else "RAS")
                            + f", CPU points for {min_rate:.1f} tuples/s: "
                            + ", ".join(f"{c} {p:g}" for c, p in points.items()))
    if scheduler in ("planned", "planned-strict"):
        return RunSpec(entry.name, scheduler, name, counts, {**base, keys.PROFILES: profile_set},
                       profiles=profile_set,
                       note="hetsched plugin, planned at submit with the profile set and the planner's ledger ("
                            + ("strict" if scheduler == "planned-strict" else "weighted") + " shares)")
    raise BenchError(f"the multi-tenant scenario has no scheduler {scheduler!r}")
