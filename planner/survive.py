"""Plans that survive the loss of any one machine: the worst-case objective and the contingencies stored with a plan.

When a machine dies its instances must run somewhere else, and the cheapest change keeps every other instance where
it runs (Storm restarts no worker it does not have to). So the rate a placement keeps after losing machine w is the
closed-form R_max (planner.simulator) of the placement with w's instances re-placed on the survivors and nothing else
moved: the same repair as planner.repair, on the instance level, exhaustive where the choices are few
(:data:`REPAIR_EXHAUSTIVE_LIMIT`), else a greedy placement one lost instance at a time onto the machine where R stays
highest, then single moves while R rises. A contingency is that repair, computed ahead for every machine the plan
uses; where ``move_min_gain`` allows, survivors move too, one at a time, each only where it raises the rate after the
loss by that fraction (an executor moved restarts its worker).

The worst-case objective (``survive_loss.objective: worst_case``) chooses the placement whose rates after each
machine's loss, sorted from the worst, are the largest (leximin: the worst first, then the next, so ties among
symmetric machines still improve), and then the highest nominal R_max; with ``max_nominal_loss`` only placements
whose nominal R_max keeps that share of the nominal optimum count. Instance counts are the strategy's (Storm cannot
change executor counts). Few placements (:data:`SEARCH_EXHAUSTIVE_LIMIT`) are all tried, so the answer is exact there
(tests/test_survive_loss.py checks it against brute force); more are searched locally from the strategy's plan,
moving one instance off the worst machine (or off the bottleneck of its loss) at a time.

Loads are kept as sums per machine, so a move costs O(machines) numpy work (the simulator's closed form on a fixed
set of instances: each instance's cost depends only on its machine's type). Where the profiles give tuples crossing
workers a cost, that no longer holds and every step is scored by the simulator's instance-count form instead (slower,
same figures).

With ``options.weighted_shares`` the plan runs with shares chosen for its placement and sent to the workers by
machine; nothing sends others after a loss, so the weighted groupings keep the plan's machine shares over the
repaired placement (``stream_shares.kept_shares``). The search and the contingencies score every placement so: its
nominal rate with shares chosen for it (``stream_shares.weighted_score``, as the plan is scored), the rate after each
loss with those shares kept. The search first makes the survive plan without shares (from the strategy's plan for an
even split where it gives one: ``fast`` does, in its stats under :data:`EVEN_START_KEY`, which planner.api hands on)
and never answers below it in nominal rate, nor, where ``max_nominal_loss`` admits it, in worst-case rate: where
that plan served evenly (sent without shares) survives best, it is the answer (:func:`_worst_case_with_shares`).
Plans without the option are planned exactly as before.
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Mapping
from dataclasses import dataclass
from math import comb
from typing import Protocol

import numpy as np

from planner.errors import PlanningError
from planner.model import Contingency, ContingencyMove, Placement, SurviveLoss
from planner.problem import Problem
from planner.simulator import (
    MEMORY_SLACK_MB,
    RATE_REL_TOL,
    HostedModel,
    ShareArrays,
    instance_rates,
    linear_loads,
    max_rate,
    rate_limits,
)
from planner.stream_shares import ScoreBound, closed_form_rate, kept_shares, shares_by_machine

REPAIR_EXHAUSTIVE_LIMIT = 2_000
"""Most choices of machines for one machine's lost instances tried one by one; above it the greedy repair runs."""
SEARCH_EXHAUSTIVE_LIMIT = 1_000
"""Most placements (with the plan's instance counts) the worst-case objective tries one by one; above it, local search."""
SEARCH_SHARE_OF_LIMIT = 0.6
"""Share of ``options.time_limit_s`` the worst-case search may use; the contingencies take the rest."""
SEARCH_DEFAULT_S = 5.0
"""Seconds the worst-case search may use without a time limit."""
MAX_GREEDY_ROUNDS = 20
TARGETS_PER_MOVE = 8
"""The local search moves an instance only onto the machines with the most room (large clusters stay quick)."""


def check_request(problem: Problem) -> None:
    """One sentence for a request that cannot survive a loss at all."""
    if problem.n_machines < 2:
        raise PlanningError("options.survive_loss needs at least two machines: losing the only machine leaves "
                            "nowhere to place its instances")


class Loads:
    """A fixed set of instances, each on a machine (-1: not placed), with every machine's load as sums.

    Instance k of component ``comp[k]`` costs ``slope[k, t] * R + fixed[k, t]`` on a machine of type t: its input
    per unit R is fixed by the instance counts, which never change here.
    """

    def __init__(self, problem: Problem, comp: np.ndarray, inst: np.ndarray, mach: np.ndarray):
        self.problem = problem
        self.comp, self.inst = comp, inst
        self.mach = mach.copy()
        counts = np.bincount(comp, minlength=problem.n_components)
        rates = instance_rates(problem, counts)
        rho = rates.each_instance[comp] + np.where(inst == 0, rates.first_extra[comp], 0.0)
        self.slope = problem.cost[comp] * rho[:, None]  # (I, T)
        self.fixed = problem.met[comp]  # (I, T)
        self.thread = rate_limits(problem.thread_limit[None, :], self.slope, self.fixed)  # (I, T)
        self.memory = problem.memory[comp]
        self.mtype = problem.machine_type
        self.exact = HostedModel.of(problem) if problem.has_remote_cost else None
        self._sum()

    def copy(self) -> Loads:
        other = Loads.__new__(Loads)
        other.__dict__.update(self.__dict__)
        other.mach = self.mach.copy()
        other.a, other.b, other.n, other.mem = self.a.copy(), self.b.copy(), self.n.copy(), self.mem.copy()
        return other

    def _sum(self) -> None:
        m = self.problem.n_machines
        placed = self.mach >= 0
        k, w = np.flatnonzero(placed), self.mach[placed]
        t = self.mtype[w]
        self.a = np.bincount(w, weights=self.slope[k, t], minlength=m)
        self.b = np.bincount(w, weights=self.fixed[k, t], minlength=m)
        self.n = np.bincount(w, minlength=m)
        self.mem = np.bincount(w, weights=self.memory[k], minlength=m)

    def _machine_rates(self, a: np.ndarray, b: np.ndarray, n: np.ndarray, mem: np.ndarray,
                       machines: np.ndarray) -> np.ndarray:
        problem = self.problem
        r = rate_limits(problem.limit[machines], a, b)
        if problem.memory_bound:
            used = mem + problem.worker_memory * (n > 0)
            r = np.where(used > problem.memory_limit[machines] + MEMORY_SLACK_MB, -1.0, r)
        return r

    def rate(self) -> float:
        """R_max of the placed instances (the closed form; unplaced instances cost nothing yet)."""
        if self.exact is not None and (self.mach >= 0).all():
            return self._exact_rate(self.mach)
        machines = np.arange(self.problem.n_machines)
        r = self._machine_rates(self.a, self.b, self.n, self.mem, machines).min()
        placed = np.flatnonzero(self.mach >= 0)
        if placed.size:
            r = min(r, self.thread[placed, self.mtype[self.mach[placed]]].min())
        return float(r)

    def _exact_rate(self, mach: np.ndarray) -> float:
        assert self.exact is not None
        problem = self.problem
        hosts = np.zeros((problem.n_components, problem.n_machines))
        np.add.at(hosts, (self.comp, mach), 1.0)
        first = np.full(problem.n_components, -1, dtype=np.int64)
        first[self.comp[self.inst == 0]] = mach[self.inst == 0]
        return self.exact.max_rate(hosts, first).rate

    def move(self, k: int, to: int) -> None:
        """Instance k onto machine ``to`` (-1: unplaced)."""
        for w, sign in ((int(self.mach[k]), -1.0), (to, 1.0)):
            if w >= 0:
                t = self.mtype[w]
                self.a[w] += sign * self.slope[k, t]
                self.b[w] += sign * self.fixed[k, t]
                self.n[w] += int(sign)
                self.mem[w] += sign * self.memory[k]
        self.mach[k] = to

    def rates_if_moved(self, k: int, targets: np.ndarray) -> np.ndarray:
        """R_max with instance k moved onto each of ``targets`` instead (one figure per target)."""
        if self.exact is not None and ((self.mach >= 0).sum() + (self.mach[k] < 0)) == self.mach.size:
            out = np.empty(len(targets))
            for j, w in enumerate(targets):
                mach = self.mach.copy()
                mach[k] = w
                out[j] = self._exact_rate(mach)
            return out
        m = self.problem.n_machines
        a, b, n, mem = self.a.copy(), self.b.copy(), self.n.copy(), self.mem.copy()
        src = int(self.mach[k])
        if src >= 0:
            t = self.mtype[src]
            a[src] -= self.slope[k, t]
            b[src] -= self.fixed[k, t]
            n[src] -= 1
            mem[src] -= self.memory[k]
        machines = np.arange(m)
        base = self._machine_rates(a, b, n, mem, machines)
        tt = self.mtype[targets]
        moved = self._machine_rates(a[targets] + self.slope[k, tt], b[targets] + self.fixed[k, tt], n[targets] + 1,
                                    mem[targets] + self.memory[k], targets)
        others = _min_without(base, targets)
        placed = np.flatnonzero((self.mach >= 0) & (np.arange(self.mach.size) != k))
        thread_rest = self.thread[placed, self.mtype[self.mach[placed]]].min() if placed.size else np.inf
        return np.minimum(np.minimum(others, moved), np.minimum(thread_rest, self.thread[k, tt]))

    def room(self, k: int, targets: np.ndarray) -> np.ndarray:
        """Fixed room left on each target with instance k there, in share of its limit: the tie-break at equal R."""
        tt = self.mtype[targets]
        limit = self.problem.limit[targets]
        return (limit - self.b[targets] - self.fixed[k, tt]) / limit


def _min_without(values: np.ndarray, excluded: np.ndarray) -> np.ndarray:
    """For each index in ``excluded``: the least of ``values`` without that index (two smallest, no loop)."""
    if values.size == 1:
        return np.full(len(excluded), np.inf)
    order = np.argpartition(values, 1)[:2]
    first, second = (order[0], order[1]) if values[order[0]] <= values[order[1]] else (order[1], order[0])
    return np.where(excluded == first, values[second], values[first])


def loads_of(problem: Problem, placement: Placement) -> Loads:
    comp, inst, mach = problem.placement_arrays(placement)
    return Loads(problem, comp, inst, mach)


def placement_of(problem: Problem, loads: Loads) -> Placement:
    return _placement_at(problem, loads, loads.mach)


# --- the repair of one machine's loss ---------------------------------------------------------------------------


def _choices(loads: Loads, lost: np.ndarray, survivors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every distinct way to put the lost instances on the survivors: (the lost instances in column order, (N, L)
    machines). Instances of a component are alike except instance 0, so each component's are a multiset."""
    columns, options = [], []
    for c in np.unique(loads.comp[lost]):
        ks = lost[loads.comp[lost] == c]
        first, rest = ks[loads.inst[ks] == 0], ks[loads.inst[ks] != 0]
        firsts = survivors if first.size else [None]
        rows = [((f,) if f is not None else ()) + r for f in firsts
                for r in itertools.combinations_with_replacement(survivors.tolist(), rest.size)]
        columns.append(np.concatenate([first, rest]))
        options.append(np.array(rows, dtype=np.int64).reshape(len(rows), first.size + rest.size))
    index = np.indices([len(o) for o in options]).reshape(len(options), -1).T
    return np.concatenate(columns), np.concatenate([o[index[:, g]] for g, o in enumerate(options)], axis=1)


def _rates_of_choices(state: Loads, ks: np.ndarray, choices: np.ndarray) -> np.ndarray:
    """R_max of each row of ``choices`` (machines of the unplaced instances ``ks``), every other instance as placed."""
    if state.exact is not None:
        out = np.empty(len(choices))
        for j, row in enumerate(choices):
            mach = state.mach.copy()
            mach[ks] = row
            out[j] = state._exact_rate(mach)
        return out
    n_rows, m = len(choices), state.problem.n_machines
    rows = np.repeat(np.arange(n_rows), ks.size)
    cols = choices.ravel()
    k = np.tile(ks, n_rows)
    t = state.mtype[cols]
    sums = []
    for base, add in ((state.a, state.slope[k, t]), (state.b, state.fixed[k, t]), (state.n, np.ones(cols.size)),
                      (state.mem, state.memory[k])):
        total = np.tile(base.astype(float), (n_rows, 1))
        np.add.at(total, (rows, cols), add)
        sums.append(total)
    a, b, n, mem = sums
    machine = state._machine_rates(a, b, n, mem, np.arange(m)[None, :]).min(axis=1)
    placed = np.flatnonzero(state.mach >= 0)
    fixed_threads = state.thread[placed, state.mtype[state.mach[placed]]].min() if placed.size else np.inf
    moved_threads = state.thread[k, t].reshape(n_rows, ks.size).min(axis=1)
    return np.minimum(np.minimum(machine, moved_threads), fixed_threads)


def _n_choices(loads: Loads, lost: np.ndarray, survivors: int) -> int:
    total = 1
    for c in np.unique(loads.comp[lost]):
        ks = lost[loads.comp[lost] == c]
        has_first = bool((loads.inst[ks] == 0).any())
        rest = ks.size - has_first
        total *= (survivors if has_first else 1) * _multisets(survivors, rest)
        if total > 10 * REPAIR_EXHAUSTIVE_LIMIT:
            break
    return total


def _multisets(n: int, k: int) -> int:
    return comb(n + k - 1, k)


def _best_target(loads: Loads, k: int, survivors: np.ndarray) -> tuple[int, float]:
    rates = loads.rates_if_moved(k, survivors)
    best = np.flatnonzero(np.isclose(rates, rates.max(), rtol=RATE_REL_TOL, atol=1e-12))
    if best.size > 1:
        room = loads.room(k, survivors[best])
        best = best[[int(np.argmax(room))]]
    return int(survivors[best[0]]), float(rates[best[0]])


def repair_loss(loads: Loads, lost_machine: int) -> tuple[Loads, str]:
    """The placement with ``lost_machine``'s instances re-placed on the others, nothing else moved; and how it was found."""
    state = loads.copy()
    lost = np.flatnonzero(state.mach == lost_machine)
    survivors = np.flatnonzero(np.arange(state.problem.n_machines) != lost_machine)
    for k in lost:
        state.move(int(k), -1)
    if lost.size == 0:
        return state, "none"
    if _n_choices(state, lost, survivors.size) <= REPAIR_EXHAUSTIVE_LIMIT:
        ks, choices = _choices(state, lost, survivors)
        rates = _rates_of_choices(state, ks, choices)
        best = int(np.argmax(rates))  # the first of the best, in a fixed order
        for k, w in zip(ks, choices[best]):
            state.move(int(k), int(w))
        return state, "exhaustive"
    heaviest = lost[np.argsort(-state.slope[lost].mean(axis=1), kind="stable")]
    for k in heaviest:
        state.move(int(k), _best_target(state, int(k), survivors)[0])
    _improve(EvenMoves(), state, heaviest, survivors)
    return state, "greedy"


class MoveScoring(Protocol):
    """How :func:`_improve` scores a placement after a loss: as split evenly (:class:`EvenMoves`) or with the plan's
    machine shares kept (:class:`KeptMoves`)."""

    def rate(self, loads: Loads) -> float:
        """R_max of ``loads`` as placed."""
        ...

    def best_target(self, loads: Loads, k: int, targets: np.ndarray) -> tuple[int, float] | None:
        """The best of ``targets`` (none of them instance k's machine) to move instance k to, and the rate there;
        None where none was scored in time."""
        ...


class EvenMoves:
    """Every placement split evenly: one vectorized closed form per instance, ties to the target with the most room."""

    def rate(self, loads: Loads) -> float:
        return loads.rate()

    def best_target(self, loads: Loads, k: int, targets: np.ndarray) -> tuple[int, float] | None:
        return _best_target(loads, k, targets)


def _improve(scoring: MoveScoring, state: Loads, movable: np.ndarray, targets: np.ndarray, min_gain: float = 0.0,
             limit: int | None = None) -> int:
    """Moves one of ``movable`` at a time to its best target while the rate rises by more than ``min_gain``; returns
    the moves. Instances alike (:func:`_one_of_each_kind`) are scored once: each would score the same."""
    moves = 0
    rate = scoring.rate(state)
    for _ in range(MAX_GREEDY_ROUNDS if limit is None else limit):
        best: tuple[float, int, int] | None = None
        for k in _one_of_each_kind(state, movable):
            allowed = targets[targets != state.mach[k]]
            if allowed.size == 0:
                continue
            found = scoring.best_target(state, k, allowed)
            if found is not None and (best is None or found[1] > best[0]):
                best = (found[1], k, found[0])
        if best is None or not best[0] > rate * (1 + max(min_gain, RATE_REL_TOL)) + 1e-12:
            break
        state.move(best[1], best[2])
        rate = best[0]
        moves += 1
    return moves


# --- contingencies ------------------------------------------------------------------------------------------------


def contingency(problem: Problem, loads: Loads, lost_machine: int, move_min_gain: float | None) -> Contingency:
    """What to do when ``lost_machine`` is lost: its instances re-placed, survivors moved only where the gain allows."""
    repaired, _ = repair_loss(loads, lost_machine)
    survivors_machines = np.flatnonzero(np.arange(problem.n_machines) != lost_machine)
    if move_min_gain is not None:
        kept = np.flatnonzero(loads.mach != lost_machine)
        _improve(EvenMoves(), repaired, kept, survivors_machines, min_gain=move_min_gain, limit=len(kept))
    moved = np.flatnonzero(repaired.mach != loads.mach)
    placement = placement_of(problem, repaired)
    rate, bottleneck = max_rate(problem, linear_loads(problem, placement))
    return Contingency(
        machine=problem.machine_ids[lost_machine], input_rate=rate, bottleneck=bottleneck,
        lost=int((loads.mach == lost_machine).sum()), moved=int(moved.size),
        moves=[ContingencyMove(component=problem.component_ids[loads.comp[k]], index=int(loads.inst[k]),
                               machine=problem.machine_ids[repaired.mach[k]]) for k in moved])


def contingencies(problem: Problem, placement: Placement, move_min_gain: float | None,
                  shares: MachineShares | None = None, deadline_s: float | None = None) -> list[Contingency]:
    """One contingency per machine the placement uses, in the cluster's order.

    ``shares``: the plan's machine shares (``stream_shares.machine_shares``, what its workers are sent), which the
    weighted groupings keep after a loss. With them every repair and move is chosen, and every contingency's rate and
    bottleneck scored, with them kept (``stream_shares.kept_shares``); past ``deadline_s`` seconds from now
    (:data:`SEARCH_DEFAULT_S` without one) a contingency is the even split's repair (never below it with the shares
    kept), survivors left where they are.
    """
    loads = loads_of(problem, placement)
    used = np.flatnonzero(loads.n > 0)
    if not shares:
        return [contingency(problem, loads, int(w), move_min_gain) for w in used]
    stop_at = time.perf_counter() + (SEARCH_DEFAULT_S if deadline_s is None else deadline_s)
    kept = KeptShares(problem, shares)
    return [_contingency_kept(problem, kept, loads, int(w), move_min_gain, stop_at) for w in used]


def worst_after_loss(nominal: float, answered: list[Contingency], machines: int) -> float:
    """The least rate after any one machine's loss: a machine without instances loses nothing (the nominal rate)."""
    rates = [c.input_rate for c in answered] + ([nominal] if len(answered) < machines else [])
    return min(rates)


# --- the worst-case objective -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Survival:
    """A placement's rate after each machine's loss (survivors kept), worst first, and its nominal R_max."""

    losses: tuple[float, ...]
    """Rate after the loss of each machine, sorted ascending (a machine without instances: the nominal rate)."""
    worst_machine: int
    nominal: float

    @property
    def worst(self) -> float:
        return self.losses[0]


def survival(loads: Loads, stop_at: float | None = None) -> Survival | None:
    """The rates after each machine's loss; None where ``stop_at`` (perf_counter seconds) passed first."""
    nominal = loads.rate()
    rates = np.full(loads.problem.n_machines, nominal)
    for w in np.flatnonzero(loads.n > 0):
        if stop_at is not None and time.perf_counter() > stop_at:
            return None
        rates[w] = repair_loss(loads, int(w))[0].rate()
    return Survival(tuple(float(r) for r in np.sort(rates)), int(np.argmin(rates)), nominal)


def _same(x: float, y: float) -> bool:
    return abs(x - y) <= RATE_REL_TOL * max(abs(x), abs(y)) + 1e-12


def _better(a: Survival, b: Survival | None) -> bool:
    """The higher worst rate after a loss; at an equal one, fewer machines whose loss gives it (symmetric machines tie,
    and the worst rises only once each of them is relieved), then the higher nominal rate."""
    if b is None:
        return True
    ties_a = sum(_same(x, a.worst) for x in a.losses)
    ties_b = sum(_same(x, b.worst) for x in b.losses)
    for x, y in ((a.worst, b.worst), (-ties_a, -ties_b), (a.nominal, b.nominal)):
        if not _same(x, y):
            return x > y
    return False


@dataclass(frozen=True)
class SearchResult:
    placement: Placement
    survival: Survival
    stats: dict
    serve_evenly: bool = False
    """With weighted shares: the answer is to run without them (the survive plan, sent without shares)."""


def _placements(problem: Problem, loads: Loads) -> tuple[int, list[list[np.ndarray]]]:
    """Every distinct placement of each component with the plan's counts (machine per instance, instance 0 first)."""
    machines = range(problem.n_machines)
    per_component = []
    total = 1
    counts = [int((loads.comp == c).sum()) for c in range(problem.n_components)]
    for n in counts:
        total *= problem.n_machines * _multisets(problem.n_machines, n - 1)
        if total > SEARCH_EXHAUSTIVE_LIMIT:
            return total, []
    for n in counts:
        per_component.append([np.array((f, *rest)) for f in machines
                              for rest in itertools.combinations_with_replacement(machines, n - 1)])
    return total, per_component


def worst_case(problem: Problem, placement: Placement, rule: SurviveLoss, deadline_s: float | None,
               even_start: Placement | None = None) -> SearchResult:
    """The placement with the plan's instance counts that best survives a loss (leximin), within the nominal floor.

    With ``options.weighted_shares`` every candidate is scored as it runs with shares (:func:`_worst_case_with_shares`),
    and ``even_start`` is the strategy's plan for an even split where it made one (:data:`EVEN_START_KEY`).
    """
    started = time.perf_counter()
    budget = SEARCH_DEFAULT_S if deadline_s is None else deadline_s * SEARCH_SHARE_OF_LIMIT
    if problem.options.weighted_shares:
        deadline_at = None if deadline_s is None else started + deadline_s
        return _worst_case_with_shares(problem, placement, rule, started, budget, even_start, deadline_at)
    return _worst_case_even(problem, placement, rule, started, started + budget)


def _worst_case_even(problem: Problem, placement: Placement, rule: SurviveLoss, started: float, stop_at: float,
                     timing: dict | None = None) -> SearchResult:
    """:func:`worst_case` with every placement split evenly; its local search stops at ``stop_at``. ``timing`` gets
    the seconds one placement's survival took (``survival_s``: about what its contingencies take)."""
    start = loads_of(problem, placement)
    clock = time.perf_counter()
    start_survival = survival(start)
    assert start_survival is not None
    if timing is not None:
        timing["survival_s"] = time.perf_counter() - clock
    total, per_component = _placements(problem, start)
    order = np.lexsort((start.inst, start.comp))  # instances grouped by component, instance 0 first
    if per_component:
        candidates = []
        for choice in itertools.product(*per_component):
            trial = start.copy()
            trial.mach[order] = np.concatenate(choice)
            trial._sum()
            candidates.append(trial)
        reference = max(t.rate() for t in candidates)
        floor = _floor(rule, reference)
        best: tuple[Loads, Survival] | None = None
        for trial in candidates:
            if trial.rate() < floor:
                continue
            s = survival(trial)
            assert s is not None
            if best is None or _better(s, best[1]):
                best = (trial, s)
        assert best is not None  # the best nominal placement meets any floor
        search, steps = "exhaustive", total
    else:
        reference = start_survival.nominal
        floor = _floor(rule, reference)
        best, steps = _local_search(EvenSurvival(), start, start_survival, floor, stop_at)
        search = "local"
        if best[1].worst <= start_survival.worst or _same(best[1].worst, start_survival.worst):
            # no worst-case gain: nothing is worth the nominal rate the search may have given up
            best, steps = (start, start_survival), 0
    loads, s = best
    stats = {"objective": rule.objective, "search": search, "steps": steps,
             "nominal_reference": reference, "nominal_floor": floor,
             "plan_nominal_rate": start_survival.nominal, "plan_worst_case_rate": start_survival.worst,
             "worst_case_rate": s.worst, "worst_machine": problem.machine_ids[s.worst_machine],
             "search_ms": (time.perf_counter() - started) * 1000.0}
    return SearchResult(placement_of(problem, loads), s, stats)


def _floor(rule: SurviveLoss, reference: float) -> float:
    return 0.0 if rule.max_nominal_loss is None else reference * (1.0 - rule.max_nominal_loss) * (1 - RATE_REL_TOL)


class SurvivalScoring(Protocol):
    """How :func:`_local_search` scores a placement: split evenly (:class:`EvenSurvival`) or as it runs with weighted
    shares (:class:`SharesSurvival`)."""

    def repaired(self, loads: Loads, lost_machine: int, stop_at: float) -> Loads:
        """``loads`` after ``lost_machine``'s loss, repaired as this scoring repairs it."""
        ...

    def survival(self, loads: Loads, floor: float, stop_at: float, beat: Survival) -> Survival | None:
        """The placement's :class:`Survival`; None where its nominal rate is under ``floor`` or ``stop_at`` passed
        first, and may be None where it cannot be better than ``beat`` (found out early)."""
        ...


class EvenSurvival:
    """Every placement split evenly, as :func:`survival` scores it."""

    def repaired(self, loads: Loads, lost_machine: int, stop_at: float) -> Loads:
        return repair_loss(loads, lost_machine)[0]

    def survival(self, loads: Loads, floor: float, stop_at: float, beat: Survival) -> Survival | None:
        if loads.rate() < floor:
            return None
        return survival(loads, stop_at)


def _local_search(scoring: SurvivalScoring, start: Loads, start_survival: Survival, floor: float, stop_at: float
                  ) -> tuple[tuple[Loads, Survival], int]:
    """Moves one instance at a time off the worst machine (or off the bottleneck of its loss) while the leximin rises."""
    current, current_s = start, start_survival
    steps = 0
    while time.perf_counter() < stop_at:
        sources = {current_s.worst_machine}
        sources.add(_bottleneck_machine(scoring.repaired(current, current_s.worst_machine, stop_at)))
        best: tuple[Loads, Survival] | None = None
        for k in _representatives(current, sources):
            for w in _roomiest(current, TARGETS_PER_MOVE):
                if w == current.mach[k] or time.perf_counter() >= stop_at:
                    continue
                trial = current.copy()
                trial.move(int(k), w)
                s = scoring.survival(trial, floor, stop_at, current_s if best is None else best[1])
                if s is not None and _better(s, current_s) and (best is None or _better(s, best[1])):
                    best = (trial, s)
        if best is None:
            break
        current, current_s = best
        steps += 1
    return (current, current_s), steps


def _roomiest(loads: Loads, n: int) -> list[int]:
    """The ``n`` machines whose limit allows the highest rate as they are loaded: where an instance fits best."""
    machines = np.arange(loads.problem.n_machines)
    rates = loads._machine_rates(loads.a, loads.b, loads.n, loads.mem, machines)
    return [int(w) for w in np.argsort(-rates, kind="stable")[:n]]


def _bottleneck_machine(loads: Loads) -> int:
    machines = np.arange(loads.problem.n_machines)
    return int(np.argmin(loads._machine_rates(loads.a, loads.b, loads.n, loads.mem, machines)))


def _representatives(loads: Loads, machines: set[int]) -> list[int]:
    """One instance per (component, machine, is instance 0) on the given machines: the others are alike."""
    return _one_of_each_kind(loads, np.flatnonzero(np.isin(loads.mach, list(machines))))


def _one_of_each_kind(loads: Loads, ks: np.ndarray) -> list[int]:
    """The first of ``ks`` per (component, machine, is instance 0): moving any other of a kind scores the same."""
    seen: set[tuple[int, int, bool]] = set()
    out = []
    for k in ks:
        key = (int(loads.comp[k]), int(loads.mach[k]), bool(loads.inst[k] == 0))
        if key not in seen:
            seen.add(key)
            out.append(int(k))
    return out


# --- with weighted shares -----------------------------------------------------------------------------------------
#
# With ``options.weighted_shares`` the plan runs with the shares ``stream_shares.weighted_score`` chooses for its
# placement, sent to the workers as machine shares (``hetsched.grouping.shares``); nothing sends others after a loss,
# so the weighted groupings keep them, resolved over the repaired placement (``stream_shares.kept_shares``). The
# search and the contingencies score every placement so: its nominal rate with shares chosen for it (two LPs,
# remembered per placement; one where its bound cannot meet the nominal floor), the rate after each loss with its
# machine shares kept (closed forms, no LP).

REPAIR_SHARES_LIMIT = 32
"""With weighted shares, the most ways to re-place one machine's lost instances that are scored with the plan's
shares kept: the best by the even closed form (where the choices are too many to list, the greedy repair's one)."""
EVEN_SEARCH_SHARE = 0.4
"""With weighted shares, the share of the search's time the search without them may use (it makes the survive plan
the answer may not fall below)."""
EVEN_START_KEY = "even_split_placement"
"""A strategy's ``stats`` key for its plan for an even split, made before it chose counts and placement for weighted
shares (``fast``, its step 7): planner.api takes it out of the stats and hands it to :func:`worst_case`, whose search
with shares makes the survive plan from it."""

MachineShares = Mapping[str, Mapping[str, float]]
"""Stream 'from->to' -> machine id -> share of the stream: what ``hetsched.grouping.shares`` holds."""


class KeptShares:
    """Rates of placements after a loss with ``by_machine`` (the plan's machine shares) kept, resolved as the
    weighted groupings resolve them; None (the plan sends no shares): every placement split evenly."""

    def __init__(self, problem: Problem, by_machine: MachineShares | None):
        self.problem = problem
        self.by_machine = by_machine or None
        self.rates: dict[bytes, float] = {}

    def shares(self, placement: Placement) -> ShareArrays | None:
        if self.by_machine is None:
            return None
        return kept_shares(self.problem, placement, self.by_machine) or None

    def rate(self, loads: Loads, mach: np.ndarray) -> float:
        """R_max of ``loads``' instances on ``mach`` (every one placed), the shares kept."""
        key = mach.tobytes()
        found = self.rates.get(key)
        if found is None:
            if self.by_machine is None:
                trial = loads.copy()
                trial.mach = mach.copy()
                trial._sum()
                found = trial.rate()
            else:
                placement = _placement_at(self.problem, loads, mach)
                found = closed_form_rate(self.problem, placement, self.shares(placement))
            self.rates[key] = found
        return found

    def contingency_figures(self, placement: Placement) -> tuple[float, str]:
        """A contingency's rate and bottleneck, the shares kept."""
        return max_rate(self.problem, linear_loads(self.problem, placement, self.shares(placement)))


class SharesScorer:
    """Nominal rates of placements with the shares ``weighted_score`` chooses for them, and those shares by machine,
    remembered over one search: first the shares LP's bound (one LP), the score itself (a second LP) only where the
    bound does not rule it out."""

    def __init__(self, problem: Problem):
        self.first_matters = problem.one_each_shares.first > 0
        """(C,) components fed by a ``global`` stream: only there does instance 0's machine change a rate."""
        self.scored: dict[bytes, tuple[float, MachineShares | None]] = {}
        self.uppers: dict[bytes, float] = {}
        """No shares score the placement above this (``ScoreBound.upper``)."""
        self.pending: dict[bytes, ScoreBound] = {}
        """Bounds whose score is not asked yet."""
        self.solved = 0
        """Placements whose shares LP was solved."""

    def key(self, loads: Loads, mach: np.ndarray) -> bytes:
        """The same for placements that score the same: the instances per component and machine, and where instance
        0 runs for the components a ``global`` stream feeds."""
        problem = loads.problem
        hosts = np.zeros((problem.n_components, problem.n_machines), dtype=np.int64)
        np.add.at(hosts, (loads.comp, mach), 1)
        first = np.full(problem.n_components, -1, dtype=np.int64)
        zero = loads.inst == 0
        first[loads.comp[zero]] = mach[zero]
        return hosts.tobytes() + np.where(self.first_matters, first, -1).tobytes()

    @staticmethod
    def exact_key(loads: Loads, mach: np.ndarray) -> bytes:
        return loads.comp.tobytes() + loads.inst.tobytes() + mach.tobytes()

    def nominal(self, loads: Loads, need: float | None = None) -> tuple[float, MachineShares | None] | None:
        """``loads``' R_max as placed with its shares, and those shares by machine (None: an even split); None where
        no shares can reach ``need``."""
        key = self.key(loads, loads.mach)
        known = self.scored.get(key)
        if known is not None:
            return known
        bound = self.pending.get(key)
        if key not in self.uppers:
            bound = self._bound(loads)
            if bound is None:  # no finite rate with shares: the even closed form's figure
                self.scored[key] = (loads.rate(), None)
                return self.scored[key]
            self.uppers[key] = bound.upper
        if need is not None and self.uppers[key] < need:
            if bound is not None:
                self.pending[key] = bound
            return None
        if bound is None:
            bound = self._bound(loads)
            assert bound is not None
        score = bound.score()
        self.pending.pop(key, None)
        by_machine = None if score.shares is None else shares_by_machine(loads.problem, bound.placement, score.shares)
        self.scored[key] = (score.rate, by_machine)
        return self.scored[key]

    def _bound(self, loads: Loads) -> ScoreBound | None:
        self.solved += 1
        try:
            return ScoreBound.of(loads.problem, placement_of(loads.problem, loads))
        except PlanningError:
            return None


def _placement_at(problem: Problem, loads: Loads, mach: np.ndarray) -> Placement:
    """The placement of ``loads``' instances on ``mach`` (a machine per instance)."""
    out: dict[str, list[str]] = {cid: [""] * int(n) for cid, n in
                                 zip(problem.component_ids, np.bincount(loads.comp, minlength=problem.n_components))}
    for c, i, w in zip(loads.comp, loads.inst, mach):
        out[problem.component_ids[c]][i] = problem.machine_ids[w]
    return out


def _repair_kept(kept: KeptShares, loads: Loads, lost_machine: int, stop_at: float | None = None
                 ) -> tuple[Loads, float]:
    """``lost_machine``'s instances re-placed on the others, nothing else moved, where the rate with the shares kept
    is highest: of every way to place them, the :data:`REPAIR_SHARES_LIMIT` best by the even closed form are scored
    (the greedy repair's way where they are too many to list), the first of the best kept; past ``stop_at`` only the
    even closed form's best. The first scored is :func:`repair_loss`'s way, so the answer is never below it. Without
    shares, :func:`repair_loss`."""
    if kept.by_machine is None:
        repaired, _ = repair_loss(loads, lost_machine)
        return repaired, repaired.rate()
    state = loads.copy()
    lost = np.flatnonzero(state.mach == lost_machine)
    if lost.size == 0:
        return state, kept.rate(state, state.mach)
    survivors = np.flatnonzero(np.arange(state.problem.n_machines) != lost_machine)
    for k in lost:
        state.move(int(k), -1)
    if _n_choices(state, lost, survivors.size) <= REPAIR_EXHAUSTIVE_LIMIT:
        ks, choices = _choices(state, lost, survivors)
        even = _rates_of_choices(state, ks, choices)
        rows = choices[np.argsort(-even, kind="stable")[:REPAIR_SHARES_LIMIT]]
    else:
        greedy, _ = repair_loss(loads, lost_machine)
        ks, rows = lost, greedy.mach[lost][None, :]
    best: tuple[float, np.ndarray] | None = None
    for j, row in enumerate(rows):
        if j and stop_at is not None and time.perf_counter() > stop_at:
            break
        mach = state.mach.copy()
        mach[ks] = row
        rate = kept.rate(state, mach)
        if best is None or rate > best[0] * (1 + RATE_REL_TOL) + 1e-12:
            best = (rate, row)
    assert best is not None
    for k, w in zip(ks, best[1]):
        state.move(int(k), int(w))
    return state, best[0]


def _survival_with_shares(scorer: SharesScorer, loads: Loads, stop_at: float | None = None,
                          beat: Survival | None = None, floor: float | None = None) -> Survival | None:
    """:func:`survival` as the plan runs with weighted shares: the nominal rate with shares chosen for the placement,
    each loss's with them kept. None where ``stop_at`` passed first, where the nominal rate is under ``floor`` (one
    LP where no shares reach it) or where a loss falls under ``beat``'s worst rate (the machines carrying the most
    work are lost first)."""
    problem = loads.problem
    need = None if floor is None else floor * (1 - 2 * RATE_REL_TOL)
    scored = scorer.nominal(loads, need)
    if scored is None or (need is not None and scored[0] < need):
        return None
    nominal, by_machine = scored
    kept = KeptShares(problem, by_machine)
    bar = None if beat is None else beat.worst * (1 - 4 * RATE_REL_TOL)
    rates = np.full(problem.n_machines, nominal)
    used = np.flatnonzero(loads.n > 0)
    for w in used[np.argsort(-loads.a[used], kind="stable")]:
        if stop_at is not None and time.perf_counter() > stop_at:
            return None
        rate = _repair_kept(kept, loads, int(w), stop_at)[1]
        if bar is not None and rate < bar:
            return None
        rates[w] = rate
    return Survival(tuple(float(r) for r in np.sort(rates)), int(np.argmin(rates)), nominal)


def _worst_case_with_shares(problem: Problem, placement: Placement, rule: SurviveLoss, started: float, budget: float,
                            even_start: Placement | None, deadline_at: float | None) -> SearchResult:
    """:func:`worst_case` as the plan runs with weighted shares (:func:`_survival_with_shares`), never below the
    survive plan without them.

    First the search without shares makes the survive plan S (from ``even_start``, the strategy's plan for an even
    split, where it gave one, else from its plan). S served evenly (its plan sent without shares) is the first
    candidate; then the strategy's plan, S and its start are scored with shares, and the placements with each one's
    instance counts are searched: locally from those starts, then all of them where they are few. The nominal floor
    is ``max_nominal_loss`` below the best start's nominal rate and never below S's nominal rate, which S served
    evenly meets: so where that floor admits it, the answer is below S in neither rate, and where S served evenly
    has the best worst case, the answer is S, sent without shares (``stats.survive_loss.served``)."""
    scorer = SharesScorer(problem)
    stop_at = started + budget
    even_start = placement if even_start is None else even_start
    timing: dict = {}
    even = _worst_case_even(problem, even_start, rule, started, started + budget * EVEN_SEARCH_SHARE, timing)
    plan_loads = loads_of(problem, placement)
    clock = time.perf_counter()
    plan_scored = scorer.nominal(plan_loads)
    assert plan_scored is not None  # nothing to reach
    plan_nominal = plan_scored[0]
    reserve = time.perf_counter() - clock + timing["survival_s"]
    if deadline_at is not None:  # left after the search: the plan's scoring and its contingencies
        stop_at = min(stop_at, deadline_at - reserve)
    survive_plan = {"nominal_rate": even.survival.nominal, "worst_case_rate": even.survival.worst,
                    "search": even.stats["search"]}
    starts: list[tuple[Loads, Survival]] = []
    for p in (even.placement, placement, even_start):
        loads = loads_of(problem, p)
        if any(SharesScorer.exact_key(loads, loads.mach) == SharesScorer.exact_key(s, s.mach) for s, _ in starts):
            continue
        clock = time.perf_counter()
        found = _survival_with_shares(scorer, loads, stop_at)
        if found is not None:
            starts.append((loads, found))
            if len(starts) == 1 and deadline_at is not None:  # the contingencies take about one such survival
                stop_at = min(stop_at, deadline_at - reserve - (time.perf_counter() - clock))
    if not starts:  # out of time: the survive plan, served evenly as without shares
        stats = {**even.stats, "plan_nominal_rate": plan_nominal, "plan_worst_case_rate": None,
                 "scored_with": "an even split (the time limit passed before shares)",
                 "served": "evenly (no shares sent)", "survive_plan": survive_plan,
                 "shares_scored": scorer.solved, "stopped_by": "time limit",
                 "search_ms": (time.perf_counter() - started) * 1000.0}
        return SearchResult(even.placement, even.survival, stats, serve_evenly=True)
    plan_survival = next((s for loads, s in starts if SharesScorer.exact_key(loads, loads.mach)
                          == SharesScorer.exact_key(plan_loads, plan_loads.mach)), None)
    reference = max([plan_nominal] + [s.nominal for _, s in starts])
    floor = max(_floor(rule, reference), even.survival.nominal)

    def fits(s: Survival) -> bool:
        return s.nominal >= floor * (1 - RATE_REL_TOL)

    evenly = (loads_of(problem, even.placement), even.survival)
    best: tuple[Loads, Survival] | None = evenly if fits(even.survival) else None
    for loads, s in starts:
        if fits(s) and _better(s, best[1] if best is not None else None):
            best = (loads, s)
    if best is None:  # nothing meets the floor: the survive plan, served evenly
        best = evenly
    steps, complete = 0, True
    groups: dict[bytes, list[tuple[Loads, Survival]]] = {}
    for loads, s in starts:
        groups.setdefault(np.bincount(loads.comp, minlength=problem.n_components).tobytes(), []).append((loads, s))
    # first locally from every start (cheap, most of the gain), then every placement of the counts that have few
    for group in groups.values():
        for loads, s in sorted(group, key=lambda g: (-g[1].worst, -g[1].nominal)):
            (end, end_s), moves = _local_search(SharesSurvival(scorer), loads, s, floor, stop_at)
            steps += moves
            if fits(end_s) and end_s.worst > best[1].worst and not _same(end_s.worst, best[1].worst):
                best = (end, end_s)  # a local search's gain counts where it raises the worst rate
    for group in groups.values():
        start = group[0][0]
        _, per_component = _placements(problem, start)
        if not per_component:
            complete = False
            continue
        order = np.lexsort((start.inst, start.comp))
        seen: set[bytes] = set()
        for choice in itertools.product(*per_component):
            if time.perf_counter() > stop_at:
                complete = False
                break
            trial = start.copy()
            trial.mach[order] = np.concatenate(choice)
            key = scorer.key(trial, trial.mach)
            if key in seen:  # the same placement but for an instance 0 that changes no rate
                continue
            seen.add(key)
            trial._sum()
            found = _survival_with_shares(scorer, trial, stop_at, best[1], floor)
            steps += 1
            if found is not None and fits(found) and _better(found, best[1]):
                best = (trial, found)
    stopped = time.perf_counter() > stop_at
    loads, s = best
    served_evenly = best is evenly
    stats = {"objective": rule.objective, "search": "exhaustive" if complete else "local",
             "steps": steps, "nominal_reference": reference, "nominal_floor": floor,
             "plan_nominal_rate": plan_nominal,
             "plan_worst_case_rate": None if plan_survival is None else plan_survival.worst,
             "worst_case_rate": s.worst, "worst_machine": problem.machine_ids[s.worst_machine],
             "scored_with": "weighted shares",
             "served": "evenly (no shares sent)" if served_evenly else "with the plan's shares",
             "survive_plan": survive_plan,
             "shares_scored": scorer.solved, "stopped_by": "time limit" if stopped else "done",
             "search_ms": (time.perf_counter() - started) * 1000.0}
    return SearchResult(placement_of(problem, loads), s, stats, serve_evenly=served_evenly)


@dataclass(frozen=True)
class SharesSurvival:
    """Every placement scored as it runs with weighted shares (:func:`_survival_with_shares`), repaired with its
    machine shares kept."""

    scorer: SharesScorer

    def repaired(self, loads: Loads, lost_machine: int, stop_at: float) -> Loads:
        scored = self.scorer.nominal(loads)
        assert scored is not None  # nothing to reach
        return _repair_kept(KeptShares(loads.problem, scored[1]), loads, lost_machine, stop_at)[0]

    def survival(self, loads: Loads, floor: float, stop_at: float, beat: Survival) -> Survival | None:
        found = _survival_with_shares(self.scorer, loads, stop_at, beat, floor)
        return found if found is not None and found.nominal >= floor * (1 - RATE_REL_TOL) else None


def _contingency_kept(problem: Problem, kept: KeptShares, loads: Loads, lost_machine: int,
                      move_min_gain: float | None, stop_at: float | None) -> Contingency:
    """:func:`contingency` with every repair and move scored with the shares kept."""
    repaired, _ = _repair_kept(kept, loads, lost_machine, stop_at)
    if move_min_gain is not None:
        movable = np.flatnonzero(loads.mach != lost_machine)
        survivors = np.flatnonzero(np.arange(problem.n_machines) != lost_machine)
        _improve(KeptMoves(kept, stop_at), repaired, movable, survivors, move_min_gain, len(movable))
    moved = np.flatnonzero(repaired.mach != loads.mach)
    rate, bottleneck = kept.contingency_figures(placement_of(problem, repaired))
    return Contingency(
        machine=problem.machine_ids[lost_machine], input_rate=rate, bottleneck=bottleneck,
        lost=int((loads.mach == lost_machine).sum()), moved=int(moved.size),
        moves=[ContingencyMove(component=problem.component_ids[loads.comp[k]], index=int(loads.inst[k]),
                               machine=problem.machine_ids[repaired.mach[k]]) for k in moved])


@dataclass(frozen=True)
class KeptMoves:
    """Placements scored with the plan's machine shares kept (a closed form per target, remembered), none scored
    past ``stop_at``."""

    kept: KeptShares
    stop_at: float | None

    def rate(self, loads: Loads) -> float:
        return self.kept.rate(loads, loads.mach)

    def best_target(self, loads: Loads, k: int, targets: np.ndarray) -> tuple[int, float] | None:
        best: tuple[int, float] | None = None
        for w in targets:
            if self.stop_at is not None and time.perf_counter() > self.stop_at:
                break
            mach = loads.mach.copy()
            mach[k] = w
            r = self.kept.rate(loads, mach)
            if best is None or r > best[1]:
                best = (int(w), r)
        return best
