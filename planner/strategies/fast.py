"""The ``fast`` strategy: plan on machine types with a small LP, round to instances, then polish with the closed form.

Why it is fast: machines of one type are interchangeable in the model, so the
hard part (how much of each component each type should carry) is a linear
program over (component x machine type) flows, whose size does not grow with
the number of machines. Why it is good: that LP is the fluid optimum; what is
left is rounding to equal-sized instances, which a local search on the
closed-form ``R_max`` (planner.simulator) repairs.

1. Fluid LP: maximise R subject to every component's flow ``beta_c * R``
   being spread over the types, each type's total load (per-tuple cost plus
   the MET of the instances the flow needs) within its machines' capacity.
   With each type's largest possible instance size this is an upper bound on
   R (``stats["fluid_bound"]``) when no component has fixed parallelism.
2. Instance size: all instances of a component get the same share (shuffle
   splits evenly), so one size per component must fit the thread cap of every
   type it runs on: the largest that fits the types its LP flow uses, then a
   coordinate search over the other types' sizes re-solves the LP with the MET
   each choice really costs. Smaller limits (1/2, 1/4, 1/8 of a machine) are
   tried as well: big instances pay the MET less often, small ones pack better.
3. Packing, for each size choice: at a target rate, the instances are spread
   over the machines of each type as the LP flows say, biggest first onto the
   least loaded machines; a bisection on the target keeps the packing with the
   highest closed-form rate.
4. Polish: while it helps, add an instance of a component on the bottleneck,
   or move or swap one off the bottleneck machine, whichever raises the
   closed-form R_max most; on a plateau (several machines tied) take the move
   that relieves the bottleneck without making a new one. Where the bottleneck
   is the thread cap of an instance 0 that a ``global`` stream feeds whole,
   first move that instance to the type where R rises most (searched with and
   without this move; the better end is kept). Every step is
   checked with the exact closed form, so R_max never goes down; the best
   placement seen is returned. On small requests every packing is polished.

Components fed by an ``all`` grouping or by ``global`` streams only keep one
instance (more would only add load, or get nothing); components without cost
(system components) one instance on the least loaded machine; fixed
parallelism is kept and only placed. On small requests the local search also
starts from the ``paper`` plan, so ``fast`` never ends below it there.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from planner.errors import PlanningError, PlanningTimeout
from planner.model import Cluster, PlanOptions, Topology
from planner.problem import Problem
from planner.profiles import ProfileTable
from planner.strategies import Deadline, StrategyResult

SIZE_DIVISORS = (1, 2, 4, 8)
"""Instance size limits tried: at most the thread cap and 1/d of a machine. Big instances pay the MET
less often, small ones pack better; each is packed and scored, and the best is polished."""

POLISH_WORK = 2_000_000
"""Local search budget in (component x machine) array cells: each step costs about that many; at least MIN_POLISH_STEPS steps."""

MIN_POLISH_STEPS = 100

POLISH_ALL_MAX_CELLS = 500
"""Up to this many (component x machine) cells every candidate packing is polished, not only the best."""

PACKING_STEPS = 7
"""Bisection steps on the packing target rate between PACKING_LOW and 1 times the LP rate (0.3 % apart at the end)."""

PACKING_LOW = 0.8

REL = 1e-9
"""Relative slack under which two rates count as equal."""


class _Types:
    """Per machine type arrays of a problem, restricted to the types that have machines."""

    def __init__(self, problem: Problem):
        self.used = np.unique(problem.machine_type)
        self.machines = [np.flatnonzero(problem.machine_type == t) for t in self.used]
        self.count = np.array([len(m) for m in self.machines], dtype=float)
        self.limit = np.array([problem.limit[m[0]] for m in self.machines])
        self.thread = problem.thread_limit[self.used]
        self.cost = problem.cost[:, self.used]  # (C, T) percent per tuple/s
        self.met = problem.met[:, self.used]
        self.max_size = self.size_cap(1)  # (C, T) largest tuples/s one instance can take on each type; < 0: cannot run there

    def size_cap(self, divisor: int) -> np.ndarray:
        """Largest tuples/s of one instance on each type if it may use at most 1/divisor of a machine (and its thread cap)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.minimum(self.thread, self.limit / divisor)[None, :] - self.met
            return np.where(self.cost > 0, room / self.cost, np.where(room >= 0, np.inf, -1.0))


def _fluid_lp(types: _Types, beta: np.ndarray, active: np.ndarray, size: np.ndarray,
              rate_cap: float = np.inf) -> tuple[float, np.ndarray] | None:
    """Max R (at most ``rate_cap``) and flows f[c, t] (tuples/s) with instances of ``size[c, t]`` tuples/s; None if infeasible.

    ``size`` <= 0 forbids a type for a component; inf means its MET is paid once (ignored here).
    """
    comps = np.flatnonzero(active)
    n_c, n_t = len(comps), len(types.used)
    if n_c == 0:
        return None
    n_var = n_c * n_t + 1
    objective = np.zeros(n_var)
    objective[-1] = -1.0
    a_eq = np.zeros((n_c, n_var))
    a_ub = np.zeros((n_t, n_var))
    bounds = []
    for k, c in enumerate(comps):
        a_eq[k, k * n_t:(k + 1) * n_t] = 1.0
        a_eq[k, -1] = -beta[c]
        for t in range(n_t):
            ok = size[c, t] > 0
            bounds.append((0.0, None if ok else 0.0))
            if ok:
                overhead = 0.0 if np.isinf(size[c, t]) else types.met[c, t] / size[c, t]
                a_ub[t, k * n_t + t] = types.cost[c, t] + overhead
    bounds.append((0.0, None if np.isinf(rate_cap) else rate_cap))
    b_ub = types.limit * types.count
    result = linprog(objective, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=np.zeros(n_c), bounds=bounds, method="highs")
    if result.status == 3:
        raise PlanningError(
            "the input rate is unbounded: no machine's load grows with the input rate (every component costs e = 0 per tuple)"
        )
    if result.status != 0:
        return None
    flows = np.zeros_like(types.cost)
    flows[comps] = result.x[:-1].reshape(n_c, n_t)
    return float(result.x[-1]), flows


def _largest_remainder(weights: np.ndarray, total: int) -> np.ndarray:
    """Integers proportional to ``weights`` summing to ``total``."""
    if total <= 0 or weights.sum() <= 0:
        out = np.zeros(len(weights), dtype=np.int64)
        if total > 0:
            out[int(np.argmax(weights))] = total
        return out
    exact = weights / weights.sum() * total
    out = np.floor(exact).astype(np.int64)
    short = total - int(out.sum())
    if short > 0:
        out[np.argsort(-(exact - out), kind="stable")[:short]] += 1
    return out


class _Polisher:
    """Closed-form R_max of an instance-count matrix H (components x machines) and the local search on it."""

    def __init__(self, problem: Problem, hosts: np.ndarray, first_machine: np.ndarray, free: np.ndarray):
        self.p = problem
        self.H = hosts
        self.g = first_machine  # machine of instance 0 per component
        self.free = free  # components whose instance count may grow
        self.move_first = True  # may move a component's instance 0 off a thread cap (see _move_first_instance)
        self.first = problem.shares(np.ones(problem.n_components, dtype=np.int64))[2]
        self.coef = problem.cost[:, problem.machine_type]
        self.met = problem.met[:, problem.machine_type]
        self.L = problem.limit
        self.TL = problem.thread_limit[problem.machine_type]
        with np.errstate(divide="ignore", invalid="ignore"):
            room = self.TL[None, :] - self.met
            # tau[c, w]: tuples/s one instance of c can take on w before its thread cap (inf: no cap or no cost).
            self.tau = np.where(self.coef > 0, room / self.coef, np.where(room >= 0, np.inf, -1.0))

    def rates(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        split, each, first = self.p.shares(counts)
        return split / np.maximum(counts, 1) + each, first

    def loads(self, H: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        u, first = self.rates(counts)
        a = np.einsum("cm,cm,c->m", self.coef, H, u)
        has_first = np.flatnonzero(first > 0)
        np.add.at(a, self.g[has_first], self.coef[has_first, self.g[has_first]] * first[has_first])
        b = np.einsum("cm,cm->m", self.met, H)
        return a, b, u, first

    @staticmethod
    def machine_limits(L: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            r = (L - b) / a
        return np.where(a > 0, r, np.where(b <= L + 1e-9, np.inf, -1.0))

    def thread_limits(self, H: np.ndarray, u: np.ndarray, first: np.ndarray) -> np.ndarray:
        """Per component: the largest R before one of its instances reaches its thread cap."""
        hosted = H > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(hosted, self.tau, np.inf).min(axis=1) / u
            per = np.where(u > 0, per, np.inf)
            c = np.arange(len(u))
            zero = self.tau[c, self.g] / (u + first)
            per = np.where(first > 0, np.minimum(per, zero), per)
        return per

    def exact(self, H: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        counts = H.sum(axis=1)
        a, b, u, first = self.loads(H, counts)
        r = self.machine_limits(self.L, a, b)
        th = self.thread_limits(H, u, first)
        return float(min(r.min(), th.min())), r, th, a, b, u, counts

    def search(self, deadline: Deadline, max_iterations: int) -> tuple[np.ndarray, np.ndarray, int]:
        """Local search from H; returns (best H, its instance-0 machines, iterations)."""
        H = self.H.copy()
        R, r, th, a, b, u, counts = self.exact(H)
        best = (R, H.copy(), self.g.copy())
        iterations = 0
        stall = 0
        stall_limit = self.p.n_machines + self.p.n_components + 10
        budget = max(MIN_POLISH_STEPS, POLISH_WORK // (self.p.n_components * self.p.n_machines))
        max_iterations = min(max_iterations, budget)
        while iterations < max_iterations and stall < stall_limit:
            iterations += 1
            deadline.check(iterations)
            g_before = self.g.copy()
            moved_first = self._move_first_instance(H, R, r, th, counts) if self.move_first else None
            if moved_first is not None:
                trial, self.g = moved_first
            else:
                move = self._best_move(H, R, r, th, a, b, u, counts)
                if move is None:
                    break
                trial = H.copy()
                for c, w, delta in move:
                    trial[c, w] += delta
                lost = trial[np.arange(len(self.g)), self.g] == 0
                self.g[lost] = np.argmax(trial[lost] > 0, axis=1)
            R_new, r_new, th_new, a_new, b_new, u_new, counts_new = self.exact(trial)
            if R_new < R * (1 - REL):
                self.g = g_before
                break
            H, r, th, a, b, u, counts = trial, r_new, th_new, a_new, b_new, u_new, counts_new
            if R_new > best[0] * (1 + REL):
                best = (R_new, H.copy(), self.g.copy())
                stall = 0
            else:
                stall += 1
            R = R_new
        return best[1], best[2], iterations

    def _move_first_instance(self, H, R, r, th, counts) -> tuple[np.ndarray, np.ndarray] | None:
        """When R is held by the thread cap of a component's instance 0 (the one a ``global`` stream feeds
        whole), that instance moved to the least loaded machine of the type where R rises most: (H, g), else None.

        Adding instances never relieves it, and the moves of ``_best_move`` keep instance 0 where it is.
        """
        c = int(np.argmin(th))
        if not th[c] < r.min() or self.rates(counts)[1][c] <= 0:
            return None
        here = self.g[c]
        best: tuple[float, np.ndarray, np.ndarray] | None = None
        for t in np.unique(self.p.machine_type):
            machines = np.flatnonzero(self.p.machine_type == t)
            m = int(machines[np.argmax(r[machines])])
            if m == here or self.tau[c, m] <= self.tau[c, here]:
                continue
            trial = H.copy()
            trial[c, here] -= 1
            trial[c, m] += 1
            g = self.g.copy()
            g[c] = m
            R_new = _rate_of(self, trial, g)
            if R_new > R * (1 + REL) and (best is None or R_new > best[0]):
                best = (R_new, trial, g)
        return None if best is None else (best[1], best[2])

    def _best_move(self, H, R, r, th, a, b, u, counts) -> list[tuple[int, int, int]] | None:
        """The change [(component, machine, +1/-1), ...] that raises R the most, else a plateau move, else None.

        Candidates: one more instance of a component on the bottleneck (anywhere);
        one instance moved off the bottleneck machine (anywhere); one swapped
        with an instance of another component on another machine.

        A plateau move keeps R, strictly relieves the bottleneck and does not
        make its destination a new bottleneck, so a run of them ends.
        """
        p = self.p
        M = p.n_machines
        idx = np.arange(M)
        choice = _MoveChoice(R)
        bottleneck_machine = int(np.argmin(r))
        thread_bound = th.min() < r.min()
        bottleneck_comp = int(np.argmin(th)) if thread_bound else -1
        order = np.argsort(r, kind="stable")[:3]
        smallest = [r[order[k]] if k < len(order) else np.inf for k in range(3)]
        split, each, _ = p.shares(counts)
        for c in range(p.n_components):
            th_others = np.delete(th, c).min() if len(th) > 1 else np.inf
            if self.free[c] and u[c] > 0 and (bottleneck_comp == c or H[c, bottleneck_machine] > 0):
                # one more instance of c: every instance of c gets a smaller share
                u_new = split[c] / (counts[c] + 1) + each[c]
                a_resplit = a - self.coef[c] * H[c] * (u[c] - u_new)
                r_resplit = self.machine_limits(self.L, a_resplit, b)
                two = np.argsort(r_resplit, kind="stable")[:2]
                others = np.where(idx == two[0], r_resplit[two[1]] if M > 1 else np.inf, r_resplit[two[0]])
                r_dst = self.machine_limits(self.L, a_resplit + self.coef[c] * u_new, b + self.met[c])
                with np.errstate(divide="ignore", invalid="ignore"):
                    th_c = np.minimum(np.where(H[c] > 0, self.tau[c], np.inf).min(), self.tau[c]) / u_new
                new_rate = np.minimum.reduce([others, r_dst, th_c, np.full(M, th_others)])
                if bottleneck_comp == c:
                    relieved = th_c
                else:
                    relieved = np.where(idx == bottleneck_machine, r_dst, r_resplit[bottleneck_machine])
                choice.offer(lambda m, c=c: [(c, m, 1)], new_rate, r_dst, relieved, extra_met=True)
            w = bottleneck_machine
            if thread_bound or H[c, w] == 0 or u[c] == 0:
                continue
            # one instance of c off the bottleneck machine w
            r_src = self.machine_limits(self.L[w:w + 1], a[w:w + 1] - self.coef[c, w] * u[c], b[w:w + 1] - self.met[c, w])[0]
            r_dst = self.machine_limits(self.L, a + self.coef[c] * u[c], b + self.met[c])
            rest = _min_excluding(order, smallest, w, idx)
            hosted = H[c] > 0
            if H[c, w] == 1:
                hosted = hosted.copy()
                hosted[w] = False
            with np.errstate(divide="ignore", invalid="ignore"):
                th_c = np.minimum(np.where(hosted, self.tau[c], np.inf).min(), self.tau[c]) / u[c]
            th_dst = th_c
            new_rate = np.minimum.reduce([rest, np.full(M, r_src), r_dst, th_c, np.full(M, th_others)])
            new_rate[w] = -np.inf
            choice.offer(lambda m, c=c, w=w: [(c, w, -1), (c, m, 1)], new_rate, r_dst, np.full(M, r_src))
            # swap it with one instance of another component on another machine
            for c2 in range(p.n_components):
                if c2 == c or u[c2] == 0 or not (H[c2] > 0).any():
                    continue
                a_src = a[w] - self.coef[c, w] * u[c] + self.coef[c2, w] * u[c2]
                b_src = b[w] - self.met[c, w] + self.met[c2, w]
                r_src2 = self.machine_limits(self.L[w:w + 1], np.array([a_src]), np.array([b_src]))[0]
                r_dst2 = self.machine_limits(
                    self.L, a + self.coef[c] * u[c] - self.coef[c2] * u[c2], b + self.met[c] - self.met[c2]
                )
                with np.errstate(divide="ignore", invalid="ignore"):
                    th_c2 = min(np.where(H[c2] > 0, self.tau[c2], np.inf).min(), self.tau[c2, w]) / u[c2]
                th_rest = np.delete(th, [c, c2]).min() if len(th) > 2 else np.inf
                new_rate = np.minimum.reduce([rest, np.full(M, r_src2), r_dst2, th_dst, np.full(M, min(th_c2, th_rest))])
                new_rate[(H[c2] == 0) | (idx == w)] = -np.inf
                choice.offer(lambda m, c=c, c2=c2, w=w: [(c, w, -1), (c, m, 1), (c2, m, -1), (c2, w, 1)],
                             new_rate, r_dst2, np.full(M, r_src2))
        return choice.best()


def _min_excluding(order: np.ndarray, smallest: list[float], w: int, idx: np.ndarray) -> np.ndarray:
    """For every machine m: the least limit over machines other than w and m (from the three smallest)."""
    rest = [s for o, s in zip(order, smallest) if o != w] + [np.inf, np.inf]
    rest_idx = [o for o in order if o != w] + [-1, -1]
    return np.where(idx == rest_idx[0], rest[1], rest[0])


class _MoveChoice:
    """Keeps the best strict improvement and the best plateau move offered."""

    def __init__(self, rate: float):
        self.rate = rate
        self.strict: tuple[float, list] | None = None
        self.plateau: tuple[float, list] | None = None

    def offer(self, change, new_rate: np.ndarray, dst_limit: np.ndarray, relieved: np.ndarray, extra_met: bool = False) -> None:
        """``change(m)``: the change list with destination machine m; the arrays are per destination."""
        m = int(np.argmax(new_rate))
        if new_rate[m] > self.rate * (1 + REL):
            if self.strict is None or new_rate[m] > self.strict[0]:
                self.strict = (float(new_rate[m]), change(m))
            return
        ok = (new_rate >= self.rate * (1 - REL)) & (dst_limit > self.rate * (1 + 1e-7)) & (relieved > self.rate * (1 + REL))
        if ok.any():
            score = np.where(ok, relieved, -np.inf)
            m = int(np.argmax(score))
            key = float(score[m]) * (1 - 1e-12 if extra_met else 1.0)  # on a tie prefer no extra MET
            if self.plateau is None or key > self.plateau[0]:
                self.plateau = (key, change(m))

    def best(self) -> list | None:
        if self.strict is not None:
            return self.strict[1]
        return None if self.plateau is None else self.plateau[1]


def _pack(problem: Problem, types: _Types, beta: np.ndarray, flows: np.ndarray, size: np.ndarray,
          rate: float, fixed_one: np.ndarray) -> tuple[np.ndarray, bool]:
    """Instances for input rate ``rate`` (tuples/s), placed type by type as the LP flows say, least loaded machine first.

    Returns (instances per component and machine, whether some instance had to overload a machine).
    """
    C, M = problem.n_components, problem.n_machines
    counts = np.ones(C, dtype=np.int64)
    for c in range(C):
        if problem.fixed[c]:
            counts[c] = problem.fixed[c]
        elif not fixed_one[c] and beta[c] > 0 and np.isfinite(size[c]).any() and (size[c] > 0).any():
            x = size[c][size[c] > 0].min()
            counts[c] = max(1, int(np.ceil(beta[c] * rate / x - 1e-9)))
    per_instance = beta * rate / counts
    inst_load = types.cost * per_instance[:, None] + types.met  # (C, T) percent
    allowed = inst_load <= np.minimum(types.thread, types.limit)[None, :] + 1e-9
    H = np.zeros((C, M), dtype=np.int64)
    load = np.zeros(M)
    limit_m = problem.limit
    overflow = False
    difficulty = np.where(allowed, inst_load / types.limit[None, :], np.inf).min(axis=1)
    for c in np.argsort(-np.where(np.isfinite(difficulty), difficulty, 0.0), kind="stable"):
        weights = np.where(allowed[c], flows[c], 0.0)
        if weights.sum() <= 0:
            weights = np.where(allowed[c], types.limit * types.count, 0.0)
        quota = _largest_remainder(weights, int(counts[c]))
        left = int(counts[c])
        for t in np.argsort(-quota, kind="stable"):
            k = min(int(quota[t]), left)
            machines = types.machines[t]
            while k > 0:
                room = machines[load[machines] + inst_load[c, t] <= types.limit[t] + 1e-9]
                if room.size == 0:
                    break
                take = min(k, room.size)
                pick = room if take == room.size else room[np.argpartition(load[room], take - 1)[:take]]
                H[c, pick] += 1
                load[pick] += inst_load[c, t]
                k -= take
                left -= take
        if left > 0:
            # what the quotas could not take: wherever it fills a machine least, overloading only if it must
            cand_t = np.flatnonzero(allowed[c]) if allowed[c].any() else np.arange(len(types.used))
            machines = np.concatenate([types.machines[t] for t in cand_t])
            item = np.concatenate([np.full(len(types.machines[t]), inst_load[c, t]) for t in cand_t])
            while left > 0:
                frac = (load[machines] + item) / limit_m[machines]
                fits = frac <= 1 + 1e-9
                pool = np.flatnonzero(fits) if fits.any() else np.arange(len(machines))
                overflow |= not fits.any()
                take = min(left, pool.size)
                pick = pool if take == pool.size else pool[np.argpartition(frac[pool], take - 1)[:take]]
                H[c, machines[pick]] += 1
                load[machines[pick]] += item[pick]
                left -= take
    return H, overflow


def _sizes(types: _Types, fixed_count: np.ndarray, beta: np.ndarray, choice: np.ndarray, rate: float) -> np.ndarray:
    """Instance size (tuples/s) of every component on every type at input rate ``rate``; -1 where it cannot run.

    A free component has its chosen size on every type whose cap allows it; one
    with a fixed count (``fixed_count`` > 0) has ``beta * rate / count``.
    """
    sizes = np.where(types.max_size >= choice[:, None] * (1 - 1e-9), choice[:, None], -1.0)
    for c in np.flatnonzero(fixed_count > 0):
        x = beta[c] * rate / fixed_count[c]
        sizes[c] = np.where(types.max_size[c] >= x, max(x, 1e-300), -1.0)
    return sizes


def _pack_best(problem, types, beta, flows, lp_rate, sizes_at, fixed_one, first, polisher) -> tuple[float, np.ndarray]:
    """The packing with the highest closed-form rate over a bisection on the target rate (see ``_pack``)."""
    packed: tuple[float, np.ndarray] | None = None
    low, high = PACKING_LOW * lp_rate, lp_rate
    target = high
    for _ in range(PACKING_STEPS):
        H, overflow = _pack(problem, types, beta, flows * (target / lp_rate), sizes_at(target), target, fixed_one)
        polisher.g = _first_instances(H, first, polisher)
        rate = polisher.exact(H)[0]
        if packed is None or rate > packed[0]:
            packed = (rate, H)
        if not overflow:
            if target == high:
                break
            low = target
        else:
            high = target
        target = 0.5 * (low + high)
    return packed


def _rate_of(polisher: "_Polisher", H: np.ndarray, g: np.ndarray) -> float:
    saved = polisher.g
    polisher.g = g
    try:
        return polisher.exact(H)[0]
    finally:
        polisher.g = saved


def _paper_start(problem: Problem, polisher: "_Polisher", deadline: Deadline) -> list[tuple]:
    """The paper strategy's placement as a starting point [(rate, label, -, instances, instance-0 machines)], or none if it fails."""
    from planner.strategies.paper import first_assignment, maximize_throughput

    options = problem.options
    try:
        state, _, _, _ = maximize_throughput(first_assignment(problem, options.initial_rate), options.initial_rate, deadline)
    except PlanningTimeout:
        raise
    except PlanningError:
        return []
    H = state.hosts.copy()
    polisher.g = np.array([ms[0] for ms in state.machines_of], dtype=np.int64)
    return [(polisher.exact(H)[0], "paper", 0.0, H, polisher.g.copy())]


def _first_instances(H: np.ndarray, first: np.ndarray, polisher: "_Polisher") -> np.ndarray:
    """Machine of instance 0 per component: where a ``global`` stream lands, the host whose thread takes the most
    tuples/s; else the first host."""
    g = np.argmax(H > 0, axis=1)
    for c in np.flatnonzero(first > 0):
        hosts = np.flatnonzero(H[c])
        g[c] = hosts[int(np.argmax(polisher.tau[c, hosts]))]
    return g


def plan(topology: Topology, cluster: Cluster, profiles: ProfileTable, options: PlanOptions) -> StrategyResult:
    problem = Problem.build(topology, cluster, profiles, options)
    deadline = Deadline("fast", options.time_limit_s)
    types = _Types(problem)
    ones = np.ones(problem.n_components, dtype=np.int64)
    split, each, first = problem.shares(ones)
    beta = split + each + first
    # one instance where more would not help: fed by an ``all`` grouping, or by ``global`` streams only
    fixed_one = ((each > 0) | ((split == 0) & (first > 0))) & (problem.fixed == 0)
    fixed_count = np.where(problem.fixed > 0, problem.fixed, np.where(fixed_one, 1, 0))
    has_cost = (types.cost > 0).any(axis=1)
    active = has_cost & (beta > 0)
    if not active.any():
        raise PlanningError(
            "the input rate is unbounded: no machine's load grows with the input rate (every component costs e = 0 per tuple)"
        )

    # An instance that alone takes a stream (fixed count, ``global`` to instance 0) caps R by its best type.
    best_size = types.max_size.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        caps = [fixed_count[c] * best_size[c] / beta[c] for c in np.flatnonzero((fixed_count > 0) & (beta > 0))]
        caps += [best_size[c] / first[c] for c in np.flatnonzero(first > 0)]
    rate_cap = min(caps, default=np.inf)

    # 1. Fluid bound with each type's largest instance size.
    fluid = _fluid_lp(types, beta, active, types.max_size, rate_cap)
    if fluid is None:
        raise PlanningError("the cluster cannot carry the topology at any input rate: the fixed costs (MET) exceed the machines")
    bound, flows = fluid
    lp_solves = 1

    # 2-3. For each instance size limit: one size per component (the largest that fits every type its LP
    # flow uses), the LP again with the MET that size costs, then the best packing by bisection on the rate.
    free = (problem.fixed == 0) & ~fixed_one
    polisher = _Polisher(problem, np.zeros((problem.n_components, problem.n_machines), dtype=np.int64),
                         np.zeros(problem.n_components, dtype=np.int64), free)
    candidates = []
    choices_tried: list[np.ndarray] = []
    for divisor in SIZE_DIVISORS:
        cap = np.where(types.max_size > 0, types.size_cap(divisor), -1.0)
        capped = _fluid_lp(types, beta, active, cap, rate_cap)
        lp_solves += 1
        if capped is None:
            continue
        choice = np.array([
            cap[c][capped[1][c] > 1e-9 * max(capped[1][c].max(), 1e-300)].min()
            if capped[1][c].sum() > 0 and cap[c].max() > 0 else np.inf
            for c in range(problem.n_components)
        ])
        choice = np.where(fixed_one, np.inf, choice)
        sized = _fluid_lp(types, beta, active, _sizes(types, fixed_count, beta, choice, capped[0]), rate_cap)
        lp_solves += 1
        # for the largest sizes, a coordinate search: each component may take another type's size limit
        # (and leave the types it exceeds); the smaller limits only try finer packing
        for c in np.flatnonzero(active & (fixed_count == 0)) if divisor == SIZE_DIVISORS[0] else ():
            for size in np.unique(cap[c][cap[c] > 0]):
                if np.isclose(size, choice[c]):
                    continue
                trial = choice.copy()
                trial[c] = size
                result = _fluid_lp(types, beta, active, _sizes(types, fixed_count, beta, trial, capped[0]), rate_cap)
                lp_solves += 1
                if result is not None and (sized is None or result[0] > sized[0] * (1 + 1e-9)):
                    sized, choice = result, trial
        if sized is None or sized[0] <= 0 or any(np.array_equal(choice, seen) for seen in choices_tried):
            continue
        choices_tried.append(choice)
        lp_rate, flows = sized
        rate, H = _pack_best(problem, types, beta, flows, lp_rate,
                             lambda r, choice=choice: _sizes(types, fixed_count, beta, choice, r), fixed_one, first, polisher)
        candidates.append((rate, divisor, lp_rate, H, _first_instances(H, first, polisher)))
        deadline.check(0)
    if not candidates:
        raise PlanningError("the cluster cannot carry the topology at any input rate: the fixed costs (MET) exceed the machines")
    # 4. Local search on the closed form: from the best packing, or, where the search is cheap, from each
    # packing and from the paper plan.
    candidates.sort(key=lambda cand: -cand[0])
    if problem.n_components * problem.n_machines > POLISH_ALL_MAX_CELLS:
        candidates = candidates[:1]
    else:
        candidates += _paper_start(problem, polisher, deadline)
    # Where a ``global`` stream feeds an instance 0, search with and without moving it: either path can end higher.
    first_moves = (True, False) if (first > 0).any() else (False,)
    iterations = 0
    best_plan = None
    for start_rate, divisor, lp_rate, start, g in candidates:
        for move_first in first_moves:
            polisher.H = start
            polisher.g = g.copy()
            polisher.move_first = move_first
            H, first_machine, steps = polisher.search(deadline, options.max_iterations)
            iterations += steps
            rate = _rate_of(polisher, H, first_machine)
            if best_plan is None or rate > best_plan[0] * (1 + REL):
                best_plan = (rate, H, first_machine, start_rate, divisor, lp_rate)
    _, H, first_machine, start_rate, divisor, lp_rate = best_plan

    ids = problem.machine_ids
    placement: dict[str, list[str]] = {}
    for c, cid in enumerate(problem.component_ids):
        machines = [first_machine[c]] + [w for w in np.flatnonzero(H[c]) for _ in range(int(H[c, w]) - (1 if w == first_machine[c] else 0))]
        placement[cid] = [ids[w] for w in machines]
    bound_valid = not (problem.fixed > 0).any() and not problem.has_all_grouping
    stats = {
        "iterations": iterations,
        "lp_solves": lp_solves,
        "lp_rate": lp_rate,
        "start": "paper plan" if divisor == "paper" else f"packing, instances at most 1/{divisor} machine",
        "rounded_rate": start_rate,
    }
    if bound_valid:
        stats["fluid_bound"] = bound
    return StrategyResult(placement=placement, stats=stats)
