"""``hetsched tune``'s decisions (spark_profiling.tune): coverage of the pairs, the blended set, --explore rounds."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hetsched.cli import _register, app
from planner.model import ProfileEntry, ProfileSet
from spark_profiling.tune import (ComponentShape, complete, coverage, coverage_lines, explore_rounds, fill_by_speed, never_worse,
                                  watch_decision)

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


def test_a_pair_in_no_set_is_estimated_from_its_key_on_another_type_moved_by_the_types_speed():
    live = LIVE.model_copy(update={"entries": [*LIVE.entries, entry("spout", "large", 0.0005)]})
    cov = coverage({"high", "spout"}, {"small", "large"}, live)
    done, notes = fill_by_speed(complete(live, None, cov, "linear-tuned"), {"small", "large"})
    assert done.uncovered == () and done.by_speed == (("high", "large"),)
    got = {(e.profile, e.machine_type): e.e for e in done.profile_set.entries}
    assert got[("high", "large")] == pytest.approx(0.02 * 0.0005 / 0.001)  # large runs spout in half small's time
    assert done.profile_set.source["tune"]["by_machine_speed"] == ["high@large"]
    assert len(notes) == 1 and "(high, small) x 0.50" in notes[0]
    assert "estimated by machine speed: (high, large)" in "\n".join(coverage_lines(cov, done))


def test_a_pair_with_no_key_measured_on_both_types_stays_in_no_set():
    cov = coverage({"high", "spout"}, {"small", "large"}, LIVE)
    done = complete(LIVE, None, cov, "linear-tuned")
    assert fill_by_speed(done, {"small", "large"}) == (done, [])
    nothing = complete(None, None, cov, "x")
    assert fill_by_speed(nothing, {"small", "large"}) == (nothing, [])


def test_explore_lends_one_executor_to_each_missing_type_and_keeps_the_rest():
    shapes = {"spout": ComponentShape("spout", 1, 4), "high": ComponentShape("high", 2, 4), "low": ComponentShape("low", 1, 1)}
    start = {"spout": ["l-1"], "high": ["l-1", "l-1"], "low": ["l-1"]}
    missing = [("spout", "small"), ("spout", "medium"), ("high", "small"), ("low", "small"), ("low", "medium")]
    rounds = explore_rounds(missing, shapes, start, {"small": ["s-1"], "medium": ["m-1"], "large": ["l-1"]})
    # spout: raised to two executors (it has four tasks), one on each type it lacks; high: one lent to small, one kept;
    # low has one task: two rounds, one type each
    assert rounds == [
        {"spout": ["m-1", "s-1"], "high": ["s-1", "l-1"], "low": ["m-1"]},
        {"spout": ["l-1"], "high": ["l-1", "l-1"], "low": ["s-1"]},
    ]


def test_explore_skips_types_without_a_machine_and_needs_no_round_when_nothing_is_missing():
    shapes = {"spout": ComponentShape("spout", 1, 1)}
    assert explore_rounds([("spout", "gpu")], shapes, {"spout": ["l-1"]}, {"gpu": [], "large": ["l-1"]}) == []
    assert explore_rounds([], shapes, {"spout": ["l-1"]}, {"large": ["l-1"]}) == []


@pytest.mark.parametrize("before, after, keep", [(40.0, 37.0, True), (40.0, 35.0, False), (40.0, 90.0, True),
                                                 (0.0, 5.0, True), (0.0, 0.0, False)])
def test_never_worse_keeps_a_plan_only_within_the_noise_of_the_start(before, after, keep):
    verdict = never_worse(before, after, 0.10)
    assert verdict.keep is keep
    assert verdict.reason


def test_watch_calibrates_then_waits_for_a_lasting_drift_and_a_quiet_period():
    first = watch_decision(24.0, 30.0, None, 0, 0.25, 2, 1e9, 600)
    assert first.action == "calibrate"
    cal = 24.0 / 30.0
    assert watch_decision(23.0, 30.0, cal, 0, 0.25, 2, 1e9, 600).action == "steady"
    assert watch_decision(12.0, 30.0, cal, 0, 0.25, 2, 1e9, 600).action == "drifting"
    assert watch_decision(12.0, 30.0, cal, 1, 0.25, 2, 100, 600).action == "hold"
    decision = watch_decision(12.0, 30.0, cal, 1, 0.25, 2, 700, 600)
    assert decision.action == "replan" and decision.drift == pytest.approx(-0.5)
    # running better than the reference is never a reason to re-place
    assert watch_decision(48.0, 30.0, cal, 0, 0.25, 2, 700, 600).action == "above"
    assert watch_decision(48.0, 30.0, cal, 1, 0.25, 2, 700, 600).action == "recalibrate"


def test_complete_with_nothing_to_plan_gives_no_set_and_names_every_pair():
    cov = coverage({"high"}, {"small", "large"}, None)
    done = complete(None, ProfileSet(name="other", entries=[entry("spout", "small")]), cov, "x")
    assert done.profile_set is None
    assert done.uncovered == (("high", "large"), ("high", "small"))


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


HOST_OF = {"m-small-1": "host-s", "m-medium-1": "host-m", "m-large-1": "host-l"}


class Tuned:
    """What tune did to the scripted cluster: each drained re-placement's wanted placement and conf overrides.

    A re-placement moves the scripted executors (as Storm's rebalance would), so the tune sees its own placement;
    ``measured`` gives the rates measured one after the other."""

    def __init__(self, monkeypatch, executors: list, measured: list[float]):
        from types import SimpleNamespace

        import hetsched.tuning as tuning
        from bench.measure import Throughputs
        from observe.replacement import ReplacementResult, SpoutTally

        self.replaced: list[dict] = []
        self.idle: list[str] = []
        rates = iter(measured)

        def replaced(nimbus, name, wanted, machine_of_host, **kwargs):
            self.replaced.append({"name": name, "wanted": wanted, **kwargs})
            task = 1
            executors[:] = []
            for component in ("spout", "low", "mid", "high"):
                machines = wanted[component]
                width = 4 // len(machines)
                for machine in machines:
                    executors.append(SimpleNamespace(component_id=component, executor_info=SimpleNamespace(
                        task_start=task, task_end=task + width - 1), host=HOST_OF[machine], port=6700, uptime_secs=1))
                    task += width
            return ReplacementResult(name, {"high": 1}, {c: len(m) for c, m in wanted.items()}, SpoutTally(10, 9, 0),
                                     SpoutTally(10, 10, 0), True, 2.0, 9.0, True, "hetsched: placed by planner")

        outer = self

        class NoNimbus:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return None

            def deactivate(self, name):
                outer.idle.append(name)

            def activate(self, name):
                pass

            def find(self, name):
                return None

        def measure(tuner, label):
            rate = next(rates)
            return Throughputs(rate, rate, rate, 3 * rate, 4 * rate)

        monkeypatch.setattr(tuning, "replace_drained", replaced)
        monkeypatch.setattr(tuning, "connect", lambda address: NoNimbus())
        monkeypatch.setattr(tuning.Tuner, "measure", measure)
        monkeypatch.setattr(tuning.Tuner, "tally", lambda tuner: SpoutTally(50, 50, 0))
        monkeypatch.setattr(tuning.time, "sleep", lambda seconds: None)


def _tune(monkeypatch, tmp_path, planner_service, conf, *args, measured=(5.0, 9.0, 5.0, 5.0)):
    from tests.test_replan import _profiles, _scripted

    fallback = _profiles(planner_service)
    executors: list = []
    yamls = _scripted(monkeypatch, tmp_path, fallback, conf, executors)
    tuned = Tuned(monkeypatch, executors[0], list(measured))
    result = CliRunner().invoke(app, ["tune", "linear", "--store", str(tmp_path), "--fallback", fallback, "--window", "20",
                                      "--planner", planner_service.url, *yamls, *args])
    return result, tuned


def test_a_topology_storm_placed_is_re_placed_drained_by_the_bound_plan_and_given_the_tuned_set(
        monkeypatch, tmp_path, planner_service):
    conf = {"hetsched.topology": "linear", "hetsched.component.profiles": LINEAR_PROFILES}
    result, tuned = _tune(monkeypatch, tmp_path, planner_service, conf, "--put", "linear-tuned-a", "--no-explore")
    assert result.exit_code == 0, result.output
    assert len(tuned.replaced) == 1
    done = tuned.replaced[0]
    # no hetsched.profiles in its conf: the plugin would place it evenly, bound plan or not
    assert done["conf_overrides"] == {"hetsched.profiles": "linear-tuned-a", "topology.disable.loadaware.messaging": True}
    assert all(len(machines) <= 4 for machines in done["wanted"].values())  # four tasks each: the rebalance's limit
    with planner_service.client() as client:
        bound = client.binding("linear")
        plan = client.get_plan(bound["plan_id"])
    assert {c: len(m) for c, m in done["wanted"].items()} == plan.instances
    assert "after (measured, the plan)" in result.output and "before (predicted)" in result.output
    assert "planned: measured" in result.output and "kill" not in result.output
    assert tuned.idle == ["linear"]  # one idle probe, on the starting placement


def test_a_plan_that_measures_worse_is_undone_drained_and_said(monkeypatch, tmp_path, planner_service):
    conf = {"hetsched.topology": "linear", "hetsched.component.profiles": LINEAR_PROFILES}
    result, tuned = _tune(monkeypatch, tmp_path, planner_service, conf, "--no-explore", measured=(10.0, 6.0, 10.0))
    assert result.exit_code == 0, result.output
    assert len(tuned.replaced) == 2
    back = tuned.replaced[-1]["wanted"]
    assert back == {c: ["m-small-1"] for c in ("spout", "low", "mid", "high")}
    # its own shuffle back, as it ran before
    assert tuned.replaced[-1]["conf_overrides"] == {"topology.disable.loadaware.messaging": False}
    assert "back to the starting placement: the plan measured 0.60x" in result.output
    with planner_service.client() as client:
        bound = client.get_plan(client.binding("linear")["plan_id"])
    assert bound.strategy == "repair" and bound.instances == {"spout": 1, "low": 1, "mid": 1, "high": 1}


def test_a_weighted_topology_is_re_placed_with_its_plans_weights_and_given_its_own_back(
        monkeypatch, tmp_path, planner_service):
    """Issue 33: the workers read the weights from the conf only, so they go with each rebalance that changes them."""
    import re

    from hetsched.replan import plan_shares

    start_shares = {"low->mid": {"host-s": 1.0}}
    conf = {"hetsched.topology": "linear", "hetsched.component.profiles": LINEAR_PROFILES,
            "hetsched.grouping.shares": start_shares}
    result, tuned = _tune(monkeypatch, tmp_path, planner_service, conf, "--no-explore", measured=(10.0, 6.0, 10.0))
    assert result.exit_code == 0, result.output
    planned, back = tuned.replaced
    plan_id = re.search(r"plan (\S+) \(", result.output).group(1)
    with planner_service.client() as client:
        plan = client.get_plan(plan_id)
    assert "weighted_shares" in plan.stats, "a topology on weighted groupings is planned with weighted shares"
    machine_of_host = {host: machine for machine, host in HOST_OF.items()}
    assert planned["conf_overrides"]["hetsched.grouping.shares"] == plan_shares(plan, machine_of_host)
    assert back["conf_overrides"]["hetsched.grouping.shares"] == start_shares
    assert result.output.count("the plan's weights change, so the rebalance sends them") == 2


def test_a_topology_that_names_a_profile_set_is_given_the_tuned_one(monkeypatch, tmp_path, planner_service):
    conf = {"hetsched.profiles": "default-cluster", "hetsched.component.profiles": LINEAR_PROFILES}
    result, tuned = _tune(monkeypatch, tmp_path, planner_service, conf, "--no-explore")
    assert result.exit_code == 0, result.output
    assert [r["conf_overrides"] for r in tuned.replaced] == [
        {"hetsched.profiles": "linear-tuned", "topology.disable.loadaware.messaging": True}]


def test_a_dry_run_binds_nothing_and_re_places_nothing(monkeypatch, tmp_path, planner_service):
    conf = {"hetsched.component.profiles": LINEAR_PROFILES}
    with planner_service.client() as client:
        bound_before = client.binding("linear")
    result, tuned = _tune(monkeypatch, tmp_path, planner_service, conf, "--dry-run")
    assert result.exit_code == 0, result.output
    assert tuned.replaced == [] and tuned.idle == [] and "--dry-run: the plan is not applied" in result.output
    with planner_service.client() as client:
        assert client.binding("linear") == bound_before


def test_explore_lends_executors_then_plans(monkeypatch, tmp_path, planner_service):
    conf = {"hetsched.component.profiles": LINEAR_PROFILES}
    result, tuned = _tune(monkeypatch, tmp_path, planner_service, conf, "--explore-seconds", "20")
    assert result.exit_code == 0, result.output
    # everything ran on small: one round lends each component one executor on each other type (four tasks each)
    first = tuned.replaced[0]
    assert {c: sorted(m) for c, m in first["wanted"].items()} == {
        c: ["m-large-1", "m-medium-1"] for c in ("spout", "low", "mid", "high")}
    assert first["conf_overrides"] == {"hetsched.profiles": "linear-tuned", "topology.disable.loadaware.messaging": True}
    assert tuned.replaced[-1]["conf_overrides"] == {}  # given once
    assert tuned.idle == ["linear", "linear"]  # the start and the explore round
    assert "explore round 1 of 1" in result.output


def test_a_tune_that_cannot_plan_puts_the_topology_back(monkeypatch, tmp_path, planner_service):
    # no fallback, no records: after exploring, no pair is covered, so no plan; the topology goes back drained
    from tests.test_replan import _scripted

    executors: list = []
    yamls = _scripted(monkeypatch, tmp_path, "default-cluster", {"hetsched.component.profiles": LINEAR_PROFILES}, executors)
    tuned = Tuned(monkeypatch, executors[0], [5.0, 5.0])
    result = CliRunner().invoke(app, ["tune", "linear", "--store", str(tmp_path), "--window", "20", "--explore-seconds", "20",
                                      "--planner", planner_service.url, *yamls])
    assert result.exit_code == 1
    assert "no plan: in no set" in result.output and "back on its starting placement" in result.output
    assert tuned.replaced[-1]["wanted"] == {c: ["m-small-1"] for c in ("spout", "low", "mid", "high")}
    assert "Traceback" not in result.output


@pytest.mark.parametrize("fill", [True, False])
def test_a_pair_no_set_has_is_estimated_by_machine_speed_unless_told_not_to(monkeypatch, tmp_path, planner_service, fill):
    from bench.profiles import load_profile_set
    from tests.test_replan import _scripted

    lab, _ = load_profile_set("default-cluster")
    lacking = lab.model_copy(update={"name": "lab-without-high-on-large", "entries": [
        e for e in lab.entries if (e.profile, e.machine_type) != ("highCompute", "large")]})
    with planner_service.client() as client:
        client.put_profile_set(lacking)
    executors: list = []
    yamls = _scripted(monkeypatch, tmp_path, lacking.name, {"hetsched.component.profiles": LINEAR_PROFILES}, executors)
    tuned = Tuned(monkeypatch, executors[0], [5.0, 9.0, 5.0])
    flag = "--fill-by-speed" if fill else "--no-fill-by-speed"
    result = CliRunner().invoke(app, ["tune", "linear", "--store", str(tmp_path), "--fallback", lacking.name, "--window",
                                      "20", "--no-explore", flag, "--planner", planner_service.url, *yamls])
    assert "Traceback" not in result.output
    if fill:
        assert result.exit_code == 0, result.output
        assert "estimated by machine speed: (highCompute, large) estimated at e" in result.output
        assert "planned: measured" in result.output and len(tuned.replaced) == 1
        with planner_service.client() as client:
            stored = client.get_profile_set("linear-tuned")
        assert stored.source["tune"]["by_machine_speed"] == ["highCompute@large"]
    else:
        assert result.exit_code == 1
        assert "no plan: in no set: (highCompute, large)" in result.output and tuned.replaced == []


def test_someone_elses_rebalance_stops_the_tune_and_leaves_the_topology_alone(monkeypatch, tmp_path, planner_service):
    import hetsched.tuning as tuning

    conf = {"hetsched.component.profiles": LINEAR_PROFILES}
    real_measure_calls = []

    def moved_by_someone(tuner, label):
        real_measure_calls.append(label)
        raise tuning.Interference(f"{tuner.name} was re-placed by someone else during the tune",
                                  "the tune stopped and left it as it is")

    from tests.test_replan import _profiles, _scripted

    fallback = _profiles(planner_service)
    executors: list = []
    yamls = _scripted(monkeypatch, tmp_path, fallback, conf, executors)
    tuned = Tuned(monkeypatch, executors[0], [5.0])
    monkeypatch.setattr(tuning.Tuner, "measure", moved_by_someone)
    result = CliRunner().invoke(app, ["tune", "linear", "--store", str(tmp_path), "--planner", planner_service.url, *yamls])
    assert result.exit_code == 1
    assert "re-placed by someone else" in result.output and tuned.replaced == []


def test_a_topology_whose_spouts_emit_nothing_is_not_tuned(monkeypatch, tmp_path, planner_service):
    conf = {"hetsched.component.profiles": LINEAR_PROFILES}
    result, tuned = _tune(monkeypatch, tmp_path, planner_service, conf, measured=(0.0,))
    assert result.exit_code == 1
    assert "emitted no tuple" in result.output and "nothing was changed" in result.output
    assert tuned.replaced == [] and tuned.idle == []


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


def test_watch_logs_every_look_and_re_plans_from_the_records_since_the_drift_began(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import hetsched.tuning as tuning
    import hetsched.watch as watching

    monkeypatch.setattr(tuning.time, "sleep", lambda seconds: None)
    # calibrated low (still warming up), then above for two windows (the reference rises, nothing re-placed), one
    # noisy window under, then under for two: re-planned from the records since the fall began
    asked: list[float] = []
    FakeTuner = _watched_tuner([24.0, 40.0, 40.0, 24.0, 40.0, 20.0, 20.0, 30.0])

    def replan(since, rate_now, running):
        assert rate_now == 20.0 and running.id == "p1"
        asked.append(since)
        return SimpleNamespace(id="p2", input_rate=20.0, sink_throughput=20.0)

    plan = SimpleNamespace(id="p1", input_rate=30.0, sink_throughput=30.0)
    log = tmp_path / "watch.jsonl"
    with pytest.raises(KeyboardInterrupt):
        watching.watch(FakeTuner(), plan, watching.WatchSettings(threshold=0.25, patience=2, min_interval_s=0, log=log), replan)
    looks = [json.loads(line) for line in log.read_text().splitlines()]
    assert [look["action"] for look in looks] == ["calibrate", "above", "recalibrate", "drifting", "steady", "drifting",
                                                  "replan", "calibrate"]
    assert looks[6]["re_placed"] is True and looks[6]["new_plan"] == "p2"
    assert looks[6]["profiled_since"] and len(asked) == 1
    assert looks[-1]["plan"] == "p2"


def test_a_cost_measured_again_scales_the_pairs_of_its_key_not_measured_again():
    from spark_profiling.tune import scale_stale

    previous = ProfileSet(name="s", entries=[entry("drift", "small", 0.02), entry("drift", "large", 0.005),
                                             entry("gate", "small", 0.001)])
    live = ProfileSet(name="s-live", entries=[entry("drift", "large", 0.010)])
    scaled, factors = scale_stale(live, previous)
    assert factors == {"drift": 2.0}
    got = {(e.profile, e.machine_type): e.e for e in scaled.entries}
    # small not measured again: doubled as large was; large kept (the live entry replaces it in complete());
    # gate not measured again and nothing to scale it by: as it was
    assert got == {("drift", "small"): 0.04, ("drift", "large"): 0.005, ("gate", "small"): 0.001}


def test_a_pair_not_measured_again_never_gets_cheaper():
    from spark_profiling.tune import scale_stale

    previous = ProfileSet(name="s", entries=[entry("window", "small", 0.02), entry("window", "large", 0.005)])
    live = ProfileSet(name="s-live", entries=[entry("window", "large", 0.0032)])
    scaled, factors = scale_stale(live, previous)
    assert factors == {"window": 0.64}
    assert {(e.profile, e.machine_type): e.e for e in scaled.entries}[("window", "small")] == 0.02


def _tuner(read_state, outage_s=60.0):
    from types import SimpleNamespace

    import hetsched.tuning as tuning
    from hetsched.replan import RunningPlacement
    from planner.model import Component, Topology

    graph = Topology(name="t", components=[Component(id="spout", kind="spout", profile="s")])
    state = SimpleNamespace(name="t", conf={}, rows=[], now=RunningPlacement({"spout": ["small-1"]}, {"spout": 1}),
                            planner_topology=lambda: graph)
    said: list[str] = []
    settings = tuning.TuneSettings(store=Path("."), set_name="t-tuned", outage_s=outage_s)
    return tuning.Tuner(state, None, settings, said.append, read_state), state, said


def test_a_nimbus_that_does_not_answer_for_a_while_is_waited_for(monkeypatch):
    import hetsched.tuning as tuning
    from observe.nimbus import NimbusError

    monkeypatch.setattr(tuning.time, "sleep", lambda seconds: None)
    refusals = [NimbusError("connection refused"), NimbusError("connection refused")]

    def read():
        if refusals:
            raise refusals.pop(0)
        return state

    tuner, state, said = _tuner(read)
    tuner.check_ours()
    assert sum("Nimbus does not answer" in line for line in said) == 2


def test_a_nimbus_away_past_the_outage_stops_the_tune_leaving_the_topology_as_it_was(monkeypatch):
    import hetsched.tuning as tuning
    from observe.nimbus import NimbusError

    monkeypatch.setattr(tuning.time, "sleep", lambda seconds: None)

    def read():
        raise NimbusError("connection refused")

    tuner, _, _ = _tuner(read, outage_s=0.0)
    with pytest.raises(tuning.Interference, match="Nimbus did not answer for 0 s .* left t as it was"):
        tuner.check_ours()


def test_a_topology_placed_otherwise_by_someone_else_stops_the_tune(monkeypatch):
    from types import SimpleNamespace

    import hetsched.tuning as tuning
    from hetsched.replan import RunningPlacement

    moved = SimpleNamespace(now=RunningPlacement({"spout": ["large-1"]}, {"spout": 1}), rows=[])
    tuner, _, _ = _tuner(lambda: moved)
    with pytest.raises(tuning.Interference, match="re-placed by someone else"):
        tuner.check_ours()


def test_the_start_less_a_lost_machine_goes_to_its_type_else_to_the_biggest():
    from spark_profiling.tune import without_lost

    alive = {"large-1": ("large", 4.0), "small-1": ("small", 1.0), "medium-2": ("medium", 2.0), "medium-3": ("medium", 2.0)}
    assert without_lost({"a": ["medium-1", "medium-1", "small-1"]}, {"medium-1": "medium"}, alive) == \
        {"a": ["medium-2", "medium-3", "small-1"]}
    alive = {"large-1": ("large", 4.0), "small-1": ("small", 1.0)}
    assert without_lost({"a": ["medium-1", "large-1"], "b": ["medium-1"]}, {"medium-1": "medium"}, alive) == \
        {"a": ["large-1", "large-1"], "b": ["large-1"]}
    with pytest.raises(ValueError, match="no machine is left"):
        without_lost({"a": ["medium-1"]}, {"medium-1": "medium"}, {})


def test_a_machine_lost_mid_tune_puts_the_topology_back_on_its_start_less_that_machine(monkeypatch):
    """Seen live: medium-1 killed during an explore round; the tune stopped and left heldout-java on the explore round's
    placement (executors on a machine that no longer existed) as if someone else had moved it."""
    from types import SimpleNamespace

    import hetsched.tuning as tuning
    from hetsched.replan import ReplanError, RunningPlacement

    monkeypatch.setattr(tuning.time, "sleep", lambda seconds: None)
    rows = [SimpleNamespace(machine_id=m, machine_type=t, cores=c, schedulable=True) for m, t, c in
            [("small-1", "small", 1.0), ("medium-1", "medium", 2.0), ("large-1", "large", 4.0)]]
    start = RunningPlacement({"spout": ["medium-1"], "bolt": ["medium-1", "large-1"]}, {"spout": 1, "bolt": 2})
    explore = {"spout": ["small-1"], "bolt": ["small-1", "large-1"]}
    after = RunningPlacement({"spout": ["small-1"], "bolt": ["small-1", "large-1"]}, {"spout": 1, "bolt": 2})
    now = SimpleNamespace(now=after, rows=[rows[0], rows[2]])
    reads: list = [ReplanError("the machine of 127.0.0.3 is unknown")]

    def read():
        if reads:
            raise reads.pop(0)
        return now

    tuner, state, said = _tuner(read)
    state.rows, state.now = rows, start
    tuner.__init__(state, None, tuner.settings, said.append, read)
    tuner.placed, tuner.moved = explore, True
    placed_on = []
    monkeypatch.setattr(tuner, "place", lambda placement, *a, **k: placed_on.append(placement))
    monkeypatch.setattr(tuner, "measure", lambda label: None)
    monkeypatch.setattr(tuner, "_newest_set", lambda: None)
    with pytest.raises(tuning.MachineLost, match=r"medium-1 \(medium\) left the cluster during the tune") as lost:
        tuner.check_ours()
    tuner.back_to_start(str(lost.value))
    assert any("cannot be read as it runs" in line for line in said)
    assert tuner.lost == {"medium-1": "medium"}
    assert placed_on == [{"spout": ["large-1"], "bolt": ["large-1", "large-1"]}]
    assert tuner.report.returned


def test_a_machine_lost_during_a_re_placement_is_noticed_on_the_way_back(monkeypatch):
    """Seen live: medium-1 killed while the explore round was being placed; the scheduler placed it elsewhere, and
    putting it back onto the start (which named medium-1) failed as well."""
    from types import SimpleNamespace

    import hetsched.tuning as tuning
    from hetsched.replan import RunningPlacement

    monkeypatch.setattr(tuning.time, "sleep", lambda seconds: None)
    rows = [SimpleNamespace(machine_id=m, machine_type=t, cores=c, schedulable=True) for m, t, c in
            [("small-1", "small", 1.0), ("medium-1", "medium", 2.0), ("large-1", "large", 4.0)]]
    start = RunningPlacement({"spout": ["medium-1"], "bolt": ["small-1"]}, {"spout": 1, "bolt": 1})
    elsewhere = RunningPlacement({"spout": ["large-1"], "bolt": ["large-1"]}, {"spout": 1, "bolt": 1})
    tuner, state, said = _tuner(lambda: SimpleNamespace(now=elsewhere, rows=[rows[0], rows[2]]))
    state.rows, state.now = rows, start
    tuner.__init__(state, None, tuner.settings, said.append, tuner.read_state)
    tuner.placed, tuner.moved = dict(elsewhere.machines), True
    placed_on = []
    monkeypatch.setattr(tuner, "place", lambda placement, *a, **k: placed_on.append(placement))
    monkeypatch.setattr(tuner, "measure", lambda label: None)
    monkeypatch.setattr(tuner, "_newest_set", lambda: None)
    tuner.back_to_start("the scheduler did not place t as asked")
    assert placed_on == [{"spout": ["large-1"], "bolt": ["small-1"]}]
    assert any("less medium-1" in line for line in said)


def test_watch_takes_the_fallen_rate_as_its_reference_when_no_better_placement_is_kept(tmp_path, monkeypatch):
    """A re-plan that finds nothing better (or is undone) must not be tried again every min_interval_s: the watch
    recalibrates on the running plan and re-plans only on a further drift."""
    from types import SimpleNamespace

    import hetsched.tuning as tuning
    import hetsched.watch as watching

    monkeypatch.setattr(tuning.time, "sleep", lambda seconds: None)
    asked: list[float] = []
    FakeTuner = _watched_tuner([30.0, 15.0, 15.0, 15.0, 15.0, 15.0])

    def replan(since, rate_now, running):
        asked.append(since)
        return None

    plan = SimpleNamespace(id="p1", input_rate=30.0, sink_throughput=30.0)
    log = tmp_path / "watch.jsonl"
    with pytest.raises(KeyboardInterrupt):
        watching.watch(FakeTuner(), plan, watching.WatchSettings(threshold=0.25, patience=2, min_interval_s=0, log=log),
                       replan)
    looks = [json.loads(line) for line in log.read_text().splitlines()]
    assert [look["action"] for look in looks] == ["calibrate", "drifting", "replan", "calibrate", "steady", "steady"]
    assert looks[2]["re_placed"] is False and looks[2]["recalibrates"] is True and len(asked) == 1


def _watched_tuner(windows: list[float]):
    """A Tuner stand-in for the watch: each window measures the next rate; after the last, Ctrl-C."""
    from types import SimpleNamespace

    from bench.measure import Throughputs

    rates = iter(windows)

    class FakeTuner:
        name = "heldout"
        settings = SimpleNamespace(warmup_s=30.0)

        def measure(self, label):
            try:
                rate = next(rates)
            except StopIteration:
                raise KeyboardInterrupt from None
            return Throughputs(rate, rate, rate, rate, 2 * rate)

        def say(self, line):
            pass

    return FakeTuner


def test_a_tune_neither_explores_nor_plans_a_blacklisted_machine():
    """Seen live: medium-1, blacklisted for 30 min after a kill, was named by every explore round; the plugin could
    not use it, so each round was placed otherwise and the tune stopped."""

    from hetsched.replan import RunningPlacement

    tuner, state, said = _tuner(lambda: state)
    from hetsched.inventory import SupervisorRow

    state.rows = [SupervisorRow("h1", "sup-1", "small-1", "small", 1.0, 1.0, 4, 0, "storm.yaml"),
                  SupervisorRow("h2", "sup-2", "medium-1", "medium", 2.0, 2.0, 4, 0, "storm.yaml", blacklisted=True)]
    state.now = RunningPlacement({"spout": ["small-1"]}, {"spout": 1})
    tuner.__init__(state, None, tuner.settings, said.append, tuner.read_state)
    assert tuner.machines_by_type == {"small": ["small-1"]}
    tuner.check_ours()  # a blacklisted machine it never knew is no loss
    assert tuner.lost == {}


def test_a_re_placement_stopped_half_way_is_taken_as_found_and_the_way_back_sends_every_override(monkeypatch):
    """Seen live: Nimbus killed while the supervisors fetched an explore round's conf; the tune ended with Nimbus's
    error and left the topology inactive."""
    from contextlib import contextmanager
    from types import SimpleNamespace

    import hetsched.tuning as tuning
    from hetsched.replan import RunningPlacement
    from observe.nimbus import NimbusError

    monkeypatch.setattr(tuning.time, "sleep", lambda seconds: None)
    halfway = RunningPlacement({"spout": ["large-1"]}, {"spout": 1})
    reads = [SimpleNamespace(now=RunningPlacement({"spout": ["small-1"]}, {"spout": 1}), rows=[], machine_of_host={},
                             address=None)]
    tuner, state, said = _tuner(lambda: reads.pop(0) if reads else SimpleNamespace(now=halfway, rows=[]))
    state.machine_of_host, state.address = {}, None

    @contextmanager
    def connect(address):
        yield None

    def replace_drained(*args, **kwargs):
        raise NimbusError("cannot reach Nimbus at 127.0.0.1:16701")

    monkeypatch.setattr(tuning, "connect", connect)
    monkeypatch.setattr(tuning, "replace_drained", replace_drained)
    monkeypatch.setattr(tuner, "_placement_plan", lambda placement, profile_set: SimpleNamespace(id="p1"))
    tuner.planner = SimpleNamespace(bind=lambda *args: None)
    with pytest.raises(NimbusError):
        tuner.place({"spout": ["large-1"]}, None, "explore round 1 of 1")
    assert tuner.moved and tuner.placed == {} and tuner.conf_profiles is None and tuner.load_aware_off is None
    tuner.check_ours()  # where the half-done re-placement left it is the tune's own doing
    assert tuner.placed == {"spout": ["large-1"]}


def test_a_topology_killed_mid_tune_stops_it_at_once_not_after_an_outage(monkeypatch):
    """Seen live: a tune whose topology was killed took it for a Nimbus outage, asked again for 90 s, then said
    "Nimbus did not answer"."""
    import hetsched.tuning as tuning
    from observe.nimbus import TopologyNotRunning

    monkeypatch.setattr(tuning.time, "sleep", lambda seconds: pytest.fail("waited for a topology that is gone"))

    def read():
        raise TopologyNotRunning("no topology named 't' is running on Nimbus 127.0.0.1:16701 (running: none)")

    tuner, _, _ = _tuner(read)
    with pytest.raises(tuning.Interference, match="t is no longer running: someone killed it during the tune"):
        tuner.check_ours()
