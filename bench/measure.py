"""The measurement maths of one run: throughputs from Nimbus counts, CPU from cgroups, error against the prediction. Pure.

Throughputs, in tuples/s, named as in docs/model.md:

- ``input_rate``: R, the mean emit rate of the spout components (each emits R with weight 1);
- ``sink_throughput``: tuples executed per second by the sinks (bolts nobody subscribes to);
- ``bolt_throughput``: tuples executed per second by all bolts (what Storm's counts add up to);
- ``total_throughput``: the planner's figure, the sum of every component's input rate, which
  counts a spout's emit rate as its input: ``bolt_throughput + sum of spout emit rates``.

Predicted figures come from the planner's Evaluation of the placement Storm really made; its
bolt throughput is its total minus the spouts' rates, so measured and predicted compare like with like.
"""
from __future__ import annotations

from dataclasses import dataclass

from observe.rates import ComponentRate
from planner.model import Evaluation


@dataclass(frozen=True)
class Throughputs:
    input_rate: float
    spout_emit_rate: float
    sink_throughput: float
    bolt_throughput: float
    total_throughput: float

    def as_dict(self) -> dict[str, float]:
        return {k: round(v, 4) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class MachineCpu:
    """CPU a machine's cgroup used over a window."""

    machine: str
    machine_type: str
    cores: float
    cpu_seconds: float
    window_s: float

    @property
    def utilization(self) -> float:
        """Percent of the machine's quota: CPU seconds / window / cores * 100."""
        if self.window_s <= 0 or self.cores <= 0:
            return 0.0
        return 100.0 * self.cpu_seconds / self.window_s / self.cores


def measured_throughputs(rates: list[ComponentRate]) -> Throughputs:
    """The figures of one window of component rates (spouts: emitted; bolts and sinks: executed)."""
    spouts = [r.per_second for r in rates if r.role == "spout"]
    bolts = sum(r.per_second for r in rates if r.role != "spout")
    sinks = sum(r.per_second for r in rates if r.role == "sink")
    emitted = sum(spouts)
    return Throughputs(
        input_rate=emitted / len(spouts) if spouts else 0.0,
        spout_emit_rate=emitted,
        sink_throughput=sinks,
        bolt_throughput=bolts,
        total_throughput=bolts + emitted,
    )


def predicted_throughputs(evaluation: Evaluation, spout_ids: list[str], weights: dict[str, float] | None = None) -> Throughputs:
    """The planner's figures for a placement, split the same way as the measured ones."""
    weights = weights or {}
    emitted = sum(evaluation.input_rate * weights.get(s, 1.0) for s in spout_ids)
    return Throughputs(
        input_rate=evaluation.input_rate,
        spout_emit_rate=emitted,
        sink_throughput=evaluation.sink_throughput,
        bolt_throughput=evaluation.total_throughput - emitted,
        total_throughput=evaluation.total_throughput,
    )


def machine_cpu(before: dict[str, float], after: dict[str, float], window_s: float,
                machines: dict[str, tuple[str, float]]) -> list[MachineCpu]:
    """Per machine (id -> (type, cores)), the CPU seconds between two cgroup readings."""
    return [
        MachineCpu(m, t, cores, max(0.0, after[m] - before[m]), window_s)
        for m, (t, cores) in machines.items()
        if m in before and m in after
    ]


def relative_error(measured: float, predicted: float) -> float | None:
    """(measured - predicted) / predicted; None when nothing was predicted."""
    if predicted <= 0:
        return None
    return (measured - predicted) / predicted


STEADY_WITHIN = 0.05
"""Largest :func:`flow_imbalance` of a run whose window is taken as steady."""


def flow_imbalance(measured: Throughputs, predicted: Throughputs) -> float | None:
    """How far the sinks' share of what the spouts emitted strays from the placement's own flow:
    (measured sink / spout emit rate) / (predicted sink / spout emit rate) - 1. None without a prediction.

    The share is structural (fan-outs and pass-through ratios), so in a steady window it is the
    predicted one. Away from it, tuples pile up somewhere inside the topology: a multi-lang bolt on a
    machine at its quota is handed tuples (and counts them executed) faster than its subprocess takes
    them from the pipe, until the spouts' ``max.spout.pending`` fills. Its rates are then a transient
    (docs/results/README.md, "Steady windows").
    """
    if min(measured.spout_emit_rate, predicted.spout_emit_rate, predicted.sink_throughput) <= 0:
        return None
    return (measured.sink_throughput / measured.spout_emit_rate) / (predicted.sink_throughput / predicted.spout_emit_rate) - 1


def speedup(value: float, baseline: float) -> float | None:
    return value / baseline if baseline > 0 else None


def failed_trees(rates: list[ComponentRate]) -> int:
    """Tuple trees the spouts saw fail in the window."""
    return sum(r.failed for r in rates if r.role == "spout")


def steady(imbalance: float | None, failed: int) -> bool:
    """A window whose rates the placement sustains: its flow within :data:`STEADY_WITHIN` and no tree failed.

    A tree fails here only by timing out, so a failed tree means one waited ``topology.message.timeout.secs`` in a
    queue that grows; and each timeout frees a ``max.spout.pending`` slot, so the spouts then emit past what the
    placement sustains, as fast as the slots free (docs/results/README.md, "Steady windows").
    """
    return failed == 0 and (imbalance is None or abs(imbalance) <= STEADY_WITHIN)


def failed_share(rates: list[ComponentRate]) -> float:
    """Failed over acked+failed tuple trees at the spouts (timeouts and fails replay tuples)."""
    acked = sum(r.acked for r in rates if r.role == "spout")
    failed = sum(r.failed for r in rates if r.role == "spout")
    return failed / (acked + failed) if acked + failed else 0.0
