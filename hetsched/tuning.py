"""The ``hetsched tune`` workflow: measure a running topology, profile it from its own worker records, plan, re-place
it drained, measure again, and never leave it worse than it started.

The decisions are pure functions in :mod:`spark_profiling.tune` (which pairs to explore where, whether the new
placement stays, what the watch does); this module is the I/O around them: Nimbus (counts, deactivate, rebalance),
the planning service (profile sets, plans, bindings) and the Spark aggregation of the records store. The command
(:mod:`hetsched.tune_cmd`) only parses options and prints.

The loop, from cold (no profile set):

1. measure the starting placement for a window, then deactivate it for a few seconds (the *idle probe*): every
   executor's CPU at rate 0, so each (profile key, machine type) pair's line has two ends, even on a machine that
   ran at its quota;
2. explore: each round lends one executor of every component to each machine type its key was never measured on
   (:func:`spark_profiling.tune.explore_rounds`), runs it, probes idle;
3. aggregate every record since the start (intervals at quota kept, weak lines replaced by estimates from their
   operating point, each named), fill the rest from ``--fallback``;
4. plan, apply if the predicted gain is worth it, measure; if the new placement measures more than the noise
   under the starting one, or anything fails after the topology was moved, put it back where it started, drained.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bench.measure import Throughputs
from hetsched.replan import (
    SHARES_KEY,
    ReplanError,
    RunningPlacement,
    current_evaluation_request,
    gain,
    placement_of_plan,
    plan_shares,
    plan_within_tasks,
    planner_cluster,
    replacement_line,
    runs_weighted,
    shares_line,
    shares_overrides,
    with_counts,
)
from observe.nimbus import NimbusError, TopologyNotRunning, connect
from observe.replacement import ReplacementResult, SpoutTally, replace_drained
from planner.client import PlannerClient, PlannerClientError
from planner.model import Plan, ProfileEntry, ProfileRef, ProfileSet, Topology
from planner.profiles import machine_base_load
from spark_profiling.errors import NoPairError, ProfilingError
from spark_profiling.fit import FitCriteria
from spark_profiling.tune import (
    ComponentShape,
    Coverage,
    Placement,
    complete,
    coverage,
    coverage_lines,
    explore_rounds,
    fill_by_speed,
    never_worse,
    without_lost,
)
from topologies import conf as keys

T = TypeVar("T")

LOAD_AWARE_OFF = "topology.disable.loadaware.messaging"
"""Storm's load-aware shuffle keeps a sender's tuples in its own worker; the planner models a shuffle as an even split,
so a topology the tune places runs with it off (as ``hetsched submit`` does for a planned topology), and gets its own
value back when the tune puts it back where it started."""

PLACEMENT_KIND = "hetsched.tune.placement"
"""``source.kind`` of a set version stored only so that the plugin can place an explore round: its unmeasured pairs
carry stand-in costs, so ``hetsched placement`` shows no prediction from it."""


class TuneError(Exception):
    """A tune that cannot go on; one sentence. ``left`` says where the topology was left."""

    def __init__(self, message: str, left: str = "") -> None:
        super().__init__(message + (f"; {left}" if left else ""))


class Interference(TuneError):
    """Someone else killed or re-placed the topology during the tune: it is left alone."""


class MachineLost(TuneError):
    """A machine the tune knew left the cluster: its profiles and plan would be for machines that are not there, so the
    tune puts the topology back where it started, less that machine."""


@dataclass(frozen=True)
class TuneSettings:
    store: Path
    set_name: str
    window_s: float = 60.0
    warmup_s: float = 45.0
    idle_s: float = 20.0
    explore: bool = True
    explore_s: float = 60.0
    min_samples: int = 5
    fallback: str | None = None
    fill_by_speed: bool = True
    """Estimate a pair no set has from the same key on the other machine types, instead of making no plan."""
    strategy: str | None = None
    min_gain: float = 0.05
    noise: float = 0.10
    max_drain_s: float | None = None
    dry_run: bool = False
    master: str | None = None
    outage_s: float = 90.0
    """How long a planner or Nimbus that does not answer is waited for before the tune gives up."""


@dataclass
class TuneReport:
    """What one tune did, for the summary table and ``--json``."""

    topology: str
    start: dict[str, list[str]] = field(default_factory=dict)
    """The placement the topology ran on before the tune: component -> machine of executor 0, 1, ..."""
    started: float = field(default_factory=time.time)
    before: Throughputs | None = None
    after: Throughputs | None = None
    back: Throughputs | None = None
    predicted_start: float | None = None
    plan: Plan | None = None
    capped: dict[str, int] = field(default_factory=dict)
    coverage: Coverage | None = None
    estimated: dict[str, Any] = field(default_factory=dict)
    from_fallback: list[str] = field(default_factory=list)
    by_speed: list[str] = field(default_factory=list)
    explore_rounds: list[dict[str, list[str]]] = field(default_factory=list)
    outcome: str = ""
    returned: bool = False
    failed_tuples: int = 0
    minutes_to_plan: float | None = None

    def as_dict(self) -> dict[str, Any]:
        cov = self.coverage
        return {
            "topology": self.topology, "outcome": self.outcome, "returned_to_start": self.returned, "start": self.start,
            "minutes_to_plan": self.minutes_to_plan, "minutes": round((time.time() - self.started) / 60, 2),
            "before": self.before.as_dict() if self.before else None,
            "after": self.after.as_dict() if self.after else None,
            "back": self.back.as_dict() if self.back else None,
            "predicted_start": self.predicted_start,
            "plan": {"id": self.plan.id, "input_rate": self.plan.input_rate, "instances": self.plan.instances,
                     "strategy": self.plan.strategy} if self.plan else None,
            "pairs": {"needed": len(cov.needed), "live": [f"{p}@{t}" for p, t in cov.live],
                      "estimated": self.estimated, "from_fallback": self.from_fallback,
                      "by_machine_speed": self.by_speed,
                      "never_observed": [f"{p}@{t}" for p, t in cov.never_observed]} if cov else None,
            "explore_rounds": self.explore_rounds, "failed_tuples": self.failed_tuples,
        }


def rate_of(t: Throughputs) -> float:
    """The figure a tune is judged by: tuples/s at the sinks (what the operator gets), else the input rate."""
    return t.sink_throughput if t.sink_throughput > 0 else t.input_rate


class Tuner:
    """One tune of one running topology; ``say`` prints a progress line (with the minutes since the start)."""

    def __init__(self, state: Any, planner: PlannerClient, settings: TuneSettings, say: Callable[[str], None],
                 read_state: Callable[[], Any], graph: Topology | None = None) -> None:
        self.state = state
        self.name: str = state.name
        self.planner = planner
        self.settings = settings
        self.say = say
        self.read_state = read_state
        self.graph: Topology = graph if graph is not None else state.planner_topology()
        """The planner's topology: as Nimbus keeps it, or the catalog's where the caller has it (``replan``)."""
        self.profile_keys: dict[str, str] = {c.id: c.profile or c.id for c in self.graph.components}
        """Component -> its profile key (its id where it names none)."""
        self.start: Placement = dict(state.now.machines)
        self.placed: Placement = dict(self.start)
        self.moved = False
        self.live: ProfileSet | None = None
        """The set aggregated from this tune's records, once there is one."""
        self.conf_profiles: str | None = state.conf.get(keys.PROFILES)
        self.start_load_aware_off = bool(state.conf.get(LOAD_AWARE_OFF, False))
        self.load_aware_off: bool | None = self.start_load_aware_off
        """Whether the topology runs with load-aware messaging off (None: unknown, after a re-placement stopped half-way)."""
        self.start_shares = state.conf.get(SHARES_KEY)
        self.shares = self.start_shares
        """The weighted groupings' shares the topology runs with (None: it runs without them)."""
        self.report = TuneReport(self.name, start=dict(self.start))
        self.machines_by_type: dict[str, list[str]] = {}
        for row in state.rows:
            if row.schedulable:
                self.machines_by_type.setdefault(row.machine_type, []).append(row.machine_id)
        self.lost: dict[str, str] = {}
        """Machines (id -> type) that left the cluster during the tune."""

    # ---- the workflow -------------------------------------------------------------------------------------------

    def run(self) -> TuneReport:
        s = self.settings
        r = self.report
        r.before = self.measure("the starting placement")
        self.check_flowing(r.before)
        self.idle_probe()
        needed = set(self.profile_keys.values())
        ran = self._pairs_of(self.start)
        missing = tuple(sorted((p, t) for p in needed for t in self.machines_by_type if (p, t) not in ran))
        try:
            if s.explore and missing and not s.dry_run:
                shapes = {c: ComponentShape(self._profile_of(c), len(ms), self.state.now.tasks.get(c, len(ms)))
                          for c, ms in self.start.items()}
                rounds = explore_rounds(missing, shapes, self.start, self.machines_by_type)
                for i, placement in enumerate(rounds, 1):
                    visits = sorted(self._pairs_of(placement) & set(missing))
                    self.say(f"explore round {i} of {len(rounds)}: measuring " + ", ".join(f"({p}, {t})" for p, t in visits))
                    r.explore_rounds.append(placement)
                    self.place(placement, self._placement_set(None, needed),
                               f"hetsched tune: explore round {i} of {len(rounds)}")
                    self.wait(s.explore_s, f"explore round {i}: running")
                    self.idle_probe()
            elif missing:
                self.say("not explored (--no-explore or --dry-run): " + ", ".join(f"({p}, {t})" for p, t in missing))
            live, left_out = self.profile()
            self.live = live
            cov = coverage(needed, set(self.machines_by_type), live, left_out)
            r.coverage = cov
            fallback_name = s.fallback
            fallback_set = (self.patient(lambda: self.planner.get_profile_set(fallback_name), "the fallback set")
                            if fallback_name else None)
            done = complete(live, fallback_set, cov, s.set_name)
            if s.fill_by_speed:
                done, notes = fill_by_speed(done, set(self.machines_by_type))
                for note in notes:
                    self.say(f"estimated by machine speed: {note}")
            r.estimated = dict((live.source.get("estimated_pairs") or {}) if live else {})
            r.from_fallback = [f"{p}@{t}" for p, t in done.from_fallback]
            r.by_speed = [f"{p}@{t}" for p, t in done.by_speed]
            for line in coverage_lines(cov, done):
                self.say(line)
            for pair, est in r.estimated.items():
                self.say(f"estimated {pair}: e {float(est['e']):.3g} s/tuple from its mean operating point "
                         f"({est['rate']} tuples/s, {est['cpu_percent']} % of the machine); {est['why']}")
            profile_set = done.profile_set
            if done.uncovered or profile_set is None:
                raise TuneError("no plan: " + coverage_lines(cov, done)[-1])
            stored = self.patient(lambda: self.planner.put_profile_set(profile_set), "storing the profile set")
            self.say(f"profile set {stored.name} version {stored.version} stored")
            cluster = planner_cluster(self.state.rows, machine_base_load(profile_set))
            start_running = RunningPlacement(self.start, self.state.now.tasks)
            current = self.patient(lambda: self.planner.evaluate(
                current_evaluation_request(self.graph, cluster, s.set_name, start_running, self.weighted)), "evaluating the start")
            plan, capped = self.patient(lambda: plan_within_tasks(self.planner.plan, self.graph, cluster, s.set_name,
                                                                  self.state.now.tasks, s.strategy, self._spout_counts(self.start),
                                                                  self.weighted),
                                        "planning")
            r.predicted_start, r.plan, r.capped = current.input_rate, plan, capped
            r.minutes_to_plan = round((time.time() - r.started) / 60, 2)
            predicted_gain = gain(current.input_rate, plan.input_rate)
            self.say(f"plan {plan.id} ({plan.strategy}): " + ", ".join(f"{c} x{n}" for c, n in plan.instances.items())
                     + f"; predicted input rate {current.input_rate:.2f} -> {plan.input_rate:.2f} tuples/s "
                     f"({predicted_gain:+.1%}), {r.minutes_to_plan:.1f} min after the start")
            if s.dry_run:
                r.outcome = "--dry-run: the plan is not applied"
                return r
            if predicted_gain < s.min_gain:
                r.outcome = f"not applied: predicted gain {predicted_gain:+.1%} is below --min-gain {s.min_gain:.0%}"
                self.back_to_start(r.outcome)
                return r
            self.place(placement_of_plan(plan), None, f"hetsched tune: predicted {current.input_rate:.2f} -> "
                                                      f"{plan.input_rate:.2f} tuples/s ({predicted_gain:+.1%})", plan=plan)
            self.wait(s.warmup_s, "warming up on the plan")
            r.after = self.measure("the plan")
            verdict = never_worse(rate_of(r.before), rate_of(r.after), s.noise)
            if verdict.keep:
                r.outcome = f"planned: {verdict.reason}"
                self.say(r.outcome)
            else:
                r.outcome = f"back to the starting placement: the plan {verdict.reason}"
                self.back_to_start(r.outcome)
            return r
        except BaseException as exc:
            if isinstance(exc, Interference):
                raise
            if isinstance(exc, TopologyNotRunning):
                raise Interference(f"{self.name} is no longer running: someone killed it during the tune ({exc})",
                                   "the tune stopped") from None
            if self.moved:
                why = str(exc) or type(exc).__name__
                try:
                    self.back_to_start(f"the tune stopped ({why})")
                except Exception as back_exc:  # noqa: BLE001 - say both faults in one sentence
                    raise TuneError(str(exc), f"putting {self.name} back where it started failed too: {back_exc}") from None
                if isinstance(exc, Exception):  # a Nimbus or planner fault too: say where the topology is
                    left = f"less {', '.join(sorted(self.lost))}" if self.lost else ""
                    why = str(exc)
                    if self.lost and not isinstance(exc, MachineLost):  # the loss is the cause, the fault its symptom
                        why = (f"{', '.join(f'{m} ({t})' for m, t in sorted(self.lost.items()))} left the cluster "
                               f"during the tune ({why})")
                    raise TuneError(why, f"{self.name} is back on its starting placement {left}".rstrip()) from None
            raise

    def check_flowing(self, t: Throughputs) -> None:
        """A topology that carries nothing, or fails every tree, has nothing to tune: say which, touch nothing."""
        tally = self.tally()
        if t.spout_emit_rate <= 0:
            raise TuneError(f"{self.name}'s spouts emitted no tuple in {self.settings.window_s:g} s, so there is no rate "
                            "to profile; start its source and tune again", "nothing was changed")
        if tally is not None and tally.failed > 0 and tally.acked == 0:
            raise TuneError(f"every tuple tree of {self.name} failed ({tally.failed} failed, none acked), so its rates "
                            "say nothing of its costs; fix the failing component and tune again", "nothing was changed")

    # ---- steps --------------------------------------------------------------------------------------------------

    def measure(self, label: str) -> Throughputs:
        from bench.measure import measured_throughputs
        from topologies.measure import window_rates

        self.check_ours()
        self.say(f"measuring {label} for {self.settings.window_s:g} s")
        with connect(self.state.address) as client:
            t = measured_throughputs(window_rates(client, self.name, None, self.settings.window_s))
        self.say(f"{label}: input rate {t.input_rate:.2f}, sink {t.sink_throughput:.2f} tuples/s")
        return t

    def idle_probe(self) -> None:
        """Deactivate for ``idle_s``: every executor's CPU at rate 0, the other end of its pair's line."""
        if self.settings.idle_s <= 0 or self.settings.dry_run:
            return
        self.check_ours()
        self.say(f"idle probe: {self.name} inactive for {self.settings.idle_s:g} s (each executor's CPU at rate 0)")
        with connect(self.state.address) as client:
            client.deactivate(self.name)
            try:
                time.sleep(self.settings.idle_s)
            finally:
                client.activate(self.name)

    def profile(self, since: float | None = None) -> tuple[ProfileSet | None, dict]:
        """Every record of the topology since ``since`` (default: the tune's start), aggregated: at-quota intervals
        fitted, weak lines estimated."""
        from spark_profiling.aggregate import run as aggregate_run
        from spark_profiling.inputs import store_topology_folders

        store = self.settings.store
        out = (store.parent if store.name == "records" else store) / f"{self.name}-live.json"
        since = since if since is not None else self.report.started
        try:
            inputs = store_topology_folders(store, self.name, since)
        except ProfilingError as exc:
            self.say(f"no records: {exc}")
            return None, {}
        criteria = FitCriteria(min_samples=self.settings.min_samples, keep_at_quota=True, estimate_weak=True)
        self.say("aggregating the records with Spark")
        try:
            return aggregate_run(inputs, out, f"{self.name}-live", self.settings.min_samples, master=self.settings.master,
                                 since=since, criteria=criteria), {}
        except NoPairError as exc:
            self.say(f"no live profile yet: {exc}")
            return None, dict(exc.left_out)
        except ProfilingError as exc:
            self.say(f"no live profile yet: {exc}")
            return None, {}

    def place(self, placement: Placement, profile_set: ProfileSet | None, reason: str, plan: Plan | None = None) -> ReplacementResult:
        """Store ``placement`` as a plan (unless one is given), bind it, and re-place the topology onto it, drained."""
        s = self.settings
        self.check_ours()
        # the plan's weights, the starting ones back at the start, else (a placement the tune stores) those running
        wanted_shares = (plan_shares(plan, self.state.machine_of_host) if plan is not None
                         else self.start_shares if self._same(placement, self.start) else None)
        if plan is None:
            plan = self._placement_plan(placement, profile_set)
        plan_id = plan.id
        assert plan_id is not None  # the service stores every plan it answers
        self.patient(lambda: self.planner.bind(self.name, plan_id, reason), "binding the plan")
        overrides: dict[str, Any] = {} if self.conf_profiles == s.set_name else {keys.PROFILES: s.set_name}
        wanted_load_aware_off = self.start_load_aware_off if self._same(placement, self.start) else True
        if self.load_aware_off != wanted_load_aware_off:
            overrides[LOAD_AWARE_OFF] = wanted_load_aware_off
        overrides.update(shares_overrides(self.shares, wanted_shares, self.state.machine_of_host))
        if SHARES_KEY in overrides:
            self.say(shares_line(self.name, overrides[SHARES_KEY]))
        self.moved = True
        try:
            with connect(self.state.address) as client:
                result = replace_drained(client, self.name, placement, self.state.machine_of_host,
                                         max_drain_s=s.max_drain_s, conf_overrides=overrides,
                                         on_step=lambda step: self.say(f"{self.name}: {step}"))
        except BaseException:
            # stopped half-way (seen live: Nimbus killed while the supervisors fetched the new conf, the topology
            # left inactive): where it runs and with which conf is unknown, so the way back takes what it finds
            # and sends every override again
            self.placed, self.conf_profiles, self.load_aware_off = {}, None, None
            raise
        if keys.PROFILES in overrides:
            self.conf_profiles = s.set_name
        self.load_aware_off = wanted_load_aware_off
        self.shares = overrides.get(SHARES_KEY, self.shares)
        self.placed = {c: list(ms) for c, ms in placement.items()}
        self.report.failed_tuples += result.failed_during_drain
        self.say(replacement_line(result))
        if not result.matches_plan:
            try:  # where it did place it is the tune's own doing, not someone else's
                self.placed = {c: list(ms) for c, ms in self.read_state().now.machines.items()}
            except Exception:  # noqa: BLE001 - the next check_ours says what is wrong
                pass
            raise TuneError(f"the scheduler did not place {self.name} as asked ({result.scheduler_status})")
        self.wait_flowing()
        return result

    def back_to_start(self, why: str) -> None:
        """Put the topology back where it started (drained), if it was moved, and measure it there. Executors that
        started on a machine which has since left the cluster go to one still in it (:func:`without_lost`)."""
        r = self.report
        if self.moved:
            try:
                self.check_ours()
            except MachineLost:
                pass  # noted in self.lost: the start less that machine is where the topology goes
        start, where = self.start, "its starting placement"
        if self.lost:
            alive = {row.machine_id: (row.machine_type or "", float(row.cores or 0.0)) for row in self.state.rows
                     if row.schedulable}
            start = without_lost(self.start, self.lost, alive)
            where = f"its starting placement less {', '.join(sorted(self.lost))} ({_placement_text(start)})"
        if not self.moved or self._same(self.placed, start):
            self.say(f"{why}; {self.name} stays on {where}")
            return
        self.say(f"{why}: putting {self.name} back on {where}")
        newest = self._newest_set()
        measured = {(e.profile, e.machine_type) for e in self.live.entries} if self.live is not None else set()
        back_set: ProfileSet | None = None  # the newest version as it is: the tuned set
        if newest is None or newest.source.get("kind") == PLACEMENT_KIND:
            # never leave stand-in costs bound: the starting placement's own pairs were measured where it ran
            if self.live is not None and self._pairs_of(start) <= measured:
                back_set = self.live.model_copy(update={"name": self.settings.set_name})
            else:
                back_set = newest
        self.place(start, back_set, f"hetsched tune: back to the starting placement ({why})")
        r.returned = True
        self.wait(self.settings.warmup_s, "warming up on the starting placement")
        r.back = self.measure("the starting placement again")

    def wait_flowing(self, timeout_s: float = 180.0) -> None:
        """Wait until every executor handles tuples again (a worker moved to a small machine takes a minute or two to
        start), so that an explore window measures the placement, not its start-up."""
        started = time.monotonic()
        with connect(self.state.address) as client:
            running = client.find(self.name)
            if running is None:
                return
            first = client.counts(running.id).executors
            while time.monotonic() - started < timeout_s:
                time.sleep(5.0)
                now = client.counts(running.id)
                idle = sorted({e.component for k, e in now.executors.items()
                               if not (e.handled > 0 and (k not in first or e.handled != first[k].handled))})
                if now.placed and not idle:
                    self.say(f"every executor handles tuples, {time.monotonic() - started:.0f} s after the placement")
                    return
        self.say(f"after {timeout_s:g} s some executors still handle no tuple ({', '.join(idle)}); measuring anyway")

    def wait(self, seconds: float, label: str) -> None:
        if seconds > 0:
            self.say(f"{label} for {seconds:g} s")
            time.sleep(seconds)

    def tally(self) -> SpoutTally | None:
        with connect(self.state.address) as client:
            running = client.find(self.name)
            return SpoutTally.of(client.counts(running.id)) if running is not None else None

    def check_ours(self) -> None:
        """Stop, touching nothing, when the topology is gone or placed otherwise than the tune left it."""
        deadline = time.monotonic() + self.settings.outage_s
        while True:
            try:
                state = self.read_state()
                break
            except TopologyNotRunning as exc:
                raise Interference(f"{self.name} is no longer running: someone killed it during the tune ({exc})",
                                   "the tune stopped") from None
            except NimbusError as exc:
                if time.monotonic() > deadline:
                    left = (f"the tune stopped; {self.name} may be inactive, half-way through a re-placement: once "
                            f"Nimbus answers, check it with hetsched placement and `storm activate {self.name}`"
                            if self.moved and not self.placed else f"the tune stopped and left {self.name} as it was")
                    raise Interference(f"Nimbus did not answer for {self.settings.outage_s:g} s ({exc})", left) from None
                self.say(f"Nimbus does not answer ({exc}); asking again in 10 s")
                time.sleep(10.0)
            except ReplanError as exc:
                # executors on a supervisor Nimbus no longer lists: a machine left, and Nimbus re-assigns its
                # executors once it declares them dead
                if time.monotonic() > deadline:
                    raise MachineLost(f"{self.name} still had executors on a machine that left the cluster after "
                                      f"{self.settings.outage_s:g} s ({exc})") from None
                self.say(f"{self.name} cannot be read as it runs ({exc}); asking again in 10 s")
                time.sleep(10.0)
            except Exception as exc:  # noqa: BLE001 - a topology killed mid-tune surfaces as the reader's own error
                raise Interference(f"{self.name} is no longer running ({exc})", "the tune stopped") from None
        alive = {row.machine_id for row in state.rows if row.schedulable}
        gone = {m: t for t, ms in self.machines_by_type.items() for m in ms if m not in alive and m not in self.lost}
        self.state = state
        if gone or self.lost or not self.placed:
            # the plugin re-places a lost machine's executors itself, and a re-placement stopped half-way left the
            # topology where it is: neither is anyone else's doing
            self.placed = {c: list(ms) for c, ms in state.now.machines.items()}
        if gone:
            self.lost.update(gone)
            raise MachineLost(f"{', '.join(f'{m} ({t})' for m, t in sorted(gone.items()))} left the cluster during the "
                              "tune, so no plan made now would be for the machines there are")
        if not self._same(state.now.machines, self.placed):
            raise Interference(f"{self.name} was re-placed by someone else during the tune (now "
                               f"{_placement_text(state.now.machines)}, the tune left it {_placement_text(self.placed)})",
                               "the tune stopped and left it as it is")
        self.state = state

    def patient(self, call: Callable[[], T], what: str) -> T:
        """``call``, asked again while the planner does not answer, for up to ``outage_s``."""
        deadline = time.monotonic() + self.settings.outage_s
        while True:
            try:
                return call()
            except PlannerClientError as exc:
                if exc.status is not None and exc.status < 500 or time.monotonic() > deadline:
                    raise TuneError(f"{what}: {exc}") from None
                self.say(f"{what}: the planner does not answer ({exc}); asking again in 10 s")
                time.sleep(10.0)

    # ---- helpers ------------------------------------------------------------------------------------------------

    @property
    def weighted(self) -> bool:
        """Plan and score with weighted shares: the topology runs with weighted groupings."""
        return runs_weighted(self.state.conf)

    def _profile_of(self, component: str) -> str:
        return self.profile_keys.get(component, component)

    def _newest_set(self) -> ProfileSet | None:
        """The newest stored version of the tune's set, or None when there is none (one call to the planner)."""
        try:
            return self.planner.get_profile_set(self.settings.set_name)
        except PlannerClientError:
            return None

    @staticmethod
    def _same(a: Mapping[str, list[str]], b: Mapping[str, list[str]]) -> bool:
        return {c: sorted(ms) for c, ms in a.items()} == {c: sorted(ms) for c, ms in b.items()}

    def _spout_counts(self, placement: Placement) -> dict[str, int]:
        """Spouts keep their executor count: a spout may be paced by its source (Storm's TestWordSpout emits every
        100 ms), which the model cannot see, so fewer spout executors may mean fewer tuples whatever the plan says
        (words-cpu's plan with one spout of two ran at 0.52x; docs/operations/profiling.md)."""
        return {c.id: len(placement[c.id]) for c in self.graph.components if c.kind == "spout" and c.id in placement}

    def _pairs_of(self, placement: Placement) -> set[tuple[str, str]]:
        """The (profile key, machine type) pairs a placement runs."""
        type_of = {m: t for t, ms in self.machines_by_type.items() for m in ms}
        return {(self._profile_of(c), type_of[m]) for c, ms in placement.items() for m in ms if m in type_of}

    def _placement_set(self, live: ProfileSet | None, profiles: set[str]) -> ProfileSet:
        """Live entries where measured, stand-ins (the key's dearest measured cost, else 1 ms) for the rest."""
        have = {(e.profile, e.machine_type): e for e in (live.entries if live else [])}
        entries = list(have.values())
        for profile, machine_type in sorted((p, t) for p in profiles for t in self.machines_by_type):
            if (profile, machine_type) not in have:
                known = [e for (p, _), e in have.items() if p == profile]
                entries.append(ProfileEntry(profile=profile, machine_type=machine_type, met=0.0,
                                            e=max((e.e for e in known), default=0.001),
                                            alpha=known[0].alpha if known else 1.0))
        return ProfileSet(name=self.settings.set_name, entries=entries,
                          source={"kind": PLACEMENT_KIND, "note": "stand-in costs for pairs not yet measured: "
                                  "stored only so the plugin can place an explore round; not a prediction"})

    def _placement_plan(self, placement: Placement, profile_set: ProfileSet | None) -> Plan:
        """A stored plan that places every instance as ``placement`` says (a repair that keeps them all)."""
        from planner.repair import KeptInstance, RepairRequest

        if profile_set is None and self._newest_set() is None:
            profile_set = self._placement_set(None, set(self.profile_keys.values()))
        if profile_set is not None:
            given = profile_set
            self.patient(lambda: self.planner.put_profile_set(given), "storing the placement's profile set")
        counts = {c: len(ms) for c, ms in placement.items()}
        cluster = planner_cluster(self.state.rows, {})
        request = RepairRequest(topology=with_counts(self.graph, counts), cluster=cluster,
                                profiles=ProfileRef(name=self.settings.set_name),
                                keep=[KeptInstance(component=c, index=i, machine=m)
                                      for c, ms in placement.items() for i, m in enumerate(ms)])
        return self.patient(lambda: self.planner.repair(request), "storing the placement as a plan")


def _placement_text(placement: Mapping[str, list[str]]) -> str:
    return "; ".join(f"{c}: {', '.join(ms)}" for c, ms in sorted(placement.items()))
