"""The plain-text summary of an aggregation run, for people reading a terminal or a log."""
from __future__ import annotations

from planner.model import ProfileSet


def headline(profile_set: ProfileSet) -> str:
    source = profile_set.source
    spark = source.get("spark", {})
    return (
        f"profile set {profile_set.name!r}: {len(profile_set.entries)} pairs from {source.get('rows', '?')} rows "
        f"({source.get('valid_rows', '?')} valid, {source.get('intervals', {}).get('used', '?')} intervals) "
        f"in {source.get('elapsed_s', '?')} s on Spark {spark.get('version', '?')} ({spark.get('master', '?')})"
    )


def notes(profile_set: ProfileSet) -> list[str]:
    """What was skipped, dropped or changed on the way: bad rows, dropped intervals, left-out pairs, clamps."""
    source = profile_set.source
    lines = [f"bad rows skipped: {count} {reason}" for reason, count in source.get("bad_rows", {}).items()]
    intervals = source.get("intervals", {})
    for kind in ("counter_reset", "non_increasing_ts"):
        if intervals.get(kind):
            lines.append(f"intervals dropped: {intervals[kind]} {kind}")
    for pair, count in source.get("outliers", {}).items():
        lines.append(f"outliers dropped: {count} interval(s) of {pair.replace('@', ' on ')} off its robust line")
    for pair, count in source.get("at_quota", {}).items():
        lines.append(f"intervals left out: {count} of {pair.replace('@', ' on ')} ran on a machine at its CPU quota")
    for machine_type, rest in source.get("worker_rest", {}).items():
        lines.append(f"worker rest on {machine_type}: {rest['percent']:g} % of the machine ({rest['intervals']} worker intervals), "
                     "planned as its base load")
    for pair, fall in source.get("thread_idle_fall", {}).items():
        lines.append(f"{pair.replace('@', ' on ')}: its executor threads' CPU fell by {fall:.4g} % per tuple/s as the rate rose "
                     "(idle wake-ups), charged as a constant, not as a negative cost per tuple")
    for s in source.get("skipped_pairs", []):
        lines.append(f"left out ({s['profile']}, {s['machine_type']}), {s.get('verdict', 'no_fit')}: {s['reason']}")
    for c in source.get("clamped", []):
        lines.append(f"clamped ({c['profile']}, {c['machine_type']}) {c['field']}: fitted {c['fitted']:.4g}, used {c['used']:g}")
    return lines


def summary_lines(profile_set: ProfileSet) -> list[str]:
    lines = [headline(profile_set)]
    for e in profile_set.entries:
        r2 = "-" if e.r2 is None else f"{e.r2:.3f}"
        low, high = e.rate_range or (0.0, 0.0)
        lines.append(
            f"  {e.profile:<20} {e.machine_type:<12} e={e.e:.6g} s/tuple  met={e.met:.3f} %  "
            f"alpha={e.alpha:.3f}  r2={r2}  samples={e.samples}  rates {low:.1f}..{high:.1f} tuples/s"
        )
    return lines + [f"  {line}" for line in notes(profile_set)]
