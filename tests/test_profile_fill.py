"""Lacking profile pairs estimated from the other machine types' speed (planner.profiles.fill_by_machine_speed)."""
from __future__ import annotations

from pathlib import Path

import pytest

from planner.model import ProfileEntry, ProfileSet
from planner.profiles import FILLED_BY_SPEED, fill_by_machine_speed


def _set(*entries: tuple[str, str, float, float]) -> ProfileSet:
    return ProfileSet(name="s", entries=[ProfileEntry(profile=p, machine_type=t, e=e, met=met, alpha=2.0 if p == "b" else 1.0)
                                         for p, t, e, met in entries])


def test_a_lacking_pair_is_the_median_of_its_estimates_from_every_type_it_was_measured_on():
    # small is 4x slower than large (on a), 2x slower than medium (on c); b lacks small.
    profiles = _set(("a", "large", 0.001, 1.0), ("a", "small", 0.004, 2.0),
                    ("c", "medium", 0.002, 1.0), ("c", "small", 0.004, 2.0),
                    ("b", "large", 0.010, 3.0), ("b", "medium", 0.030, 5.0))
    filled, notes = fill_by_machine_speed(profiles, {"a", "b", "c"}, {"small", "medium", "large"})
    estimate = next(e for e in filled.entries if (e.profile, e.machine_type) == ("b", "small"))
    assert estimate.e == pytest.approx((0.010 * 4 + 0.030 * 2) / 2)  # the median of two estimates
    assert estimate.met == pytest.approx((3.0 * 4 + 5.0 * 2) / 2)
    assert estimate.alpha == 2.0 and estimate.r2 is None
    record = filled.source[FILLED_BY_SPEED]["b@small"]
    assert {r["from"]: r["ratio"] for r in record} == {"b@large": 4.0, "b@medium": 2.0}
    assert any(n.startswith("(b, small) estimated at e 50.000 ms") for n in notes)


def test_a_pair_with_no_profile_measured_on_both_types_stays_lacking_and_a_complete_set_is_unchanged():
    profiles = _set(("a", "large", 0.001, 1.0), ("b", "small", 0.004, 2.0))
    filled, notes = fill_by_machine_speed(profiles, {"a", "b"}, {"small", "large"})
    assert filled is profiles and notes == []
    complete = _set(("a", "large", 0.001, 1.0), ("a", "small", 0.004, 1.0))
    assert fill_by_machine_speed(complete, {"a"}, {"small", "large"}) == (complete, [])


def test_the_bench_fills_only_when_asked_and_says_so(tmp_path):
    from bench.errors import BenchError
    from bench.experiment import _adjust_profiles, _require_profiles
    from bench.settings import BenchSettings
    from cluster.spec import load_spec
    from observe.progress import QuietReporter
    from planner.profiles import MACHINE_BASE_LOAD

    spec = load_spec(None)
    base = ProfileSet.model_validate_json((Path(__file__).resolve().parents[1] / "profiles" / "default-cluster.json").read_text())
    lacking = base.model_copy(update={"entries": [e for e in base.entries
                                                  if (e.profile, e.machine_type) != ("highCompute", "small")]})
    assert MACHINE_BASE_LOAD in lacking.source
    plain = BenchSettings(out_dir=tmp_path, topologies=("linear",))
    with pytest.raises(BenchError, match="lacks highCompute on small"):
        _require_profiles(lacking, plain, spec, "test")
    filling = BenchSettings(out_dir=tmp_path, topologies=("linear",), fill_by_speed=True)
    _require_profiles(lacking, filling, spec, "test")

    class Say(QuietReporter):
        said: list[str] = []

        def log(self, message: str) -> None:
            self.said.append(message)

    filled = _adjust_profiles(lacking, filling, spec, "test", Say())
    assert ("highCompute", "small") in {(e.profile, e.machine_type) for e in filled.entries}
    assert any("(highCompute, small) estimated" in s for s in Say.said)
