"""Which profile set a bench plans and predicts with: a shipped one, a file, or one measured now."""
from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from bench.errors import BenchError
from planner.errors import PlanningError
from planner.files import describe_validation_error, read_document
from planner.model import ProfileSet

REPO = Path(__file__).resolve().parents[1]
SHIPPED_DIR = REPO / "profiles"
"""Profile sets measured on a known cluster and kept in the repository (``profiles/<name>.json``)."""


def shipped_names() -> list[str]:
    return sorted(p.stem for p in SHIPPED_DIR.glob("*.json")) if SHIPPED_DIR.is_dir() else []


def resolve_path(ref: str) -> Path:
    """A file path as given, else the shipped set of that name."""
    path = Path(ref).expanduser()
    if path.is_file():
        return path
    shipped = SHIPPED_DIR / f"{ref}.json"
    if shipped.is_file():
        return shipped
    known = shipped_names()
    raise BenchError(
        f"no profile set {ref!r}: it is neither a file nor a shipped set in {SHIPPED_DIR}"
        + (f" (shipped: {', '.join(known)})" if known else " (none is shipped yet)")
        + "; give a ProfileSet file, or measure one on the cluster with --profile-now"
    )


def load_profile_set(ref: str) -> tuple[ProfileSet, Path]:
    """The ProfileSet named by ``ref`` and the file it came from; a set without a name takes the file's stem."""
    path = resolve_path(ref)
    try:
        data = read_document(path, "profile set")
    except PlanningError as exc:
        raise BenchError(str(exc)) from None
    if isinstance(data, list):
        data = {"entries": data}
    if not isinstance(data, dict) or "entries" not in data:
        raise BenchError(f"the profile set file {path} holds no 'entries'")
    data = {"name": path.stem, **data}
    try:
        return ProfileSet.model_validate(data), path
    except ValidationError as exc:
        raise BenchError(f"the profile set file {path}: {describe_validation_error(exc)}") from None


def missing_pairs(profile_set: ProfileSet, profiles: set[str], machine_types: set[str]) -> list[str]:
    """(profile key, machine type) pairs a bench needs that the set lacks, as 'key on type'."""
    have = {(e.profile, e.machine_type) for e in profile_set.entries}
    return [f"{p} on {t}" for p in sorted(profiles) for t in sorted(machine_types) if (p, t) not in have]


def require_pairs(profile_set: ProfileSet, profiles: set[str], machine_types: set[str], origin: str) -> None:
    missing = missing_pairs(profile_set, profiles, machine_types)
    if missing:
        raise BenchError(
            f"the profile set {profile_set.name!r} ({origin}) lacks {', '.join(missing)}: it was not measured on this "
            "cluster's machine types or for these topologies; use a set measured on this cluster, or --profile-now"
        )


def fill_pass_through_alphas(profile_set: ProfileSet, topologies: list[str]) -> tuple[ProfileSet, list[str]]:
    """The set with alpha 1 for pass-through kinds it saw only as sinks; and a note per kind changed.

    A compute bolt forwards every tuple when someone subscribes to it and emits nothing as a sink
    (topologies.bolts.ComputeBolt), so a kind profiled only as a sink (``highCompute`` in Linear)
    has a measured alpha of 0 that does not hold where it feeds others (``high`` in Star). Kinds of
    other classes with alpha 0 where they feed others are refused: their alpha is unknown.
    """
    from topologies.bolts import ComputeBolt
    from topologies.catalog import lookup
    from topologies.measure import roles

    zero = {e.profile for e in profile_set.entries if e.alpha == 0}
    zero -= {e.profile for e in profile_set.entries if e.alpha > 0}
    fixed: set[str] = set()
    for name in topologies:
        entry = lookup(name)
        for component, role in roles(entry).items():
            kind = entry.profiles()[component]
            if kind not in zero or role != "bolt":  # a spout's output is R, whatever its alpha
                continue
            if not issubclass(entry.component_class(component), ComputeBolt):
                raise BenchError(
                    f"the profile set {profile_set.name!r} says {kind} emits nothing (alpha 0), but in {name} "
                    f"{component} feeds other components: profile {kind} where it has subscribers (--profile-now)"
                )
            fixed.add(kind)
    if not fixed:
        return profile_set, []
    entries = [e.model_copy(update={"alpha": 1.0}) if e.profile in fixed else e for e in profile_set.entries]
    notes = [f"{kind}: alpha 0 (profiled only as a sink, where a compute bolt emits nothing) taken as 1 where it "
             "has subscribers (a compute bolt forwards every tuple)" for kind in sorted(fixed)]
    source = {**profile_set.source, "bench_adjustments": notes}
    return profile_set.model_copy(update={"entries": entries, "source": source}), notes
