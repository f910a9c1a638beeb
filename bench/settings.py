"""What one bench runs: topologies, schedulers, profile set, timings, where the results go."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from bench.errors import BenchError
from topologies.catalog import CATALOG

SCHEDULERS = ("default", "default-naive", "resource_aware", "planned")
"""
- ``default``: Storm's DefaultScheduler with the plan's instance counts (placement alone differs);
- ``default-naive``: Storm's DefaultScheduler with one executor per component per machine (no plan);
- ``resource_aware``: Storm's Resource Aware Scheduler with the plan's instance counts and CPU points
  from the profile on the reference machine type;
- ``planned``: the hetsched plugin placing the plan.
"""
KNOWN_SCHEDULERS = SCHEDULERS + ("planned-weighted", "sps", "dps", "ras-priority")
"""Also runnable when named (``--schedulers``), not by default:

- ``planned-weighted``: the hetsched plugin placing its own plan, made with weighted shares (counts, placement and
  shares chosen together), its streams split by those shares (the plugin jar's weighted groupings, issue 33);

- ``sps``, ``dps``: the thesis's priority schedulers as Nimbus schedulers (docs/baselines.md);
- ``ras-priority``: Storm's RAS with ``topology.priority`` and a user pool.
"""
TOPOLOGIES = ("linear", "diamond", "star")
"""What a bench runs unless told: the paper's micro topologies, which the shipped profile set covers."""
KNOWN_TOPOLOGIES = tuple(CATALOG)
"""Every catalog topology; RollingCount and UniqueVisitor need profiles of their own (``--profile-now``)."""
CLUSTERS = ("local", "compose")
"""Where the bench runs: the local cgroup cluster, or the same machines as docker-compose containers."""
DEFAULT_PROFILES = "default-cluster"
"""The profile set shipped for the default local cluster (``profiles/default-cluster.json``)."""
DEFAULT_MAX_SPOUT_PENDING = 100
DEFAULT_MESSAGE_TIMEOUT_S = 120
"""Longer than Storm's 30 s: under a heterogeneity-blind placement the slow machine's queue holds
most of the tuples in flight, and a replayed tuple would count twice."""


@dataclass(frozen=True)
class BenchSettings:
    out_dir: Path
    topologies: tuple[str, ...] = TOPOLOGIES
    schedulers: tuple[str, ...] = SCHEDULERS
    profiles: str = DEFAULT_PROFILES
    """A shipped set's name (``profiles/<name>.json``) or a file (JSON/YAML ProfileSet)."""
    profile_now: bool = False
    """Measure a profile set on the cluster first (``hetsched profile``) instead of using ``profiles``."""
    fill_by_speed: bool = False
    """Estimate the (profile, machine type) pairs the set lacks from the other machine types, scaled by the types'
    measured speed (``planner.profiles.fill_by_machine_speed``), instead of refusing the set."""
    window_s: float = 60.0
    warmup_s: float = 30.0
    settle_max_s: float = 300.0
    """After the warm-up, the longest a run waits for a steady flow before its window (bench/run.py ``_settle``)."""
    max_spout_pending: int = DEFAULT_MAX_SPOUT_PENDING
    message_timeout_s: int = DEFAULT_MESSAGE_TIMEOUT_S
    load_aware: bool = False
    """Keep Storm's load-aware, locality-preferring shuffle; off by default (plain even shuffle, the planner's model)."""
    strategy: str | None = None
    """The planner strategy of ``planned`` (None: the planner's default, its best)."""
    start_timeout_s: float = 300.0
    """How long a topology may take from submit until every component handles tuples."""
    spec_path: Path | None = None
    home: Path | None = None
    port_base: int | None = None
    topology_conf: dict = field(default_factory=dict)
    """Extra topology config for every run (the same for all schedulers)."""
    cluster: str = "local"
    """One of :data:`CLUSTERS`."""

    def __post_init__(self) -> None:
        check(self)


def check(settings: BenchSettings) -> None:
    """Refuse settings that cannot give a meaningful run, with the fault named."""
    if not settings.topologies:
        raise BenchError("no topology to run: give at least one of " + ", ".join(TOPOLOGIES))
    if not settings.schedulers:
        raise BenchError("no scheduler to run: give at least one of " + ", ".join(SCHEDULERS))
    unknown = [s for s in settings.schedulers if s not in KNOWN_SCHEDULERS]
    if unknown:
        raise BenchError(f"unknown scheduler {', '.join(unknown)}; known schedulers: {', '.join(KNOWN_SCHEDULERS)}")
    for name, value, low in (("--window", settings.window_s, 0.0), ("--warmup", settings.warmup_s, 0.0),
                             ("--settle-max", settings.settle_max_s, 0.0), ("--start-timeout", settings.start_timeout_s, 10.0)):
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value < low:
            raise BenchError(f"{name} must be a number of seconds of at least {low:g}, not {value!r}")
    if settings.window_s < 15.0:
        raise BenchError(
            f"--window {settings.window_s:g} s is too short: Nimbus' counts move every 10 s, "
            "so a window needs at least 15 s to see two steps"
        )
    if not isinstance(settings.max_spout_pending, int) or settings.max_spout_pending < 1:
        raise BenchError(f"--max-spout-pending must be a whole number of at least 1, not {settings.max_spout_pending!r}")
    if settings.cluster not in CLUSTERS:
        raise BenchError(f"unknown cluster {settings.cluster!r}; known: {', '.join(CLUSTERS)}")
    if settings.cluster == "compose" and settings.profile_now:
        raise BenchError("--profile-now runs on the local cluster only; give a profile set with --profiles on the compose cluster")
    if settings.message_timeout_s < 1:
        raise BenchError(f"the message timeout must be at least 1 s, not {settings.message_timeout_s!r}")


def parse_names(text: str | None, known: tuple[str, ...], what: str) -> tuple[str, ...]:
    """``"linear, star"`` -> ``("linear", "star")``, each checked against ``known``, no repeats."""
    if text is None:
        return known
    names = [n.strip().lower().replace("_", "-") if what == "scheduler" else n.strip().lower() for n in text.split(",")]
    names = [n for n in names if n]
    if what == "scheduler":
        names = [n.replace("resource-aware", "resource_aware") for n in names]
    if not names:
        raise BenchError(f"no {what} given; known: {', '.join(known)}")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BenchError(f"unknown {what} {', '.join(repr(n) for n in unknown)}; known: {', '.join(known)}")
    seen: list[str] = []
    for n in names:
        if n not in seen:
            seen.append(n)
    return tuple(seen)
