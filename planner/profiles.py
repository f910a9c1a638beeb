"""The profile table: the cost of one profile key on one machine type (docs/concepts/model.md, "Profile").

A ProfileSet arrives as a flat list of entries; the planner looks them up by
(profile key, machine type) all the time, so they are indexed once here.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

from planner.errors import PlanningError
from planner.model import ProfileEntry, ProfileSet


class ProfileTable:
    """Profile entries indexed by (profile key, machine type); read-only once built."""

    def __init__(self, by_pair: dict[tuple[str, str], ProfileEntry]):
        self._by_pair = dict(by_pair)
        self._types_of: dict[str, list[str]] = {}
        for profile, machine_type in self._by_pair:
            self._types_of.setdefault(profile, []).append(machine_type)
        self._idle_met: dict[str, float] = {}
        for (_, machine_type), entry in self._by_pair.items():
            self._idle_met[machine_type] = max(self._idle_met.get(machine_type, 0.0), entry.idle_met)
        self._alpha = {
            profile: sum(self._by_pair[(profile, t)].alpha for t in types) / len(types)
            for profile, types in self._types_of.items()
        }

    @classmethod
    def from_entries(cls, entries: Iterable[ProfileEntry]) -> ProfileTable:
        """Index the entries; the same (profile, machine type) pair twice is a fault, not a silent overwrite."""
        by_pair: dict[tuple[str, str], ProfileEntry] = {}
        for entry in entries:
            pair = (entry.profile, entry.machine_type)
            if pair in by_pair:
                raise PlanningError(
                    f"the profiles give {entry.profile} on machine type {entry.machine_type} twice"
                )
            by_pair[pair] = entry
        return cls(by_pair)

    def get(self, profile: str, machine_type: str) -> ProfileEntry | None:
        return self._by_pair.get((profile, machine_type))

    def has_profile(self, profile: str) -> bool:
        return profile in self._types_of

    def alpha(self, profile: str) -> float:
        """Output tuples per input tuple of a profile key.

        docs/concepts/model.md makes alpha a property of the key, not of the machine type; the
        measured entries of one key may differ slightly per type, so their mean is used.
        """
        try:
            return self._alpha[profile]
        except KeyError:
            raise PlanningError(f"no profile for {profile} on any machine type") from None

    def idle_met(self, machine_type: str) -> float:
        """An idle executor thread's percent of a machine of this type (the most any entry of the type gives; 0 where
        none does): what a system executor without a profile, such as ``__acker``, is charged."""
        return self._idle_met.get(machine_type, 0.0)

    def machine_types_of(self, profile: str) -> list[str]:
        """Machine types that have an entry for this profile key, in entry order."""
        return list(self._types_of.get(profile, []))

    @property
    def profiles(self) -> list[str]:
        return list(self._types_of)

    def entries(self) -> list[ProfileEntry]:
        return list(self._by_pair.values())

    def __len__(self) -> int:
        return len(self._by_pair)


MACHINE_BASE_LOAD = "machine_base_load"
"""Key of a ProfileSet's ``source``: machine type -> its base load, percent of the machine.

What a machine spends with nothing to do (its supervisor and worker JVM), measured by the
profiling job and kept out of every instance's ``MET`` so that it is counted once per machine,
not once per instance. A caller plans on ``capacity = 100 - base load`` (docs/operations/profiling.md).
"""


def machine_base_load(profile_set: ProfileSet) -> dict[str, float]:
    """The set's base load per machine type (empty for a set without one, e.g. the paper's tables)."""
    raw = (profile_set.source or {}).get(MACHINE_BASE_LOAD)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise PlanningError(f"profile set {profile_set.name}: source.{MACHINE_BASE_LOAD} must map machine types to percent")
    loads: dict[str, float] = {}
    for machine_type, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 100.0:
            raise PlanningError(
                f"profile set {profile_set.name}: the base load of machine type {machine_type} must be a "
                f"percent from 0 up to (not including) 100, not {value!r}"
            )
        loads[str(machine_type)] = float(value)
    return loads


IDLE_MET = "idle_met"
"""Key of a ProfileSet's ``source``: where its entries' ``idle_met`` came from (machine type -> percent of the
machine, and the run that measured it; docs/concepts/model.md, "Idle executor threads")."""


def with_idle_met(profile_set: ProfileSet, idle_met: dict[str, float], measured_in: str) -> ProfileSet:
    """The set with every entry of a machine type given that type's ``idle_met`` (percent of the machine), and the
    levels recorded in ``source.idle_met``; a type not named keeps its entries' own value."""
    bad = {t: v for t, v in idle_met.items() if isinstance(v, bool) or not isinstance(v, (int, float))
           or not 0.0 <= v <= 100.0}
    if bad:
        raise PlanningError(f"idle_met must be a percent from 0 to 100 per machine type, not {bad!r}")
    entries = [e.model_copy(update={"idle_met": round(float(idle_met[e.machine_type]), 4)}) if e.machine_type in idle_met else e
               for e in profile_set.entries]
    source = {**profile_set.source, IDLE_MET: {"percent_of_machine": {t: round(v, 4) for t, v in sorted(idle_met.items())},
                                               "measured_in": measured_in}}
    return profile_set.model_copy(update={"entries": entries, "source": source})


FILLED_BY_SPEED = "filled_by_machine_speed"
"""Key of a ProfileSet's ``source``: the pairs :func:`fill_by_machine_speed` estimated, each with where it came from."""


def fill_by_machine_speed(profile_set: ProfileSet, profiles: set[str], machine_types: set[str]
                          ) -> tuple[ProfileSet, list[str]]:
    """The set with each lacking (profile, machine type) pair estimated from the same profile on the other machine
    types, each scaled by how much slower the lacking type is than it on the profiles measured on both (the median
    ratio of their ``e``), the estimates' median taken; and one note per pair filled.

    A profiling run can leave a pair out (a kind that saturates a small machine at the lowest rate gives too few
    intervals; a poor fit): rather than no plan at all, the planner gets the kind's cost where it was measured,
    moved by the machines' relative speed. ``e``, ``met``, ``idle_met`` and the remote costs scale; ``alpha`` is the
    kind's own. A pair with no profile measured on both types stays lacking.
    """
    entries = {(e.profile, e.machine_type): e for e in profile_set.entries}
    kinds = {p for p, _ in entries}
    scaled = ("e", "met", "idle_met", "remote_send", "remote_receive")
    filled: list[ProfileEntry] = []
    notes: list[str] = []
    record: dict[str, list[dict[str, Any]]] = {}
    for profile in sorted(profiles):
        for machine_type in sorted(machine_types):
            if (profile, machine_type) in entries:
                continue
            estimates: list[tuple[ProfileEntry, float, list[str]]] = []
            for reference in sorted(machine_types):
                if reference == machine_type or (profile, reference) not in entries:
                    continue
                shared = sorted(k for k in kinds if (k, machine_type) in entries and (k, reference) in entries
                                and entries[(k, reference)].e > 0)
                if shared:
                    ratio = statistics.median(entries[(k, machine_type)].e / entries[(k, reference)].e for k in shared)
                    estimates.append((entries[(profile, reference)], ratio, shared))
            if not estimates:
                continue
            values = {f: statistics.median(getattr(src, f) * ratio for src, ratio, _ in estimates) for f in scaled}
            values["idle_met"] = min(100.0, values["idle_met"])
            filled.append(estimates[0][0].model_copy(update={
                **values, "machine_type": machine_type, "alpha": statistics.median(src.alpha for src, _, _ in estimates),
                "r2": None, "samples": None, "rate_range": None}))
            record[f"{profile}@{machine_type}"] = [
                {"from": f"{profile}@{src.machine_type}", "ratio": round(ratio, 4), "profiles": shared}
                for src, ratio, shared in estimates]
            notes.append(f"({profile}, {machine_type}) estimated at e {values['e'] * 1000:.3f} ms from "
                         + "; ".join(f"({profile}, {src.machine_type}) x {ratio:.2f} (speed on {', '.join(shared)})"
                                     for src, ratio, shared in estimates))
    if not filled:
        return profile_set, []
    source = {**profile_set.source, FILLED_BY_SPEED: record}
    return profile_set.model_copy(update={"entries": [*profile_set.entries, *filled], "source": source}), notes
