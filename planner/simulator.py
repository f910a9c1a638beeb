"""The simulator: scores any placement with the same closed form (docs/concepts/model.md, "Load and constraints").

For a fixed placement every load is linear in the input rate R: machine w
carries ``U_w(R) = a_w * R + b_w`` and instance i uses ``a_i * R + b_i``. So
the largest sustainable rate is

    R_max = min( min_w (cap_w * u_max - b_w) / a_w ,  min_i (thread_cap_i * u_max - b_i) / a_i )

with the thread cap ``100 / cores`` where a type declares cores. No search. Tuples that cross workers add
their CPU to ``a_w`` (``remote_loads``: the expected share of each stream that leaves or reaches a machine,
docs/concepts/model.md "Remote tuples"), not to the thread cap.

This module is the one place that computes loads and rates: the strategies
(also the incremental ones, on a (component x machine) instance-count matrix),
validation and the service call it, and ``LOAD_SLACK_PCT`` is the one
tolerance under which a load counts as within its limit.

Edge cases, decided here:
- A placement whose fixed costs (MET) alone overload a machine or thread
  sustains no rate: R_max = 0, reported with its bottleneck and
  ``stats["feasible"] = False``, not an error, so baselines can be compared.
- If no load grows with R (every placed instance has e = 0) the rate is
  unbounded: PlanningError, since no finite figure would be honest.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import overload

import numpy as np

from planner.errors import PlanningError
from planner.model import (
    Assignment,
    Cluster,
    Evaluation,
    MachineLoad,
    Placement,
    PlanOptions,
    ProfileEntry,
    StreamShares,
    Topology,
)
from planner.problem import ALL, GLOBAL, SPLIT, Problem
from planner.profiles import ProfileTable

LOAD_SLACK_PCT = 1e-9
"""CPU percent by which a load may exceed its limit and still count as within it (floating point noise)."""

RATE_REL_TOL = 1e-9
"""Relative difference under which two input rates count as equal."""

MEMORY_SLACK_MB = 1e-6
"""MB by which a machine's memory may exceed its limit and still count as within it (floating point noise)."""

ShareArrays = dict[int, np.ndarray]
"""Weighted shares as the closed form reads them: stream index -> (N,) share of the stream each instance of its
receiver takes (planner.stream_shares compiles and checks them); a stream not in it is split evenly."""


def weighted_rate_change(problem: Problem, counts: np.ndarray, comp: np.ndarray, inst: np.ndarray,
                         shares: ShareArrays) -> np.ndarray:
    """(I,) input per unit R each instance gains (or loses) by the weighted shares, against an even split."""
    change = np.zeros(len(comp))
    output = problem.component_rates(counts) * problem.output_per_input
    for s, share in shares.items():
        receivers = comp == problem.stream_target[s]
        change[receivers] += output[problem.stream_source[s]] * (share[inst[receivers]] - 1.0 / counts[problem.stream_target[s]])
    return change


def memory_over(problem: Problem, used_mb: np.ndarray) -> np.ndarray:
    """(M,) bool: machines whose memory use exceeds what they hold (memory is a hard limit: no rate fixes it)."""
    return used_mb > problem.memory_limit + MEMORY_SLACK_MB


def memory_report(problem: Problem, used_mb: np.ndarray) -> dict:
    """What ``stats["memory"]`` says: machines over their memory, machines where memory binds, the tightest one.

    Memory binds on a machine when one more instance of some component (``no_room_for``) would not fit there.
    """
    limited = np.flatnonzero(np.isfinite(problem.memory_limit))
    free = problem.memory_limit - used_mb
    needs = np.flatnonzero(problem.memory > 0)

    def row(w: int) -> dict:
        return {"machine": problem.machine_ids[w], "used_mb": float(used_mb[w]),
                "capacity_mb": float(problem.memory_limit[w])}

    over = [row(int(w)) for w in limited if free[w] < -MEMORY_SLACK_MB]
    binding = []
    for w in map(int, limited):
        if free[w] < -MEMORY_SLACK_MB:
            continue
        worker = problem.worker_memory if used_mb[w] == 0 else 0.0
        no_room = [problem.component_ids[c] for c in needs if problem.memory[c] + worker > free[w] + MEMORY_SLACK_MB]
        if no_room:
            binding.append({**row(w), "no_room_for": no_room})
    report: dict = {"over": over, "binding": binding}
    if limited.size:
        report["tightest"] = row(int(limited[np.argmin(free[limited] / problem.memory_limit[limited])]))
    return report


def memory_message(problem: Problem, used_mb: np.ndarray) -> str:
    """One sentence on the machine most over its memory (for a placement that has one)."""
    excess = used_mb - problem.memory_limit
    w = int(np.argmax(excess))
    return (f"machine {problem.machine_ids[w]} would need {used_mb[w]:.0f} MB of memory for the topology "
            f"and holds {problem.memory_limit[w]:.0f} MB ({excess[w]:.0f} MB over)")


@overload
def instance_cpu_pct(cost_pct: float, met_pct: float, input_rate: float) -> float: ...
@overload
def instance_cpu_pct(cost_pct: np.ndarray, met_pct: np.ndarray | float, input_rate: np.ndarray | float) -> np.ndarray: ...
@overload
def instance_cpu_pct(cost_pct: np.ndarray | float, met_pct: np.ndarray | float, input_rate: np.ndarray) -> np.ndarray: ...


def instance_cpu_pct(cost_pct, met_pct, input_rate):
    """CPU percent of one instance fed ``input_rate`` tuples/s: ``cost * rate + MET`` (the paper's TCU).

    ``cost_pct`` is 100 * e (percent per tuple/s), ``met_pct`` its fixed percent; arrays broadcast.
    """
    return cost_pct * input_rate + met_pct


def entry_cpu_pct(entry: ProfileEntry, input_rate: float) -> float:
    """TCU = 100 e IR + MET: CPU percent of one instance of a profiled key fed ``input_rate`` tuples/s."""
    return instance_cpu_pct(100.0 * entry.e, entry.charged_met(), input_rate)


def entry_rate_at_cpu(entry: ProfileEntry, cpu_pct: float) -> float:
    """Tuples/s at which one instance of a profiled key uses ``cpu_pct`` percent (inf where e = 0)."""
    return float(rate_limits(np.array([cpu_pct]), np.array([100.0 * entry.e]), np.array([entry.charged_met()]))[0])


def rate_limits(limit_pct: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Largest R with ``a * R + b <= limit``, elementwise: inf if a = 0 and b fits, -1 if b alone is over.

    The closed form's one formula for where a linear load meets its limit; ``b``
    may exceed the limit by ``LOAD_SLACK_PCT`` and still fit.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (limit_pct - b) / a
    r = np.where(a > 0, r, np.where(b <= limit_pct + LOAD_SLACK_PCT, np.inf, -1.0))
    return np.where(np.isnan(r), np.inf, r)


@overload
def fits_within(load_pct: float, limit_pct: float) -> bool: ...
@overload
def fits_within(load_pct: np.ndarray, limit_pct: np.ndarray | float) -> np.ndarray: ...
@overload
def fits_within(load_pct: np.ndarray | float, limit_pct: np.ndarray) -> np.ndarray: ...


def fits_within(load_pct, limit_pct):
    """Whether each load is within its limit (percent), up to ``LOAD_SLACK_PCT``."""
    return load_pct <= limit_pct + LOAD_SLACK_PCT


@dataclass(frozen=True)
class InstanceRates:
    """Input per unit R of one instance of every component, for given instance counts."""

    each_instance: np.ndarray
    """(C,) what every instance gets: its part of the split input plus the ``all`` input."""
    first_extra: np.ndarray
    """(C,) what instance 0 gets on top (``global`` streams)."""


def instance_rates(problem: Problem, counts: np.ndarray) -> InstanceRates:
    """Per unit R: the input of any instance and the extra of instance 0, per component, at these counts."""
    shares = problem.shares(counts)
    return InstanceRates(shares.split / np.maximum(counts, 1) + shares.each, shares.first)


def hosted_loads(cost_cm: np.ndarray, met_cm: np.ndarray, hosts: np.ndarray, rates: InstanceRates,
                 first_machine: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a_w, b_w) of an instance-count matrix: machine w carries ``a_w * R + b_w`` percent.

    ``cost_cm``/``met_cm`` are (component x machine) costs, ``hosts`` instances of
    c on w, ``first_machine`` the machine of instance 0 of each component (-1: none yet).
    """
    a = np.einsum("cm,cm,c->m", cost_cm, hosts, rates.each_instance)
    with_first = np.flatnonzero((rates.first_extra > 0) & (first_machine >= 0))
    np.add.at(a, first_machine[with_first], cost_cm[with_first, first_machine[with_first]] * rates.first_extra[with_first])
    b = np.einsum("cm,cm->m", met_cm, hosts)
    return a, b


def _crossing(kind: int, here: np.ndarray, count: int, first_here: np.ndarray) -> np.ndarray:
    """Tuples that leave the worker per tuple emitted there, for receivers ``here`` on the sender's machine of
    ``count`` in all (``first_here``: instance 0 of the receiver is there)."""
    if kind == ALL:
        return count - here  # a copy to every instance, those elsewhere cross
    if kind == GLOBAL:
        return 1.0 - first_here
    return 1.0 - here / max(count, 1)  # an even spread over the receiver's instances


def remote_loads(problem: Problem, hosts: np.ndarray, counts: np.ndarray, rates: InstanceRates,
                 first_machine: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(send, receive), each (C, M): percent per unit R that tuples crossing workers cost c's instances on w.

    One worker per machine, so a tuple crosses workers when its receiver instance is on another machine. The
    sender's instances on w emit ``out_w`` per unit R of the stream's ``total``; with the receiver's ``n_w`` of
    ``N`` instances on w, a ``shuffle``-like stream sends ``out_w * (1 - n_w / N)`` of it away (the expected share
    of an even spread) and w's receivers take ``(n_w / N) * (total - out_w)`` from elsewhere; ``all`` sends a copy
    to each of the ``N - n_w`` instances elsewhere; ``global`` crosses unless the receiver's instance 0 is on w.
    Each side is charged at its own entry's ``remote_send`` / ``remote_receive`` on its machine's type.
    """
    send_sm, receive_sm = _remote_terms(problem, hosts, counts, rates, first_machine)
    n_components = hosts.shape[0]
    streams = np.arange(len(problem.stream_source))
    by_source = np.zeros((n_components, len(streams)))
    by_source[problem.stream_source, streams] = 1.0
    by_target = np.zeros_like(by_source)
    by_target[problem.stream_target, streams] = 1.0
    return by_source @ send_sm, by_target @ receive_sm


def remote_machine_load(problem: Problem, hosts: np.ndarray, counts: np.ndarray, rates: InstanceRates,
                        first_machine: np.ndarray) -> np.ndarray:
    """(M,) percent per unit R that tuples crossing workers cost each machine: ``remote_loads`` summed, faster."""
    send_sm, receive_sm = _remote_terms(problem, hosts, counts, rates, first_machine)
    return send_sm.sum(axis=0) + receive_sm.sum(axis=0)


def _remote_terms(problem: Problem, hosts: np.ndarray, counts: np.ndarray, rates: InstanceRates,
                  first_machine: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(S, M) each: what each stream's remote tuples cost its senders and its receivers on each machine."""
    u, d, kind = problem.stream_source, problem.stream_target, problem.stream_kind[:, None]
    if not problem.has_remote_cost:
        zeros = np.zeros((len(u), hosts.shape[1]))
        return zeros, zeros
    columns = np.arange(hosts.shape[1])[None, :]
    out = problem.output_per_input[u, None] * (rates.each_instance[u, None] * hosts[u]
                                               + rates.first_extra[u, None] * (columns == first_machine[u, None]))
    away = out.sum(axis=1, keepdims=True) - out  # what the stream carries from other machines
    here = hosts[d]
    count = np.maximum(counts[d], 1)[:, None]
    first_here = (columns == first_machine[d, None]).astype(float)
    crossing = np.where(kind == ALL, count - here, np.where(kind == GLOBAL, 1.0 - first_here, 1.0 - here / count))
    taken = np.where(kind == ALL, here, np.where(kind == GLOBAL, first_here, here / count)) * away
    mtype = problem.machine_type
    return problem.remote_send[u][:, mtype] * out * crossing, problem.remote_receive[d][:, mtype] * taken


def remote_instance_loads(problem: Problem, comp: np.ndarray, inst: np.ndarray, mach: np.ndarray,
                          rate: np.ndarray, shares: ShareArrays | None = None) -> np.ndarray:
    """(I,) percent per unit R that tuples crossing workers cost each instance (``remote_loads`` per instance).

    A sender instance is charged for its own emits; a receiver instance for what it takes from other machines.
    """
    charged = np.zeros(len(comp))
    if not problem.has_remote_cost:
        return charged
    n_machines = problem.n_machines
    hosts = np.zeros((problem.n_components, n_machines))
    np.add.at(hosts, (comp, mach), 1.0)
    counts = hosts.sum(axis=1)
    first_machine = np.full(problem.n_components, -1)
    first_machine[comp[inst == 0]] = mach[inst == 0]
    mtype = problem.machine_type[mach]
    out = problem.output_per_input[comp] * rate
    for s, (u, d, kind) in enumerate(zip(problem.stream_source, problem.stream_target, problem.stream_kind)):
        senders, receivers = comp == u, comp == d
        share = None if shares is None else shares.get(s)
        out_w = np.bincount(mach[senders], weights=out[senders], minlength=n_machines)
        total = out_w.sum()
        if total <= 0:
            continue
        w = mach[senders]
        if share is not None:  # a weighted stream: what leaves w is what w's receivers do not take
            share_on = np.bincount(mach[receivers], weights=share[inst[receivers]], minlength=n_machines)
            crossing = 1.0 - share_on[w]
        else:
            crossing = _crossing(kind, hosts[d, w], int(counts[d]), (w == first_machine[d]).astype(float))
        charged[senders] += problem.remote_send[u, mtype[senders]] * out[senders] * crossing
        w = mach[receivers]
        away = total - out_w[w]
        if share is not None:
            taken = share[inst[receivers]] * away
        elif kind == SPLIT:
            taken = away / max(int(counts[d]), 1)
        elif kind == ALL:
            taken = away
        else:
            taken = np.where(inst[receivers] == 0, away, 0.0)
        charged[receivers] += problem.remote_receive[d, mtype[receivers]] * taken
    return charged


def thread_room(cost_cm: np.ndarray, met_cm: np.ndarray, thread_limit_m: np.ndarray) -> np.ndarray:
    """(C, M) tuples/s one instance of c can take on w before its thread cap (inf: no cap or no cost; < 0: never fits)."""
    return rate_limits(thread_limit_m[None, :], cost_cm, met_cm)


def threadrate_limits(room_cm: np.ndarray, hosts: np.ndarray, rates: InstanceRates, first_machine: np.ndarray) -> np.ndarray:
    """(C,) per component: the largest R before one of its instances reaches its thread cap."""
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(hosts > 0, room_cm, np.inf).min(axis=1) / rates.each_instance
        per = np.where(rates.each_instance > 0, per, np.inf)
        c = np.arange(len(per))
        zero = room_cm[c, first_machine] / (rates.each_instance + rates.first_extra)
        per = np.where(rates.first_extra > 0, np.minimum(per, zero), per)
    return per


@dataclass(frozen=True)
class HostedRate:
    """The closed form of an instance-count matrix: R_max and the figures a local search reads."""

    rate: float
    """R_max, tuples/s."""
    machine_limits: np.ndarray
    """(M,) the largest R each machine allows."""
    thread_limits: np.ndarray
    """(C,) the largest R each component's instances allow (thread caps)."""
    a: np.ndarray
    b: np.ndarray
    rates: InstanceRates
    counts: np.ndarray


@dataclass(frozen=True)
class HostedModel:
    """A problem's per (component, machine) costs, for scoring instance-count matrices quickly."""

    problem: Problem
    cost: np.ndarray
    """(C, M) percent per tuple/s of an instance of c on w."""
    met: np.ndarray
    """(C, M) fixed percent of an instance of c on w."""
    thread_limit: np.ndarray
    """(M,) thread cap percent of w."""
    thread_room: np.ndarray
    """(C, M) tuples/s an instance of c can take on w before its thread cap."""

    @classmethod
    def of(cls, problem: Problem) -> HostedModel:
        cost = problem.cost[:, problem.machine_type]
        met = problem.met[:, problem.machine_type]
        limit = problem.thread_limit[problem.machine_type]
        return cls(problem, cost, met, limit, thread_room(cost, met, limit))

    def loads(self, hosts: np.ndarray, first_machine: np.ndarray, counts: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, InstanceRates]:
        counts = hosts.sum(axis=1) if counts is None else counts
        rates = instance_rates(self.problem, counts)
        a, b = hosted_loads(self.cost, self.met, hosts, rates, first_machine)
        if self.problem.has_remote_cost:
            a = a + remote_machine_load(self.problem, hosts, counts, rates, first_machine)
        return a, b, rates

    def max_rate(self, hosts: np.ndarray, first_machine: np.ndarray, memory: bool = True) -> HostedRate:
        """R_max of ``hosts`` (instances per component and machine) with instance 0 of c on ``first_machine[c]``.

        A machine over its memory allows no rate (its limit is -1, like a machine its fixed CPU overloads);
        ``memory=False`` scores the CPU alone.
        """
        counts = hosts.sum(axis=1)
        a, b, rates = self.loads(hosts, first_machine, counts)
        machine = rate_limits(self.problem.limit, a, b)
        if memory and self.problem.memory_bound:
            machine = np.where(memory_over(self.problem, self.problem.memory_used(hosts)), -1.0, machine)
        thread = threadrate_limits(self.thread_room, hosts, rates, first_machine)
        return HostedRate(float(min(machine.min(), thread.min())), machine, thread, a, b, rates, counts)


@dataclass(frozen=True)
class LinearLoads:
    """The loads of one placement as linear functions of R (arrays over instances i and machines w)."""

    comp: np.ndarray  # (I,) component index
    inst: np.ndarray  # (I,) instance index within its component
    mach: np.ndarray  # (I,) machine index
    rate: np.ndarray  # (I,) input tuples/s per unit R
    a_i: np.ndarray  # (I,) CPU percent per unit R of the instance's own thread (its profile's e)
    b_i: np.ndarray  # (I,) fixed CPU percent (MET)
    thread_limit_i: np.ndarray  # (I,) inf where unbounded
    a_w: np.ndarray  # (M,)
    b_w: np.ndarray  # (M,)
    counts: np.ndarray  # (C,) instances per component
    memory_w: np.ndarray | None = None  # (M,) MB; None where memory cannot bind (problem.memory_bound)
    remote_i: np.ndarray | None = None  # (I,) CPU percent per unit R of its tuples crossing workers; None: 0

    @property
    def slope_i(self) -> np.ndarray:
        """(I,) all the CPU percent per unit R an instance costs its machine: its own work and its remote tuples."""
        return self.a_i if self.remote_i is None else self.a_i + self.remote_i


def linear_loads(problem: Problem, placement: Placement, weighted: ShareArrays | None = None) -> LinearLoads:
    """Every instance's load and every machine's, as linear functions of R (``weighted``: streams' shares)."""
    comp, inst, mach = problem.placement_arrays(placement)
    counts = problem.counts_of(placement)
    shares = problem.shares(counts)
    rate = shares.split[comp] / counts[comp] + shares.each[comp] + np.where(inst == 0, shares.first[comp], 0.0)
    if weighted:
        rate = rate + weighted_rate_change(problem, counts, comp, inst, weighted)
    mtype = problem.machine_type[mach]
    a_i = problem.cost[comp, mtype] * rate
    b_i = problem.met[comp, mtype]
    m = problem.n_machines
    remote_i = remote_instance_loads(problem, comp, inst, mach, rate, weighted) if problem.has_remote_cost else None
    return LinearLoads(
        comp=comp,
        inst=inst,
        mach=mach,
        rate=rate,
        a_i=a_i,
        b_i=b_i,
        thread_limit_i=problem.thread_limit[mtype],
        a_w=np.bincount(mach, weights=a_i if remote_i is None else a_i + remote_i, minlength=m),
        b_w=np.bincount(mach, weights=b_i, minlength=m),
        counts=counts,
        memory_w=(np.bincount(mach, weights=problem.memory[comp], minlength=m)
                  + problem.worker_memory * (np.bincount(mach, minlength=m) > 0)) if problem.memory_bound else None,
        remote_i=remote_i,
    )


def max_rate(problem: Problem, loads: LinearLoads) -> tuple[float, str]:
    """(R_max in tuples/s, what limits it: a machine id or 'component:index' at its thread cap)."""
    machine_r = rate_limits(problem.limit, loads.a_w, loads.b_w)
    if loads.memory_w is not None:
        machine_r = np.where(memory_over(problem, loads.memory_w), -1.0, machine_r)
    thread_r = rate_limits(loads.thread_limit_i, loads.a_i, loads.b_i)
    w = int(np.argmin(machine_r))
    best, bottleneck = float(machine_r[w]), problem.machine_ids[w]
    if thread_r.size:
        i = int(np.argmin(thread_r))
        if thread_r[i] < best:
            best = float(thread_r[i])
            bottleneck = f"{problem.component_ids[loads.comp[i]]}:{int(loads.inst[i])}"
    if np.isinf(best):
        raise PlanningError(
            "the input rate is unbounded: no machine's load grows with the input rate "
            "(every placed component costs e = 0 per tuple)"
        )
    return max(best, 0.0), bottleneck


def weighted_utilization(problem: Problem, machine_util_pct: np.ndarray) -> float:
    """The paper's eq. 7-8: the mean utilisation per machine type, weighted by how fast each type is.

    ``x_t = sum_j (1/e[j,t]) / sum_k (1/e[j,k])`` over the topology's profile keys j
    and the machine types k that have machines. The literal weights sum to the
    number of keys C, so they are divided by C to keep the figure a percent.
    Utilisation is taken as percent of each machine's capacity. Keys with
    e = 0 on some type carry no speed information and are left out; if none
    is left, the types weigh equally.
    """
    used = np.unique(problem.machine_type)
    keys: dict[str, int] = {}
    for ci, comp in enumerate(problem.components):
        if comp.profile is not None and not comp.is_system:
            keys.setdefault(comp.profile, ci)
    weights = np.zeros(len(problem.type_names))
    n_keys = 0
    for ci in keys.values():
        e = problem.cost[ci, used]
        if np.all(e > 0):
            speed = 1.0 / e
            weights[used] += speed / speed.sum()
            n_keys += 1
    if n_keys == 0:
        weights[used] = 1.0 / len(used)
    else:
        weights /= n_keys
    pct_of_capacity = machine_util_pct / (problem.limit / problem.options.max_utilization) * 100.0
    mean_by_type = np.bincount(problem.machine_type, weights=pct_of_capacity, minlength=len(weights))
    n_by_type = np.bincount(problem.machine_type, minlength=len(weights))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_by_type = np.where(n_by_type > 0, mean_by_type / np.maximum(n_by_type, 1), 0.0)
    return float(np.dot(weights, mean_by_type))


def evaluate_problem(problem: Problem, placement: Placement, stats: dict | None = None,
                     weighted: ShareArrays | None = None) -> Evaluation:
    """Score a placement of a compiled problem (see ``evaluate``), its streams split by ``weighted`` where given."""
    loads = linear_loads(problem, placement, weighted)
    rate, bottleneck = max_rate(problem, loads)
    machine_util = instance_cpu_pct(loads.a_w, loads.b_w, rate)
    instance_cpu = instance_cpu_pct(loads.slope_i, loads.b_i, rate)
    component_ir = problem.component_rates(loads.counts) * rate
    assignments = [
        Assignment(
            component=problem.component_ids[c],
            index=int(i),
            machine=problem.machine_ids[w],
            input_rate=float(r * rate),
            cpu=float(cpu),
        )
        for c, i, w, r, cpu in zip(loads.comp, loads.inst, loads.mach, loads.rate, instance_cpu)
    ]
    assignments.sort(key=lambda a: (problem.component_index[a.component], a.index))
    per_machine = np.bincount(loads.mach, minlength=problem.n_machines)
    memory_w = loads.memory_w
    machines = [
        MachineLoad(
            id=m.id, type=m.type, utilization=float(machine_util[w]), instances=int(per_machine[w]),
            memory_mb=None if memory_w is None else float(memory_w[w]),
            memory_capacity_mb=None if memory_w is None or np.isinf(problem.memory_limit[w])
            else float(problem.memory_limit[w]),
        )
        for w, m in enumerate(problem.cluster.machines)
    ]
    out_stats = dict(stats or {})
    out_stats.setdefault("feasible", bool(rate > 0))
    if memory_w is not None:
        out_stats["memory"] = memory_report(problem, memory_w)
    if loads.remote_i is not None:
        remote_w = np.bincount(loads.mach, weights=loads.remote_i * rate, minlength=problem.n_machines)
        out_stats["remote_cpu"] = {problem.machine_ids[w]: float(remote_w[w]) for w in np.flatnonzero(remote_w > 0)}
    return Evaluation(
        topology=problem.topology.name,
        input_rate=rate,
        total_throughput=float(component_ir.sum()),
        sink_throughput=float(component_ir[problem.is_sink].sum()),
        instances={cid: int(n) for cid, n in zip(problem.component_ids, loads.counts)},
        assignments=assignments,
        machines=machines,
        weighted_utilization=weighted_utilization(problem, machine_util),
        bottleneck=bottleneck,
        stats=out_stats,
        shares=[StreamShares(stream=f"{problem.topology.streams[s].source}->{problem.topology.streams[s].target}",
                             shares=[float(x) for x in share]) for s, share in sorted(weighted.items())]
        if weighted else None,
    )


def evaluate(
    topology: Topology,
    cluster: Cluster,
    profiles: ProfileTable,
    placement: Placement,
    options: PlanOptions | None = None,
) -> Evaluation:
    """The largest sustainable input rate of a placement (closed form) and its figures at that rate.

    Expects a request that passed planner.validation; a placement naming
    unknown components or machines, or missing a component, is a PlanningError.
    """
    problem = Problem.build(topology, cluster, profiles, options or PlanOptions())
    return evaluate_problem(problem, placement)


@dataclass(frozen=True)
class InstanceRateLoad:
    component: str
    index: int
    machine: str
    input_rate: float  # tuples/s
    cpu: float  # percent of the machine
    thread_limit: float | None  # percent, None where the type declares no cores
    over_by: float  # percent above the thread limit, 0 if within


@dataclass(frozen=True)
class MachineRateLoad:
    """One machine's load at a given rate and whether it is over its limit (capacity * u_max)."""

    id: str
    type: str
    utilization: float  # percent of the machine
    limit: float  # percent
    instances: list[InstanceRateLoad] = field(default_factory=list)

    @property
    def over_by(self) -> float:
        """Percent above the machine limit, 0 if within."""
        return max(0.0, self.utilization - self.limit)

    @property
    def threads_over(self) -> list[InstanceRateLoad]:
        return [i for i in self.instances if i.over_by > 0]

    @property
    def overloaded(self) -> bool:
        return self.over_by > 0 or bool(self.threads_over)


def loads_at_problem_rate(problem: Problem, placement: Placement, rate: float,
                          weighted: ShareArrays | None = None) -> list[MachineRateLoad]:
    loads = linear_loads(problem, placement, weighted)
    cpu = instance_cpu_pct(loads.slope_i, loads.b_i, rate)
    thread_cpu = instance_cpu_pct(loads.a_i, loads.b_i, rate)
    per_machine: list[list[InstanceRateLoad]] = [[] for _ in range(problem.n_machines)]
    for k in range(len(cpu)):
        tl = float(loads.thread_limit_i[k])
        per_machine[int(loads.mach[k])].append(
            InstanceRateLoad(
                component=problem.component_ids[loads.comp[k]],
                index=int(loads.inst[k]),
                machine=problem.machine_ids[loads.mach[k]],
                input_rate=float(loads.rate[k] * rate),
                cpu=float(cpu[k]),
                thread_limit=None if np.isinf(tl) else tl,
                over_by=0.0 if np.isinf(tl) else max(0.0, float(thread_cpu[k]) - tl),
            )
        )
    util = instance_cpu_pct(loads.a_w, loads.b_w, rate)
    return [
        MachineRateLoad(id=m.id, type=m.type, utilization=float(util[w]), limit=float(problem.limit[w]), instances=per_machine[w])
        for w, m in enumerate(problem.cluster.machines)
    ]


def loads_at_rate(
    topology: Topology,
    cluster: Cluster,
    profiles: ProfileTable,
    placement: Placement,
    rate: float,
    options: PlanOptions | None = None,
) -> list[MachineRateLoad]:
    """Every machine's load at input rate ``rate`` (tuples/s), with what is over its limit and by how much."""
    problem = Problem.build(topology, cluster, profiles, options or PlanOptions())
    return loads_at_problem_rate(problem, placement, rate)
