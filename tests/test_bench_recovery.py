"""Where a recovery's seconds go, read from Storm's log lines (bench/recovery.py), and the contingency run's spec."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from bench import machineloss, recovery
from bench.errors import BenchError
from bench.schedulers import RunSpec
from planner.model import Plan

CONTRACT = Path(__file__).parent / "fixtures" / "contract" / "plan-with-contingencies.json"

KILL = datetime(2026, 11, 28, 15, 0, 0).timestamp()
TOPOLOGY = "bench-linear-planned-1-17"


def _line(seconds: float, text: str) -> str:
    at = datetime.fromtimestamp(KILL + seconds)
    return f"{at:%Y-%m-%d %H:%M:%S}.{at.microsecond // 1000:03d} o.a.s.x thread [INFO] {text}"


NIMBUS = "\n".join([
    _line(-30, "Setting new assignment for topology id bench-linear-planned-1-17: Assignment(...)"),
    _line(21.3, "Executor other-topology-2-9:[3 3] not alive"),
    _line(22.0, "Executor bench-linear-planned-1-17:[4 4] not alive"),
    _line(22.1, "Executor bench-linear-planned-1-17:[5 5] not alive"),
    "java.lang.Exception: a stack trace line has no time",
    _line(22.4, "Setting new assignment for topology id bench-linear-planned-1-17: Assignment(...)"),
    _line(200, "Setting new assignment for topology id bench-linear-planned-1-17: Assignment(...)"),
])
SMALL = "\n".join([_line(-40, "Created Worker ID a"), _line(25.0, "Created Worker ID b")])
MEDIUM = _line(24.2, "Created Worker ID c")
WORKER_SMALL = "\n".join([_line(-39, "Will use [class org.apache.storm.Config] for validation"),
                          _line(-20, "Prepared bolt high:[5]"),
                          _line(61.5, "o.a.s.v.ConfigValidation main [INFO] Will use [class org.apache.storm.Config]"),
                          _line(88.0, "Launched subprocess with pid 1"), _line(97.5, "Prepared bolt high:[4]")])
WORKER_MEDIUM = "\n".join([_line(40.2, "Launching worker for bench-linear-planned-1-17 on x:6701"),
                           _line(55.0, "Opened spout spout:[10]")])


def test_each_step_is_the_seconds_after_the_kill_of_its_first_or_last_line_before_the_return():
    logs = recovery.Logs(nimbus=NIMBUS, supervisors=(SMALL, MEDIUM), workers=(WORKER_SMALL, WORKER_MEDIUM))
    assert recovery.steps(logs, TOPOLOGY, KILL, KILL + 150) == {
        "dead_s": 22.0, "assigned_s": 22.4, "launched_s": 25.0, "jvm_up_s": 61.5, "ready_s": 97.5}


def test_a_step_with_no_line_between_the_kill_and_the_return_is_none():
    logs = recovery.Logs(nimbus=NIMBUS, supervisors=(), workers=(WORKER_SMALL,))
    found = recovery.steps(logs, TOPOLOGY, KILL, KILL + 50)
    assert found["launched_s"] is None and found["jvm_up_s"] is None and found["ready_s"] is None
    assert recovery.steps(recovery.Logs("", (), ()), TOPOLOGY, KILL, KILL + 150) == dict.fromkeys(recovery.STEPS)


def test_another_topologys_dead_executors_are_not_this_ones():
    logs = recovery.Logs(nimbus=_line(5, "Executor other-topology-2-9:[3 3] not alive"), supervisors=(), workers=())
    assert recovery.steps(logs, TOPOLOGY, KILL, KILL + 150)["dead_s"] is None


def test_the_summary_takes_the_median_and_range_of_each_step():
    runs = [{"scheduler": "planned", "recovery_steps": {"dead_s": d, "ready_s": 90.0}} for d in (20.0, 24.0, 22.0)]
    row = machineloss.summary(runs)["planned"]
    assert row["dead_s"] == {"median": 22.0, "min": 20.0, "max": 24.0, "n": 3}
    assert row["ready_s"]["median"] == 90.0 and row["jvm_up_s"] is None


def _plan(with_contingencies: bool) -> Plan:
    plan = Plan.model_validate_json(CONTRACT.read_text())
    return plan if with_contingencies else plan.model_copy(update={"contingencies": None})


def test_the_contingency_run_is_planneds_bound_to_the_plan_with_contingencies():
    planned = RunSpec("linear", "planned", "bench-linear-planned", {"spout": 1, "high": 2}, {"k": 1}, plan_id="p-1",
                      profiles="default-cluster")
    plan = _plan(True)
    run = machineloss.contingency_spec(planned, plan)
    assert (run.scheduler, run.name, run.plan_id) == ("planned-contingency", "bench-linear-planned-contingency", plan.id)
    assert run.parallelism == {c: n for c, n in plan.instances.items() if not c.startswith("__")}
    assert run.conf == planned.conf and run.cluster_scheduler == "plugin"
    assert all(c.machine in run.note for c in plan.contingencies or [])


def test_a_plan_without_contingencies_cannot_be_the_contingency_run():
    planned = RunSpec("linear", "planned", "bench-linear-planned", {"spout": 1}, {})
    with pytest.raises(BenchError, match="no contingencies"):
        machineloss.contingency_spec(planned, _plan(False))


def test_the_return_is_restored_when_the_trailing_rate_wholly_after_it_reaches_nine_tenths_of_the_end():
    series = [(100.0, 10.0), (205.0, 4.0), (215.0, 0.0), (220.0, 0.0), (225.0, 19.0), (230.0, 30.0), (300.0, 31.0)]
    run = {"series": series, "returned_at_s": 200.0, "rate_after": 30.0}
    assert machineloss.return_figures(run) == {"restored_s": 30.0, "lowest_after": 0.0}
    assert machineloss.return_figures({"series": series, "returned_at_s": None}) == {"restored_s": None, "lowest_after": None}
    assert machineloss.summary([{"scheduler": "planned", **run}])["planned"]["restored_s"]["median"] == 30.0
