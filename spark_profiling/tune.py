"""What ``hetsched tune`` decides between measuring and planning: pure functions over profile sets.

A running topology's records give profiles only for the (profile key, machine type) pairs it ran
on, at the rates it ran at. The planner refuses a request that needs a pair the set lacks, so
tune names each pair the live set does not cover (never observed, or observed but left out as
weak) and plans with the live entries where they exist and the fallback set's (a lab profile
set) for the rest, saying which came from where. ``--explore`` places the pairs never observed; a pair still
in no set is estimated from its key's cost on the other machine types, moved by their measured relative speed.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from planner.model import ProfileEntry, ProfileSet
from planner.profiles import MACHINE_BASE_LOAD, fill_by_machine_speed

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
    profile_set: ProfileSet | None
    """None when no pair is in either set (nothing to plan with)."""
    from_fallback: tuple[Pair, ...]
    uncovered: tuple[Pair, ...]
    """Pairs no set has and no estimate reaches: the planner will refuse a plan that needs them."""
    by_speed: tuple[Pair, ...] = ()
    """Pairs estimated from the same key on other machine types (:func:`fill_by_speed`)."""


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
    blended: dict = {
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
    profile_set = ProfileSet(name=name, entries=entries, source=blended) if entries else None
    return Completed(profile_set, tuple(filled), tuple(uncovered))


def fill_by_speed(done: Completed, machine_types: set[str]) -> tuple[Completed, list[str]]:
    """``done`` with its uncovered pairs estimated by :func:`planner.profiles.fill_by_machine_speed`, and one note per
    pair estimated.

    An operator's topology tried from cold can leave a pair in no set even after exploring (a key that saturates a
    small machine gives too few intervals there). Refusing to plan then leaves the topology where Storm put it; an
    estimate gives a plan, and the tune's measured before/after check undoes a plan the estimate misled.
    A pair whose key was measured on no other type, or no key on both types, stays uncovered.
    """
    if not done.uncovered or done.profile_set is None:
        return done, []
    profile_set, notes = fill_by_machine_speed(done.profile_set, {p for p, _ in done.uncovered}, machine_types)
    have = {(e.profile, e.machine_type) for e in profile_set.entries}
    by_speed = tuple(p for p in done.uncovered if p in have)
    if not by_speed:
        return done, []
    tune_source = {**profile_set.source.get("tune", {}), "by_machine_speed": [f"{p}@{t}" for p, t in by_speed]}
    profile_set = profile_set.model_copy(update={"source": {**profile_set.source, "tune": tune_source}})
    return Completed(profile_set, done.from_fallback, tuple(p for p in done.uncovered if p not in have), by_speed), notes


def coverage_lines(cov: Coverage, done: Completed | None = None) -> list[str]:
    """What an operator reads about the pairs: measured live, left out as weak, never observed, filled."""
    lines = [f"measured live: {len(cov.live)} of {len(cov.needed)} pairs"]
    lines += [f"left out as weak ({p}, {t}): {why}" for (p, t), why in cov.weak.items()]
    if cov.never_observed:
        lines.append("never observed: " + ", ".join(f"({p}, {t})" for p, t in cov.never_observed)
                     + " (--explore places them so they are measured)")
    if done is not None and done.from_fallback:
        lines.append("from the fallback set: " + ", ".join(f"({p}, {t})" for p, t in done.from_fallback))
    if done is not None and done.by_speed:
        lines.append("estimated by machine speed: " + ", ".join(f"({p}, {t})" for p, t in done.by_speed)
                     + " (from the same key on the other machine types; the plan is measured before it is kept)")
    if done is not None and done.uncovered:
        lines.append("in no set: " + ", ".join(f"({p}, {t})" for p, t in done.uncovered)
                     + " (give --fallback NAME with a set that has them, or --explore)")
    return lines


def scale_stale(live: ProfileSet, previous: ProfileSet) -> tuple[ProfileSet, dict[str, float]]:
    """``previous`` with each key's entries the live set did not measure again scaled by how that key's measured ones
    changed (the median of new ``e`` / old ``e`` over its pairs measured in both), and the factor per key.

    A cost that changes while a topology runs (a bolt whose work per tuple doubles) changes on every machine type,
    but only the types the key runs on now are measured again: kept as they were, the others would look cheap and
    the re-plan would move the component onto them (heldout-streamparse's first watch re-plan, 2026-11-27).

    Only rises are carried over (factors under 1 are reported but not applied): a pair not measured again never
    gets cheaper. A key whose cost per tuple fell where it ran (less garbage at a lower rate, say) need not have
    fallen elsewhere, and a cost made lower on paper draws the re-plan onto that machine (the watch of 2026-11-28
    scaled heldoutWindow's small pair by 0.64, moved an instance there, and ran at 0.48x).
    """
    fresh = {(e.profile, e.machine_type): e for e in live.entries}
    factors: dict[str, float] = {}
    for profile in sorted({e.profile for e in previous.entries}):
        ratios = sorted(fresh[(e.profile, e.machine_type)].e / e.e for e in previous.entries
                        if e.profile == profile and (e.profile, e.machine_type) in fresh and e.e > 0)
        if ratios:
            mid = len(ratios) // 2
            factors[profile] = ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2
    entries = [e.model_copy(update={"e": e.e * factors[e.profile]})
               if (e.profile, e.machine_type) not in fresh and factors.get(e.profile, 1.0) > 1.0 else e
               for e in previous.entries]
    return previous.model_copy(update={"entries": entries}), factors


Placement = dict[str, list[str]]
"""Component -> machine of executor 0, 1, ... (task order), as ``hetsched.replan.placement_of_plan`` gives it."""


@dataclass(frozen=True)
class ComponentShape:
    """What an explore round may do with one component: its profile key, executors now and tasks (the most it may have)."""

    profile: str
    executors: int
    tasks: int


def explore_rounds(missing: tuple[Pair, ...] | list[Pair], shapes: dict[str, ComponentShape], start: Placement,
                   machines_by_type: dict[str, list[str]]) -> list[Placement]:
    """Placements that run every missing (profile key, machine type) pair, each round moving as little as it can.

    A component lends ONE executor to each machine type its key lacks and keeps the rest where they
    ran, so a slow machine gets a share of each stream, not all of it (it stays near, not far past,
    its quota), and the component's other executors keep the topology flowing. A component that has
    fewer executors than types to visit is raised towards its task count (a rebalance can, up to
    it); where even that is short, the types are visited over several rounds. Components sharing a
    key share its pairs: the first (by id) visits them. Types without a machine are not visited.
    """
    todo: dict[str, list[str]] = {}
    for profile, machine_type in missing:
        if machines_by_type.get(machine_type):
            todo.setdefault(profile, []).append(machine_type)
    visitor: dict[str, str] = {}
    for component in sorted(shapes):
        visitor.setdefault(shapes[component].profile, component)
    plans: dict[str, list[list[str]]] = {}
    for profile, types in todo.items():
        visiting = visitor.get(profile)
        if visiting is None:
            continue
        shape = shapes[visiting]
        width = max(1, min(shape.tasks, max(shape.executors, len(types))))
        plans[visiting] = [sorted(set(types))[i:i + width] for i in range(0, len(set(types)), width)]
    rounds: list[Placement] = []
    for r in range(max((len(chunks) for chunks in plans.values()), default=0)):
        placement: Placement = {}
        for component, machines in start.items():
            chunks = plans.get(component, [])
            visit = chunks[r] if r < len(chunks) else []
            known = shapes.get(component)
            count = max(len(machines), len(visit)) if known is None else max(len(machines), min(known.tasks, len(visit)))
            kept = [machines[i % len(machines)] for i in range(count)] if machines else []
            placed = [machines_by_type[t][0] for t in visit] + kept[len(visit):]
            placement[component] = placed[:count]
        rounds.append(placement)
    return rounds


def without_lost(placement: Placement, lost: Mapping[str, str], alive: Mapping[str, tuple[str, float]]) -> Placement:
    """``placement`` with every executor of a machine that left the cluster moved onto one that is still in it.

    ``lost``: machine id -> its machine type; ``alive``: machine id -> (machine type, cores). A lost machine's
    executors go to the machines of its type still in the cluster (round-robin), else to those of the type with the
    most cores: the nearest thing to the placement that ran, so a tune that cannot go on still puts the topology back
    where it ran, less what is gone.
    """
    if not alive:
        raise ValueError("no machine is left to place on")
    by_type: dict[str, list[str]] = {}
    for machine, (machine_type, _) in sorted(alive.items()):
        by_type.setdefault(machine_type, []).append(machine)
    biggest = max(alive.values(), key=lambda tc: (tc[1], tc[0]))[0]
    turn: dict[str, int] = {}
    out: Placement = {}
    for component, machines in placement.items():
        placed = []
        for m in machines:
            if m in alive and m not in lost:
                placed.append(m)
                continue
            target_type = lost.get(m, "") if by_type.get(lost.get(m, "")) else biggest
            targets = by_type[target_type]
            placed.append(targets[turn.get(target_type, 0) % len(targets)])
            turn[target_type] = turn.get(target_type, 0) + 1
        out[component] = placed
    return out


@dataclass(frozen=True)
class Verdict:
    """Whether the tuned placement stays: measured against the rate the topology ran at before the tune."""

    keep: bool
    ratio: float
    """After over before (inf when before was 0)."""
    reason: str


def never_worse(before: float, after: float, noise: float) -> Verdict:
    """Keep the new placement unless it measured more than ``noise`` (0.10: 10 %) under the starting one.

    ``noise`` is the spread of one placement's rate from window to window on this cluster: a
    shortfall inside it is not evidence the plan is worse.
    """
    if before <= 0:
        return Verdict(after > 0, float("inf") if after > 0 else 1.0,
                       "the starting placement carried no tuples" if after > 0 else "neither placement carried tuples")
    ratio = after / before
    if ratio > 1.0 + noise:
        return Verdict(True, ratio, f"measured {ratio:.2f}x the starting placement's rate")
    if ratio >= 1.0 - noise:
        return Verdict(True, ratio, f"measured {ratio:.2f}x the starting placement's rate (within the {noise:.0%} "
                                    "noise of it)")
    return Verdict(False, ratio, f"measured {ratio:.2f}x the starting placement's rate, more than the {noise:.0%} "
                                 "noise under it")


@dataclass(frozen=True)
class WatchDecision:
    """One look of ``hetsched tune --watch``: the drift and what was done about it, with why."""

    action: str
    """``calibrate``, ``steady``, ``drifting`` (under, not yet for long), ``above`` (over, not yet for long),
    ``recalibrate`` (over for long: the reference rises), ``hold`` (a re-place due but too soon) or ``replan``."""
    drift: float
    """Measured over the calibrated prediction, less 1 (-0.3: 30 % under)."""
    reason: str


def watch_decision(measured: float, predicted: float, calibration: float | None, drifting_for: int, threshold: float,
                   patience: int, since_last_replace_s: float, min_interval_s: float) -> WatchDecision:
    """What the watch does with one window's rate against the placement's prediction.

    The first window after a placement calibrates (its measured/predicted ratio): a model error that
    stays the same does not call for re-placing; a change in the topology's costs moves the ratio.
    ``drifting_for`` counts the windows in a row before this one beyond the threshold in this one's
    direction. A rate under the reference for ``patience`` windows re-plans, unless the last
    re-placement was less than ``min_interval_s`` ago; a rate above it for as long raises the
    reference (a topology that runs better than expected, e.g. one still warming up when it was
    calibrated, is not re-placed for it).
    """
    if predicted <= 0:
        return WatchDecision("steady", 0.0, "no prediction to compare with (the plan sustains no rate)")
    if calibration is None:
        return WatchDecision("calibrate", 0.0, f"first window after the placement: measured {measured:.2f} against "
                                               f"predicted {predicted:.2f} tuples/s ({measured / predicted:.2f}x) is the "
                                               "reference")
    drift = measured / (predicted * calibration) - 1.0
    if abs(drift) <= threshold:
        return WatchDecision("steady", drift, f"drift {drift:+.0%} within {threshold:.0%}")
    if drift > 0:
        if drifting_for + 1 < patience:
            return WatchDecision("above", drift, f"drift {drift:+.0%} above the reference for {drifting_for + 1} of "
                                                 f"{patience} windows")
        return WatchDecision("recalibrate", drift, f"drift {drift:+.0%} above the reference for {drifting_for + 1} "
                                                   f"windows: the reference rises to {measured:.2f} tuples/s")
    if drifting_for + 1 < patience:
        return WatchDecision("drifting", drift, f"drift {drift:+.0%} beyond {threshold:.0%} for {drifting_for + 1} of "
                                                f"{patience} windows")
    if since_last_replace_s < min_interval_s:
        return WatchDecision("hold", drift, f"drift {drift:+.0%} for {drifting_for + 1} windows, but the last "
                                            f"re-placement was {since_last_replace_s:.0f} s ago (at least "
                                            f"{min_interval_s:.0f} s between re-placements)")
    return WatchDecision("replan", drift, f"drift {drift:+.0%} beyond {threshold:.0%} for {drifting_for + 1} windows: "
                                          "profile again from the records since the drift began and re-plan")
