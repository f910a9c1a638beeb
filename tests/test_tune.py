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
    monkeypatch.delenv("HETSCHED_NIMBUS", raising=False)
    result = CliRunner().invoke(app, ["tune", "linear", "--store", str(tmp_path)])
    assert result.exit_code == 1
    assert "is not running" in result.output and "--nimbus" in result.output
    assert "Traceback" not in result.output


# --- the command against the session's real planner and a scripted Nimbus (tests/test_replan.py's): Linear with
# one executor and four tasks per component, all on the small machine; no records in the store, so every pair
# comes from the lab set given as --fallback.

LINEAR_PROFILES = {"spout": "spout", "low": "lowCompute", "mid": "midCompute", "high": "highCompute"}


class Tuned:
    """What tune did to the scripted cluster: each drained re-placement's wanted placement and conf overrides."""

    def __init__(self, monkeypatch):
        from observe.replacement import ReplacementResult, SpoutTally

        import hetsched.tune_cmd as tune_cmd
        from bench.measure import Throughputs

        self.replaced: list[dict] = []

        def replaced(nimbus, name, wanted, machine_of_host, **kwargs):
            self.replaced.append({"name": name, "wanted": wanted, **kwargs})
            return ReplacementResult(name, {"high": 1}, {c: len(m) for c, m in wanted.items()}, SpoutTally(10, 9, 0),
                                     SpoutTally(10, 10, 0), True, 2.0, 9.0, True, "hetsched: placed by planner")

        class NoNimbus:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return None

        monkeypatch.setattr(tune_cmd, "replace_drained", replaced)
        monkeypatch.setattr(tune_cmd, "connect", lambda address: NoNimbus())
        monkeypatch.setattr(tune_cmd, "_measure", lambda address, topology, window: Throughputs(5.0, 5.0, 5.0, 15.0, 20.0))
        monkeypatch.setattr(tune_cmd, "_spout_tally", lambda address, topology: SpoutTally(50, 50, 0))
        monkeypatch.setattr(tune_cmd.time, "sleep", lambda seconds: None)


def _tune(monkeypatch, tmp_path, planner_service, conf, *args):
    from tests.test_replan import _profiles, _scripted

    fallback = _profiles(planner_service)
    yamls = _scripted(monkeypatch, tmp_path, fallback, conf)
    tuned = Tuned(monkeypatch)
    result = CliRunner().invoke(app, ["tune", "linear", "--store", str(tmp_path), "--fallback", fallback, "--window", "20",
                                      "--planner", planner_service.url, *yamls, *args])
    return result, tuned


def test_a_topology_storm_placed_is_re_placed_drained_by_the_bound_plan_and_given_the_tuned_set(
        monkeypatch, tmp_path, planner_service):
    conf = {"hetsched.topology": "linear", "hetsched.component.profiles": LINEAR_PROFILES}
    result, tuned = _tune(monkeypatch, tmp_path, planner_service, conf, "--put", "linear-tuned-a")
    assert result.exit_code == 0, result.output
    assert len(tuned.replaced) == 1
    done = tuned.replaced[0]
    # no hetsched.profiles in its conf: the plugin would place it evenly, bound plan or not
    assert done["conf_overrides"] == {"hetsched.profiles": "linear-tuned-a"}
    assert all(len(machines) <= 4 for machines in done["wanted"].values())  # four tasks each: the rebalance's limit
    with planner_service.client() as client:
        bound = client.binding("linear")
        plan = client.get_plan(bound["plan_id"])
    assert {c: len(m) for c, m in done["wanted"].items()} == plan.instances
    assert "after (measured)" in result.output and "before (predicted, the placement it ran)" in result.output
    assert "drained re-placement" in result.output and "kill" not in result.output


def test_a_topology_that_names_a_profile_set_keeps_its_conf(monkeypatch, tmp_path, planner_service):
    conf = {"hetsched.profiles": "default-cluster", "hetsched.component.profiles": LINEAR_PROFILES}
    result, tuned = _tune(monkeypatch, tmp_path, planner_service, conf)
    assert result.exit_code == 0, result.output
    assert [r["conf_overrides"] for r in tuned.replaced] == [{}]


def test_a_dry_run_binds_nothing_and_re_places_nothing(monkeypatch, tmp_path, planner_service):
    conf = {"hetsched.component.profiles": LINEAR_PROFILES}
    with planner_service.client() as client:
        bound_before = client.binding("linear")
    result, tuned = _tune(monkeypatch, tmp_path, planner_service, conf, "--dry-run", "--explore")
    assert result.exit_code == 0, result.output
    assert tuned.replaced == [] and "--dry-run: the plan is not applied" in result.output
    with planner_service.client() as client:
        assert client.binding("linear") == bound_before


def test_explore_re_places_drained_once_per_round_with_each_key_on_the_type_it_lacks(monkeypatch, tmp_path, planner_service):
    conf = {"hetsched.component.profiles": LINEAR_PROFILES}
    result, tuned = _tune(monkeypatch, tmp_path, planner_service, conf, "--explore", "--explore-seconds", "20")
    assert result.exit_code == 0, result.output
    # no pair observed: three rounds (one per machine type) and the tuned plan
    assert len(tuned.replaced) == 4
    first = tuned.replaced[0]
    assert {m for machines in first["wanted"].values() for m in machines} == {"m-large-1"}
    assert {c: len(m) for c, m in first["wanted"].items()} == {"spout": 1, "low": 1, "mid": 1, "high": 1}
    assert first["conf_overrides"] == {"hetsched.profiles": "linear-explore"}
    assert tuned.replaced[-1]["conf_overrides"] == {"hetsched.profiles": "linear-tuned"}


def test_tune_names_an_unknown_topology(monkeypatch, tmp_path, planner_service):
    from tests.test_replan import _scripted

    yamls = _scripted(monkeypatch, tmp_path, "default-cluster")
    result = CliRunner().invoke(app, ["tune", "nosuch", "--store", str(tmp_path), *yamls])
    assert result.exit_code == 1
    assert "no topology named 'nosuch' is running on Nimbus nimbus:6627 (running: linear)" in result.output


@pytest.mark.parametrize("window", ["5", "-1"])
def test_tune_refuses_a_window_too_short(tmp_path, window):
    result = CliRunner().invoke(app, ["tune", "linear", "--store", str(tmp_path), "--window", window])
    assert result.exit_code == 2
