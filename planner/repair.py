"""Repair a placement after a machine is lost: keep every instance that still runs, place only the rest.

A topology whose machine died still has instances on the surviving machines; moving them restarts
their workers for nothing. A repair keeps them where they are (the fewest changes) and chooses
machines for the lost instances only, maximising the closed-form sustainable input rate R of the
whole placement (planner.simulator). Few lost instances (``machines ** lost`` up to
:data:`EXHAUSTIVE_LIMIT`) are placed by trying every choice; more are placed greedily, one
instance at a time onto its best machine, then improved by moving one lost instance at a time
until no move raises R. Pure: a compiled Problem in, a Placement out.

A topology planned to survive a loss (``options.survive_loss``) keeps that after its repair: the repair plan stores a
contingency per machine it uses (planner.survive), so the next loss has one too. Where the request does not say
(its options name no ``survive_loss``), the rule comes from the plan the topology ran by before the loss
(:func:`repair_options`; the service finds that plan, routers/repairs.py). The contingencies get a share of the
time limit after the repair (:data:`CONTINGENCY_SHARE_OF_LIMIT`); past it the repair is answered without them, never
refused for them: the lost executors wait for the repair, not for its contingencies.
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Iterable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner import survive
from planner.errors import PlanningError
from planner.model import (
    Cluster,
    Contingency,
    Name,
    Placement,
    Plan,
    PlanOptions,
    ProfileEntry,
    ProfileRef,
    SurviveLoss,
    Topology,
)
from planner.problem import Problem, compile_problem
from planner.profiles import ProfileTable
from planner.simulator import evaluate_problem, linear_loads, max_rate
from planner.validation import budgeted, validate

EXHAUSTIVE_LIMIT = 20_000
"""Most placements of the lost instances tried one by one; above it the greedy search runs."""
STRATEGY = "repair"
CONTINGENCY_SHARE_OF_LIMIT = 0.5
"""Share of ``options.time_limit_s``, counted from the repair's start, by which its contingencies must be done; past
it the repair is answered without them (the service kills a computation 1 s after the whole limit)."""
CONTINGENCY_DEFAULT_S = 5.0
"""Seconds the contingencies may take, from the repair's start, without a time limit."""


class KeptInstance(BaseModel):
    """An instance that keeps running where it is: instance ``index`` of ``component`` on ``machine``."""

    model_config = ConfigDict(extra="forbid")
    component: Name
    index: int = Field(ge=0)
    machine: Name


class RepairRequest(BaseModel):
    """``POST /v1/repairs``: every component's instance count fixed (``parallelism``), the instances to keep."""

    model_config = ConfigDict(extra="forbid")
    topology: Topology
    cluster: Cluster
    profiles: ProfileRef
    options: PlanOptions = Field(default_factory=PlanOptions)
    keep: list[KeptInstance] = Field(default_factory=list, max_length=1_000_000,
                                     description="Instances that stay where they run; every other one is placed.")


def _rate(problem: Problem, placement: Placement) -> float:
    return max_rate(problem, linear_loads(problem, placement))[0]


def kept_placement(problem: Problem, keep: Iterable[KeptInstance]) -> tuple[Placement, list[tuple[str, int]]]:
    """The placement with kept instances filled in (others None), and the (component, index) of every lost one."""
    placement: dict[str, list[str | None]] = {}
    for component in problem.components:
        if component.parallelism is None:
            raise PlanningError(f"a repair needs every component's instance count: give {component.id} a parallelism")
        placement[component.id] = [None] * component.parallelism
    for k in keep:
        instances = placement.get(k.component)
        if instances is None:
            raise PlanningError(f"keep names unknown component {k.component}")
        if k.index >= len(instances):
            raise PlanningError(f"keep names instance {k.index} of {k.component}, which has {len(instances)} instances")
        if k.machine not in problem.machine_index:
            raise PlanningError(f"keep puts {k.component} instance {k.index} on machine {k.machine}, "
                                "which is not in the cluster")
        if instances[k.index] is not None:
            raise PlanningError(f"keep names instance {k.index} of {k.component} twice")
        instances[k.index] = k.machine
    lost = [(cid, i) for cid in problem.component_ids for i, m in enumerate(placement[cid]) if m is None]
    return placement, lost  # type: ignore[return-value]


def _with(placement: dict[str, list], lost: list[tuple[str, int]], machines: Iterable[str]) -> Placement:
    filled = {cid: list(ms) for cid, ms in placement.items()}
    for (cid, i), machine in zip(lost, machines):
        filled[cid][i] = machine
    return filled


def repair(problem: Problem, keep: Iterable[KeptInstance], exhaustive_limit: int = EXHAUSTIVE_LIMIT
           ) -> tuple[Placement, dict]:
    """The placement keeping ``keep`` with the highest R found for the lost instances, and how it was found."""
    placement, lost = kept_placement(problem, keep)
    machines = problem.machine_ids
    kept = sum(len(ms) for ms in placement.values()) - len(lost)
    if not lost:
        return _with(placement, [], []), {"kept": kept, "placed": 0, "search": "none"}
    if len(machines) ** len(lost) <= exhaustive_limit:
        best, best_rate = None, -1.0
        for choice in itertools.product(machines, repeat=len(lost)):
            candidate = _with(placement, lost, choice)
            rate = _rate(problem, candidate)
            if rate > best_rate:
                best, best_rate = candidate, rate
        return best, {"kept": kept, "placed": len(lost), "search": "exhaustive"}  # type: ignore[return-value]
    return _greedy(problem, placement, lost), {"kept": kept, "placed": len(lost), "search": "greedy"}


def _greedy(problem: Problem, placement: dict[str, list], lost: list[tuple[str, int]]) -> Placement:
    """Lost instances start on the machine with the most capacity; then each moves to its best machine until none gains."""
    start = problem.machine_ids[int(problem.limit.argmax())]
    choice = [start] * len(lost)
    rate = _rate(problem, _with(placement, lost, choice))
    improved = True
    while improved:
        improved = False
        for k in range(len(lost)):
            for machine in problem.machine_ids:
                if machine == choice[k]:
                    continue
                trial = choice[:k] + [machine] + choice[k + 1:]
                trial_rate = _rate(problem, _with(placement, lost, trial))
                if trial_rate > rate * (1 + 1e-9):
                    choice, rate, improved = trial, trial_rate, True
    return _with(placement, lost, choice)


def make_repair(topology: Topology, cluster: Cluster, entries: Iterable[ProfileEntry], keep: list[KeptInstance],
                options: PlanOptions | None = None, rule_from: str | None = None) -> Plan:
    """Validate, repair and score: a Plan whose ``stats`` say how many instances were kept and placed.

    With ``options.survive_loss`` the plan also stores a contingency per machine it uses, and ``stats.survive_loss``
    says the rule, where it came from (``rule_from``: ``request``, or the plan it was inherited from) and the least
    rate after a loss; where the time does not allow them, ``skipped`` says why and the plan stores none.
    """
    started = time.perf_counter()
    options = options or PlanOptions()
    profiles = ProfileTable.from_entries(entries)
    validate(topology, cluster, profiles, options)
    problem, budget = budgeted(compile_problem(topology, cluster, profiles, options), {k.machine for k in keep})
    placement, stats = repair(problem, keep)
    if budget is not None:
        stats["max_workers"] = budget
    evaluation = evaluate_problem(problem, placement, stats)
    plan = Plan(**evaluation.model_dump(), strategy=STRATEGY)
    if options.survive_loss is not None:
        deadline = started + (CONTINGENCY_DEFAULT_S if options.time_limit_s is None
                              else options.time_limit_s * CONTINGENCY_SHARE_OF_LIMIT)
        plan.contingencies, plan.stats["survive_loss"] = repair_contingencies(
            problem, placement, plan.input_rate, options.survive_loss, rule_from or "request", deadline)
    plan.stats["elapsed_ms"] = (time.perf_counter() - started) * 1000.0
    return plan


def repair_contingencies(problem: Problem, placement: Placement, rate: float, rule: SurviveLoss, rule_from: str,
                         deadline: float) -> tuple[list[Contingency] | None, dict]:
    """The repaired placement's contingency per machine it uses (survivors moved only by ``rule.move_min_gain``), and
    what ``stats.survive_loss`` says of them; no contingencies where one machine is left, or past ``deadline``
    (perf_counter seconds).

    The repair placed its lost instances for the highest rate whatever ``rule.objective`` (a repair moves nothing
    that runs); the rule goes on to the contingencies and, with this plan, to the next repair.
    """
    started = time.perf_counter()
    stats: dict = {"objective": rule.objective, "rule": rule.model_dump(mode="json"), "from": rule_from,
                   "search": "repair"}
    if problem.n_machines < 2:
        stats["skipped"] = "one machine is left, and losing it leaves nowhere to place its instances"
        return None, stats
    loads = survive.loads_of(problem, placement)
    found: list[Contingency] = []
    for w in np.flatnonzero(loads.n > 0):
        if time.perf_counter() > deadline:
            stats["skipped"] = (f"the contingencies were not done within {CONTINGENCY_SHARE_OF_LIMIT:.0%} of the time "
                                f"limit ({len(found)} of {int((loads.n > 0).sum())} machines); the repair is answered "
                                "without them")
            stats["contingencies_ms"] = (time.perf_counter() - started) * 1000.0
            return None, stats
        found.append(survive.contingency(problem, loads, int(w), rule.move_min_gain))
    stats["worst_case_rate"] = survive.worst_after_loss(rate, found, problem.n_machines)
    stats["contingencies_ms"] = (time.perf_counter() - started) * 1000.0
    return found, stats


def survive_rule_of(plan: Plan | None) -> SurviveLoss | None:
    """The ``survive_loss`` a stored plan was made with, as far as it tells: None for a plan without contingencies.

    Every plan records its whole rule (``stats.survive_loss.rule``); a plan stored before plans did records its
    objective only (``stats.survive_loss.objective``), and the defaults stand for the rest (survivors never move).
    """
    if plan is None or plan.contingencies is None:
        return None
    said = plan.stats.get("survive_loss")
    said = said if isinstance(said, dict) else {}
    try:
        if isinstance(said.get("rule"), dict):
            return SurviveLoss.model_validate(said["rule"])
        return SurviveLoss(objective=said.get("objective", "worst_case"))
    except ValidationError:  # a plan stored by another version: its contingencies still say it survived a loss
        return SurviveLoss()


def repair_options(asked: PlanOptions, before: Plan | None) -> tuple[PlanOptions, str | None]:
    """The options a repair runs with, and where their ``survive_loss`` comes from (``request``, ``plan <id>``, or
    None: none).

    A request that names ``survive_loss`` (the plugin sends the topology's ``hetsched.options``), even as null, has
    its way. Otherwise the rule of ``before``, the plan the topology ran by before the loss, is kept, so a topology
    planned to survive a loss survives the next one too. ``weighted_shares`` is not taken from it: a repair's shares
    would reach no worker (the workers read their weights from the topology's conf, which placing executors does not
    change), so a repair is scored with every stream split evenly.
    """
    if "survive_loss" in asked.model_fields_set:
        return asked, "request" if asked.survive_loss is not None else None
    rule = survive_rule_of(before)
    if rule is None or before is None:
        return asked, None
    return asked.model_copy(update={"survive_loss": rule}), f"plan {before.id}"


def repair_json(topology: Topology, cluster: Cluster, entries: list[ProfileEntry], keep: list[KeptInstance],
                options: PlanOptions, rule_from: str | None = None) -> str:
    """``make_repair`` as a planning worker runs it: the plan as JSON."""
    return make_repair(topology, cluster, entries, keep, options, rule_from).model_dump_json()
