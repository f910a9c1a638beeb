"""The plugin's weighted groupings against Storm's (issue 33), offline: their cost per tuple, their balance over skewed
keys, and the keys a change of weights moves.

Drives the real Java classes: builds the plugin's test classes with Maven and runs
``org.hetsched.storm.grouping.bench.GroupingCostBenchmark`` (storm-plugin/src/test/java, not a test, not in the jar),
which prepares every grouping with a real ``WorkerTopologyContext`` for RollingCount's stream ``split ->
rolling_count`` on ``word``, each target task alone on a supervisor, weights as the topology conf's
``hetsched.grouping.shares``. This module only writes its spec, runs Java and prints what it answers.

1. Cost: CPU ns per ``chooseTasks`` (the thread's CPU clock, so a busy host's preemption is not counted) of Storm's
   ``ShuffleGrouping`` and ``LoadAwareShuffleGrouping`` (what a worker builds for ``shuffleGrouping``), Storm's fields
   grouping (``GrouperFactory.FieldsGrouper``, what a worker builds for ``fieldsGrouping``), and the weighted shuffle
   and fields groupings without shares and with uneven weights (1, 2, ..., n), at 2, 5 and 20 target tasks; a timed
   loop over 65,536 pre-built one-word tuples drawn from RollingCount's Zipf text, warm-up rounds then measured rounds,
   median and range. The full run forks one JVM per grouping and task count (as JMH forks); ``--quick`` runs all in
   one JVM, whose shared call site makes the figures coarser.
2. Balance: every word of RollingCount's vocabulary (topologies/inputs.py: 5,000 words, Zipf exponent 1.0), and a
   stream of tuples drawn from it, through Storm's fields grouping and the weighted one, for a few target weights,
   one of them the shares of a real weighted plan; each task's share of tuples and of distinct keys against its
   target, and the same for many uniform keys (100,000) as the control.
3. Moves: the fraction of distinct keys and of tuples that change task when the weights or the tasks change, against
   the least possible (the total variation between the old and new shares), Storm's modulo over the new task count,
   and a modulo over new slot counts (the hash modulo 10,000 slots, dealt to the tasks in order by weight).

    .venv/bin/python -m benchmarks.grouping_cost [--quick] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from topologies.inputs import SEED, TEXT_VOCABULARY_SIZE, TEXT_WORD_ZIPF_S, word

REPO = Path(__file__).resolve().parents[1]
POM = REPO / "storm-plugin" / "pom.xml"
TARGET = REPO / "storm-plugin" / "target"
CLASSPATH_FILE = TARGET / "grouping-cost.classpath"
MAIN = "org.hetsched.storm.grouping.bench.GroupingCostBenchmark"
MAIN_CLASS_FILE = TARGET / "test-classes" / (MAIN.replace(".", "/") + ".class")
JVM_OPTIONS = ["-Xms512m", "-Xmx512m", "-Dlog4j2.level=WARN"]

TASK_COUNTS = (2, 5, 20)
GROUPINGS = (
    ("storm_shuffle", "Storm ShuffleGrouping"),
    ("storm_loadaware_shuffle", "Storm LoadAwareShuffleGrouping (shuffleGrouping's default)"),
    ("weighted_shuffle_unweighted", "WeightedShuffleGrouping, no shares"),
    ("weighted_shuffle", "WeightedShuffleGrouping, weights 1..n"),
    ("storm_fields", "Storm fields grouping (GrouperFactory.FieldsGrouper)"),
    ("weighted_fields_unweighted", "WeightedFieldsGrouping, no shares"),
    ("weighted_fields", "WeightedFieldsGrouping, weights 1..n"),
)
FULL = {"warmup_rounds": 5, "rounds": 9, "round_ms": 80, "tuples": 1_000_000, "uniform_keys": 100_000}
QUICK = {"warmup_rounds": 2, "rounds": 3, "round_ms": 15, "tuples": 100_000, "uniform_keys": 20_000}
PLAN_STREAM = ("linear", "mid->high")
"""Where the real weighted plan's shares come from: Linear planned with weighted shares on the default cluster
(the shipped profile set has no RollingCount profiles, so RollingCount itself cannot be planned offline)."""

console = Console(width=None if sys.stdout.isatty() else 200)


def java_class_path() -> str:
    """The plugin's classes, its test classes (the harness) and its test-scope dependencies; Maven runs only when a
    file under storm-plugin/src (or its pom) is newer than the last build of this tool."""
    sources = [POM, *(p for p in (REPO / "storm-plugin" / "src").rglob("*") if p.is_file())]
    built = CLASSPATH_FILE.stat().st_mtime if MAIN_CLASS_FILE.exists() and CLASSPATH_FILE.exists() else 0.0
    if any(p.stat().st_mtime > built for p in sources):
        with console.status("building the plugin's test classes (mvn test-compile)"):
            done = subprocess.run(
                ["mvn", "-q", "-B", "-f", str(POM), "test-compile", "dependency:build-classpath",
                 f"-Dmdep.outputFile={CLASSPATH_FILE}", "-Dmdep.includeScope=test"],
                capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"mvn test-compile failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
        CLASSPATH_FILE.touch()  # the stamp of this build
    return os.pathsep.join([str(TARGET / "classes"), str(TARGET / "test-classes"), CLASSPATH_FILE.read_text().strip()])


def plan_shares() -> list[float]:
    """The shares of a real weighted plan: PLAN_STREAM of the default cluster's plan with weighted shares."""
    from benchmarks.weighted_shares_joint import default_cluster_request
    from planner.api import make_plan
    from planner.model import PlanOptions

    topology, stream = PLAN_STREAM
    plan = make_plan(*default_cluster_request(topology), options=PlanOptions(weighted_shares=True))
    shares = next(s.shares for s in plan.shares or [] if s.stream == stream)
    return [round(float(x), 4) for x in shares]


def spec(settings: dict[str, Any], planned: list[float]) -> dict[str, Any]:
    """What the harness runs, without its cost configurations (added per JVM)."""
    even3 = [1.0, 1.0, 1.0]
    return {
        "seed": SEED,
        "vocabulary": [word(rank) for rank in range(1, TEXT_VOCABULARY_SIZE + 1)],
        "zipf_s": TEXT_WORD_ZIPF_S,
        "balance": {"tuples": settings["tuples"], "uniform_keys": settings["uniform_keys"], "cases": [
            {"name": "weights 0.5, 0.3, 0.2", "weights": [0.5, 0.3, 0.2]},
            {"name": f"a plan's shares ({PLAN_STREAM[0]} {PLAN_STREAM[1]})", "weights": planned},
            {"name": "5 tasks, weights 1..5", "weights": [1, 2, 3, 4, 5]},
            {"name": "20 tasks, even weights", "weights": [1.0] * 20},
        ]},
        "moves": {"uniform_keys": settings["uniform_keys"], "cases": [
            {"name": "re-weight 0.5,0.3,0.2 -> 0.4,0.4,0.2", "before": [0.5, 0.3, 0.2], "after": [0.4, 0.4, 0.2]},
            {"name": "task added: 0.5,0.3,0.2 -> 0.4,0.24,0.16,0.2", "before": [0.5, 0.3, 0.2],
             "after": [0.4, 0.24, 0.16, 0.2]},
            {"name": "task removed: 0.5,0.3,0.2 -> 0.625,0.375", "before": [0.5, 0.3, 0.2], "after": [0.625, 0.375]},
            {"name": "task added, even: 3 -> 4 tasks", "before": even3, "after": [1.0] * 4},
            {"name": "task removed, even: 4 -> 3 tasks", "before": [1.0] * 4, "after": even3},
            {"name": "shares first set: none -> the plan's", "before": None, "before_tasks": len(planned), "after": planned},
        ]},
    }


def run_java(classpath: str, job: dict[str, Any], workdir: Path) -> dict[str, Any]:
    path = workdir / "spec.json"
    path.write_text(json.dumps(job))
    done = subprocess.run(["java", *JVM_OPTIONS, "-cp", classpath, MAIN, str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the harness failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])


def measure(settings: dict[str, Any], quick: bool) -> dict[str, Any]:
    classpath = java_class_path()
    planned = plan_shares()
    base = spec(settings, planned)
    configs = [{"grouping": g, "tasks": n} for n in TASK_COUNTS for g, _ in GROUPINGS]
    timing = {k: settings[k] for k in ("warmup_rounds", "rounds", "round_ms")}
    with tempfile.TemporaryDirectory(prefix="grouping-cost-") as tmp:
        workdir = Path(tmp)
        if quick:
            with console.status("one JVM: cost, balance, moves"):
                result = run_java(classpath, base | {"cost": timing | {"configs": configs}}, workdir)
        else:
            with console.status("balance and moves"):
                result = run_java(classpath, base, workdir)
            result["cost"] = []
            for i, config in enumerate(configs, 1):
                with console.status(f"cost {i}/{len(configs)}: {config['grouping']} over {config['tasks']} tasks "
                                    "(one JVM each)"):
                    only = {k: base[k] for k in ("seed", "vocabulary", "zipf_s")}
                    result["cost"] += run_java(classpath, only | {"cost": timing | {"configs": [config]}}, workdir)["cost"]
    result["settings"] = settings | {"quick": quick, "forks": "one JVM for all" if quick else "one JVM per row"}
    result["plan_shares"] = {"topology": PLAN_STREAM[0], "stream": PLAN_STREAM[1], "shares": planned}
    result["host"] = {"cpus": os.cpu_count(), "loadavg": list(os.getloadavg())}
    summarise(result)
    return result


def summarise(result: dict[str, Any]) -> None:
    """Adds each cost row's median and range, each balance case's deviations (in place)."""
    for row in result["cost"]:
        cpu = row["cpu_ns"]
        row["median_ns"], row["min_ns"], row["max_ns"] = statistics.median(cpu), min(cpu), max(cpu)
        row["median_wall_ns"] = statistics.median(row["wall_ns"])
    for case in result["balance"]:
        target = case["target"]
        even = [1 / len(target)] * len(target)
        for kind in ("storm_fields", "weighted_fields"):
            got = case[kind]
            for share in ("tuple_share", "key_share", "uniform_key_share"):
                got[f"{share}_max_dev"] = max(abs(a - b) for a, b in zip(got[share], target))
            got["tuple_share_max_dev_from_even"] = max(abs(a - b) for a, b in zip(got["tuple_share"], even))
            got["sampled_vs_exact"] = max(abs(a - b) for a, b in zip(got["tuple_share"], got["tuple_share_exact"]))
        case["deviation_floor"] = max(0.0, case["hottest_key_share"] - max(target))


def report(result: dict[str, Any]) -> None:
    settings = result["settings"]
    cost = Table(title=f"1. CPU ns per tuple (chooseTasks), median (min-max) of {settings['rounds']} rounds of "
                       f"~{settings['round_ms']} ms after {settings['warmup_rounds']} warm-up; {settings['forks']}")
    cost.add_column("grouping")
    for n in TASK_COUNTS:
        cost.add_column(f"{n} tasks", justify="right")
    by = {(r["grouping"], r["tasks"]): r for r in result["cost"]}
    for kind, label in GROUPINGS:
        cells = []
        for n in TASK_COUNTS:
            r = by[(kind, n)]
            cells.append(f"{r['median_ns']:.1f} ({r['min_ns']:.1f}-{r['max_ns']:.1f})")
        cost.add_row(label, *cells)
    console.print(cost)

    for case in result["balance"]:
        storm, ours = case["storm_fields"], case["weighted_fields"]
        if len(case["target"]) > 5:
            continue
        table = Table(title=f"2. {case['name']}: each task's share, Zipf keys ({TEXT_VOCABULARY_SIZE} words, s="
                            f"{TEXT_WORD_ZIPF_S}, {settings['tuples']:,} tuples) and {settings['uniform_keys']:,} uniform keys")
        for column in ("task", "target", "Storm tuples", "Storm keys", "weighted tuples", "weighted keys",
                       "weighted, uniform keys"):
            table.add_column(column, justify="right")
        for i, target in enumerate(case["target"]):
            hot = [" (hottest key)" if got["hottest_key_task"] == i else "" for got in (storm, ours)]
            table.add_row(str(i), f"{target:.3f}", f"{storm['tuple_share'][i]:.3f}{hot[0]}", f"{storm['key_share'][i]:.3f}",
                          f"{ours['tuple_share'][i]:.3f}{hot[1]}", f"{ours['key_share'][i]:.3f}",
                          f"{ours['uniform_key_share'][i]:.3f}")
        console.print(table)

    summary = Table(title="2. Largest deviation of a task's share from its target (Storm's fields grouping ignores the "
                          "weights: its deviation from an even split in brackets)")
    for column in ("case", "hottest key", "its task's target (weighted)", "floor", "Storm tuples", "Storm keys",
                   "weighted tuples", "weighted keys", "weighted, uniform keys"):
        summary.add_column(column, justify="right" if column != "case" else "left")
    for case in result["balance"]:
        storm, ours = case["storm_fields"], case["weighted_fields"]
        summary.add_row(case["name"], f"{case['hottest_key_share']:.3f}", f"{case['target'][ours['hottest_key_task']]:.3f}",
                        f"{case['deviation_floor']:.3f}",
                        f"{storm['tuple_share_max_dev']:.3f} ({storm['tuple_share_max_dev_from_even']:.3f})",
                        f"{storm['key_share_max_dev']:.3f}", f"{ours['tuple_share_max_dev']:.3f}",
                        f"{ours['key_share_max_dev']:.3f}", f"{ours['uniform_key_share_max_dev']:.3f}")
    console.print(summary)
    gap = max(c[k]["sampled_vs_exact"] for c in result["balance"] for k in ("storm_fields", "weighted_fields"))
    console.print(f"floor: the hottest key's share above the largest target, the least any grouping of whole keys can "
                  f"deviate. Tuple shares are of the sampled stream; they differ from the Zipf distribution's exact "
                  f"shares by at most {gap:.4f}. The plan's shares: {result['plan_shares']['shares']} "
                  f"({result['plan_shares']['topology']} {result['plan_shares']['stream']}, default cluster).")

    moves = Table(title=f"3. Moved to another task by a change: fraction of the {TEXT_VOCABULARY_SIZE} Zipf keys / "
                        "of their tuples")
    for column in ("change", "least (TV)", "weighted keys", "weighted tuples", "weighted, uniform keys",
                   "slot modulo keys", "slot modulo tuples", "Storm modulo keys", "Storm modulo tuples"):
        moves.add_column(column, justify="right" if column != "change" else "left")
    for m in result["moves"]:
        same_count = m["before_tasks"] == len(m["after"])
        storm = ("-", "-") if same_count else (f"{m['storm_modulo_keys']:.3f}", f"{m['storm_modulo_tuples']:.3f}")
        moves.add_row(m["name"], f"{m['least']:.3f}", f"{m['weighted_keys']:.3f}", f"{m['weighted_tuples']:.3f}",
                      f"{m['weighted_uniform_keys']:.3f}", f"{m['weighted_modulo_keys']:.3f}",
                      f"{m['weighted_modulo_tuples']:.3f}", *storm)
    console.print(moves)
    console.print("least: total variation between the old and new target shares (what must move for a divisible stream). "
                  "slot modulo: the key's hash modulo 10,000 slots dealt to the tasks in order by weight. Storm modulo: "
                  "Storm's fields grouping over the new task count ('-': same count, nothing moves and the weights are "
                  "ignored). 'shares first set': the weighted grouping without shares is Storm's modulo, with them "
                  "rendezvous.")
    host = result["host"]
    console.print(f"{result['java']}; load average {', '.join(f'{x:.1f}' for x in host['loadavg'])} on {host['cpus']} cores")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short rounds, fewer tuples, one JVM (a few seconds)")
    parser.add_argument("--json", type=Path, help="write the raw results here")
    args = parser.parse_args(argv)
    if shutil.which("java") is None or shutil.which("mvn") is None:
        raise SystemExit("needs java (17) and mvn on the PATH")
    result = measure(QUICK if args.quick else FULL, args.quick)
    report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
