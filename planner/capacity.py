"""Capacity planning: the cheapest machines that sustain every topology's rate, the next one to add, and losses.

Pure: a CapacityRequest (planner.capacity_model) and profile entries in, a CapacityAnswer out
(docs/concepts/capacity.md). The topologies share the machines, so they are planned as one
*combined* topology whose components are ``topology/component`` and whose spouts carry their
topology's required rate as weight: its input rate R is then a **scale**, and R >= 1 means every
topology sustains its rate at once. Strategies place it and the simulator scores it, as for any plan.

The buy decision is a MILP over the machines to buy of each type on the fluid relaxation of
planner.bounds (its machine rows get ``owned + bought`` machines): its optimum is a lower bound on the
cost of any set of machines that sustains the rates. Its answer is then placed for real; where the
placement falls short, the MILP is solved again for a higher scale until a placement sustains the rates.
A cost that meets the lower bound is proven cheapest; on small requests the cheaper sets in between are
refuted one by one (by the fluid bound, or by the exact strategy), so the answer is proven there too.
"""
from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.api import make_plan
from planner.bounds import instance_limit, least_counts, lp_upper_bound_problem
from planner.capacity_model import (
    Addition,
    CapacityAnswer,
    CapacityRequest,
    CapacityTopology,
    Loss,
    OfferedType,
    Prediction,
    Purchase,
)
from planner.errors import PlanningError, PlanningTimeout, ProfilesMissing
from planner.linear_model import LinearModel
from planner.model import (
    Cluster,
    Component,
    Machine,
    MachineType,
    Plan,
    PlanOptions,
    ProfileEntry,
    Stream,
    Topology,
)
from planner.problem import Problem, compile_problem
from planner.profiles import ProfileTable
from planner.simulator import linear_loads, rate_limits
from planner.strategies import STRATEGIES
from planner.strategies.optimal import DEFAULT_TUNING
from planner.tenancy import Tenant, allocate
from planner.validation import first_duplicate, missing_profiles, validate_topology

SEPARATOR = "/"
"""Between a topology's name and its component's id in the combined topology."""
SCALE_TOLERANCE = 1e-6
"""A placement sustains the rates when its scale is at least 1 less this (the simulator's float rounding)."""
INITIAL_SCALE = 0.05
"""The combined topology's initial rate (a scale): where the strategies start, and the rate checked for room."""
RAISE_STEP = 0.002
"""The least relative raise of the scale the MILP buys for after a placement fell short (10 times that where the
MILP answered a set already placed)."""
MAX_RAISES = 30
"""Most times the MILP is solved again at a higher scale before the search gives up on a candidate set."""
MAX_MACHINES = 100_000
"""The most machines a cluster may hold (planner.model.Cluster)."""
MAX_ENUMERATED = 20_000
"""Most cheaper sets of machines listed to refute one by one; above it the answer is not proven cheapest."""
LOSSES_EACH_UP_TO = 16
"""Without ``lose``: every machine's loss where the answer has at most this many machines."""
EXACT_STRATEGY = "optimal"
FALLBACK_STRATEGY = "fast"
EXACT_ALWAYS_PAIRS = 24
"""Where the next machine and the losses are also placed by the exact strategy: at most this many component-machine
pairs (tiny requests; larger ones keep the default strategy's placement, not proven)."""
EXACT_TRY_S = 5.0
"""Under a time limit, the most seconds the exact strategy may spend on one set of machines before the set counts as
not settled."""


# --- the request -------------------------------------------------------------------------------------------------

def check_request(request: CapacityRequest, profiles: ProfileTable) -> None:
    """Raise PlanningError with one sentence for the first fault a person would fix (the schema checked the rest)."""
    if request.strategy is not None and request.strategy not in STRATEGIES:
        raise PlanningError(f"unknown strategy {request.strategy}; known strategies: {', '.join(sorted(STRATEGIES))}")
    names = [t.topology.name for t in request.topologies]
    twice = first_duplicate(names)
    if twice is not None:
        raise PlanningError(f"the request names topology {twice} twice; give each topology once")
    for t in request.topologies:
        if t.required_rate <= 0:
            raise PlanningError(f"topology {t.topology.name} asks for no input rate: give it a target_rate, or a "
                                "min_rate above 0")
        validate_topology(t.topology)
    types = [t.name for t in request.machine_types]
    twice = first_duplicate(types)
    if twice is not None:
        raise PlanningError(f"machine type {twice} is offered twice; offer each machine type once")
    for offered in request.machine_types:
        if offered.price is None:
            raise PlanningError(f"machine type {offered.name} has no price: give every machine type on offer its price "
                                "per machine (0 or more)")
        if offered.price < 0:
            raise PlanningError(f"machine type {offered.name} has a negative price ({offered.price:g}): a price is what "
                                "one machine costs, 0 or more")
    twice = first_duplicate([m.id for m in request.owned])
    if twice is not None:
        raise PlanningError(f"the owned machines name {twice} twice; every owned machine needs its own id")
    on_offer = set(types)
    for m in request.owned:
        if m.type not in on_offer:
            raise PlanningError(f"owned machine {m.id} is of machine type {m.type}, which is not offered: add {m.type} "
                                "to machine_types (with available 0 if no more can be bought)")
    missing = missing_profiles(combined_topology(request.topologies), probe_cluster(request.machine_types), profiles)
    if missing:
        raise ProfilesMissing(missing)


def combined_id(topology: str, component: str) -> str:
    """A component's id in the combined topology; a system component keeps its ``__`` prefix in front."""
    if component.startswith("__"):
        return f"__{topology}{SEPARATOR}{component[2:]}"
    return f"{topology}{SEPARATOR}{component}"


def topology_of(component_id: str) -> str:
    """The topology a combined component id (or ``id:index`` bottleneck) belongs to."""
    return component_id.removeprefix("__").split(SEPARATOR, 1)[0]


def combined_topology(topologies: Sequence[CapacityTopology]) -> Topology:
    """Every topology as one, each spout weighted by its topology's required rate, so R is a scale of all the rates.

    Memory: the combined worker takes the largest of the topologies' worker memories (one worker per machine).
    """
    components: list[Component] = []
    streams: list[Stream] = []
    for t in topologies:
        name, rate = t.topology.name, t.required_rate
        for c in t.topology.components:
            weight = c.spout_weight * rate if c.kind == "spout" else None
            components.append(c.model_copy(update={"id": combined_id(name, c.id), "weight": weight}))
        for s in t.topology.streams:
            streams.append(s.model_copy(update={"source": combined_id(name, s.source), "target": combined_id(name, s.target)}))
    workers = [t.topology.worker_memory_mb for t in topologies if t.topology.worker_memory_mb is not None]
    return Topology(name="+".join(t.topology.name for t in topologies), components=components, streams=streams,
                    worker_memory_mb=max(workers) if workers else None)


def _machine_type(offered: OfferedType) -> MachineType:
    return MachineType.model_validate(offered.model_dump(exclude={"price", "available"}))


def probe_cluster(offered: Sequence[OfferedType]) -> Cluster:
    """One machine of every offered type: what the per-type arrays (cost, MET, limits) are compiled from."""
    return Cluster(machine_types=[_machine_type(t) for t in offered],
                   machines=[Machine(id=f"probe{SEPARATOR}{t.name}", type=t.name) for t in offered])


@dataclass(frozen=True)
class Offer:
    """The machine types on offer as arrays in declaration order: price, machines owned, most that can be bought."""

    types: tuple[OfferedType, ...]
    price: np.ndarray
    owned: np.ndarray
    available: np.ndarray
    """inf where unlimited."""

    @classmethod
    def of(cls, request: CapacityRequest) -> Offer:
        owned = Counter(m.type for m in request.owned)
        types = tuple(request.machine_types)
        return cls(types, np.array([float(t.price or 0.0) for t in types]),
                   np.array([owned[t.name] for t in types], dtype=np.int64),
                   np.array([math.inf if t.available is None else float(t.available) for t in types]))

    def cost(self, buy: np.ndarray) -> float:
        return float(self.price @ buy)


def bought_cluster(request: CapacityRequest, buy: np.ndarray) -> Cluster:
    """The owned machines and ``buy[t]`` new ones of each type, named ``<type>-<n>`` (ids of owned machines skipped)."""
    taken = {m.id for m in request.owned}
    machines = list(request.owned)
    for t, n in zip(request.machine_types, buy):
        k = 0
        for _ in range(int(n)):
            k += 1
            while f"{t.name}-{k}" in taken:
                k += 1
            machines.append(Machine(id=f"{t.name}-{k}", type=t.name))
    return Cluster(machine_types=[_machine_type(t) for t in request.machine_types], machines=machines)


# --- the fluid bound with machines to buy ------------------------------------------------------------------------

@dataclass
class BuyModel:
    model: LinearModel
    scale: int
    buy: list[int]


def buy_model(probe: Problem, offer: Offer, only: int | None = None) -> BuyModel:
    """planner.bounds' fluid relaxation with ``owned + buy[t]`` machines of each type; ``only`` keeps one component.

    The scale variable is free (at most what an instance that alone takes a stream allows); callers fix it
    or maximise it. ``buy[t]`` is integer, at most what can be bought.
    """
    n_types = len(offer.types)
    limit_per_type = np.zeros(n_types)
    limit_per_type[probe.machine_type] = probe.limit
    k_limit = instance_limit(probe)
    counts = least_counts(probe)
    shares = probe.shares(counts)
    beta = shares.total(counts)
    model = LinearModel()
    scale = model.var()
    buy = [model.var(hi=float(offer.available[t]), integer=True, cost=float(offer.price[t])) for t in range(n_types)]
    cap = math.inf
    machine_rows: list[dict[int, float]] = [{} for _ in range(n_types)]
    for c in range(probe.n_components) if only is None else (only,):
        f, k = {}, {}
        for t in range(n_types):
            runs_here = probe.met[c, t] <= k_limit[t]
            f[t] = model.var(hi=np.inf if runs_here else 0.0)
            k[t] = model.var(hi=np.inf if runs_here else 0.0)
            if runs_here and probe.cost[c, t] > 0:
                model.row({f[t]: probe.cost[c, t], k[t]: probe.met[c, t] - k_limit[t]}, hi=0.0)
            machine_rows[t][f[t]] = probe.cost[c, t]
            machine_rows[t][k[t]] = probe.met[c, t]
        model.row({**{f[t]: 1.0 for t in range(n_types)}, scale: -beta[c]}, 0.0, 0.0)
        fixed = float(probe.fixed[c])
        model.row({k[t]: 1.0 for t in range(n_types)}, fixed or 1.0, fixed or np.inf)
        for per_instance in (shares.each[c] + shares.first[c], shares.each[c]):
            if per_instance > 0:
                cap = min(cap, _single_instance_scale(probe, c, per_instance, k_limit))
    for t in range(n_types):
        model.row({**machine_rows[t], buy[t]: -limit_per_type[t]}, hi=float(offer.owned[t] * limit_per_type[t]))
    model.upper[scale] = cap
    return BuyModel(model, scale, buy)


def _single_instance_scale(probe: Problem, c: int, per_instance: float, k_limit: np.ndarray) -> float:
    """The most scale at which one instance fed ``per_instance`` per unit scale fits on the best machine type."""
    best = 0.0
    for t in range(len(probe.type_names)):
        cost, met = probe.cost[c, t], probe.met[c, t]
        if met <= k_limit[t]:
            best = max(best, math.inf if cost == 0 else (k_limit[t] - met) / (cost * per_instance))
    return best


def initial_scale(probe: Problem) -> float:
    """A scale at which one instance of every component fits every machine type that can run it, with room to spare:
    where the strategies start and what a plan request's room check asks (planner.validation.validate_capacity),
    so that no set the MILP buys is refused for the initial rate alone."""
    k_limit = instance_limit(probe)
    counts = least_counts(probe)
    per_instance = probe.shares(counts).total(counts) / counts
    fits = [(k_limit[t] - probe.met[c, t]) / (probe.cost[c, t] * per_instance[c])
            for c in range(probe.n_components) for t in range(len(probe.type_names))
            if per_instance[c] > 0 and probe.cost[c, t] > 0 and probe.met[c, t] < k_limit[t]]
    return min(INITIAL_SCALE, 0.5 * min(fits, default=math.inf))


def cheapest_buy(probe: Problem, offer: Offer, scale: float, time_limit_s: float | None) -> np.ndarray | None:
    """The cheapest machines to buy whose fluid bound sustains ``scale`` (fewest machines among equals); None if none."""
    bm = buy_model(probe, offer)
    if scale > bm.model.upper[bm.scale]:
        return None
    bm.model.lower[bm.scale] = bm.model.upper[bm.scale] = scale
    tie = 1e-6 * max(1.0, float(offer.price.max()))
    for t, v in enumerate(bm.buy):
        bm.model.objective[v] = float(offer.price[t]) + tie
    result = bm.model.solve(time_limit_s=time_limit_s)
    if result.status == 2 or result.x is None:
        return None
    if result.status not in (0, 1):
        raise PlanningError(f"the capacity MILP could not be solved: {result.message.strip()}")
    return np.round(result.x[bm.buy]).astype(np.int64)


def cost_lower_bound(probe: Problem, offer: Offer, time_limit_s: float | None) -> tuple[float, bool]:
    """The least cost whose fluid bound sustains scale 1, and whether HiGHS proved it (else its dual bound)."""
    bm = buy_model(probe, offer)
    bm.model.lower[bm.scale] = 1.0
    result = bm.model.solve(time_limit_s=time_limit_s)
    if result.status == 0:
        return float(result.fun), True
    bound = getattr(result, "mip_dual_bound", None)
    return (float(bound) if bound is not None and np.isfinite(bound) else 0.0), False


def reachable_scale(probe: Problem, offer: Offer, only: int | None = None) -> float:
    """The most scale the fluid bound allows with every machine that can be bought (inf: no limit)."""
    bm = buy_model(probe, offer, only)
    bm.model.integer = [0] * bm.model.n_vars
    bm.model.objective = [0.0] * bm.model.n_vars
    bm.model.objective[bm.scale] = -1.0
    result = bm.model.solve()
    if result.status == 3:
        return math.inf
    if result.status == 2:
        return 0.0
    if result.status != 0:
        raise PlanningError(f"the capacity LP could not be solved: {result.message.strip()}")
    return float(-result.fun)


def unreachable_sentence(request: CapacityRequest, probe: Problem, offer: Offer, best: float) -> str:
    """Names the component that caps the rates (or the machines on offer) and the best rate reachable."""
    alone = [(reachable_scale(probe, offer, c), c) for c in range(probe.n_components)]
    worst, c = min(alone)
    rates = "; ".join(f"{t.topology.name} at most {best * t.required_rate:.3f} of {t.required_rate:g} tuples/s"
                      for t in request.topologies)
    if worst <= best * (1 + 1e-6):
        cid = probe.component_ids[c]
        return (f"no mix of the offered machine types sustains the required rates: component {cid} caps them at "
                f"{best:.1%} ({rates})")
    limited = ", ".join(f"{int(a)} {t.name}" for t, a in zip(offer.types, offer.available) if np.isfinite(a))
    return (f"no mix of the offered machine types sustains the required rates: the machines that can be bought "
            f"({limited}) with those owned carry at most {best:.1%} of them ({rates})")


# --- placing a set of machines -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Placed:
    """A set of machines placed for real: the plan (None where no strategy could place it) and what it proves."""

    cluster: Cluster
    plan: Plan | None
    scale: float
    exact: bool
    """The scale is the best any placement of these machines reaches (an exact strategy proved it)."""
    upper: float
    """No placement of these machines reaches more (the exact strategy's bound, else the fluid LP bound)."""
    lp_bound: float
    error: str | None = None
    """Why no strategy could place the set, where none could."""

    @property
    def sustains(self) -> bool:
        return self.scale >= 1.0 - SCALE_TOLERANCE

    @property
    def refuted(self) -> bool:
        """Proven not to sustain the rates."""
        return self.upper < 1.0 - SCALE_TOLERANCE


class Placer:
    """Places the combined topology on sets of machines within one deadline, remembering what it placed."""

    def __init__(self, topology: Topology, entries: list[ProfileEntry], profiles: ProfileTable, options: PlanOptions,
                 strategy: str | None, deadline_s: float | None, initial_scale: float = INITIAL_SCALE):
        self.topology = topology
        self.entries = entries
        self.profiles = profiles
        self.options = options.model_copy(update={"initial_rate": initial_scale})
        self.strategy = strategy
        self.start = time.perf_counter()
        self.deadline_s = deadline_s
        self.placements = 0

    def remaining_s(self) -> float | None:
        if self.deadline_s is None:
            return None
        return max(0.0, self.deadline_s - (time.perf_counter() - self.start))

    def out_of_time(self) -> bool:
        left = self.remaining_s()
        return left is not None and left <= 0

    def problem(self, cluster: Cluster) -> Problem:
        return compile_problem(self.topology, cluster, self.profiles, self.options)

    def lp_bound(self, cluster: Cluster) -> float:
        if not cluster.machines:
            return 0.0
        try:
            return lp_upper_bound_problem(self.problem(cluster))
        except PlanningError as exc:
            if "unbounded" in str(exc):
                raise
            return 0.0

    def exact_fits(self, cluster: Cluster, pairs: int = DEFAULT_TUNING.max_component_machine_pairs) -> bool:
        """Whether the exact strategy takes a request of this size (planner.strategies.optimal's limits) with at
        most ``pairs`` component-machine pairs, and the caller left the strategy to the planner."""
        placed = sum(1 for c in self.topology.components if not c.is_system)
        machines = len(cluster.machines)
        return (self.strategy is None and placed <= DEFAULT_TUNING.max_placed_components
                and machines <= DEFAULT_TUNING.max_machines and placed * machines <= pairs)

    def place(self, cluster: Cluster, exact: bool = False, enough: float = math.inf,
              pairs: int = DEFAULT_TUNING.max_component_machine_pairs) -> Placed:
        """The best placement the strategy finds on ``cluster``; with ``exact``, where that falls short of ``enough``,
        the exact strategy's too (where it takes the request and finishes within :data:`EXACT_TRY_S`). A set no
        strategy can place sustains scale 0."""
        bound = self.lp_bound(cluster)
        if bound <= 0 or not cluster.machines:
            return Placed(cluster, None, 0.0, True, bound, bound)
        best = self._plan(cluster, self.strategy or FALLBACK_STRATEGY, self.remaining_s(), bound)
        if exact and best.scale < enough and self.exact_fits(cluster, pairs):
            left = self.remaining_s()  # without a deadline, the exact strategy's own default limit
            tried = self._plan(cluster, EXACT_STRATEGY, None if left is None else min(left, EXACT_TRY_S), bound)
            if tried.exact or tried.scale > best.scale:
                best = tried
        return best

    def _plan(self, cluster: Cluster, strategy: str, time_limit_s: float | None, bound: float) -> Placed:
        options = self.options.model_copy(update={"time_limit_s": time_limit_s})
        self.placements += 1
        try:
            plan = make_plan(self.topology, cluster, self.entries, strategy, options)
        except PlanningError as exc:  # a time-out too: the set is then not settled, and callers watch the deadline
            return Placed(cluster, None, 0.0, False, bound, bound, str(exc))
        exact = strategy == EXACT_STRATEGY and bool(plan.stats.get("proven_optimal"))
        upper = float(plan.stats.get("upper_bound", bound)) if exact else bound
        return Placed(cluster, plan, plan.input_rate, exact, min(upper, bound), bound)


# --- the answers -------------------------------------------------------------------------------------------------

def _prediction(request: CapacityRequest, placed: Placed) -> dict:
    scale = placed.scale
    lp = placed.lp_bound
    return {
        "scale": scale,
        "rates": {t.topology.name: scale * t.required_rate for t in request.topologies},
        "bottleneck": placed.plan.bottleneck if placed.plan is not None else None,
        "lp_bound_scale": lp,
        "lp_gap": max(0.0, 1.0 - scale / lp) if lp > 0 else 0.0,
        "placement_proven": placed.exact,
    }


def _search(request: CapacityRequest, probe: Problem, offer: Offer, placer: Placer, stats: dict) -> Placed:
    """Raise the scale the MILP buys for until a real placement sustains the rates (module docstring)."""
    asked = 1.0
    tried: set[tuple[int, ...]] = set()
    for _ in range(MAX_RAISES):
        if placer.out_of_time():
            break
        buy = cheapest_buy(probe, offer, asked, placer.remaining_s())
        stats["milp_solves"] += 1
        if buy is None:
            break
        if len(request.owned) + int(buy.sum()) > MAX_MACHINES:
            raise PlanningError(f"the required rates need more than {MAX_MACHINES:,} machines of the types on offer: "
                                "lower the rates, or offer larger machine types")
        key = tuple(int(n) for n in buy)
        if key in tried:
            asked *= 1.0 + RAISE_STEP * 10
            continue
        tried.add(key)
        placed = placer.place(bought_cluster(request, buy))
        stats["sets_placed"] += 1
        if placed.sustains:
            return placed
        if placed.plan is None and placed.error is not None and not placer.out_of_time():
            raise PlanningError(f"no strategy could place the {len(placed.cluster.machines)} machines the fluid bound "
                                f"buys for the required rates: {placed.error}")
        asked *= max(1.0 + RAISE_STEP, min(2.0, 1.0 / placed.scale if placed.scale > 0 else 2.0))
    if placer.out_of_time():
        raise PlanningTimeout(
            f"capacity planning ran past its time limit of {placer.deadline_s:g} s before any set of machines was "
            f"verified to sustain the required rates ({stats['sets_placed']} sets placed): raise options.time_limit_s, "
            "or send fewer topologies or machine types")
    raise PlanningError(
        f"capacity planning found no set of machines whose placement sustains the required rates in {MAX_RAISES} "
        f"tries, though the fluid bound allows them: lower the rates, or offer larger machine types")


def _cheaper_sets(offer: Offer, low: float, high: float) -> list[np.ndarray] | None:
    """Every buy whose cost lies in [low, high), cheapest first (fewest machines among equals); None if too many."""
    bounds = []
    for t in range(len(offer.types)):
        price = offer.price[t]
        if price <= 0:
            if not np.isfinite(offer.available[t]):
                return None
            bounds.append(int(offer.available[t]))
        else:
            bounds.append(int(min(offer.available[t], math.floor((high - 1e-9) / price))))
    if math.prod(n + 1 for n in bounds) > MAX_ENUMERATED:
        return None
    sets = [np.array(b, dtype=np.int64) for b in itertools.product(*(range(n + 1) for n in bounds))]
    sets = [b for b in sets if low - 1e-9 <= offer.cost(b) < high - 1e-9]
    return sorted(sets, key=lambda b: (offer.cost(b), int(b.sum()), tuple(-b)))


def _refine(request: CapacityRequest, offer: Offer, placer: Placer, best: Placed, low: float, stats: dict
            ) -> tuple[Placed, bool]:
    """Try every cheaper set in order of cost; the first that sustains the rates wins. Proven when all are settled."""
    best_cost = offer.cost(_buy_of(request, best.cluster))
    sets = _cheaper_sets(offer, low, best_cost)
    if sets is None:
        stats["unproven"] = "too many cheaper sets to try one by one"
        return best, False
    refuted: list[np.ndarray] = []
    proven = True
    for buy in sets:
        if any((buy <= r).all() for r in refuted):
            continue  # fewer machines than a set that cannot sustain the rates cannot either
        if placer.out_of_time():
            stats["stopped_by"] = "time_limit"
            return best, False
        if not request.owned and not buy.any():
            continue  # no machine sustains nothing
        cluster = bought_cluster(request, buy)
        if placer.lp_bound(cluster) < 1.0 - SCALE_TOLERANCE:
            refuted.append(buy)
            continue
        placed = placer.place(cluster, exact=True, enough=1.0 - SCALE_TOLERANCE)
        stats["sets_placed"] += 1
        if placed.sustains:
            return placed, proven
        if placed.refuted:
            refuted.append(buy)
        else:
            proven = False
    return best, proven


def _buy_of(request: CapacityRequest, cluster: Cluster) -> np.ndarray:
    owned = {m.id for m in request.owned}
    bought = Counter(m.type for m in cluster.machines if m.id not in owned)
    return np.array([bought[t.name] for t in request.machine_types], dtype=np.int64)


def _additions(request: CapacityRequest, offer: Offer, placer: Placer, base: Placed) -> list[Addition]:
    """One more machine of each type that can still be bought, the largest gain first (cheaper first among equals)."""
    bought = _buy_of(request, base.cluster)
    out: list[Addition] = []
    for t, offered in enumerate(offer.types):
        if bought[t] >= offer.available[t] or placer.out_of_time():
            continue
        buy = bought.copy()
        buy[t] += 1
        placed = placer.place(bought_cluster(request, buy), exact=True, pairs=EXACT_ALWAYS_PAIRS)
        if placed.plan is None and placer.out_of_time():
            break
        if placed.scale < base.scale and base.plan is not None:  # the purchase's placement still runs there
            placed = Placed(placed.cluster, base.plan, base.scale, False, placed.upper, placed.lp_bound)
        out.append(Addition(**_prediction(request, placed), machine_type=offered.name, price=float(offer.price[t]),
                            gain=max(0.0, placed.scale - base.scale)))
    return sorted(out, key=lambda a: (-a.gain, a.price, a.machine_type))


def _machines_to_lose(request: CapacityRequest, base: Placed) -> list[Machine]:
    machines = {m.id: m for m in base.cluster.machines}
    if request.lose is not None:
        unknown = [m for m in request.lose if m not in machines]
        if unknown:
            raise PlanningError(f"lose names machine {unknown[0]}, which is not in the answer's cluster (its machines: "
                                f"{', '.join(list(machines)[:10])}{', ...' if len(machines) > 10 else ''})")
        return [machines[m] for m in request.lose]
    if len(machines) <= LOSSES_EACH_UP_TO:
        return list(base.cluster.machines)
    assert base.plan is not None
    busiest: dict[str, tuple[float, str]] = {}
    for m in base.plan.machines:
        if m.type not in busiest or m.utilization > busiest[m.type][0]:
            busiest[m.type] = (m.utilization, m.id)
    return [machines[w] for _, w in sorted(busiest.values(), key=lambda u: u[1])]


def shared_rates(request: CapacityRequest, placer: Placer, placed: Placed) -> tuple[dict[str, float], dict[str, str]]:
    """Each topology's rate on ``placed`` as the ledger shares machines (planner.tenancy): minimums by priority, then
    the rest by weight up to the required rate; and why a topology is refused where its minimum does not fit."""
    if placed.plan is None:
        return ({t.topology.name: 0.0 for t in request.topologies},
                {t.topology.name: "the machines left cannot host it" for t in request.topologies if t.min_rate > 0})
    problem = placer.problem(placed.cluster)
    placement: dict[str, list[str]] = {}
    for a in sorted(placed.plan.assignments, key=lambda a: (a.component, a.index)):
        placement.setdefault(a.component, []).append(a.machine)
    loads = linear_loads(problem, placement)
    owner = np.array([topology_of(problem.component_ids[c]) for c in loads.comp])
    thread_cap = rate_limits(loads.thread_limit_i, loads.a_i, loads.b_i)
    tenants = []
    for t in request.topologies:
        mine = owner == t.topology.name
        rate = t.required_rate
        slope = np.bincount(loads.mach[mine], weights=loads.slope_i[mine] / rate, minlength=problem.n_machines)
        fixed = np.bincount(loads.mach[mine], weights=loads.b_i[mine], minlength=problem.n_machines)
        tenants.append(Tenant(
            t.topology.name, slope={problem.machine_ids[w]: float(v) for w, v in enumerate(slope) if v > 0},
            fixed={problem.machine_ids[w]: float(v) for w, v in enumerate(fixed) if v > 0}, priority=t.priority,
            min_rate=t.min_rate, target_rate=rate,
            rate_cap=float(thread_cap[mine].min()) * rate if mine.any() else math.inf))
    capacity = {problem.machine_ids[w]: float(problem.limit[w]) for w in range(problem.n_machines)}
    allocation = allocate(tenants, capacity)
    rates = {t.topology.name: allocation.rates.get(t.topology.name, 0.0) for t in request.topologies}
    return rates, {name: refusal.reason for name, refusal in allocation.refused.items()}


def _losses(request: CapacityRequest, placer: Placer, base: Placed) -> list[Loss]:
    """Each machine's loss; machines of one type that host the same instances lose the same, so are planned once."""
    hosted: dict[str, Counter[str]] = {m.id: Counter() for m in base.cluster.machines}
    for a in base.plan.assignments if base.plan is not None else ():
        hosted[a.machine][a.component + ("#0" if a.index == 0 else "")] += 1
    seen: dict[tuple, Loss] = {}
    out: list[Loss] = []
    for machine in _machines_to_lose(request, base):
        key = (machine.type, tuple(sorted(hosted[machine.id].items())))
        if key in seen:
            out.append(seen[key].model_copy(update={"machine": machine.id}))
            continue
        if placer.out_of_time():
            break
        rest = base.cluster.model_copy(update={"machines": [m for m in base.cluster.machines if m.id != machine.id]})
        placed = placer.place(rest, exact=True, pairs=EXACT_ALWAYS_PAIRS) if rest.machines else Placed(
            rest, None, 0.0, True, 0.0, 0.0)
        if placed.plan is None and placer.out_of_time():
            break
        rates, refused = shared_rates(request, placer, placed)
        seen[key] = Loss(**{**_prediction(request, placed), "rates": rates}, machine=machine.id,
                         machine_type=machine.type, refused=refused)
        out.append(seen[key])
    return out


def plan_capacity(request: CapacityRequest, entries: list[ProfileEntry]) -> CapacityAnswer:
    """The cheapest machines that sustain every required rate, the next one to add, and each loss (module docstring).

    Stops at ``options.time_limit_s``: the best set verified so far is answered with ``proven`` false; where none was
    verified yet, PlanningTimeout.
    """
    started = time.perf_counter()
    profiles = ProfileTable.from_entries(entries)
    check_request(request, profiles)
    topology = combined_topology(request.topologies)
    offer = Offer.of(request)
    probe = compile_problem(topology, probe_cluster(request.machine_types), profiles, request.options)
    placer = Placer(topology, entries, profiles, request.options, request.strategy, request.options.time_limit_s,
                    initial_scale(probe))
    best_reachable = reachable_scale(probe, offer)
    if best_reachable < 1.0 - SCALE_TOLERANCE:
        raise PlanningError(unreachable_sentence(request, probe, offer, best_reachable))
    stats: dict = {"milp_solves": 1, "sets_placed": 0}
    low, low_proven = cost_lower_bound(probe, offer, placer.remaining_s())
    best = _search(request, probe, offer, placer, stats)
    cost = offer.cost(_buy_of(request, best.cluster))
    proven = low_proven and cost <= low + 1e-9 * max(1.0, abs(low))
    if not proven and low_proven and not placer.out_of_time():
        best, proven = _refine(request, offer, placer, best, low, stats)
        cost = offer.cost(_buy_of(request, best.cluster))
    assert best.plan is not None
    buy = _buy_of(request, best.cluster)
    purchase = Purchase(**_prediction(request, best), buy={t.name: int(n) for t, n in zip(offer.types, buy) if n},
                        cost=cost, cost_lower_bound=low, proven=proven, cluster=best.cluster, plan=best.plan)
    additions = _additions(request, offer, placer, best) if request.add_next else []
    losses = _losses(request, placer, best)
    if placer.out_of_time():
        stats["stopped_by"] = "time_limit"
    stats.update(placements=placer.placements, elapsed_ms=(time.perf_counter() - started) * 1000.0,
                 fluid_reachable_scale=None if math.isinf(best_reachable) else best_reachable)
    return CapacityAnswer(purchase=purchase, add_next=additions, losses=losses, stats=stats)


def capacity_json(request: CapacityRequest, entries: list[ProfileEntry]) -> str:
    """``plan_capacity`` as a planning worker runs it: the answer as JSON, plain data across the process boundary."""
    return plan_capacity(request, entries).model_dump_json()


__all__ = ["Prediction", "capacity_json", "check_request", "combined_topology", "plan_capacity"]
