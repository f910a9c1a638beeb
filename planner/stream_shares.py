"""Weighted shares: how much of a stream each instance of its receiver takes (docs/concepts/model.md, "Weighted shares").

Storm's shuffle and fields groupings give every instance of a component an equal part of a stream; the plugin jar's
weighted groupings give each the part a plan names. This module checks shares a caller gives, chooses shares for a
placement, and turns a plan's shares into what the groupings read (``hetsched.grouping.shares``). Pure.

Choosing shares for a fixed placement and instance counts is a linear program, exact where no profile entry has a
remote cost: with ``y[c, w]`` the tuples/s of c's weighted input its instances on machine w take (split evenly
between them) every machine's and thread's load is linear in (R, y), and R is maximised. Remote costs are left out of
it (what crosses machines is a product of shares and rates); the chosen shares are scored with them, and kept only
where the closed form confirms they beat an even split, so a plan with weighted shares never scores below the same
placement without them. ``weighted_score`` is that decision for one placement; the ``fast`` strategy scores the
placements it searches with it (planner.strategies.fast.joint_shares), so it chooses counts and placement for the
shares the plan will get.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from planner.errors import PlanningError
from planner.linear_model import LinearModel
from planner.model import Evaluation, Placement, StreamShares
from planner.problem import SPLIT, Problem
from planner.simulator import RATE_REL_TOL, ShareArrays, evaluate_problem, linear_loads, max_rate

WEIGHTABLE_GROUPINGS = frozenset({"shuffle", "fields", "none"})
"""Groupings the plugin jar has a weighted counterpart for: the planner chooses shares for these only."""

SUM_TOLERANCE = 1e-6
"""How far a stream's shares may sum from 1 (rounding in the caller's figures)."""

CONF_KEY = "hetsched.grouping.shares"
"""The topology conf key the weighted groupings read (org.hetsched.storm.grouping.GroupingShares)."""


def stream_name(source: str, target: str) -> str:
    return f"{source}->{target}"


def compile_shares(problem: Problem, counts: np.ndarray, given: Iterable[StreamShares]) -> ShareArrays:
    """Shares a caller gives, checked against the topology and the placement's counts; one sentence per fault."""
    index = {stream_name(s.source, s.target): i for i, s in enumerate(problem.topology.streams)}
    compiled: ShareArrays = {}
    for entry in given:
        s = index.get(entry.stream)
        if s is None:
            raise PlanningError(f"shares name stream {entry.stream}, which the topology does not have "
                                "(name a stream 'from->to')")
        if s in compiled:
            raise PlanningError(f"shares name stream {entry.stream} twice")
        stream = problem.topology.streams[s]
        if problem.stream_kind[s] != SPLIT:
            raise PlanningError(f"stream {entry.stream} is grouped {stream.grouping}, which no share can split: "
                                "only streams that divide their tuples between instances take shares")
        n = int(counts[problem.component_index[stream.target]])
        if len(entry.shares) != n:
            raise PlanningError(f"the shares of stream {entry.stream} name {len(entry.shares)} instances of "
                                f"{stream.target}, which has {n}")
        total = float(sum(entry.shares))
        if abs(total - 1.0) > SUM_TOLERANCE:
            raise PlanningError(f"the shares of stream {entry.stream} sum to {total:g}, not 1")
        compiled[s] = np.array(entry.shares, dtype=float) / total
    return compiled


def weightable_streams(problem: Problem) -> list[int]:
    """Streams the planner may weight: split by a grouping the plugin jar can weight."""
    return [s for s, stream in enumerate(problem.topology.streams) if stream.grouping in WEIGHTABLE_GROUPINGS]


def choose_shares(problem: Problem, placement: Placement) -> tuple[ShareArrays, float] | None:
    """Shares of the weightable streams that maximise R for this placement (the module's LP), and the LP's R.

    Instances of one component on one machine get equal shares, so the groupings can deliver them per machine.
    Of the shares reaching the best R, those closest to an even split are taken (a second LP), so a stream whose
    receivers limit nothing stays even. None where nothing can be weighted or the LP has no finite optimum.
    """
    lp = SharesLP.of(problem, placement)
    if lp is None or lp.rate is None:
        return None
    shares = lp.nearest_even_shares()
    return None if shares is None else (shares, lp.rate)


class SharesLP:
    """The module's LP for one placement: its best R (``rate``, one solve), and on demand the shares reaching it."""

    def __init__(self, problem: Problem, placement: Placement, streams: list[int]):
        self.problem, self.placement, self.streams = problem, placement, streams
        comp, inst, mach = problem.placement_arrays(placement)
        self.comp, self.inst, self.mach = comp, inst, mach
        counts = problem.counts_of(placement)
        self.counts = counts
        even = {s: np.full(int(counts[problem.stream_target[s]]), 1.0 / counts[problem.stream_target[s]])
                for s in streams}
        self.base = linear_rates_without(problem, placement, even)  # per unit R, the weighted streams left out
        output = problem.component_rates(counts) * problem.output_per_input
        self.weighted_input = np.zeros(problem.n_components)
        for s in streams:
            self.weighted_input[problem.stream_target[s]] += output[problem.stream_source[s]]
        model, rate, _ = self._build()
        model.objective[rate] = -1.0
        result = model.solve()
        self.rate: float | None = None
        """The LP's best R, tuples/s; None where it has no finite positive optimum."""
        if result.status == 0 and np.isfinite(result.fun) and -result.fun > 0:
            self.rate = float(-result.fun)

    @classmethod
    def of(cls, problem: Problem, placement: Placement) -> SharesLP | None:
        """The LP of ``placement``; None where no stream can be weighted."""
        streams = weightable_streams(problem)
        return cls(problem, placement, streams) if streams else None

    def _build(self) -> tuple[LinearModel, int, dict[tuple[int, int], int]]:
        problem, comp, mach, base = self.problem, self.comp, self.mach, self.base
        mtype = problem.machine_type[mach]
        cost = problem.cost[comp, mtype]
        met = problem.met[comp, mtype]
        thread_limit = problem.thread_limit[mtype]
        model = LinearModel()
        rate = model.var()
        y: dict[tuple[int, int], int] = {}
        for c in np.flatnonzero(self.weighted_input > 0):
            for w in np.unique(mach[comp == c]):
                y[int(c), int(w)] = model.var()
            model.row({**{y[int(c), int(w)]: 1.0 for w in np.unique(mach[comp == c])},
                       rate: -self.weighted_input[c]}, 0.0, 0.0)
        n_on = {(int(c), int(w)): int(np.sum((comp == c) & (mach == w))) for c, w in y}
        for w in range(problem.n_machines):
            here = mach == w
            if not here.any():
                continue
            coefs: dict[int, float] = {rate: float(np.sum(cost[here] * base[here]))}
            for c in np.unique(comp[here]):
                if (int(c), w) in y:
                    coefs[y[int(c), w]] = float(problem.cost[c, problem.machine_type[w]])
            model.row(coefs, hi=float(problem.limit[w] - np.sum(met[here])))
        for i in np.flatnonzero(np.isfinite(thread_limit)):
            key = (int(comp[i]), int(mach[i]))
            coefs = {rate: float(cost[i] * base[i])}
            if key in y:
                coefs[y[key]] = float(cost[i] / n_on[key])
            model.row(coefs, hi=float(thread_limit[i] - met[i]))
        return model, rate, y

    def nearest_even_shares(self) -> ShareArrays | None:
        """Of the shares reaching ``rate``, those nearest an even split (sum of |y - even|): a second LP."""
        if self.rate is None:
            return None
        problem, comp, inst, mach, counts = self.problem, self.comp, self.inst, self.mach, self.counts
        best, weighted_input = self.rate, self.weighted_input
        model, rate, y = self._build()
        model.lower[rate] = model.upper[rate] = best * (1.0 - 1e-9)
        for (c, w), var in y.items():
            even = weighted_input[c] * best * np.sum((comp == c) & (mach == w)) / counts[c]
            gap = model.var(cost=1.0)
            model.row({var: 1.0, gap: -1.0}, hi=float(even))
            model.row({var: 1.0, gap: 1.0}, lo=float(even))
        result = model.solve()
        if result.status != 0:
            return None
        shares: ShareArrays = {}
        for s in self.streams:
            c = int(problem.stream_target[s])
            share = np.zeros(int(counts[c]))
            receivers = np.flatnonzero(comp == c)
            for i in receivers:
                key = (c, int(mach[i]))
                per_machine = result.x[y[key]] / (weighted_input[c] * best * (1.0 - 1e-9))
                share[inst[i]] = per_machine / np.sum((comp == c) & (mach == mach[i]))
            shares[s] = np.clip(share, 0.0, None) / max(np.clip(share, 0.0, None).sum(), 1e-300)
        return shares


def linear_rates_without(problem: Problem, placement: Placement, even: ShareArrays) -> np.ndarray:
    """(I,) input per unit R of every instance from everything but the streams of ``even`` (split evenly there)."""
    comp, inst, _ = problem.placement_arrays(placement)
    counts = problem.counts_of(placement)
    rate = linear_loads(problem, placement).rate.copy()
    output = problem.component_rates(counts) * problem.output_per_input
    for s, share in even.items():
        receivers = comp == problem.stream_target[s]
        rate[receivers] -= output[problem.stream_source[s]] * share[inst[receivers]]
    return rate


LP_RATE_SLACK = 1e-6
"""Relative margin by which the closed form of the LP's own shares may come out above the LP's R (its R is fixed a
hair under the optimum for the second LP, and solvers round)."""


@dataclass(frozen=True)
class WeightedScore:
    """What ``evaluate_weighted`` makes of a placement: its rate, and the shares that give it (None: even kept)."""

    rate: float
    """The plan's R, tuples/s: with ``shares`` where they beat an even split, else the even split's."""
    even_rate: float
    """R of the same placement split evenly."""
    lp_rate: float | None
    """The shares LP's R (remote costs left out); None where no shares were found."""
    shares: ShareArrays | None


def closed_form_rate(problem: Problem, placement: Placement, weighted: ShareArrays | None = None) -> float:
    """R_max of a placement by the simulator's closed form, its streams split by ``weighted`` where given."""
    return max_rate(problem, linear_loads(problem, placement, weighted))[0]


def weighted_score(problem: Problem, placement: Placement, beat: float | None = None) -> WeightedScore | None:
    """The placement's rate with the shares ``choose_shares`` finds where they beat an even split, else evenly.

    ``beat``: None where the placement cannot score above that rate, found after one LP: any shares' closed-form
    R is at most the LP's (the LP holds every limit, and remote costs only add load), so a search can skip the
    second LP of placements that cannot win.
    """
    bound = ScoreBound.of(problem, placement)
    if beat is not None and bound.upper <= beat * (1.0 + RATE_REL_TOL):
        return None
    return bound.score()


@dataclass(frozen=True)
class ScoreBound:
    """``weighted_score`` in two halves: first the even split's rate and the shares LP's (one LP), which bound what
    any shares score (``upper``); then, on demand, the score itself (the second LP and the closed form)."""

    problem: Problem
    placement: Placement
    even_rate: float
    lp: SharesLP | None

    @classmethod
    def of(cls, problem: Problem, placement: Placement) -> ScoreBound:
        return cls(problem, placement, closed_form_rate(problem, placement), SharesLP.of(problem, placement))

    @property
    def upper(self) -> float:
        """No shares give the placement a higher rate than this (the LP's R, with its rounding margin)."""
        lp_rate = None if self.lp is None else self.lp.rate
        return max(self.even_rate, (lp_rate or 0.0) * (1.0 + LP_RATE_SLACK))

    def score(self) -> WeightedScore:
        problem, placement, even_rate, lp = self.problem, self.placement, self.even_rate, self.lp
        shares = None if lp is None else lp.nearest_even_shares()
        if lp is None or lp.rate is None or shares is None:
            return WeightedScore(even_rate, even_rate, None, None)
        rate = closed_form_rate(problem, placement, shares)
        if rate > even_rate * (1.0 + RATE_REL_TOL):
            return WeightedScore(rate, even_rate, lp.rate, shares)
        return WeightedScore(even_rate, even_rate, lp.rate, None)


def evaluate_weighted(problem: Problem, placement: Placement, stats: dict | None = None) -> Evaluation:
    """The placement scored with the shares ``choose_shares`` finds where they beat an even split, else evenly.

    ``stats.weighted_shares`` says which: ``even_rate`` (the same placement split evenly), ``lp_rate`` (the LP's R,
    remote costs left out) and ``chosen``.
    """
    score = weighted_score(problem, placement)
    assert score is not None  # no rate to beat
    report: dict = {"even_rate": score.even_rate, "chosen": score.shares is not None}
    if score.lp_rate is not None:
        report["lp_rate"] = score.lp_rate
    evaluation = evaluate_problem(problem, placement, stats, score.shares)
    evaluation.stats["weighted_shares"] = report
    return evaluation


def machine_shares(evaluation: Evaluation) -> dict[str, dict[str, float]]:
    """A plan's shares as the weighted groupings read them: stream 'from->to' -> machine id -> share of the stream.

    Instances of one component on one machine take the machine's share evenly, as the groupings split it.
    """
    machine_of: dict[tuple[str, int], str] = {(a.component, a.index): a.machine for a in evaluation.assignments}
    result: dict[str, dict[str, float]] = {}
    for entry in evaluation.shares or []:
        target = entry.stream.split("->", 1)[1]
        per_machine: dict[str, float] = {}
        for index, share in enumerate(entry.shares):
            machine = machine_of[(target, index)]
            per_machine[machine] = per_machine.get(machine, 0.0) + share
        result[entry.stream] = {m: round(v, 6) for m, v in sorted(per_machine.items())}
    return result


def shares_by_machine(problem: Problem, placement: Placement, shares: ShareArrays) -> dict[str, dict[str, float]]:
    """``machine_shares`` of a placement and its shares (by stream index): stream 'from->to' -> machine id -> share,
    unrounded."""
    result: dict[str, dict[str, float]] = {}
    for s, share in shares.items():
        stream = problem.topology.streams[s]
        per_machine: dict[str, float] = {}
        for machine, part in zip(placement[stream.target], share):
            per_machine[machine] = per_machine.get(machine, 0.0) + float(part)
        result[stream_name(stream.source, stream.target)] = dict(sorted(per_machine.items()))
    return result


def task_weights(machines: Sequence[str], per_machine: Mapping[str, float]) -> list[float] | None:
    """Each receiving task's share of one stream, ``machines`` naming each task's machine in task order, as the
    weighted groupings resolve machine shares (org.hetsched.storm.grouping.GroupingShares): a machine's share split
    evenly over the tasks there, a task on a machine the shares do not name the mean weight of the others (never
    zero); None (an even split) where no task runs on a named machine or the named weights sum to 0. Pure."""
    together = Counter(machines)
    weights = [float(per_machine[m]) / together[m] if m in per_machine else None for m in machines]
    named = [w for w in weights if w is not None]
    if not named or sum(named) <= 0:
        return None
    mean = sum(named) / len(named)
    filled = [mean if w is None else w for w in weights]
    total = sum(filled)
    return [w / total for w in filled]


def kept_shares(problem: Problem, placement: Placement, by_machine: Mapping[str, Mapping[str, float]]) -> ShareArrays:
    """Machine shares (``machine_shares``, what ``hetsched.grouping.shares`` holds) resolved over ``placement`` as
    the weighted groupings resolve them (org.hetsched.storm.grouping.GroupingShares): a task's weight is its
    machine's share split evenly over the stream's receiving tasks on that machine, a task on a machine the shares do
    not name gets the mean weight of the others (never zero); a stream none of whose tasks runs on a named machine,
    or whose named weights sum to 0, is split evenly (left out). So after a loss, with the lost machine's tasks
    re-placed and nothing sent, the survivors keep their relative weights. Pure (:func:`task_weights`, as
    bench.placement.placement_shares for a placement Storm reports)."""
    index = {stream_name(s.source, s.target): i for i, s in enumerate(problem.topology.streams)}
    result: ShareArrays = {}
    for stream, per_machine in by_machine.items():
        s = index.get(stream)
        if s is None or problem.stream_kind[s] != SPLIT:
            continue
        weights = task_weights(placement.get(problem.topology.streams[s].target) or [], per_machine)
        if weights is not None:
            result[s] = np.array(weights, dtype=float)
    return result


def instance_shares(evaluation: Evaluation) -> dict[tuple[str, int], dict[str, float]]:
    """(component, index) -> stream -> the share of that stream the instance takes; empty without shares."""
    result: dict[tuple[str, int], dict[str, float]] = {}
    for entry in evaluation.shares or []:
        target = entry.stream.split("->", 1)[1]
        for index, share in enumerate(entry.shares):
            result.setdefault((target, index), {})[entry.stream] = share
    return result
