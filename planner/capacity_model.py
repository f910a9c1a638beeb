"""The shapes of capacity planning (``POST /v1/capacity``, ``hetsched capacity``): one schema for the API, files and tests.

A request names topologies with the input rate each must sustain, the machine types on offer with a
price per machine, and the machines already owned; the answer is the cheapest set of machines that
sustains every rate with its plan, the one machine to add next, and each topology's rate if a machine
is lost (docs/concepts/capacity.md). Units as in planner.model: rates in tuples/s, CPU in percent of
one machine; prices in whatever currency the caller uses, per machine.
"""
from __future__ import annotations

from pydantic import Field, model_validator

from planner.model import (
    Cluster,
    FiniteFloat,
    Machine,
    MachineType,
    Name,
    NonNegativeFloat,
    Plan,
    PlanOptions,
    PositiveFloat,
    ProfileRef,
    Topology,
    _Model,
)
from planner.tenancy import DEFAULT_PRIORITY


class OfferedType(MachineType):
    """A machine type on offer: the planning fields of a MachineType plus what one more machine of it costs."""

    price: FiniteFloat | None = Field(
        default=None, description="What buying one machine of this type costs (any currency, per machine): 0 or more; "
        "required. Machines already owned cost nothing.")
    available: int | None = Field(
        default=None, ge=0, le=100_000,
        description="The most machines of this type that can be bought (beyond those owned); none: as many as needed.")


class CapacityTopology(_Model):
    """A topology and the input rate it must sustain: ``target_rate``, else ``min_rate`` (as the ledger has them)."""

    topology: Topology
    target_rate: PositiveFloat | None = Field(default=None, description="The input rate to sustain, tuples/s.")
    min_rate: NonNegativeFloat = Field(
        default=0.0, description="Guaranteed input rate, tuples/s: sustained where no target_rate is given, and kept "
        "first (by priority) when a machine is lost.")
    priority: int = Field(default=DEFAULT_PRIORITY, ge=0, le=10_000,
                          description="Storm's topology.priority (0 most important): who keeps its rate when a machine is lost.")

    @model_validator(mode="after")
    def _target_not_below_min(self) -> CapacityTopology:
        if self.target_rate is not None and self.target_rate < self.min_rate:
            raise ValueError(f"target_rate {self.target_rate:g} is below min_rate {self.min_rate:g}")
        return self

    @property
    def required_rate(self) -> float:
        """Tuples/s the machines must sustain: the target, else the minimum."""
        return self.target_rate if self.target_rate is not None else self.min_rate


class CapacityRequest(_Model):
    """``POST /v1/capacity``: what to buy so that every topology sustains its rate on the cluster they share."""

    topologies: list[CapacityTopology] = Field(min_length=1, max_length=100)
    machine_types: list[OfferedType] = Field(min_length=1, max_length=1_000)
    owned: list[Machine] = Field(default_factory=list, max_length=100_000,
                                 description="Machines already owned (free), each of an offered type.")
    profiles: ProfileRef
    strategy: Name | None = Field(
        default=None, description="The strategy that places each candidate set; default: optimal where the request is "
        "small enough for it (exact), else fast.")
    options: PlanOptions = Field(default_factory=PlanOptions)
    lose: list[Name] | None = Field(
        default=None, max_length=1_000,
        description="Machines of the answer whose loss to predict; none: every machine where the answer has at most "
        "16, else the most loaded machine of each type.")
    add_next: bool = Field(default=True, description="Also say which one machine to add next (one plan per offered type).")


class Prediction(_Model):
    """What one set of machines sustains: every figure from a real placement scored by the simulator."""

    scale: float = Field(description="The placement sustains this multiple of every topology's required rate at once (1: exactly).")
    rates: dict[str, float] = Field(description="Topology -> predicted input rate, tuples/s.")
    bottleneck: str | None = Field(description="What limits the rate: a machine id, or 'topology/component:index' at its thread cap.")
    lp_bound_scale: float = Field(description="The fluid LP bound on `scale` for these machines (planner.bounds).")
    lp_gap: float = Field(description="1 - scale / lp_bound_scale: how far the placement may be from the best one.")
    placement_proven: bool = Field(description="The placement is the best one for these machines (an exact strategy proved it).")


class Purchase(Prediction):
    """The cheapest set of machines found that sustains every required rate."""

    buy: dict[str, int] = Field(description="Machine type -> machines to buy.")
    cost: float = Field(description="The price of the machines to buy.")
    cost_lower_bound: float = Field(description="No set of machines costs less and sustains the rates (the MILP on the fluid bound).")
    proven: bool = Field(description="No cheaper set sustains the rates: the cost meets its lower bound, or every "
                         "cheaper set was refuted by the fluid bound or an exact placement.")
    cluster: Cluster = Field(description="The owned machines and those to buy (named <type>-<n>).")
    plan: Plan = Field(description="The placement of every topology together; component ids are 'topology/component'.")


class Addition(Prediction):
    """One more machine of a type added to the purchase's cluster, and what it gains."""

    machine_type: str
    price: float
    gain: float = Field(description="scale gained over the purchase's plan (never below 0: that plan still runs).")


class Loss(Prediction):
    """One machine of the purchase's cluster lost: the rest planned again, shared as the ledger shares them."""

    machine: str
    machine_type: str
    refused: dict[str, str] = Field(default_factory=dict,
                                    description="Topology -> why its minimum rate no longer fits (its rate is then 0).")


class CapacityAnswer(_Model):
    purchase: Purchase
    add_next: list[Addition] = Field(default_factory=list, description="One per offered type that can be bought, the largest gain first.")
    losses: list[Loss] = Field(default_factory=list)
    stats: dict = Field(default_factory=dict)
