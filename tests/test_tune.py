"""``hetsched tune``'s decisions (spark_profiling.tune): coverage of the pairs, the blended set, --explore rounds."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hetsched.cli import _register, app
from planner.model import ProfileEntry, ProfileSet
from spark_profiling.tune import complete, coverage, coverage_lines, explore_placement

_register()


def entry(profile: str, machine_type: str, e: float = 0.01) -> ProfileEntry:
    return ProfileEntry(profile=profile, machine_type=machine_type, e=e, met=1.0, alpha=1.0)


LIVE = ProfileSet(
    name="linear-live",
    entries=[entry("high", "small", 0.02), entry("spout", "small", 0.001)],
    source={"skipped_pairs": [{"profile": "high", "machine_type": "large", "samples": 40, "verdict": "narrow_range",
                               "reason": "its input rates span 5% of the greatest"}],
            "machine_base_load": {"small": 6.0}},
)
LAB = ProfileSet(
    name="lab",
    entries=[entry(p, t, 0.5) for p in ("high", "spout") for t in ("small", "large")],
    source={"machine_base_load": {"small": 9.0, "large": 2.0}},
)


def test_coverage_names_live_weak_and_never_observed_pairs():
    cov = coverage({"high", "spout"}, {"small", "large"}, LIVE)
    assert cov.live == (("high", "small"), ("spout", "small"))
    assert cov.weak == {("high", "large"): "its input rates span 5% of the greatest"}
    assert cov.never_observed == (("spout", "large"),)
    assert cov.missing == (("high", "large"), ("spout", "large"))
    text = "\n".join(coverage_lines(cov))
    assert "measured live: 2 of 4 pairs" in text
    assert "never observed: (spout, large)" in text and "--explore" in text


def test_no_live_set_means_every_pair_is_never_observed():
    cov = coverage({"high"}, {"small"}, None)
    assert cov.never_observed == (("high", "small"),) and not cov.live


def test_pairs_an_aggregation_judged_weak_without_giving_a_set_are_weak_not_never_observed():
    # A topology at one rate everywhere: the Spark job raises NoPairError with its verdict on each pair it saw.
    cov = coverage({"high", "spout"}, {"small", "large"}, None, {("high", "large"): "narrow_range: 16% spread"})
    assert cov.weak == {("high", "large"): "narrow_range: 16% spread"}
    assert cov.never_observed == (("high", "small"), ("spout", "large"), ("spout", "small"))
    assert "left out as weak (high, large): narrow_range: 16% spread" in coverage_lines(cov)


def test_complete_takes_live_entries_first_and_the_fallback_for_the_rest():
    cov = coverage({"high", "spout"}, {"small", "large"}, LIVE)
    done = complete(LIVE, LAB, cov, "linear-tuned")
    got = {(e.profile, e.machine_type): e.e for e in done.profile_set.entries}
    assert got == {("high", "small"): 0.02, ("spout", "small"): 0.001, ("high", "large"): 0.5, ("spout", "large"): 0.5}
    assert done.from_fallback == (("high", "large"), ("spout", "large"))
    assert done.uncovered == ()
    assert done.profile_set.source["machine_base_load"] == {"large": 2.0, "small": 6.0}
    tune = done.profile_set.source["tune"]
    assert tune["fallback"] == "lab" and tune["from_fallback"] == ["high@large", "spout@large"]
    assert "from the fallback set: (high, large), (spout, large)" in coverage_lines(cov, done)


def test_pairs_in_no_set_are_named():
    cov = coverage({"high", "spout"}, {"small", "large"}, LIVE)
    done = complete(LIVE, None, cov, "linear-tuned")
    assert done.uncovered == (("high", "large"), ("spout", "large"))
    assert coverage_lines(cov, done)[-1].startswith("in no set: (high, large), (spout, large)")


def test_explore_puts_each_profile_key_on_one_missing_type_per_round():
    cov = coverage({"high", "spout", "low"}, {"small", "medium", "large"}, LIVE)
    rounds = explore_placement(cov, {"small": ["small-1"], "medium": ["medium-1"], "large": []})
    assert rounds == {
        "round-1": [("high", "medium"), ("low", "medium"), ("spout", "medium")],
        "round-2": [("low", "small")],
    }


def test_explore_set_makes_the_wanted_type_cheap():
    from hetsched.tune_cmd import _explore_set

    cov = coverage({"high", "spout"}, {"small", "large"}, LIVE)
    bias = _explore_set([("spout", "large")], cov, {"small": ["small-1"], "large": ["large-1"]}, "x")
    costs = {(e.profile, e.machine_type): e.e for e in bias.entries}
    assert costs[("spout", "large")] < costs[("spout", "small")]
    assert costs[("high", "small")] == costs[("high", "large")]


def test_tune_without_a_cluster_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("HETSCHED_CLUSTER_HOME", str(tmp_path / "none"))
    result = CliRunner().invoke(app, ["tune", "linear", "--store", str(tmp_path)])
    assert result.exit_code == 1
    assert "no local cluster is running" in result.output
    assert "Traceback" not in result.output


def test_tune_names_an_unknown_topology(tmp_path):
    result = CliRunner().invoke(app, ["tune", "nosuch", "--store", str(tmp_path)])
    assert result.exit_code == 1 and "nosuch" in result.output


@pytest.mark.parametrize("window", ["5", "-1"])
def test_tune_refuses_a_window_too_short(tmp_path, window):
    result = CliRunner().invoke(app, ["tune", "linear", "--store", str(tmp_path), "--window", window])
    assert result.exit_code == 2
