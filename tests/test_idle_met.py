"""An idle executor thread's cost in the model (issue 18, part 0): entries charge at least ``idle_met``, held spouts
and profile-less system executors exactly it; the levels come from saturated machines; the bench's prediction
counts Storm's ackers."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from bench.placement import ActualPlacement
from bench.idle_met import saturated_levels
from planner.api import evaluate_assignments
from planner.errors import PlanningError
from planner.model import (
    Cluster,
    Component,
    InstanceAssignment,
    Machine,
    MachineType,
    PlanOptions,
    ProfileEntry,
    ProfileSet,
    Stream,
    Topology,
)
from planner.profiles import IDLE_MET, with_idle_met

REPO = Path(__file__).resolve().parents[1]
ENTRIES = [
    ProfileEntry(profile="spout", machine_type="small", e=0.001, met=20.0, idle_met=2.0),
    ProfileEntry(profile="work", machine_type="small", e=0.01, met=0.5, idle_met=2.0),
]
CLUSTER = Cluster(machine_types=[MachineType(name="small", capacity=100.0)], machines=[Machine(id="s1", type="small")])


def _topology(extra: list[Component] | None = None) -> Topology:
    return Topology(name="t", components=[Component(id="spout", kind="spout", profile="spout", parallelism=1),
                                          Component(id="work", kind="bolt", profile="work", parallelism=3),
                                          *(extra or [])],
                    streams=[Stream(**{"from": "spout", "to": "work"})])


def _fixed_load(topology: Topology, assignments: list[InstanceAssignment], held: bool) -> float:
    """The machine's load at R = 0, read off two rates of the closed form: U(R) = a R + b."""
    evaluation = evaluate_assignments(topology, CLUSTER, ENTRIES, assignments, PlanOptions(spouts_held=held))
    machine = evaluation.machines[0]
    return machine.utilization - evaluation.input_rate * (100 * 0.001 + 100 * 0.01)


def test_an_instance_is_charged_at_least_its_idle_thread_and_a_held_spout_only_that():
    assert ENTRIES[0].charged_met() == 20.0 and ENTRIES[0].charged_met(held=True) == 2.0
    assert ENTRIES[1].charged_met() == 2.0 and ENTRIES[1].charged_met(held=True) == 2.0
    assignments = [InstanceAssignment(component=c, machine="s1") for c in ("spout", "work", "work", "work")]
    assert _fixed_load(_topology(), assignments, held=False) == pytest.approx(20.0 + 3 * 2.0)
    assert _fixed_load(_topology(), assignments, held=True) == pytest.approx(4 * 2.0)


def test_a_system_executor_without_a_profile_costs_its_machine_types_idle_thread():
    topology = _topology([Component(id="__acker", kind="bolt", parallelism=2)])
    assignments = [InstanceAssignment(component=c, machine="s1")
                   for c in ("spout", "work", "work", "work", "__acker", "__acker")]
    assert _fixed_load(topology, assignments, held=True) == pytest.approx(6 * 2.0)


def test_idle_met_is_a_percent_of_the_machine():
    for bad in (-1.0, 100.5, float("nan")):
        with pytest.raises(ValidationError):
            ProfileEntry(profile="p", machine_type="t", e=0.01, idle_met=bad)


def test_the_levels_go_into_every_entry_of_their_type_and_the_source_says_from_where():
    profile_set = ProfileSet(name="s", entries=[*ENTRIES, ProfileEntry(profile="work", machine_type="large", e=0.002)],
                             source={"kind": "lab"})
    updated = with_idle_met(profile_set, {"small": 1.23456}, "run.json")
    assert [e.idle_met for e in updated.entries] == [1.2346, 1.2346, 0.0]
    assert updated.source == {"kind": "lab", IDLE_MET: {"percent_of_machine": {"small": 1.2346}, "measured_in": "run.json"}}
    with pytest.raises(PlanningError, match="idle_met must be a percent from 0 to 100 per machine type"):
        with_idle_met(profile_set, {"small": 120.0}, "run.json")


def test_the_levels_are_of_the_component_on_machines_at_their_quota():
    runs = [{"machines": [{"machine": "a", "measured_pct": 99.0}, {"machine": "b", "measured_pct": 60.0}],
             "executors": [{"component": "high", "machine": "a", "machine_type": "small", "thread_pct": 1.5},
                           {"component": "high", "machine": "b", "machine_type": "large", "thread_pct": 1.9},
                           {"component": "low", "machine": "a", "machine_type": "small", "thread_pct": 4.0}]}]
    assert saturated_levels(runs, "high", 90.0) == {"small": [1.5]}


def test_the_shipped_set_holds_the_levels_its_stored_run_gives():
    shipped = ProfileSet.model_validate_json((REPO / "profiles/default-cluster.json").read_text())
    runs = json.loads((REPO / "tests/fixtures/saturated-executor-cpu-linear-1.json").read_text())["runs"]
    import statistics

    levels = {t: round(statistics.median(v), 4) for t, v in saturated_levels(runs, "high", 90.0).items()}
    assert shipped.source[IDLE_MET]["percent_of_machine"] == levels
    assert {e.machine_type: e.idle_met for e in shipped.entries} == levels


def test_the_bench_predicts_a_placement_with_the_ackers_storm_placed():
    placement = ActualPlacement(executors={"spout": ["s1"], "work": ["s1", "s1", "s1"], "__acker": ["s1"]})
    topology, assignments = placement.with_system(_topology())
    assert topology.component("__acker").parallelism == 1 and topology.component("__acker").profile is None
    assert sorted(a.component for a in assignments) == ["__acker", "spout", "work", "work", "work"]
    assert _fixed_load(topology, assignments, held=True) == pytest.approx(5 * 2.0)


def test_the_levels_script_says_which_file_it_cannot_read(tmp_path, capsys):
    from bench.idle_met import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--saturated", str(tmp_path / "missing.json"), "--profiles", str(tmp_path / "set.json")])
    assert exit_info.value.code == 2
    assert "cannot read the saturated runs" in capsys.readouterr().err
    assert not (tmp_path / "set.json").exists()
