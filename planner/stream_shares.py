"""Weighted shares: how much of a stream each instance of its receiver takes (docs/concepts/model.md, "Weighted shares").

Storm's shuffle and fields groupings give every instance of a component an equal part of a stream; the plugin jar's
weighted groupings give each the part a plan names. This module checks shares a caller gives, chooses shares for a
placement, and turns a plan's shares into what the groupings read (``hetsched.grouping.shares``). Pure.

Choosing shares for a fixed placement and instance counts is a linear program, exact where no profile entry has a
remote cost: with ``y[c, w]`` the tuples/s of c's weighted input its instances on machine w take (split evenly
between them) every machine's and thread's load is linear in (R, y), and R is maximised. Remote costs are left out of
it (what crosses machines is a product of shares and rates); the chosen shares are scored with them, and kept only
where the closed form confirms they beat an even split, so a plan with weighted shares never scores below the same
placement without them.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from planner.errors import PlanningError
from planner.linear_model import LinearModel
from planner.model import Evaluation, Placement, StreamShares
from planner.problem import SPLIT, Problem
from planner.simulator import RATE_REL_TOL, ShareArrays, evaluate_problem, linear_loads

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
    streams = weightable_streams(problem)
    if not streams:
        return None
    comp, inst, mach = problem.placement_arrays(placement)
    counts = problem.counts_of(placement)
    weighted = {s: np.full(int(counts[problem.stream_target[s]]), 1.0 / counts[problem.stream_target[s]]) for s in streams}
    base = linear_rates_without(problem, placement, weighted)  # per unit R, the weighted streams left out
    output = problem.component_rates(counts) * problem.output_per_input
    weighted_input = np.zeros(problem.n_components)
    for s in streams:
        weighted_input[problem.stream_target[s]] += output[problem.stream_source[s]]
    mtype = problem.machine_type[mach]
    cost = problem.cost[comp, mtype]
    met = problem.met[comp, mtype]
    thread_limit = problem.thread_limit[mtype]

    def build() -> tuple[LinearModel, int, dict[tuple[int, int], int]]:
        model = LinearModel()
        rate = model.var()
        y: dict[tuple[int, int], int] = {}
        for c in np.flatnonzero(weighted_input > 0):
            for w in np.unique(mach[comp == c]):
                y[int(c), int(w)] = model.var()
            model.row({**{y[int(c), int(w)]: 1.0 for w in np.unique(mach[comp == c])}, rate: -weighted_input[c]}, 0.0, 0.0)
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

    model, rate, y = build()
    model.objective[rate] = -1.0
    result = model.solve()
    if result.status != 0 or not np.isfinite(result.fun) or -result.fun <= 0:
        return None
    best = float(-result.fun)
    # Second pass: R at its best, the shares as near an even split as that allows (sum of |y - even|).
    model, rate, y = build()
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
    for s in streams:
        c = int(problem.stream_target[s])
        share = np.zeros(int(counts[c]))
        receivers = np.flatnonzero(comp == c)
        for i in receivers:
            key = (c, int(mach[i]))
            per_machine = result.x[y[key]] / (weighted_input[c] * best * (1.0 - 1e-9))
            share[inst[i]] = per_machine / np.sum((comp == c) & (mach == mach[i]))
        shares[s] = np.clip(share, 0.0, None) / max(np.clip(share, 0.0, None).sum(), 1e-300)
    return shares, best


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


def evaluate_weighted(problem: Problem, placement: Placement, stats: dict | None = None) -> Evaluation:
    """The placement scored with the shares ``choose_shares`` finds where they beat an even split, else evenly.

    ``stats.weighted_shares`` says which: ``even_rate`` (the same placement split evenly), ``lp_rate`` (the LP's R,
    remote costs left out) and ``chosen``.
    """
    even = evaluate_problem(problem, placement, stats)
    found = choose_shares(problem, placement)
    report: dict = {"even_rate": even.input_rate, "chosen": False}
    if found is not None:
        shares, lp_rate = found
        report["lp_rate"] = lp_rate
        weighted = evaluate_problem(problem, placement, stats, shares)
        if weighted.input_rate > even.input_rate * (1.0 + RATE_REL_TOL):
            weighted.stats["weighted_shares"] = {**report, "chosen": True}
            return weighted
    even.stats["weighted_shares"] = report
    return even


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


def instance_shares(evaluation: Evaluation) -> dict[tuple[str, int], dict[str, float]]:
    """(component, index) -> stream -> the share of that stream the instance takes; empty without shares."""
    result: dict[tuple[str, int], dict[str, float]] = {}
    for entry in evaluation.shares or []:
        target = entry.stream.split("->", 1)[1]
        for index, share in enumerate(entry.shares):
            result.setdefault((target, index), {})[entry.stream] = share
    return result
