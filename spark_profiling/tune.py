"""What ``hetsched tune`` decides between measuring and planning: pure functions over profile sets.

A running topology's records give profiles only for the (profile key, machine type) pairs it ran
on, at the rates it ran at. The planner refuses a request that needs a pair the set lacks, so
tune names each pair the live set does not cover (never observed, or observed but left out as
weak) and plans with the live entries where they exist and the fallback set's (a lab profile
set) for the rest, saying which came from where. ``--explore`` places the pairs never observed.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from planner.model import ProfileEntry, ProfileSet
from planner.profiles import MACHINE_BASE_LOAD

Pair = tuple[str, str]


@dataclass(frozen=True)
class Coverage:
    """Which pairs the topology needs, and what the live set says of each."""

    needed: tuple[Pair, ...]
    live: tuple[Pair, ...]
    weak: dict[Pair, str] = field(default_factory=dict)
    """Observed but left out by the aggregation: pair -> why."""
    never_observed: tuple[Pair, ...] = ()

    @property
    def missing(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.needed if p not in self.live)


def coverage(profiles: set[str], machine_types: set[str], live: ProfileSet | None,
             left_out: dict[Pair, str] | None = None) -> Coverage:
    """Every (profile key, machine type) pair the topology may be placed on, against the live set.

    ``left_out``: pairs the aggregation saw and judged weak when it gave no set at all (its NoPairError).
    """
    needed = tuple(sorted((p, t) for p in profiles for t in machine_types))
    entries = {(e.profile, e.machine_type) for e in live.entries} if live else set()
    skipped = {(s["profile"], s["machine_type"]): s["reason"] for s in (live.source.get("skipped_pairs", []) if live else [])}
    skipped = {**(left_out or {}), **skipped}
    live_pairs = tuple(p for p in needed if p in entries)
    weak = {p: skipped[p] for p in needed if p not in entries and p in skipped}
    never = tuple(p for p in needed if p not in entries and p not in skipped)
    return Coverage(needed, live_pairs, weak, never)


@dataclass(frozen=True)
class Completed:
    profile_set: ProfileSet
    from_fallback: tuple[Pair, ...]
    uncovered: tuple[Pair, ...]
    """Pairs neither set has: the planner will refuse a plan that needs them."""


def complete(live: ProfileSet | None, fallback: ProfileSet | None, cov: Coverage, name: str) -> Completed:
    """The set to plan with: live entries, then the fallback's for the pairs the live set lacks.

    The machine base load is the live set's where it has one for a type, else the fallback's.
    ``source.tune`` lists which pairs came from where, so the stored set says it is a blend.
    """
    live_entries = {(e.profile, e.machine_type): e for e in live.entries} if live else {}
    fallback_entries = {(e.profile, e.machine_type): e for e in fallback.entries} if fallback else {}
    entries: list[ProfileEntry] = []
    filled: list[Pair] = []
    uncovered: list[Pair] = []
    for pair in cov.needed:
        if pair in live_entries:
            entries.append(live_entries[pair])
        elif pair in fallback_entries:
            entries.append(fallback_entries[pair])
            filled.append(pair)
        else:
            uncovered.append(pair)
    base: dict[str, float] = {}
    for source in (fallback, live):
        if source is not None:
            base.update(source.source.get(MACHINE_BASE_LOAD, {}) or {})
    source = {
        **(live.source if live else {}),
        MACHINE_BASE_LOAD: dict(sorted(base.items())),
        "tune": {
            "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "live": [f"{p}@{t}" for p, t in cov.live],
            "from_fallback": [f"{p}@{t}" for p, t in filled],
            "fallback": fallback.name if fallback else None,
            "weak": {f"{p}@{t}": why for (p, t), why in cov.weak.items()},
            "never_observed": [f"{p}@{t}" for p, t in cov.never_observed],
        },
    }
    return Completed(ProfileSet(name=name, entries=entries, source=source), tuple(filled), tuple(uncovered))


def coverage_lines(cov: Coverage, done: Completed | None = None) -> list[str]:
    """What an operator reads about the pairs: measured live, left out as weak, never observed, filled."""
    lines = [f"measured live: {len(cov.live)} of {len(cov.needed)} pairs"]
    lines += [f"left out as weak ({p}, {t}): {why}" for (p, t), why in cov.weak.items()]
    if cov.never_observed:
        lines.append("never observed: " + ", ".join(f"({p}, {t})" for p, t in cov.never_observed)
                     + " (--explore places them so they are measured)")
    if done is not None and done.from_fallback:
        lines.append("from the fallback set: " + ", ".join(f"({p}, {t})" for p, t in done.from_fallback))
    if done is not None and done.uncovered:
        lines.append("in no set: " + ", ".join(f"({p}, {t})" for p, t in done.uncovered)
                     + " (give --fallback NAME with a set that has them, or --explore)")
    return lines


def explore_placement(cov: Coverage, machines_by_type: dict[str, list[str]]) -> dict[str, list[Pair]]:
    """Rounds of pairs to measure: each round puts every profile key on at most one machine type it lacks.

    Round r holds, for every profile key, its r-th unobserved machine type (a key runs in one place
    per round, so its component can be pinned there), and only types the cluster has.
    """
    todo: dict[str, list[str]] = {}
    for profile, machine_type in cov.missing:
        if machines_by_type.get(machine_type):
            todo.setdefault(profile, []).append(machine_type)
    rounds: dict[str, list[Pair]] = {}
    depth = max((len(v) for v in todo.values()), default=0)
    for r in range(depth):
        rounds[f"round-{r + 1}"] = [(p, types[r]) for p, types in sorted(todo.items()) if r < len(types)]
    return rounds
