"""planner.tenancy: admission by importance and the two share modes, against brute force on small cases."""
from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import linprog

from planner.tenancy import Tenant, allocate, alone_rate, importance_order, leftover_capacity, priority_weight

MACHINES = ("large-1", "medium-1", "small-1")
CAPACITY = {"large-1": 90.0, "medium-1": 90.0, "small-1": 90.0}


def linear(name: str, priority: int = 29, min_rate: float = 0.0, target: float | None = None, arrival: float = 0.0) -> Tenant:
    """A Linear-like placement: 2.67 % of large-1 per tuple/s, less elsewhere, plus fixed costs."""
    return Tenant(name, slope={"large-1": 2.67, "medium-1": 2.4, "small-1": 2.0},
                  fixed={"large-1": 1.0, "medium-1": 0.5, "small-1": 0.5},
                  priority=priority, min_rate=min_rate, target_rate=target, arrival=arrival)


def random_tenants(rng: random.Random, n: int) -> list[Tenant]:
    tenants = []
    for i in range(n):
        used = rng.sample(MACHINES, rng.randint(1, 3))
        tenants.append(Tenant(
            f"t{i}", slope={w: rng.uniform(0.5, 5.0) for w in used}, fixed={w: rng.uniform(0.0, 5.0) for w in used},
            priority=rng.choice([0, 1, 2, 29]), min_rate=rng.choice([0.0, rng.uniform(0, 20)]),
            target_rate=None, arrival=float(i)))
        if rng.random() < 0.5:
            tenants[-1] = replace(tenants[-1], target_rate=tenants[-1].min_rate + rng.uniform(1, 30))
    return tenants


def total_loads(tenants: list[Tenant], rates: dict[str, float]) -> dict[str, float]:
    return {w: sum(t.load(w, rates[t.topology]) for t in tenants if t.topology in rates) for w in MACHINES}


def idle_loads(tenants: list[Tenant], allocation) -> dict[str, float]:
    """The refused tenants' load at rate 0: placed before, they run on idle (their workers cost)."""
    return {w: sum(t.load(w, 0.0) for t in tenants if t.topology in allocation.refused) for w in MACHINES}


def feasible_at_minimums(tenants: list[Tenant]) -> bool:
    loads = total_loads(tenants, {t.topology: t.min_rate for t in tenants})
    return all(loads[w] <= CAPACITY[w] + 1e-9 for w in MACHINES) and all(t.min_rate <= t.rate_cap for t in tenants)


def test_two_linears_share_the_cluster_and_no_machine_is_over_capacity():
    a, b = linear("linear-a", arrival=0), linear("linear-b", arrival=1)
    alone = alone_rate(a, CAPACITY)
    allocation = allocate([a, b], CAPACITY, "weighted")
    assert allocation.refused == {}
    assert allocation.rates["linear-a"] == pytest.approx(allocation.rates["linear-b"])
    assert allocation.rates["linear-a"] < alone
    for w in MACHINES:
        assert sum(allocation.loads[w].values()) <= CAPACITY[w] + 1e-6
    assert sum(allocation.loads["large-1"].values()) == pytest.approx(CAPACITY["large-1"])


def test_a_minimum_that_does_not_fit_is_refused_with_the_rate_that_would():
    first, second = linear("first", min_rate=20, arrival=0), linear("second", min_rate=20, arrival=1)
    allocation = allocate([first, second], CAPACITY)
    assert set(allocation.rates) == {"first"}
    refusal = allocation.refused["second"]
    assert "needs" in refusal.reason and "large-1" in refusal.reason and "1 more important tenant " in refusal.reason
    # large-1: 90 - (1 + 2.67 * 20) - 1 = 35.6 % left for second -> 35.6 / 2.67 tuples/s
    assert refusal.fits_rate == pytest.approx((90 - 1 - 2.67 * 20 - 1) / 2.67, abs=1e-3)
    assert allocate([first, linear("second", min_rate=refusal.fits_rate, arrival=1)], CAPACITY).refused == {}


def test_the_more_important_newcomer_is_admitted_and_the_least_important_refused():
    running = linear("running", priority=29, min_rate=20, arrival=0)
    newcomer = linear("newcomer", priority=0, min_rate=20, arrival=1)
    allocation = allocate([running, newcomer], CAPACITY)
    assert set(allocation.rates) == {"newcomer"} and set(allocation.refused) == {"running"}


def test_minimum_over_its_thread_cap_is_refused_saying_so():
    capped = Tenant("capped", slope={"small-1": 1.0}, min_rate=10, rate_cap=5)
    refusal = allocate([capped], CAPACITY).refused["capped"]
    assert "threads" in refusal.reason and refusal.fits_rate == 5


def test_strict_fills_the_important_level_first_and_weighted_starves_nobody():
    important, other = linear("important", priority=0), linear("other", priority=3, arrival=1)
    strict = allocate([important, other], CAPACITY, "strict")
    assert strict.rates["other"] == pytest.approx(0.0, abs=1e-9)
    assert strict.rates["important"] == pytest.approx(alone_rate(important, {w: c - 1.0 * (w == "large-1") - 0.5 * (w != "large-1") for w, c in CAPACITY.items()}))
    weighted = allocate([important, other], CAPACITY, "weighted")
    assert weighted.rates["other"] > 0
    assert weighted.rates["important"] / weighted.rates["other"] == pytest.approx(priority_weight(0) / priority_weight(3))


def test_shares_are_fractions_of_what_each_wants_and_a_reached_target_frees_the_rest():
    small, big = linear("small", target=5.0), linear("big", arrival=1)
    equal = allocate([small, big], CAPACITY)
    assert equal.rates["small"] / 5.0 == pytest.approx(equal.rates["big"] / alone_rate(big, CAPACITY))
    important_small = allocate([replace(small, priority=0), big], CAPACITY)
    assert important_small.rates["small"] == pytest.approx(5.0)
    assert sum(important_small.loads["large-1"].values()) == pytest.approx(CAPACITY["large-1"])


def test_unknown_mode_and_duplicate_topologies_are_named():
    with pytest.raises(ValueError, match="unknown share mode"):
        allocate([linear("a")], CAPACITY, "fair")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="different topology"):
        allocate([linear("a"), linear("a")], CAPACITY)


def test_leftover_capacity_subtracts_the_others():
    assert leftover_capacity({"m": 90.0, "n": 50.0}, {"m": {"a": 30.0, "b": 70.0}}) == {"m": -10.0, "n": 50.0}


@pytest.mark.parametrize("seed", range(60))
def test_admission_is_the_lexicographically_best_feasible_set(seed: int):
    """Brute force over every subset: the admitted set is the best by importance among the feasible ones."""
    rng = random.Random(seed)
    tenants = random_tenants(rng, rng.randint(1, 5))
    ordered = importance_order(tenants)
    best: tuple[int, ...] | None = None
    for mask in itertools.product((1, 0), repeat=len(ordered)):  # lexicographically best first
        chosen = [t for t, keep in zip(ordered, mask) if keep]
        if feasible_at_minimums(chosen):
            best = mask
            break
    assert best is not None
    allocation = allocate(tenants, CAPACITY)
    assert {t.topology for t, keep in zip(ordered, best) if keep} == set(allocation.rates)


def _normalized(allocation, tenants: list[Tenant]) -> dict[str, float]:
    span = {t.topology: min(alone_rate(t, CAPACITY), t.target_rate or math.inf) - t.min_rate for t in tenants}
    return {name: (rate - next(t for t in tenants if t.topology == name).min_rate) / span[name]
            for name, rate in allocation.rates.items() if span[name] > 1e-9}


@pytest.mark.parametrize("seed", range(60))
def test_weighted_shares_are_feasible_and_max_min_fair_by_weight(seed: int):
    """Against an LP: the smallest weighted share min_i s_i / w_i is as large as any feasible allocation's."""
    rng = random.Random(1000 + seed)
    tenants = random_tenants(rng, rng.randint(1, 4))
    allocation = allocate(tenants, CAPACITY, "weighted")
    admitted = [t for t in tenants if t.topology in allocation.rates]
    loads = total_loads(admitted, allocation.rates)
    assert all(loads[w] <= CAPACITY[w] + 1e-6 for w in MACHINES)
    for t in admitted:
        assert t.min_rate - 1e-9 <= allocation.rates[t.topology] <= (t.target_rate or math.inf) + 1e-9
    shares = _normalized(allocation, admitted)
    growing = [t for t in admitted if t.topology in shares]
    if not growing:
        return
    # LP over (s_1..s_n, z): max z s.t. s_i >= w_i z, s_i <= 1, capacity with every tenant at min + s_i * span_i
    n = len(growing)
    span = [min(alone_rate(t, CAPACITY), t.target_rate or math.inf) - t.min_rate for t in growing]
    a_ub, b_ub = [], []
    for w in MACHINES:
        row = [t.slope.get(w, 0.0) * span[i] for i, t in enumerate(growing)] + [0.0]
        a_ub.append(row)
        b_ub.append(CAPACITY[w] - sum(t.load(w, t.min_rate) for t in admitted) - idle_loads(tenants, allocation)[w])
    for i, t in enumerate(growing):
        row = [0.0] * (n + 1)
        row[i], row[n] = -1.0, priority_weight(t.priority)
        a_ub.append(row)
        b_ub.append(0.0)
    best = linprog(c=[0.0] * n + [-1.0], A_ub=np.array(a_ub), b_ub=b_ub, bounds=[(0, 1)] * n + [(0, None)], method="highs")
    if best.status == 2:  # the refused tenants' idle workers leave less than the minimums: nobody grows
        assert all(shares[t.topology] <= 1e-9 for t in growing)
        return
    assert best.status == 0
    smallest = min(min(1.0, best.x[n] * priority_weight(t.priority)) / priority_weight(t.priority) for t in growing)
    ours = min(shares[t.topology] / priority_weight(t.priority) for t in growing)
    assert ours >= min(smallest, min(1 / priority_weight(t.priority) for t in growing)) - 1e-6


@pytest.mark.parametrize("seed", range(40))
def test_every_unfinished_share_is_stopped_by_a_full_machine(seed: int):
    """Pareto: a tenant below its top has a machine at capacity (else filling would have gone on)."""
    rng = random.Random(2000 + seed)
    tenants = random_tenants(rng, rng.randint(1, 4))
    for mode in ("weighted", "strict"):
        allocation = allocate(tenants, CAPACITY, mode)
        admitted = [t for t in tenants if t.topology in allocation.rates]
        loads = total_loads(admitted, allocation.rates)
        loads = {w: loads[w] + idle_loads(tenants, allocation)[w] for w in MACHINES}
        for name, s in _normalized(allocation, admitted).items():
            if s < 1 - 1e-6:
                t = next(t for t in admitted if t.topology == name)
                assert any(t.slope.get(w, 0) > 0 and loads[w] >= CAPACITY[w] - 1e-5 for w in MACHINES), (mode, name)


def test_a_refused_tenant_s_idle_workers_still_cost_their_machines():
    """Refused after it was placed, a tenant runs on at rate 0 (nothing evicts it): its fixed load stays."""
    running = linear("running", priority=29, min_rate=20, arrival=0)
    newcomer = linear("newcomer", priority=0, min_rate=20, arrival=1)
    allocation = allocate([running, newcomer], CAPACITY)
    alone = allocate([newcomer], CAPACITY)
    assert allocation.loads["large-1"]["running"] == pytest.approx(running.load("large-1", 0.0))
    assert allocation.rates["newcomer"] < alone.rates["newcomer"]
    for w, loads in allocation.loads.items():
        assert sum(loads.values()) <= CAPACITY[w] + 1e-6, w
