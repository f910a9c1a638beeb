"""Submit, kill and list topologies on a Storm cluster: the I/O around :mod:`topologies.submission`."""
from __future__ import annotations

import logging
import tempfile
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
    return request


def submit(request: SubmitRequest, address: NimbusAddress, force: bool = False, streamparse_run: Path | None = None,
           leader_timeout_s: float = 60.0) -> SubmitResult:
    """Build the jar, upload it and submit the topology with the requested (or planned) parallelism."""
    request = apply_plan(request)
    submission = build_submission(request, streamparse_run)
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


def window_counts(name: str, address: NimbusAddress, window_s: float,
                  leader_timeout_s: float = 60.0) -> tuple[str, list[ComponentRate]]:
    """The catalog name of a running topology and what each component did within the window."""
    with connect(address, leader_timeout_s) as nimbus:
        running = nimbus.find(name)
        if running is None:
            raise TopologyError(f"no topology named {name!r} is running on Nimbus {address}")
        catalog_name = nimbus.topology_conf(running.id).get(TOPOLOGY_KEY)
        if not catalog_name:
            raise TopologyError(f"topology {name!r} was not submitted by hetsched (no {TOPOLOGY_KEY} in its config)")
        entry = lookup(catalog_name)
        return entry.name, window_rates(nimbus, name, entry, window_s)
