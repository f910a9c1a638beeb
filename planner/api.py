"""The planner's facade: what the HTTP service and the command line call.

Both calls validate the request first, so every fault reaches the caller as
one PlanningError sentence; every plan is scored by the same simulator.
"""
from __future__ import annotations

import time
from collections.abc import Iterable

from planner import survive
from planner.errors import PlanningError
from planner.model import (
    Cluster,
    Evaluation,
    InstanceAssignment,
    Placement,
    Plan,
    PlanOptions,
    ProfileEntry,
    StreamShares,
    Topology,
)
from planner.problem import Problem, compile_problem
from planner.profiles import ProfileTable
from planner.simulator import evaluate_problem, instance_cpu_pct, linear_loads
from planner.stream_shares import compile_shares, evaluate_weighted, machine_shares
from planner.strategies import DEFAULT_STRATEGY, STRATEGIES
from planner.validation import (
    budgeted,
    validate,
    validate_cluster,
    validate_profiles,
    validate_topology,
)


def make_plan(
    topology: Topology,
    cluster: Cluster,
    entries: Iterable[ProfileEntry],
    strategy: str | None = None,
    options: PlanOptions | None = None,
) -> Plan:
    """Plan instance counts and placement with a strategy (default: the best one), scored by the simulator.

    The plan's ``input_rate`` is the closed-form largest sustainable rate of
    the placement the strategy returns (the strategy's own figure, if it has
    one, is in ``stats``). ``stats.elapsed_ms`` covers validation, strategy and scoring.
    """
    start = time.perf_counter()
    options = options or PlanOptions()
    name = strategy or DEFAULT_STRATEGY
    plan_fn = STRATEGIES.get(name)
    if plan_fn is None:
        raise PlanningError(f"unknown strategy {name}; known strategies: {', '.join(sorted(STRATEGIES))}")
    profiles = ProfileTable.from_entries(entries)
    validate(topology, cluster, profiles, options)
    problem, budget = budgeted(compile_problem(topology, cluster, profiles, options))
    rule = options.survive_loss
    if rule is not None:
        survive.check_request(problem)
    result = plan_fn(problem)
    stats = {"iterations": 0, **result.stats}
    if budget is not None:
        stats["max_workers"] = budget
    even_start = stats.pop(survive.EVEN_START_KEY, None)  # fast's plan for an even split, for the survive search
    placement, found = result.placement, None
    if rule is not None:
        if rule.objective == "worst_case":
            remaining = None if options.time_limit_s is None else max(0.0, options.time_limit_s - (time.perf_counter() - start))
            found = survive.worst_case(problem, placement, rule, remaining, even_start)
            placement = found.placement
        stats["survive_loss"] = {**(found.stats if found is not None else {"objective": rule.objective}),
                                 "rule": rule.model_dump(mode="json")}  # a repair keeps the whole rule
    weighted = options.weighted_shares and not (found is not None and found.serve_evenly)
    evaluation = (evaluate_weighted(problem, placement, stats) if weighted
                  else evaluate_problem(problem, placement, stats))
    plan = Plan(**evaluation.model_dump(), strategy=name)
    if rule is not None:  # a contingency keeps the plan's machine shares: nothing sends others after a loss
        left = None if options.time_limit_s is None else max(0.0, options.time_limit_s - (time.perf_counter() - start))
        plan.contingencies = survive.contingencies(problem, placement, rule.move_min_gain,
                                                   machine_shares(plan) or None, left)
        plan.stats["survive_loss"]["worst_case_rate"] = survive.worst_after_loss(plan.input_rate, plan.contingencies,
                                                                              len(plan.machines))
    plan.stats["elapsed_ms"] = (time.perf_counter() - start) * 1000.0
    return plan


def _compiled(topology: Topology, cluster: Cluster, entries: Iterable[ProfileEntry],
              assignments: Iterable[InstanceAssignment], options: PlanOptions | None) -> tuple[Problem, Placement]:
    """A given placement's request validated and compiled: what scoring it at any rate starts from."""
    options = options or PlanOptions()
    profiles = ProfileTable.from_entries(entries)
    validate_topology(topology)
    validate_cluster(cluster, options)
    validate_profiles(topology, cluster, profiles)
    placement = placement_of(assignments, topology, cluster)
    return compile_problem(topology, cluster, profiles, options), placement


def machine_cpu_at(
    topology: Topology,
    cluster: Cluster,
    entries: Iterable[ProfileEntry],
    assignments: Iterable[InstanceAssignment],
    input_rate: float,
    options: PlanOptions | None = None,
) -> dict[str, float]:
    """Machine id -> the CPU percent the model charges it with the placement fed ``input_rate`` tuples/s.

    The rate need not be sustainable: a measured rate's charges, set against the machine's measured CPU, show
    where the model is off (a machine charged over 100 % ran cheaper than its profiles say). Percent of the
    machine's capacity as the request gives it, so a base load taken off the capacity is not in it.
    """
    problem, placement = _compiled(topology, cluster, entries, assignments, options)
    loads = linear_loads(problem, placement)
    cpu = instance_cpu_pct(loads.a_w, loads.b_w, input_rate)
    return {problem.machine_ids[w]: float(cpu[w]) for w in range(problem.n_machines)}


def placement_of(assignments: Iterable[InstanceAssignment], topology: Topology, cluster: Cluster) -> Placement:
    """Instances in the order given become instance 0, 1, ... of their component."""
    components = {c.id for c in topology.components}
    machines = {m.id for m in cluster.machines}
    placement: Placement = {}
    for a in assignments:
        if a.component not in components:
            raise PlanningError(f"an assignment names unknown component {a.component}")
        if a.machine not in machines:
            raise PlanningError(f"an assignment puts component {a.component} on unknown machine {a.machine}")
        placement.setdefault(a.component, []).append(a.machine)
    for c in topology.components:
        if c.id not in placement:
            raise PlanningError(f"the assignments give component {c.id} no instance")
        if c.parallelism is not None and len(placement[c.id]) != c.parallelism:
            raise PlanningError(
                f"component {c.id} has parallelism {c.parallelism} but the assignments give it {len(placement[c.id])} instances"
            )
    return placement


def evaluate_assignments(
    topology: Topology,
    cluster: Cluster,
    entries: Iterable[ProfileEntry],
    assignments: Iterable[InstanceAssignment],
    options: PlanOptions | None = None,
    shares: Iterable[StreamShares] | None = None,
) -> Evaluation:
    """Score a given placement: its largest sustainable rate (closed form) and the figures at that rate.

    A placement too heavy to run at any rate is answered with ``input_rate`` 0
    and its bottleneck, not an error. ``shares`` split the streams they name as a weighted grouping would; without
    them, ``options.weighted_shares`` chooses shares for the placement.
    """
    start = time.perf_counter()
    problem, placement = _compiled(topology, cluster, entries, assignments, options)
    if shares:
        evaluation = evaluate_problem(problem, placement, None, compile_shares(problem, problem.counts_of(placement), shares))
    elif problem.options.weighted_shares:
        evaluation = evaluate_weighted(problem, placement)
    else:
        evaluation = evaluate_problem(problem, placement)
    evaluation.stats["elapsed_ms"] = (time.perf_counter() - start) * 1000.0
    return evaluation
