"""What goes to Nimbus for one submit: the Thrift topology with its parallelism, and the topology config.

Pure: no network, no files. :mod:`topologies.submit` does the I/O.
"""
from __future__ import annotations

import copy
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from topologies import conf as keys
from topologies.bolts import WindowedBolt
from topologies.catalog import CatalogEntry, lookup
from topologies.errors import TopologyError
from topologies.weighted_grouping import weight_thrift_topology, weighted_streams


@dataclass
class SubmitRequest:
    """Everything the user asked for; None means "Storm's or the topology's default"."""

    topology: str
    name: str | None = None
    parallelism: dict[str, int] = field(default_factory=dict)
    rate: float | None = None
    """Tuples/s of each spout component in total; None or 0: flow control only."""
    workers: int | None = None
    conf: dict[str, Any] = field(default_factory=dict)
    sample_rate: float = keys.DEFAULT_STATS_SAMPLE_RATE
    plan_id: str | None = None
    profiles: str | None = None
    planner_url: str | None = None
    spare_tasks: float | None = None
    """Tasks per executor of every component (``hetsched.spare.tasks``); None: that key of ``conf``, else 1."""
    metrics: bool = False
    """Run the plugin jar's metrics task hook in every executor (the jar must be on the workers' class path)."""
    metrics_url: str | None = None
    """Where the hook ships its records; None: the workers' own ``hetsched.planner.url``."""
    weighted_grouping: bool = False
    """With ``plan_id``: the plan's shares go into ``hetsched.grouping.shares`` and the streams they weight onto the
    plugin jar's weighted groupings (topologies/weighted_grouping.py); the plan must have shares."""
    hosts: dict[str, str] = field(default_factory=dict)
    """Machine id -> the host its supervisor runs on, for naming machines in the shares as workers see them."""


@dataclass
class Submission:
    name: str
    entry: CatalogEntry
    topology: Any
    """A ``StormTopology`` Thrift struct of its own (the catalog's class is never changed)."""
    conf: dict[str, Any]
    parallelism: dict[str, int]
    tasks: dict[str, int] = field(default_factory=dict)
    """Each component's task count (``topology.tasks``): the most executors a rebalance can give it."""


MULTILANG_COMMAND = "streamparse_run"
"""What Storm runs for each Python component, found on the worker's PATH (the supervisor's): no path of
the submitter's machine reaches the cluster. The local cluster puts the project's virtualenv first on its
daemons' PATH; other clusters put a virtualenv with streamparse there, or name one with ``--multilang-command``."""
MULTILANG_ENV = "HETSCHED_MULTILANG_COMMAND"


def default_streamparse_run() -> Path:
    """``streamparse_run`` of the virtualenv this process runs in: for starting components here (tests), never sent to Storm."""
    return Path(sys.prefix).resolve() / "bin" / "streamparse_run"


def check_multilang_command(command: str) -> str:
    """A program name looked up on the worker's PATH, or an absolute path on every supervisor host."""
    text = command.strip()
    if not text or any(c.isspace() for c in text):
        raise TopologyError(f"the multi-lang command {command!r} must be one program (a name on the workers' PATH or an "
                            "absolute path), without spaces or arguments")
    if "/" in text and not text.startswith("/"):
        raise TopologyError(f"the multi-lang command {command!r} is a relative path, which workers would resolve in "
                            "their own code folder; give a name on their PATH or an absolute path")
    return text


def parse_parallelism(text: str | None) -> dict[str, int]:
    """``spout=1,low=2`` -> ``{"spout": 1, "low": 2}``."""
    result: dict[str, int] = {}
    if not text:
        return result
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        component, sep, count = item.partition("=")
        component = component.strip()
        if not sep or not component:
            raise TopologyError(f"--parallelism entry {item!r} is not component=N")
        try:
            n = int(count)
        except ValueError:
            raise TopologyError(f"--parallelism for {component!r} must be a whole number, not {count.strip()!r}") from None
        if n < 1:
            raise TopologyError(f"--parallelism for {component!r} must be at least 1, not {n}")
        if component in result:
            raise TopologyError(f"--parallelism names {component!r} twice")
        result[component] = n
    return result


def parse_conf(items: list[str] | None) -> dict[str, Any]:
    """``["topology.workers=2", "a.b=x"]`` -> ``{"topology.workers": 2, "a.b": "x"}``; values are JSON where they parse."""
    result: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise TopologyError(f"--conf {item!r} is not key=value")
        try:
            result[key] = json.loads(value)
        except ValueError:
            result[key] = value
    return result


def _check(request: SubmitRequest, entry: CatalogEntry) -> None:
    unknown = sorted(set(request.parallelism) - set(entry.component_ids))
    if unknown:
        raise TopologyError(
            f"topology {entry.name} has no component {', '.join(repr(c) for c in unknown)}; "
            f"its components are {', '.join(entry.component_ids)}"
        )
    for component, n in request.parallelism.items():
        if not isinstance(n, int) or n < 1:
            raise TopologyError(f"parallelism of {component!r} must be a whole number of at least 1, not {n!r}")
    if request.rate is not None and (not math.isfinite(request.rate) or request.rate < 0):
        raise TopologyError(f"--rate must be a finite number of tuples/s, at least 0, not {request.rate}")
    check_options(request.workers, request.sample_rate, request.name)
    for key, value in request.conf.items():
        if key.startswith(keys.CPU_MS_PREFIX) and (not isinstance(value, (int, float)) or value < 0):
            raise TopologyError(f"--conf {key} must be a number of CPU milliseconds, at least 0, not {value!r}")
    spare = spare_tasks_factor(request)
    if not isinstance(spare, (int, float)) or isinstance(spare, bool) or not math.isfinite(spare) or spare < 1:
        raise TopologyError(f"spare tasks ({keys.SPARE_TASKS}, --spare-tasks) must be a factor of at least 1, not {spare!r}")


def check_options(workers: int | None, sample_rate: float, name: str | None) -> None:
    """The checks of the options every submit has (streamparse and Java topologies alike)."""
    if workers is not None and workers < 1:
        raise TopologyError(f"--workers must be at least 1, not {workers}")
    if not (0 < sample_rate <= 1):
        raise TopologyError(f"the stats sample rate must be in (0, 1], not {sample_rate}")
    if name is not None and not name.strip():
        raise TopologyError("--name must not be empty")


def option_conf(sample_rate: float, rate: float | None, workers: int | None, plan_id: str | None,
                profiles: str | None, planner_url: str | None) -> dict[str, Any]:
    """The conf keys of the explicit options every submit has, in the order they go over ``--conf``; None: not set."""
    conf: dict[str, Any] = {keys.STATS_SAMPLE_RATE: sample_rate}
    for key, value in ((keys.SPOUT_RATE, rate), (keys.WORKERS, workers), (keys.PLAN_ID, plan_id),
                       (keys.PROFILES, profiles), (keys.PLANNER_URL, planner_url)):
        if value is not None:
            conf[key] = value
    return conf


def spare_tasks_factor(request: SubmitRequest) -> float:
    """``--spare-tasks``, else ``hetsched.spare.tasks`` of ``--conf``, else 1."""
    return request.spare_tasks if request.spare_tasks is not None else request.conf.get(keys.SPARE_TASKS, 1.0)


KRYO_REGISTER = "topology.kryo.register"
MULTILANG_NUMBER_CLASSES = ("java.math.BigDecimal", "java.math.BigInteger")
"""What Storm's multi-lang JSON reader makes of a Python float or a large int: without a Kryo registration, the first
such tuple that crosses workers kills the worker (``Class is not registered: java.math.BigDecimal``), which no
single-worker placement shows (heldout-streamparse under its first tuned plan, 2026-11-27)."""


def with_multilang_numbers(registered: Any) -> list[Any]:
    """``topology.kryo.register`` with :data:`MULTILANG_NUMBER_CLASSES` added where missing (entries kept as given)."""
    entries = list(registered or [])
    named = {e if isinstance(e, str) else next(iter(e), None) for e in entries}
    return entries + [c for c in MULTILANG_NUMBER_CLASSES if c not in named]


def topology_conf(request: SubmitRequest, entry: CatalogEntry) -> dict[str, Any]:
    """The topology config: defaults, then ``--conf``, then the explicit options, then what hetsched always sets."""
    conf: dict[str, Any] = {
        keys.MAX_SPOUT_PENDING: keys.DEFAULT_MAX_SPOUT_PENDING,
        **keys.IDLE_WAIT,
        **{
            keys.cpu_ms_key(profile): ms
            for profile, ms in keys.DEFAULT_CPU_MS.items()
            if profile in entry.profiles().values()
        },
    }
    conf.update(request.conf)
    conf.update(option_conf(request.sample_rate, request.rate, request.workers, request.plan_id, request.profiles,
                            request.planner_url))
    conf[keys.SPARE_TASKS] = spare_tasks_factor(request)
    conf[KRYO_REGISTER] = with_multilang_numbers(conf.get(KRYO_REGISTER))
    conf[keys.COMPONENT_PROFILES] = entry.profiles()
    conf[keys.TOPOLOGY] = entry.name
    if request.metrics:
        conf.update(metrics_conf(conf, request.metrics_url))
    return conf


def metrics_conf(conf: dict[str, Any], metrics_url: str | None) -> dict[str, Any]:
    """The keys that turn the workers' metrics hook on, keeping any task hooks ``conf`` already names."""
    hooks = list(conf.get(keys.TASK_HOOKS) or [])
    added: dict[str, Any] = {keys.TASK_HOOKS: hooks + [keys.METRICS_HOOK_CLASS] if keys.METRICS_HOOK_CLASS not in hooks else hooks}
    if not conf.get(keys.MULTILANG_LOG_HANDLER):
        added[keys.MULTILANG_LOG_HANDLER] = keys.PID_LOG_HANDLER_CLASS
    if metrics_url:
        added[keys.METRICS_URL] = metrics_url
    return added


def build_submission(request: SubmitRequest, multilang_command: str | None = None) -> Submission:
    """Check the request against the topology and build what Nimbus gets.

    ``multilang_command`` is what the workers run for each Python component (default :data:`MULTILANG_COMMAND`).
    """
    entry = lookup(request.topology)
    _check(request, entry)
    conf = topology_conf(request, entry)
    run = check_multilang_command(MULTILANG_COMMAND if multilang_command is None else multilang_command)

    topology = copy.deepcopy(entry.topology.thrift_topology)
    parallelism: dict[str, int] = {}
    tasks: dict[str, int] = {}
    spare = float(conf[keys.SPARE_TASKS])
    for component_id, spec in {**topology.spouts, **topology.bolts}.items():
        common = spec.common
        common.parallelism_hint = request.parallelism.get(component_id, common.parallelism_hint)
        parallelism[component_id] = common.parallelism_hint
        tasks[component_id] = math.ceil(common.parallelism_hint * spare)
        if tasks[component_id] != common.parallelism_hint:
            component_conf = json.loads(common.json_conf or "{}")
            component_conf[keys.TASKS] = tasks[component_id]
            common.json_conf = json.dumps(component_conf)
        component = spec.spout_object if component_id in topology.spouts else spec.bolt_object
        if component.shell is not None:
            component.shell.execution_command = run
        cls = entry.component_class(component_id)
        if issubclass(cls, WindowedBolt):
            component_conf = json.loads(common.json_conf or "{}")
            component_conf[keys.TICK_FREQ_S] = int(conf.get(keys.EMIT_FREQUENCY_S, cls.default_emit_frequency_s))
            common.json_conf = json.dumps(component_conf)

    weight_thrift_topology(topology, weighted_streams(conf))
    name = (request.name or entry.name).strip()
    return Submission(name=name, entry=entry, topology=topology, conf=conf, parallelism=parallelism, tasks=tasks)
