"""Many topologies on one cluster: who is admitted and what input rate each gets (docs/concepts/model.md, "Many topologies").

Pure: every tenant is a topology whose placement is fixed, so its load on every machine is
linear in its input rate R (``fixed_w + slope_w * R``, the simulator's closed form). Given
each machine's capacity, this module decides

1. **admission**: first Storm worker slots, first come first served: each tenant holds one slot
   on every machine it uses, in order of arrival, and one that needs a slot those before it hold
   is refused (a running topology's worker keeps its slot whatever comes later; the fit is 0: no
   rate runs without a worker). Then, in order of importance (Storm's ``topology.priority``: 0
   first, ties by arrival), a tenant is admitted when its minimum rate fits beside the minimums of
   those admitted before it; otherwise it is refused, with the machine that is short and the
   largest minimum that would have fit. The admitted set is the feasible set that is best
   lexicographically by importance (feasibility is monotone, so the greedy pass finds it);
2. **shares** of what the minimums leave (and the idle workers of refused tenants: a tenant refused
   after it was placed runs on at rate 0, nothing evicts it, and its workers still cost their machines), by weighted max-min fairness on each tenant's
   normalized rate ``s_i = (R_i - min_i) / (top_i - min_i)`` in [0, 1], ``top_i`` being its
   target rate, else the most its placement sustains alone:

   - ``weighted`` (the thesis's SPS idea on CPU capacity): every ``s_i`` grows at its weight
     ``w_i = 1 / (1 + priority)`` until a machine it uses is full or it reaches its top; no
     admitted tenant is starved while a machine it uses has room;
   - ``strict`` (the DPS idea): priority levels are filled one after another, the most
     important first; within a level, equal weights.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

ShareMode = Literal["weighted", "strict"]
SHARE_MODES: tuple[ShareMode, ...] = ("weighted", "strict")
DEFAULT_PRIORITY = 29
"""Storm's default ``topology.priority``."""
LOAD_SLACK_PCT = 1e-6
"""A machine within this many percent of its capacity counts as full."""


def priority_weight(priority: int) -> float:
    """The share weight of a priority level: 1 for 0 (most important), 1/30 for Storm's default 29."""
    return 1.0 / (1.0 + max(0, priority))


@dataclass(frozen=True)
class Tenant:
    """A topology placed on the cluster, its load as a linear function of its input rate R (tuples/s).

    ``slope[w]`` is percent of machine w per tuple/s of R, ``fixed[w]`` percent of w at any
    rate (the instances' MET); ``rate_cap`` is the most R its threads allow (thread caps), inf
    where none binds. ``arrival`` orders tenants of equal priority (earlier first). ``hosts``
    are the machines where it holds a Storm worker slot: one on each machine its placement uses.
    """

    topology: str
    slope: Mapping[str, float]
    fixed: Mapping[str, float] = field(default_factory=dict)
    priority: int = DEFAULT_PRIORITY
    min_rate: float = 0.0
    target_rate: float | None = None
    rate_cap: float = math.inf
    arrival: float = 0.0
    hosts: frozenset[str] = frozenset()

    def load(self, machine: str, rate: float) -> float:
        """Percent of ``machine`` at input rate ``rate``."""
        return self.fixed.get(machine, 0.0) + self.slope.get(machine, 0.0) * rate

    @property
    def machines(self) -> set[str]:
        return {w for w, a in self.slope.items() if a > 0} | {w for w, b in self.fixed.items() if b > 0}


@dataclass(frozen=True)
class Refusal:
    """Why a tenant is not admitted, and the largest minimum rate (tuples/s) that would have fit.

    ``no_slot`` names the machine where the tenants that came before it hold every worker slot,
    where that is why (then no rate fits: ``fits_rate`` is 0).
    """

    reason: str
    fits_rate: float
    no_slot: str | None = None


@dataclass(frozen=True)
class Allocation:
    """Each admitted tenant's input rate (tuples/s) and each refused tenant's refusal."""

    mode: ShareMode
    rates: dict[str, float]
    refused: dict[str, Refusal]
    loads: dict[str, dict[str, float]]
    """machine -> topology -> predicted percent at its rate; a refused tenant's at rate 0 (its idle workers)."""


def importance_order(tenants: Sequence[Tenant]) -> list[Tenant]:
    """Most important first: priority 0 before 29, then earlier arrival, then name."""
    return sorted(tenants, key=lambda t: (t.priority, t.arrival, t.topology))


def alone_rate(tenant: Tenant, capacity: Mapping[str, float]) -> float:
    """The most R the tenant's placement sustains with the whole ``capacity`` to itself."""
    best = tenant.rate_cap
    for w, a in tenant.slope.items():
        if a > 0:
            best = min(best, (capacity.get(w, 0.0) - tenant.fixed.get(w, 0.0)) / a)
    return max(0.0, best)


def _top_rate(tenant: Tenant, capacity: Mapping[str, float]) -> float:
    top = alone_rate(tenant, capacity)
    if tenant.target_rate is not None:
        top = min(top, tenant.target_rate)
    return max(top, tenant.min_rate)


def _admit(tenants: Sequence[Tenant], capacity: Mapping[str, float],
           slots: Mapping[str, int]) -> tuple[list[Tenant], dict[str, Refusal]]:
    admitted: list[Tenant] = []
    refused = _slot_refusals(tenants, slots)
    used: dict[str, float] = {w: 0.0 for w in capacity}
    for t in importance_order(tenants):
        if t.topology in refused:
            continue
        fits = _fitting_rate(t, capacity, used)
        if t.min_rate <= fits + 1e-9:
            admitted.append(t)
            for w in t.machines:
                used[w] = used.get(w, 0.0) + t.load(w, t.min_rate)
            continue
        refused[t.topology] = Refusal(_refusal_reason(t, capacity, used, len(admitted)),
                                      math.floor(max(0.0, fits) * 1000) / 1000)
    return admitted, refused


def no_free_slot(hosts: Iterable[str], held: Mapping[str, int], slots: Mapping[str, int]) -> str | None:
    """The first of ``hosts`` (by name) whose worker slots ``held`` already fills; None when each has one free.

    ``slots`` is each machine's worker slots; a machine missing from it is not counted.
    """
    return next((w for w in sorted(hosts) if w in slots and held.get(w, 0) >= slots[w]), None)


def _slot_refusals(tenants: Sequence[Tenant], slots: Mapping[str, int]) -> dict[str, Refusal]:
    """The tenants that need a worker slot the ones before them hold, in order of arrival (then name)."""
    held: dict[str, int] = {}
    refused: dict[str, Refusal] = {}
    for t in sorted(tenants, key=lambda t: (t.arrival, t.topology)):
        full = no_free_slot(t.hosts, held, slots)
        if full is None:
            for w in t.hosts:
                held[w] = held.get(w, 0) + 1
            continue
        whose = ("whose only slot a tenant placed before it already holds" if slots[full] == 1 else
                 f"whose {slots[full]} slots the {held[full]} tenants placed before it already hold")
        refused[t.topology] = Refusal(f"it needs a worker slot on machine {full}, {whose}", 0.0, no_slot=full)
    return refused


def _fitting_rate(t: Tenant, capacity: Mapping[str, float], used: Mapping[str, float]) -> float:
    """The largest rate of ``t`` beside the loads ``used`` (-inf when its fixed load alone does not fit)."""
    best = t.rate_cap
    for w in t.machines:
        room = capacity.get(w, 0.0) - used.get(w, 0.0) - t.fixed.get(w, 0.0)
        if room < -LOAD_SLACK_PCT:
            return -math.inf
        a = t.slope.get(w, 0.0)
        if a > 0:
            best = min(best, max(0.0, room) / a)
    return best


def _refusal_reason(t: Tenant, capacity: Mapping[str, float], used: Mapping[str, float], ahead: int) -> str:
    if t.min_rate > t.rate_cap:
        return (f"its minimum rate {t.min_rate:g} tuples/s is over the {t.rate_cap:.2f} tuples/s its placement's "
                f"threads can carry")
    short = min(t.machines, key=lambda w: (capacity.get(w, 0.0) - used.get(w, 0.0) - t.load(w, t.min_rate), w))
    need = t.load(short, t.min_rate)
    left = max(0.0, capacity.get(short, 0.0) - used.get(short, 0.0))
    others = f"the minimums of the {ahead} more important tenant{'s' if ahead != 1 else ''} leave" if ahead else "it has"
    return (f"its minimum rate {t.min_rate:g} tuples/s needs {need:.1f}% of machine {short}, where {others} "
            f"{left:.1f}%")


def _fill(group: Sequence[Tenant], weights: Mapping[str, float], span: Mapping[str, float],
          share: dict[str, float], room: dict[str, float]) -> None:
    """Weighted progressive filling: raise every ``share[i]`` at ``weights[i]`` until its machine is full or it is 1."""
    active = [t for t in group if span[t.topology] > 0 and share[t.topology] < 1.0]
    rounds_left = len(group) + len(room) + 1
    """Each round retires a tenant or fills a machine; the bound ends rounds that float rounding stalls."""
    while active and rounds_left > 0:
        rounds_left -= 1
        growth = {w: 0.0 for w in room}
        for t in active:
            for w, a in t.slope.items():
                if a > 0:
                    growth[w] = growth.get(w, 0.0) + a * span[t.topology] * weights[t.topology]
        step = min((1.0 - share[t.topology]) / weights[t.topology] for t in active)
        for w, g in growth.items():
            if g > 0:
                step = min(step, max(0.0, room.get(w, 0.0)) / g)
        for t in active:
            share[t.topology] = min(1.0, share[t.topology] + weights[t.topology] * step)
        for w, g in growth.items():
            room[w] = room.get(w, 0.0) - g * step
        full = {w for w, g in growth.items() if g > 0 and room[w] <= LOAD_SLACK_PCT}
        active = [t for t in active if share[t.topology] < 1.0 - 1e-12
                  and not any(t.slope.get(w, 0.0) > 0 for w in full)]


def allocate(tenants: Sequence[Tenant], capacity: Mapping[str, float], mode: ShareMode = "weighted",
             slots: Mapping[str, int] | None = None) -> Allocation:
    """Admission by importance, then the rest shared by ``mode``; capacity is percent per machine, ``slots`` each
    machine's Storm worker slots (a machine missing from it, or all where None, has as many as its tenants need)."""
    if mode not in SHARE_MODES:
        raise ValueError(f"unknown share mode {mode!r}; known: {', '.join(SHARE_MODES)}")
    names = [t.topology for t in tenants]
    if len(set(names)) != len(names):
        raise ValueError("every tenant must be a different topology")
    admitted, refused = _admit(tenants, capacity, slots or {})
    room = dict(capacity)
    for t in admitted:
        for w in t.machines:
            room[w] = room.get(w, 0.0) - t.load(w, t.min_rate)
    idle = [t for t in tenants if t.topology in refused]
    for t in idle:  # refused after it was placed: it runs on at rate 0 (nothing evicts it), its workers still cost
        for w in t.machines:
            room[w] = room.get(w, 0.0) - t.load(w, 0.0)
    span = {t.topology: _top_rate(t, capacity) - t.min_rate for t in admitted}
    share = {t.topology: 0.0 for t in admitted}
    if mode == "weighted":
        _fill(admitted, {t.topology: priority_weight(t.priority) for t in admitted}, span, share, room)
    else:
        for level in sorted({t.priority for t in admitted}):
            group = [t for t in admitted if t.priority == level]
            _fill(group, {t.topology: 1.0 for t in group}, span, share, room)
    rates = {t.topology: t.min_rate + share[t.topology] * span[t.topology] for t in admitted}
    loads: dict[str, dict[str, float]] = {w: {} for w in capacity}
    for t in admitted:
        for w in t.machines:
            loads.setdefault(w, {})[t.topology] = t.load(w, rates[t.topology])
    for t in idle:
        for w in t.machines:
            loads.setdefault(w, {})[t.topology] = t.load(w, 0.0)
    return Allocation(mode=mode, rates=rates, refused=refused, loads=loads)


def leftover_capacity(capacity: Mapping[str, float], others: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Each machine's capacity less the other tenants' loads (machine -> topology -> percent); may be <= 0."""
    return {w: cap - sum(others.get(w, {}).values()) for w, cap in capacity.items()}
