"""Drained re-placement of a running topology onto the plan bound to it (issue 15).

Restarting workers with tuples in flight loses or replays them. So a re-placement is: deactivate
the topology (spouts stop emitting, bolts go on), wait until every spout tuple emitted has been
acked or failed (Nimbus's counts, reported every ``executor.metrics.frequency.secs``) or until
``topology.message.timeout.secs`` has passed, then Storm's rebalance with no wait of its own (it
frees the slots and the scheduler places the topology by its bound plan, with new executor
counts where they change), wait until the placement is the plan's, and activate again. The spout
counts read before and after say whether a tuple failed across it.

Nimbus is reached through :class:`NimbusLike` (``observe.nimbus.Nimbus`` is one), so the steps run
against a scripted fake in tests; time is read through ``clock``/``sleep`` for the same reason.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from observe.counts import TopologyCounts

MESSAGE_TIMEOUT_KEY = "topology.message.timeout.secs"
STORM_MESSAGE_TIMEOUT_S = 30.0
STATS_FREQUENCY_KEY = "executor.metrics.frequency.secs"
PLACEMENT_TIMEOUT_S = 120.0
"""Longest wait for Nimbus to place the rebalanced topology by its plan."""
BLOB_UPDATE_KEY = "supervisor.localizer.update.blob.interval.secs"
STORM_BLOB_UPDATE_S = 30.0
"""How often a supervisor looks for a newer copy of a topology's conf; it restarts the topology's workers when it
finds one (Storm's ``kill-blob-update``)."""
POLL_S = 1.0


class ReplacementError(Exception):
    """The re-placement could not be done; one sentence, and the topology is active again where that was possible."""


class NimbusLike(Protocol):
    def find(self, name: str) -> Any: ...
    def counts(self, topology_id: str) -> TopologyCounts: ...
    def topology_conf(self, topology_id: str) -> dict[str, Any]: ...
    def deactivate(self, name: str) -> None: ...
    def activate(self, name: str) -> None: ...
    def rebalance(self, name: str, wait_s: int = 0, num_executors: dict[str, int] | None = None,
                  conf_overrides: dict[str, Any] | None = None) -> None: ...


@dataclass(frozen=True)
class SpoutTally:
    """The spouts' all-time counts at one reading, summed over their executors (user streams)."""

    emitted: int
    acked: int
    failed: int

    @property
    def in_flight(self) -> int:
        """Tuple trees emitted and neither acked nor failed yet (0 when the spouts emit unanchored: nothing to wait for)."""
        return max(0, self.emitted - self.acked - self.failed) if self.acked or self.failed else 0

    @classmethod
    def of(cls, counts: TopologyCounts) -> SpoutTally:
        spouts = [e for e in counts.executors.values() if e.is_spout]
        return cls(sum(e.emitted for e in spouts), sum(e.acked for e in spouts), sum(e.failed for e in spouts))


@dataclass(frozen=True)
class ReplacementResult:
    """What a drained re-placement did, with the spout counts across it."""

    topology: str
    executors_before: dict[str, int]
    executors_after: dict[str, int]
    before: SpoutTally
    """At deactivation: the spouts' counts as last reported."""
    at_rebalance: SpoutTally
    """When the rebalance was asked: the old workers' final counts."""
    drained: bool
    """Every emitted tuple was acked or failed before the rebalance (else the message timeout passed)."""
    drain_s: float
    placed_s: float
    """From the rebalance to every executor placed as the plan says."""
    matches_plan: bool
    scheduler_status: str
    conf_wait_s: float = 0.0
    """After the placement: how long the topology stayed inactive so that every supervisor had fetched the new
    conf and restarted its workers with it (0 without conf overrides)."""

    @property
    def failed_during_drain(self) -> int:
        return self.at_rebalance.failed - self.before.failed

    @property
    def in_flight_at_rebalance(self) -> int:
        """Tuples that were in the old workers when they were stopped (lost or replayed by the source)."""
        return self.at_rebalance.in_flight


def executor_counts(counts: TopologyCounts) -> dict[str, int]:
    found: dict[str, int] = {}
    for e in counts.executors.values():
        found[e.component] = found.get(e.component, 0) + 1
    return found


def placement_matches(counts: TopologyCounts, wanted: Mapping[str, list[str]], machine_of_host: Mapping[str, str]) -> bool:
    """Every user executor placed, each component's i-th executor (task order) on the plan's machine of instance i."""
    if not counts.placed:
        return False
    by_component: dict[str, list] = {}
    for e in sorted(counts.executors.values(), key=lambda e: e.task_start):
        by_component.setdefault(e.component, []).append(e)
    if {c: len(es) for c, es in by_component.items()} != {c: len(ms) for c, ms in wanted.items()}:
        return False
    return all(machine_of_host.get(e.host, e.host) == wanted[c][i]
               for c, es in by_component.items() for i, e in enumerate(es))


def _number(conf: Mapping[str, Any], key: str, default: float) -> float:
    try:
        value = float(conf.get(key, default))
    except (TypeError, ValueError):
        return default
    return value if value > 0 else default


def replace_drained(
    nimbus: NimbusLike,
    name: str,
    wanted: Mapping[str, list[str]],
    machine_of_host: Mapping[str, str],
    *,
    max_drain_s: float | None = None,
    conf_overrides: Mapping[str, Any] | None = None,
    placement_timeout_s: float = PLACEMENT_TIMEOUT_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_step: Callable[[str], None] = lambda step: None,
) -> ReplacementResult:
    """Re-place topology ``name`` drained onto ``wanted`` (component -> machine of instance 0, 1, ...).

    The plan must already be bound to the topology (``PUT /v1/assignments/{name}``): the scheduler places it by
    that plan when the rebalance frees its slots. Executor counts that differ from the running ones are changed
    by the rebalance. ``max_drain_s`` defaults to the topology's ``topology.message.timeout.secs``.
    ``conf_overrides``: keys the rebalance merges into the topology's conf (e.g. ``hetsched.profiles`` for a
    topology submitted without it, which the plugin would otherwise place evenly, bound plan or not).
    """
    running = nimbus.find(name)
    if running is None:
        raise ReplacementError(f"no topology named {name!r} is running")
    conf = nimbus.topology_conf(running.id)
    drain_limit = max_drain_s if max_drain_s is not None else _number(conf, MESSAGE_TIMEOUT_KEY, STORM_MESSAGE_TIMEOUT_S)
    report_s = _number(conf, STATS_FREQUENCY_KEY, 60.0)
    first = nimbus.counts(running.id)
    executors_before = executor_counts(first)
    before = SpoutTally.of(first)
    changed = {c: len(ms) for c, ms in wanted.items() if executors_before.get(c) != len(ms)}

    on_step("deactivating")
    nimbus.deactivate(name)
    started = clock()
    drained, tally = False, before
    uptime0 = {k: e.uptime_s for k, e in first.executors.items() if e.is_spout}
    while True:
        counts = nimbus.counts(running.id)
        tally = SpoutTally.of(counts)
        reported = all(e.uptime_s > uptime0.get(k, -1) for k, e in counts.executors.items() if e.is_spout)
        if reported and tally.in_flight == 0:
            drained = True
            break
        if clock() - started >= drain_limit:
            break
        sleep(min(POLL_S, report_s))
    drain_s = clock() - started

    on_step("rebalancing" + (f" to {changed}" if changed else "") + (f" with conf {dict(conf_overrides)}" if conf_overrides else ""))
    try:
        nimbus.rebalance(name, 0, changed or None, dict(conf_overrides) if conf_overrides else None)
    except Exception:
        nimbus.activate(name)
        raise
    asked = clock()
    matches, counts = False, nimbus.counts(running.id)
    while clock() - asked < placement_timeout_s:
        now = nimbus.find(name)
        counts = nimbus.counts(running.id)
        if now is not None and now.status == "INACTIVE" and placement_matches(counts, wanted, machine_of_host):
            matches = True
            break
        sleep(POLL_S)
    placed_s = clock() - asked
    conf_wait_s = 0.0
    if conf_overrides and matches:
        # A supervisor whose slot kept the topology launches its new worker from its cached (old) conf and restarts
        # it once its periodic blob check sees the new one: stay inactive until that check has run everywhere and
        # every executor runs again, so no worker is killed with tuples in flight after the activation.
        on_step("waiting for the supervisors to fetch the new conf")
        conf_wait_s = _wait_for_new_conf(nimbus, running.id, asked, _number(conf, BLOB_UPDATE_KEY, STORM_BLOB_UPDATE_S),
                                         clock, sleep, placement_timeout_s)
    on_step("activating")
    _activate_when_allowed(nimbus, name, clock, sleep, placement_timeout_s)
    return ReplacementResult(
        topology=name, executors_before=executors_before, executors_after=executor_counts(counts), before=before,
        at_rebalance=tally, drained=drained, drain_s=drain_s, placed_s=placed_s, matches_plan=matches,
        scheduler_status=counts.scheduler_status, conf_wait_s=conf_wait_s)


def _wait_for_new_conf(nimbus: NimbusLike, topology_id: str, rebalanced_at: float, blob_update_s: float,
                       clock: Callable[[], float], sleep: Callable[[float], None], timeout_s: float) -> float:
    """Wait one supervisor blob check (and 5 s) past the rebalance, then for a fresh report from every executor:
    its uptime changed since (Nimbus shows a killed worker's last report until the restarted one reports); the
    seconds waited."""
    started = clock()
    while clock() - rebalanced_at < blob_update_s + 5.0:
        sleep(POLL_S)
    then = {k: e.uptime_s for k, e in nimbus.counts(topology_id).executors.items()}
    while clock() - started < timeout_s:
        executors = nimbus.counts(topology_id).executors
        if executors and all(e.uptime_s > 0 and e.uptime_s != then.get(k) for k, e in executors.items()):
            break
        sleep(POLL_S)
    return clock() - started


def _activate_when_allowed(nimbus: NimbusLike, name: str, clock: Callable[[], float], sleep: Callable[[float], None],
                           timeout_s: float) -> None:
    """Activate once the rebalance is over (Nimbus refuses to activate a topology still REBALANCING)."""
    deadline = clock() + timeout_s
    while True:
        running = nimbus.find(name)
        if running is None or running.status != "REBALANCING":
            break
        if clock() >= deadline:
            raise ReplacementError(f"topology {name!r} is still rebalancing after {timeout_s:g} s; activate it with "
                                   f"`storm activate {name}` once Nimbus has placed it")
        sleep(POLL_S)
    nimbus.activate(name)
