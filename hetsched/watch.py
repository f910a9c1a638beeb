"""``hetsched tune --watch``: keep a tuned topology's profile set fresh from its records and re-place it when its
measured rate drifts from the (calibrated) prediction for a while, at most once per ``min_interval_s``, logging every
look and decision. The decisions are :func:`spark_profiling.tune.watch_decision` and
:func:`spark_profiling.tune.scale_stale`; re-placing and measuring are :class:`hetsched.tuning.Tuner`'s."""
from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from hetsched.replan import current_evaluation_request, gain, placement_of_plan, plan_within_tasks, planner_cluster
from hetsched.tuning import Tuner, rate_of
from planner.model import Plan
from planner.profiles import machine_base_load
from spark_profiling.tune import complete, coverage, coverage_lines, never_worse, scale_stale, watch_decision

@dataclass(frozen=True)
class WatchSettings:
    interval_s: float = 60.0
    threshold: float = 0.25
    patience: int = 2
    min_interval_s: float = 600.0
    minutes: float | None = None
    log: Path | None = None


def watch(tuner: Tuner, plan: Plan, settings: WatchSettings,
          replan: Callable[[float, float, Plan], Plan | None] | None = None) -> None:
    """Keep measuring; re-plan (``replan(since, rate_now, plan)``: profile the records since ``since``, re-place, keep
    it if it measures no worse than ``rate_now``; the new plan or None) when the rate falls from the calibrated
    prediction beyond the threshold for ``patience`` windows. Every look is logged."""
    calibration: float | None = None
    drifting = 0
    placed_at = time.time()
    last_replace = time.monotonic()
    ends = time.monotonic() + settings.minutes * 60 if settings.minutes else None
    with _decision_log(settings.log) as log:
        drift_since: float | None = None
        drift_direction: str | None = None
        while ends is None or time.monotonic() < ends:
            window_started = time.time()
            t = tuner.measure("the running placement")
            measured = rate_of(t) if t.sink_throughput > 0 else t.input_rate
            predicted = plan.sink_throughput if t.sink_throughput > 0 and plan.sink_throughput > 0 else plan.input_rate
            this_way = "above" if calibration and predicted > 0 and measured > predicted * calibration else "under"
            decision = watch_decision(measured, predicted, calibration, drifting if this_way == drift_direction else 0,
                                      settings.threshold, settings.patience, time.monotonic() - last_replace,
                                      settings.min_interval_s)
            entry = {"at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "topology": tuner.name,
                     "measured": round(measured, 3), "predicted": round(predicted, 3), "plan": plan.id,
                     "action": decision.action, "drift": round(decision.drift, 4), "reason": decision.reason}
            if decision.action in ("calibrate", "recalibrate"):
                calibration = measured / predicted if predicted > 0 else None
            under = decision.action in ("drifting", "hold", "replan")
            if decision.action == "above" or under:
                # counted in one direction: a window under after windows above starts a new count
                direction = "above" if decision.action == "above" else "under"
                drifting = drifting + 1 if direction == drift_direction else 1
                drift_direction = direction
            else:
                drifting, drift_direction = 0, None
            if under and drifting == 1:
                drift_since = window_started
            elif not under:
                drift_since = None
            if decision.action == "replan":
                # only the records since the drift began: the costs changed then
                since = drift_since if drift_since is not None else placed_at + tuner.settings.warmup_s
                entry["profiled_since"] = dt.datetime.fromtimestamp(since, dt.timezone.utc).isoformat(timespec="seconds")
                new = (replan or partial(replan_since, tuner))(since, measured, plan)
                if new is not None:
                    plan, calibration, drifting = new, None, 0
                    placed_at, last_replace = time.time(), time.monotonic()
                    entry["new_plan"] = new.id
                    entry["re_placed"] = True
                else:
                    # No better placement was found (or the one tried measured worse and was undone): the fallen rate
                    # is the running plan's new reference, so the watch does not try again every min_interval_s.
                    entry["re_placed"] = False
                    entry["recalibrates"] = True
                    calibration = None
                    last_replace = time.monotonic()
                drifting, drift_since, drift_direction = 0, None, None
            log(entry)
            tuner.say(f"watch: {decision.action}: {decision.reason}" + (f" -> plan {entry['new_plan']}" if entry.get("new_plan") else ""))


@contextmanager
def _decision_log(path: Path | None) -> Iterator[Callable[[dict], None]]:
    if path is None:
        yield lambda entry: None
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        def write(entry: dict) -> None:
            f.write(json.dumps(entry) + "\n")
            f.flush()
        yield write


def replan_since(tuner: Tuner, since: float, rate_now: float, running_plan: Plan) -> Plan | None:
    """Profile the records since ``since`` (the current set's entries for pairs not seen since,
    scaled as the seen ones of their key changed), store the new version, plan, re-place if the predicted gain over
    the running placement is worth it, measure, and go back to ``running_plan`` if the new one runs more than the
    noise under ``rate_now`` (tuples/s the drifted placement ran at)."""
    s = tuner.settings
    tuner.idle_probe()
    live, left_out = tuner.profile(since)
    if live is None:
        tuner.say("watch: no usable records since the placement; nothing re-planned")
        return None
    current_set = tuner.patient(lambda: tuner.planner.get_profile_set(s.set_name), "reading the profile set")
    scaled, factors = scale_stale(live, current_set)
    if factors:
        tuner.say("watch: costs measured again, new over old e per key: "
                 + ", ".join(f"{k} x{f:.2f}" for k, f in sorted(factors.items())) + " (a rise is carried to the key's pairs not measured again; a fall is not)")
    cov = coverage(set(tuner.profile_keys.values()), set(tuner.machines_by_type), live, left_out)
    done = complete(live, scaled, cov, s.set_name)
    if done.uncovered or done.profile_set is None:
        tuner.say("watch: " + coverage_lines(cov, done)[-1])
        return None
    new_set = done.profile_set
    stored = tuner.patient(lambda: tuner.planner.put_profile_set(new_set), "storing the profile set")
    tuner.say(f"watch: profile set {stored.name} version {stored.version} stored")
    tuner.check_ours()
    cluster = planner_cluster(tuner.state.rows, machine_base_load(new_set))
    current = tuner.patient(lambda: tuner.planner.evaluate(
        current_evaluation_request(tuner.graph, cluster, s.set_name, tuner.state.now, tuner.weighted)), "evaluating the placement")
    plan, _ = tuner.patient(lambda: plan_within_tasks(tuner.planner.plan, tuner.graph, cluster, s.set_name,
                                                     tuner.state.now.tasks, s.strategy, tuner._spout_counts(tuner.placed),
                                                     tuner.weighted),
                           "planning")
    predicted_gain = gain(current.input_rate, plan.input_rate)
    tuner.say(f"watch: plan {plan.id} ({s.strategy}): " + ", ".join(f"{c} x{n}" for c, n in sorted(plan.instances.items())
                                                                   if not c.startswith("__"))
              + f"; predicted input rate {current.input_rate:.2f} (the running placement, new costs) -> "
                f"{plan.input_rate:.2f} tuples/s ({predicted_gain:+.1%})")
    if predicted_gain < s.min_gain:
        tuner.say(f"watch: the new plan {plan.id} predicts {predicted_gain:+.1%} over the running placement (under "
                 f"--min-gain {s.min_gain:.0%}): not re-placed")
        return None
    before = dict(tuner.placed)
    tuner.place(placement_of_plan(plan), None, f"hetsched tune --watch: predicted {current.input_rate:.2f} -> "
                                              f"{plan.input_rate:.2f} tuples/s ({predicted_gain:+.1%})", plan=plan)
    tuner.wait(s.warmup_s, "warming up on the new plan")
    after = tuner.measure("the new plan")
    verdict = never_worse(rate_now, rate_of(after), s.noise)
    if verdict.keep:
        tuner.say(f"watch: kept the new plan: {verdict.reason}")
        return plan
    tuner.say(f"watch: the new plan {verdict.reason}: back to plan {running_plan.id}")
    tuner.place(before, None, f"hetsched tune --watch: back to plan {running_plan.id} ({verdict.reason})",
               plan=running_plan)
    tuner.wait(s.warmup_s, "warming up on the previous plan")
    return None
