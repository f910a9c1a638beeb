"""The planning model of docs/concepts/model.md as typed objects.

The same shapes as the HTTP contract (docs/reference/api.md), so one class parses a request
body, a YAML/JSON file and a test fixture. Units: rates in tuples per second,
CPU in percent of one machine (100 = the whole machine), ``e`` in seconds of
the machine's whole CPU per tuple.

Field constraints here catch what is wrong with a single value (negative,
zero, NaN, infinite). Faults that need the whole request (cycles, unknown
components, missing profile pairs) are found by :mod:`planner.validation`.
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1, max_length=200)]

SYSTEM_PREFIX = "__"
"""Components whose id starts with this are Storm system components (``__acker``)."""

Grouping = Literal[
    "shuffle", "local_or_shuffle", "fields", "partial_key", "all", "global", "none", "direct"
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Component(_Model):
    """A spout or bolt of the user topology graph."""

    id: Name
    kind: Literal["spout", "bolt"]
    profile: Name | None = Field(
        default=None,
        description="Profile key (kind of work, e.g. highCompute). Required except for system components (id starting with '__').",
    )
    parallelism: int | None = Field(
        default=None, ge=1, le=100_000,
        description="Fixes the instance count; the planner then only places this component.",
    )
    weight: PositiveFloat | None = Field(
        default=None, description="Spouts only: share of the topology input rate R (default 1)."
    )
    memory_mb: NonNegativeFloat | None = Field(
        default=None,
        description="Memory one instance needs, MB (Storm's topology.component.resources.onheap.memory.mb); none: 0.",
    )

    @property
    def is_system(self) -> bool:
        return self.id.startswith(SYSTEM_PREFIX)

    @property
    def spout_weight(self) -> float:
        return 1.0 if self.weight is None else self.weight


class Stream(_Model):
    """A stream ``from -> to``; every subscriber receives the whole stream."""

    source: Name = Field(alias="from")
    target: Name = Field(alias="to")
    grouping: Grouping = "shuffle"


class Topology(_Model):
    name: Name
    components: list[Component] = Field(min_length=1, max_length=10_000)
    streams: list[Stream] = Field(default_factory=list, max_length=100_000)
    worker_memory_mb: NonNegativeFloat | None = Field(
        default=None,
        description="Memory of the topology's worker JVM itself, MB, charged once on every machine that hosts an "
        "instance of the topology (one worker per machine); none: 0.",
    )
    max_workers: int | None = Field(
        default=None, ge=1, le=100_000,
        description="The topology's worker budget: its plan uses at most this many machines (one worker each), the "
        "ones with the most free capacity for it (Storm's topology.workers packs a topology so); none: every "
        "machine may host one of its workers. Evaluations ignore it.",
    )

    def component(self, component_id: str) -> Component:
        for c in self.components:
            if c.id == component_id:
                return c
        raise KeyError(component_id)


class MachineType(_Model):
    name: Name
    capacity: PositiveFloat = Field(default=100.0, description="CPU capacity in percent (100 = the whole machine).")
    cores: PositiveFloat | None = Field(
        default=None, description="Where declared, one instance (one thread) can use at most 100/cores percent."
    )
    slots: int = Field(default=4, ge=1, le=10_000, description="Storm worker slots.")
    memory_mb: PositiveFloat | None = Field(
        default=None,
        description="Memory a machine of this type holds for workers, MB (Storm's supervisor.memory.capacity.mb): a "
        "hard limit; none: unlimited.",
    )

    @property
    def thread_cap(self) -> float | None:
        """Most CPU percent one instance can use on this type, or None if unbounded."""
        return None if self.cores is None else 100.0 / self.cores


class Machine(_Model):
    id: Name
    type: Name


class Cluster(_Model):
    machine_types: list[MachineType] = Field(min_length=1, max_length=1_000)
    machines: list[Machine] = Field(min_length=1, max_length=100_000)


class ProfileEntry(_Model):
    """The measured cost of one profile key on one machine type: TCU = 100 * e * IR + met."""

    profile: Name
    machine_type: Name
    e: NonNegativeFloat = Field(description="Seconds of the machine's whole CPU per tuple.")
    met: NonNegativeFloat = Field(default=0.0, description="Fixed CPU percent of one running instance.")
    idle_met: NonNegativeFloat = Field(
        default=0.0, le=100.0,
        description="Percent of the machine an instance's executor thread takes with nothing to do on a machine at its "
        "quota (its wait strategy's wake-ups): the least an instance is charged, and all a held spout is; 0: not "
        "measured (docs/concepts/model.md, \"Idle executor threads\").",
    )
    alpha: NonNegativeFloat = Field(default=1.0, description="Output tuples per input tuple.")
    remote_send: NonNegativeFloat = Field(
        default=0.0,
        description="Seconds of the machine's whole CPU per tuple an instance of this key emits to another worker "
        "(serialising and sending it), beyond what a tuple to its own worker costs; 0: not measured.",
    )
    remote_receive: NonNegativeFloat = Field(
        default=0.0,
        description="Seconds of the machine's whole CPU per tuple an instance of this key receives from another "
        "worker (receiving and deserialising it), beyond what a tuple from its own worker costs; 0: not measured.",
    )
    r2: FiniteFloat | None = None
    samples: int | None = Field(default=None, ge=0)
    rate_range: tuple[NonNegativeFloat, NonNegativeFloat] | None = None

    def charged_met(self, held: bool = False) -> float:
        """The fixed percent the model charges an instance: at least its idle thread's; a held spout only that."""
        return self.idle_met if held else max(self.met, self.idle_met)


VersionNumber = Annotated[int, Field(ge=1, le=2**62)]
"""A stored profile set's version: 1, 2, 3, ... per name."""


class ProfileSet(_Model):
    name: Name
    entries: list[ProfileEntry] = Field(min_length=1, max_length=100_000)
    source: dict = Field(default_factory=dict, description="Where the profiles came from (e.g. the aggregation run).")
    version: VersionNumber | None = Field(
        default=None,
        description="The stored version, set by the service (1, 2, 3, ... per name); ignored in a PUT body.",
    )


class StoredProfileSet(ProfileSet):
    """The answer to a PUT of a profile set: the version that holds the body."""

    created: bool = Field(description="True when this PUT added `version`; false when the body equals the newest "
                          "stored version, which is answered instead and nothing is stored.")


class ProfileSetVersion(_Model):
    """One stored version of a profile set, without its entries."""

    version: VersionNumber
    created_at: str = Field(description="When it was stored, ISO 8601 UTC.")
    entry_count: int = Field(ge=0)
    digest: str = Field(description="sha256 of the entries and source: equal digests, equal content.")
    plans: int = Field(ge=0, description="Stored plans made with this version (it cannot be deleted while any are).")


class ProfileSetVersions(_Model):
    name: Name
    versions: list[ProfileSetVersion]


class ProfileVersionRef(_Model):
    """The stored profile set and version a plan was made with."""

    name: Name
    version: VersionNumber


class ProfileRef(_Model):
    """Either the name of a stored ProfileSet (its newest version, or ``version``) or the entries inline."""

    name: Name | None = None
    version: VersionNumber | None = Field(default=None, description="With `name`: this stored version instead of the newest.")
    entries: list[ProfileEntry] | None = Field(default=None, min_length=1, max_length=100_000)

    @model_validator(mode="after")
    def _exactly_one(self) -> ProfileRef:
        if (self.name is None) == (self.entries is None):
            raise ValueError("profiles must give exactly one of 'name' (a stored profile set) or 'entries' (inline)")
        if self.version is not None and self.name is None:
            raise ValueError("profiles.version needs profiles.name: inline entries have no version")
        return self


class SurviveLoss(_Model):
    """Plans that survive the loss of any one machine (docs/concepts/strategies.md, "Surviving a machine loss").

    Asking for it stores a contingency per machine with the plan (``Plan.contingencies``): where that machine's
    instances go when it is lost, computed ahead so the Nimbus plugin applies it without asking the planner.
    """

    objective: Literal["nominal", "worst_case"] = Field(
        default="worst_case",
        description="worst_case: choose the placement whose input rate after the loss of its worst machine (its lost "
        "instances re-placed, the others kept) is highest; nominal: keep the strategy's plan, add its contingencies.",
    )
    max_nominal_loss: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] | None = Field(
        default=None,
        description="worst_case only: the nominal R_max may fall at most this fraction below the nominal optimum "
        "(0.1: keep 90%); none: no limit.",
    )
    move_min_gain: NonNegativeFloat | None = Field(
        default=None,
        description="Contingencies: an executor on a surviving machine is moved only where that raises the rate "
        "after the loss by at least this fraction per executor moved (0.1: 10%); none: survivors never move.",
    )


class PlanOptions(_Model):
    initial_rate: PositiveFloat = Field(default=1.0, description="R0 of FirstAssignment, tuples/s.")
    max_utilization: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = Field(
        default=1.0, description="Headroom factor u_max: a machine may be loaded to capacity * u_max."
    )
    tolerance: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = Field(
        default=1e-3, description="Relative step below which MaximizeThroughput stops."
    )
    max_iterations: int = Field(default=1_000_000, ge=1, le=100_000_000, description="Iteration guard of iterative strategies.")
    reference_machine_type: Name | None = Field(
        default=None, description="resource_aware: the machine type whose profile gives each executor's CPU points (default: the first type)."
    )
    time_limit_s: PositiveFloat | None = Field(default=None, description="Seconds every strategy may compute (optimal stops its exact search then); the service caps it at its --time-limit-s.")
    spouts_held: bool = Field(
        default=False,
        description="Charge spouts no MET: the topology runs free, so at its largest rate every spout is held by "
        "max.spout.pending and never polls idle (docs/concepts/model.md, \"Spouts at the largest rate\"). Default: a spout "
        "is paced and charged its MET, its idle polling.",
    )
    weighted_shares: bool = Field(
        default=False,
        description="Choose, with the placement, the share of each shuffle, fields or none stream every instance of "
        "its receiver takes (the plan's `shares`, delivered by the plugin jar's weighted groupings); default: even "
        "shares, as Storm's groupings split a stream (docs/concepts/model.md, \"Weighted shares\").",
    )
    survive_loss: SurviveLoss | None = Field(
        default=None,
        description="Plan for the loss of any one machine: the objective, and a contingency per machine stored with "
        "the plan (docs/concepts/strategies.md, \"Surviving a machine loss\"); none: neither.",
    )


class TenantSpec(_Model):
    """What a topology asks when it shares the cluster (docs/concepts/model.md, "Many topologies")."""

    priority: int = Field(default=29, ge=0, le=10_000, description="Storm's topology.priority: 0 most important, default 29.")
    min_rate: NonNegativeFloat = Field(default=0.0, description="Guaranteed input rate, tuples/s: refused admission if it does not fit.")
    target_rate: PositiveFloat | None = Field(default=None, description="The input rate it wants at most, tuples/s; none: all it can get.")

    @model_validator(mode="after")
    def _target_not_below_min(self) -> TenantSpec:
        if self.target_rate is not None and self.target_rate < self.min_rate:
            raise ValueError(f"target_rate {self.target_rate:g} is below min_rate {self.min_rate:g}")
        return self


class StreamShares(_Model):
    """The share of one stream each instance of its receiver takes (docs/concepts/model.md, "Weighted shares")."""

    stream: Name = Field(description="The stream as 'from->to' (its sender's and receiver's component ids).")
    shares: list[NonNegativeFloat] = Field(
        min_length=1, max_length=100_000,
        description="The share of the stream instance 0, 1, ... of the receiver takes; they sum to 1.",
    )


class PlanRequest(_Model):
    topology: Topology
    cluster: Cluster
    profiles: ProfileRef
    strategy: Name | None = Field(default=None, description="paper, even, resource_aware, optimal, ...; default: the best the project has.")
    options: PlanOptions = Field(default_factory=PlanOptions)
    plan_id: Name | None = Field(
        default=None,
        description="A stored plan (e.g. the one written in the topology's config): if it fits this request "
        "(same topology, components and instance counts, its machines in the cluster), its placement is re-evaluated "
        "and returned under its id instead of planning afresh.",
    )
    tenant: TenantSpec | None = Field(
        default=None,
        description="The topology shares the cluster: planned on what the other registered tenants leave, admitted "
        "only if its min_rate fits, and registered in the ledger (GET /v1/ledger).",
    )


class InstanceAssignment(_Model):
    """An EvaluationRequest's placement of one instance."""

    component: Name
    machine: Name


class EvaluationRequest(_Model):
    topology: Topology
    cluster: Cluster
    profiles: ProfileRef
    options: PlanOptions = Field(default_factory=PlanOptions)
    assignments: list[InstanceAssignment] = Field(min_length=1, max_length=1_000_000)
    shares: list[StreamShares] | None = Field(
        default=None,
        description="Per stream, the share each instance of its receiver takes (a weighted grouping); streams not "
        "named, and none at all, are split evenly as Storm's groupings split them.",
    )


class Assignment(_Model):
    component: str
    index: int = Field(ge=0)
    machine: str
    input_rate: float = Field(description="Tuples/s this instance receives at the plan's input rate.")
    cpu: float = Field(description="Predicted CPU percent of this instance on its machine.")


class MachineLoad(_Model):
    id: str
    type: str
    utilization: float = Field(description="Predicted CPU percent of the machine at the plan's input rate.")
    instances: int
    memory_mb: float | None = Field(
        default=None, description="Memory the topology takes on the machine, MB (instances plus its worker); "
        "absent when the request declares no memory."
    )
    memory_capacity_mb: float | None = Field(
        default=None, description="The machine type's memory_mb; absent where unlimited."
    )


class Evaluation(_Model):
    """The simulator's figures for one placement."""

    topology: str
    input_rate: float = Field(description="R, the largest sustainable topology input rate, tuples/s.")
    total_throughput: float = Field(description="Sum of IR_c over all components (the paper's figure).")
    sink_throughput: float = Field(description="Sum of IR_c over components without output streams.")
    instances: dict[str, int]
    assignments: list[Assignment]
    machines: list[MachineLoad]
    weighted_utilization: float = Field(description="The paper's eq. 7-8, percent.")
    bottleneck: str | None = Field(default=None, description="What limits R: a machine id or 'component:instance' at its thread cap.")
    stats: dict = Field(default_factory=dict)
    shares: list[StreamShares] | None = Field(
        default=None,
        description="Per weighted stream, the share each instance of its receiver takes; absent: every stream is "
        "split evenly (Storm's groupings).",
    )


class ContingencyMove(_Model):
    """One instance a contingency moves: instance ``index`` of ``component`` goes to ``machine``."""

    component: str
    index: int = Field(ge=0)
    machine: str


class Contingency(_Model):
    """What to do when ``machine`` is lost: the instances to move, computed ahead, and the rate predicted after."""

    machine: str = Field(description="The machine whose loss this contingency answers.")
    input_rate: float = Field(description="R_max predicted after the loss with the moves applied, tuples/s.")
    bottleneck: str | None = Field(default=None, description="What limits R after the loss.")
    lost: int = Field(ge=0, description="Instances that ran on the machine (each moves).")
    moved: int = Field(ge=0, description="Executors moved in all: the lost ones plus survivors moved for rate.")
    moves: list[ContingencyMove] = Field(default_factory=list, description="Every instance that moves, and where.")


class Plan(Evaluation):
    id: str | None = None
    strategy: str
    profiles: ProfileVersionRef | None = Field(
        default=None,
        description="The stored profile set version this plan's figures come from; absent for inline entries.",
    )
    contingencies: list[Contingency] | None = Field(
        default=None,
        description="With options.survive_loss: one per machine the plan uses, what to do when it is lost; absent "
        "otherwise.",
    )


Placement = dict[str, list[str]]
"""Where every instance runs: component id -> machine id of instance 0, 1, ... (the plan's ``index``)."""
