"""The facade (planner.api) and the command line built on it (hetsched plan / demo)."""
from __future__ import annotations

import json
import re

import pytest
import yaml
from typer.testing import CliRunner

from hetsched.cli import _register, app
from planner.api import evaluate_assignments, machine_cpu_at, make_plan
from planner.errors import PlanningError
from planner.files import load_plan_request
from planner.model import InstanceAssignment, Plan, PlanOptions
from tests.fixtures.paper import entries, make_cluster, make_topology

_register()
runner = CliRunner()


def test_make_plan_scores_with_the_simulator_and_fills_stats(two_machine_request):
    topology, cluster, profile_entries = two_machine_request
    plan = make_plan(topology, cluster, profile_entries, None, PlanOptions())
    assert plan.strategy == "fast"
    assert plan.stats["elapsed_ms"] > 0 and "iterations" in plan.stats
    evaluation = evaluate_assignments(
        topology, cluster, profile_entries, [InstanceAssignment(component=a.component, machine=a.machine) for a in plan.assignments]
    )
    assert evaluation.input_rate == pytest.approx(plan.input_rate)
    assert evaluation.instances == plan.instances


def test_machine_cpu_at_a_rate_is_the_evaluation_at_its_rate_and_linear_in_it(two_machine_request):
    """The charge at the plan's own rate is the evaluation's; at half of it, half the per-tuple part; beyond it, over 100 %."""
    topology, cluster, profile_entries = two_machine_request
    plan = make_plan(topology, cluster, profile_entries, None, PlanOptions())
    assignments = [InstanceAssignment(component=a.component, machine=a.machine) for a in plan.assignments]
    at_plan = machine_cpu_at(topology, cluster, profile_entries, assignments, plan.input_rate)
    assert at_plan == pytest.approx({m.id: m.utilization for m in plan.machines})
    idle = machine_cpu_at(topology, cluster, profile_entries, assignments, 0.0)
    half = machine_cpu_at(topology, cluster, profile_entries, assignments, plan.input_rate / 2)
    assert half == pytest.approx({m: (idle[m] + at_plan[m]) / 2 for m in at_plan})
    beyond = machine_cpu_at(topology, cluster, profile_entries, assignments, plan.input_rate * 1.5)
    assert max(beyond.values()) > 100.0
    with pytest.raises(PlanningError, match="an assignment names unknown component x"):
        machine_cpu_at(topology, cluster, profile_entries, [*assignments, InstanceAssignment(component="x", machine="w1")], 1.0)


def test_unknown_strategy_lists_the_known_ones(two_machine_request):
    topology, cluster, profile_entries = two_machine_request
    with pytest.raises(PlanningError, match="unknown strategy best; known strategies: .*even.*fast.*paper.*resource_aware"):
        make_plan(topology, cluster, profile_entries, "best")


def test_make_plan_validates_first(two_machine_request):
    topology, cluster, profile_entries = two_machine_request
    with pytest.raises(PlanningError, match="no profile for work on machine type t"):
        make_plan(topology, cluster, [e for e in profile_entries if e.profile != "work"], "paper")


@pytest.mark.parametrize(
    ("assignments", "message"),
    [
        ([("s", "w1"), ("b", "w9")], "an assignment puts component b on unknown machine w9"),
        ([("s", "w1"), ("b", "w1"), ("x", "w1")], "an assignment names unknown component x"),
        ([("s", "w1")], "the assignments give component b no instance"),
    ],
)
def test_evaluate_assignments_faults(two_machine_request, assignments, message):
    topology, cluster, profile_entries = two_machine_request
    with pytest.raises(PlanningError, match=message):
        evaluate_assignments(topology, cluster, profile_entries, [InstanceAssignment(component=c, machine=m) for c, m in assignments])


def test_evaluate_assignments_keeps_fixed_parallelism(two_machine_request):
    topology, cluster, profile_entries = two_machine_request
    topology = topology.model_copy(deep=True)
    topology.component("b").parallelism = 2
    with pytest.raises(PlanningError, match="component b has parallelism 2 but the assignments give it 1 instances"):
        evaluate_assignments(topology, cluster, profile_entries, [InstanceAssignment(component=c, machine="w1") for c in "sb"])


def test_plan_command_prints_tables(paper_files):
    result = runner.invoke(app, ["plan", "--topology", paper_files["linear"], "--cluster", paper_files["cluster1"],
                                 "--profiles", paper_files["profiles"], "--strategy", "paper"])
    assert result.exit_code == 0, result.output
    for text in ("Plan for linear (paper)", "input rate R", "Components", "Instances", "Machines", "m3-02"):
        assert text in result.output


def test_plan_command_json_is_a_plan(paper_files):
    result = runner.invoke(app, ["plan", "--topology", paper_files["star"], "--cluster", paper_files["cluster2"],
                                 "--profiles", paper_files["profiles"], "--json"])
    assert result.exit_code == 0, result.output
    plan = Plan.model_validate_json(result.output)
    assert plan.strategy == "fast" and plan.topology == "star" and plan.input_rate > 0
    assert len(plan.assignments) == sum(plan.instances.values())


def test_plan_command_takes_a_list_of_entries_and_options(tmp_path, paper_files):
    entries = yaml.safe_load(open(paper_files["profiles"]))["entries"]
    (tmp_path / "p.json").write_text(json.dumps(entries))
    (tmp_path / "o.yaml").write_text("max_utilization: 0.5\n")
    result = runner.invoke(app, ["plan", "--topology", paper_files["linear"], "--cluster", paper_files["cluster1"],
                                 "--profiles", str(tmp_path / "p.json"), "--options", str(tmp_path / "o.yaml"), "--json"])
    assert result.exit_code == 0, result.output
    assert max(m.utilization for m in Plan.model_validate_json(result.output).machines) <= 50.0 + 1e-6


BAD_FILES = {
    "bad.yaml": "name: [unclosed\n",
    "number.yaml": "42\n",
    "negative.yaml": "- {profile: k, machine_type: m1, e: -1}\n",
}


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--topology", "missing.yaml", "the topology file .*missing.yaml does not exist"),
        ("--topology", "bad.yaml", "the topology file .*bad.yaml is not valid YAML or JSON at line"),
        ("--topology", "number.yaml", "the topology file .*number.yaml does not describe a topology"),
        ("--cluster", "negative.yaml", "the cluster file .*negative.yaml does not describe a cluster"),
        ("--profiles", "number.yaml", "the profiles file .*number.yaml must hold a profile set"),
        ("--profiles", "negative.yaml", "the profiles file .*negative.yaml: entry 0: e: Input should be greater than or equal to 0"),
        ("--strategy", "magic", "unknown strategy magic"),
    ],
)
def test_plan_command_faults_are_one_line(tmp_path, paper_files, option, value, message):
    for name, text in BAD_FILES.items():
        (tmp_path / name).write_text(text)
    args = {"--topology": paper_files["linear"], "--cluster": paper_files["cluster1"], "--profiles": paper_files["profiles"]}
    args[option] = value if option == "--strategy" else str(tmp_path / value)
    result = runner.invoke(app, ["plan", *[item for pair in args.items() for item in pair]])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert re.search(message, lines[0]), lines[0]


def test_load_plan_request_is_ready_to_send(paper_files):
    request = load_plan_request(paper_files["diamond"], paper_files["cluster1"], paper_files["profiles"], "paper")
    body = json.loads(request.model_dump_json(by_alias=True))
    assert body["strategy"] == "paper" and body["profiles"]["entries"] and body["topology"]["streams"][0]["from"] == "spout"


def test_compare_prints_the_comparison():
    result = runner.invoke(app, ["compare"])
    assert result.exit_code == 0, result.output
    for text in ("linear-s1", "star-s3", "paper/even", "LP bound", "Instances per component"):
        assert text in result.output


def test_spouts_held_leaves_out_the_spouts_met_and_nothing_else():
    """One machine of capacity 100: spout e 0.001 s, MET 30 %; bolt e 0.01 s, MET 5 %.
    Charged: (100 - 35) / (0.1 + 1) = 59.09 tuples/s; held: (100 - 5) / 1.1 = 86.36 tuples/s."""
    topology = make_topology([("s", "spout", "src"), ("b", "bolt", "work")], [("s", "b")])
    cluster = make_cluster({"w1": "t"}, [{"name": "t"}])
    profiles = entries({("src", "t"): (0.001, 30.0), ("work", "t"): (0.01, 5.0)})
    placement = [InstanceAssignment(component=c, machine="w1") for c in "sb"]
    charged = evaluate_assignments(topology, cluster, profiles, placement)
    held = evaluate_assignments(topology, cluster, profiles, placement, PlanOptions(spouts_held=True))
    assert charged.input_rate == pytest.approx(65 / 1.1)
    assert held.input_rate == pytest.approx(95 / 1.1)
    cpu = {a.component: a.cpu for a in held.assignments}
    assert cpu["s"] == pytest.approx(0.1 * held.input_rate)
    assert cpu["b"] == pytest.approx(5 + held.input_rate)
