"""Submit, kill and list topologies on a Storm cluster: the I/O around :mod:`topologies.submission`."""
from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topologies import plans
from topologies.catalog import lookup
from topologies.errors import TopologyError
from topologies.conf import TOPOLOGY as TOPOLOGY_KEY
from topologies.jar import build_jar
from observe.nimbus import NimbusAddress, TopologySummary, connect
from observe.rates import ComponentRate
from topologies.measure import window_rates
from topologies.submission import SubmitRequest, build_submission
from topologies.weighted_grouping import shares_conf
from planner.stream_shares import CONF_KEY

log = logging.getLogger(__name__)

KILL_TIMEOUT_S = 180.0
"""How long a kill may take before we give up waiting (deactivation wait plus worker shutdown)."""


@dataclass
class SubmitResult:
    name: str
    topology_id: str | None
    topology: str
    parallelism: dict[str, int]
    conf: dict[str, Any]
    jar_location: str
    nimbus: str
    replaced: bool


def apply_plan(request: SubmitRequest) -> SubmitRequest:
    """With ``plan_id`` set: the plan's instance counts become the parallelism, its profile set the profiles."""
    if request.plan_id is None:
        return request
    if request.parallelism:
        raise TopologyError("give either --plan or --parallelism, not both: a plan fixes every component's parallelism")
    entry = lookup(request.topology)
    plan = plans.fetch_plan(request.plan_id, request.planner_url)
    request.parallelism = plans.plan_parallelism(plan, entry)
    request.profiles = request.profiles or plans.plan_profiles_name(plan)
    if request.weighted_grouping:
        if not plan.shares:
            raise TopologyError(f"plan {request.plan_id} has no shares to weight groupings by: make it with weighted "
                                "shares (options.weighted_shares: true, in `hetsched plan --options`)")
        request.conf[CONF_KEY] = shares_conf(plan, request.hosts)
    return request


def submit(request: SubmitRequest, address: NimbusAddress, force: bool = False, multilang_command: str | None = None,
           leader_timeout_s: float = 60.0) -> SubmitResult:
    """Build the jar, upload it and submit the topology with the requested (or planned) parallelism."""
    request = apply_plan(request)
    submission = build_submission(request, multilang_command)
    with connect(address, leader_timeout_s) as nimbus:
        running = nimbus.find(submission.name)
        if running is not None and not force:
            raise TopologyError(
                f"a topology named {submission.name!r} is already running ({running.id}, {running.status}); "
                "use --force to kill and replace it, or --name to run another copy"
            )
        if running is not None:
            log.info("killing the running %s (%s) before submitting", submission.name, running.id)
            nimbus.kill(submission.name, wait_s=0)
            nimbus.wait_gone(submission.name, KILL_TIMEOUT_S)
        with tempfile.TemporaryDirectory(prefix="hetsched-jar-") as tmp:
            jar = build_jar(Path(tmp) / f"{submission.entry.name}.jar")
            location = nimbus.upload_jar(jar)
        nimbus.submit(submission.name, location, submission.conf, submission.topology)
        started = nimbus.find(submission.name)
    log.info("submitted %s as %s", submission.entry.name, submission.name)
    return SubmitResult(
        name=submission.name,
        topology_id=started.id if started else None,
        topology=submission.entry.name,
        parallelism=submission.parallelism,
        conf=submission.conf,
        jar_location=location,
        nimbus=str(address),
        replaced=running is not None,
    )


def kill(name: str, address: NimbusAddress, wait: bool = False, grace_s: int = 0,
         leader_timeout_s: float = 60.0) -> None:
    """Kill a running topology; with ``wait``, return only once Nimbus no longer lists it."""
    with connect(address, leader_timeout_s) as nimbus:
        if nimbus.find(name) is None:
            known = [t.name for t in nimbus.topologies()]
            raise TopologyError(
                f"no topology named {name!r} is running on Nimbus {address}"
                + (f"; running: {', '.join(known)}" if known else "; none is running")
            )
        nimbus.kill(name, wait_s=grace_s)
        if wait:
            nimbus.wait_gone(name, KILL_TIMEOUT_S + grace_s)


def running_topologies(address: NimbusAddress, leader_timeout_s: float = 60.0) -> list[TopologySummary]:
    with connect(address, leader_timeout_s) as nimbus:
        return nimbus.topologies()


STATS_FREQUENCY_KEY = "executor.metrics.frequency.secs"
STORM_STATS_FREQUENCY_S = 60.0
"""Storm's default: a stock cluster's executors report counts to Nimbus once a minute (the local cluster: 10 s)."""


@dataclass(frozen=True)
class CountWindow:
    seconds: float
    stats_frequency_s: float
    """How often executors report counts to Nimbus on this topology (``executor.metrics.frequency.secs``)."""
    chosen: bool
    """The window was chosen from the frequency, not given."""

    @property
    def too_short(self) -> bool:
        """An executor counts only between two of its reports, so a window needs more than two report periods."""
        return self.seconds <= 2 * self.stats_frequency_s


def stats_frequency_s(topology_conf: dict, nimbus_conf: dict) -> float:
    """Seconds between executors' stats reports: the topology's setting, else Nimbus's, else Storm's default."""
    for conf in (topology_conf, nimbus_conf):
        value = conf.get(STATS_FREQUENCY_KEY)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value)
    return STORM_STATS_FREQUENCY_S


def count_window(window_s: float | None, frequency_s: float) -> CountWindow:
    """The given window, or two report periods and a third of one more (30 s at 10 s, 140 s at Storm's 60 s)."""
    if window_s is not None:
        return CountWindow(window_s, frequency_s, chosen=False)
    return CountWindow(round(2 * frequency_s + max(10.0, frequency_s / 3)), frequency_s, chosen=True)


def window_counts(name: str, address: NimbusAddress, window_s: float | None,
                  leader_timeout_s: float = 60.0,
                  on_window: Callable[[CountWindow], None] = lambda w: None) -> tuple[str, CountWindow, list[ComponentRate]]:
    """The catalog name of a running topology (else its name), the window watched, and what each component did
    within it (any topology: one hetsched did not submit is read as Nimbus keeps it).

    ``on_window`` hears the window before the watch starts (to warn of one too short to count anything).
    """
    with connect(address, leader_timeout_s) as nimbus:
        running = nimbus.find(name)
        if running is None:
            raise TopologyError(f"no topology named {name!r} is running on Nimbus {address}")
        conf = nimbus.topology_conf(running.id)
        catalog_name = conf.get(TOPOLOGY_KEY)
        entry = lookup(catalog_name) if catalog_name else None
        window = count_window(window_s, stats_frequency_s(conf, {} if STATS_FREQUENCY_KEY in conf else nimbus.nimbus_conf()))
        on_window(window)
        return entry.name if entry else name, window, window_rates(nimbus, name, entry, window.seconds)
