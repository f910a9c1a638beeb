"""``hetsched profile`` end to end: collect on the cluster, aggregate with Spark, store in the planner.

The profile set's ``source`` keeps both halves: the Spark job's report and ``collection``, what
was measured when and how (cluster, rounds, rates, saturation, load average of the host).
"""
from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.durable import write_json_atomic
from cluster.storm_config import SCHEDULERS
from observe.machines import ClusterHandle
from observe.nimbus import Nimbus, NimbusError
from observe.progress import Reporter
from planner.model import ProfileSet
from spark_profiling.collector.runner import Experiment, ExperimentOptions, ExperimentReport
from spark_profiling.errors import ProfilingError

PLANNER_URL_KEY = "hetsched.planner.url"
SCHEDULER_KEY = "storm.scheduler"
SPARK_CONF = {"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"}
"""A profiling run makes thousands of records, not millions: few partitions start faster."""
CPU_BASIS = (
    "machine cgroup CPU: a task alone on its machine is charged the machine's whole CPU (worker JVM and "
    "supervisor included); tasks sharing a machine get their own Python CPU plus a share of the rest in "
    "proportion to the tuples each moved"
)


@dataclass(frozen=True)
class ProfilingResult:
    experiment: ExperimentReport
    experiment_path: Path
    profile_set: ProfileSet | None
    profile_path: Path | None
    aggregation_s: float | None
    stored_as: str | None


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM (and SIGINT, which a background job may ignore) stop the run cleanly: the round's topology is killed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, _frame):
        raise ProfilingError(f"profiling stopped by signal {signal.Signals(signum).name}; records so far are kept.")

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def nimbus_conf(cluster: ClusterHandle) -> dict[str, Any]:
    """Nimbus's own configuration, read over Thrift: it says which scheduler runs and which planner it asks."""
    try:
        with Nimbus(cluster.nimbus) as nimbus:
            return nimbus.nimbus_conf()
    except NimbusError as exc:
        raise ProfilingError(f"{cluster.name} is not answering ({exc}); start it with "
                             "'hetsched cluster up --scheduler plugin --conf hetsched.planner.url=URL'.") from None


def nimbus_planner_url(cluster: ClusterHandle) -> str | None:
    """The planner Nimbus's plugin asks (``hetsched.planner.url`` of Nimbus's configuration), if any."""
    url = nimbus_conf(cluster).get(PLANNER_URL_KEY)
    return str(url).rstrip("/") if url else None


def check_cluster(cluster: ClusterHandle, planner_url: str) -> None:
    """Refuse a cluster whose Nimbus cannot follow the pinning plans stored in ``planner_url``."""
    conf = nimbus_conf(cluster)
    stopped = cluster.stopped_daemons()
    if stopped:
        raise ProfilingError(
            f"{', '.join(stopped)} of {cluster.name} stopped (see 'hetsched cluster logs'); restart the cluster "
            "before profiling."
        )
    scheduler = conf.get(SCHEDULER_KEY)
    if scheduler != SCHEDULERS["plugin"]:
        raise ProfilingError(
            f"{cluster.name} runs the scheduler {scheduler!r}; profiling pins components through the hetsched "
            "plugin: start it with '--scheduler plugin --conf hetsched.planner.url=URL'."
        )
    nimbus_url = conf.get(PLANNER_URL_KEY)
    if not nimbus_url:
        raise ProfilingError(f"Nimbus of {cluster.name} has no {PLANNER_URL_KEY}; the plugin cannot read pinning plans.")
    if str(nimbus_url).rstrip("/") != planner_url.rstrip("/"):
        raise ProfilingError(
            f"Nimbus reads plans from {nimbus_url}, not from {planner_url}: give --planner {nimbus_url} "
            "(the pinning plans must be stored where the plugin looks)."
        )


def profile(
    cluster: ClusterHandle,
    planner_url: str,
    out_dir: Path,
    options: ExperimentOptions,
    *,
    name: str | None = None,
    put: str | None = None,
    token: str | None = None,
    min_samples: int = 5,
    master: str | None = None,
    aggregate: bool = True,
    reporter: Reporter | None = None,
) -> ProfilingResult:
    """Run the experiment, then (unless told not to) aggregate its records and store the set."""
    check_cluster(cluster, planner_url)
    experiment = Experiment(cluster, planner_url, out_dir, options, reporter, planner_token=token)
    with stop_on_signals():
        report = experiment.run()
    experiment_path = Path(out_dir) / f"experiment-{report.run_id}.json"
    try:
        write_json_atomic(experiment_path, report.as_dict())
    except OSError as exc:
        raise ProfilingError(f"cannot write the experiment report {experiment_path}: {exc.strerror or exc}; "
                             f"its records are in {report.records_path}.") from None
    if not aggregate:
        return ProfilingResult(report, experiment_path, None, None, None, None)

    from spark_profiling.aggregate import run as run_aggregation, set_name, write_profile_set
    from spark_profiling.publish import put_profile_set

    profile_path = Path(out_dir) / f"profiles-{report.run_id}.json"
    set_name_ = set_name(profile_path, name, put)
    if reporter is not None:
        reporter.status(f"aggregating {report.records_path} with Spark")
    started = time.monotonic()
    profile_set = run_aggregation([report.records_path], profile_path, set_name_, min_samples, None, master, SPARK_CONF)
    aggregation_s = round(time.monotonic() - started, 1)
    profile_set = profile_set.model_copy(update={"source": {**profile_set.source,
                                                            "collection": collection_source(report, options)}})
    write_profile_set(profile_path, profile_set)
    stored = None
    if put:
        stored = put_profile_set(profile_set, put, planner_url, token).name
    return ProfilingResult(report, experiment_path, profile_set, profile_path, aggregation_s, stored)


def collection_source(report: ExperimentReport, options: ExperimentOptions) -> dict[str, Any]:
    """What the profile set's ``source`` says about how its records were measured."""
    return {
        "kind": "spark_profiling.collector",
        "run_id": report.run_id,
        "started_at": report.started_at,
        "topology": report.topology,
        "cpu_ms_per_tuple": report.cpu_ms,
        "machines": report.machines,
        "rounds": [
            {
                "round": r.index,
                "placement": r.placement,
                "acker": r.system.get("__acker"),
                "offered_rates": [s.offered for s in r.steps],
                "saturated": next((s.saturated for s in r.steps if s.saturated), []),
            }
            for r in report.rounds
        ],
        "step_seconds": options.step_seconds,
        "cpu": CPU_BASIS,
        "counts": "Nimbus getTopologyInfo all-time stats, topology.stats.sample.rate 1.0; bolts by acked tuples",
        "collection_s": report.collection_s,
        "load_average": {"start": report.load_average_start, "end": report.load_average_end},
    }
