"""The worst-case-loss objective on the paper's scenarios: nominal R_max given up against worst-case rate gained.

For each paper scenario (planner.fixtures) the default strategy plans twice: with ``survive_loss: {objective:
nominal}`` (its own plan and its contingencies) and with ``survive_loss: {}`` (the worst-case objective). Each row
gives both plans' nominal R_max and their rate after the loss of their worst machine (its instances re-placed, the
others kept), and the planning time. ``python -m benchmarks.survive_loss [--time-limit-s 10] [--json]``.

``--cluster default`` plans Linear, Diamond and Star on the default local cluster instead (cluster/specs/default.yaml
and profiles/default-cluster.json, as ``hetsched bench`` plans them). ``--weighted`` sets both objectives beside
each other: the worst-case objective without and with ``options.weighted_shares`` (issues 33 and 34), each plan's
nominal R, its worst-case R and its planning time in ms (the median of ``--repeat`` plans; in brackets the CPU ms of
this process, which a loaded host does not inflate), and the weighted plan's
worst-case R where its contingency runs with the plan's own shares (the weighted groupings resolve the plan's
machine shares over the new placement, as nothing sends shares chosen for it; bench.placement.placement_shares):
the bench's own check of what the planner predicts (planner.stream_shares.kept_shares), which it should equal.
``python -m benchmarks.survive_loss --cluster default --weighted [--repeat 3]``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Iterator

from planner.api import evaluate_assignments, make_plan
from planner.fixtures import SCENARIOS, TOPOLOGIES, load_scenario
from planner.model import Cluster, InstanceAssignment, Plan, PlanOptions, ProfileEntry, SurviveLoss, Topology

Request = tuple[Topology, Cluster, list[ProfileEntry]]


def requests(cluster: str) -> Iterator[tuple[str, Request]]:
    """(row name, request) of the paper's scenarios or of the default local cluster."""
    if cluster == "default":
        from benchmarks.weighted_shares_joint import TOPOLOGIES as DEFAULT_TOPOLOGIES
        from benchmarks.weighted_shares_joint import default_cluster_request

        for name in DEFAULT_TOPOLOGIES:
            yield f"default-{name}", default_cluster_request(name)
        return
    for topology in TOPOLOGIES:
        for scenario in SCENARIOS:
            s = load_scenario(topology, scenario)
            yield f"{topology}-s{scenario}", (s.topology, s.cluster, list(s.profiles.entries))


def row(topology: str, scenario: int, time_limit_s: float) -> dict:
    s = load_scenario(topology, scenario)
    return objectives(f"{topology}-s{scenario}", (s.topology, s.cluster, list(s.profiles.entries)), time_limit_s)


def objectives(name: str, request: Request, time_limit_s: float) -> dict:
    """The nominal and the worst-case objective's plans of one request."""
    topology, cluster, entries = request
    out: dict = {"scenario": name, "machines": len(cluster.machines)}
    for label, rule in (("nominal", SurviveLoss(objective="nominal")), ("worst_case", SurviveLoss())):
        started = time.perf_counter()
        plan = make_plan(topology, cluster, entries, None, PlanOptions(survive_loss=rule, time_limit_s=time_limit_s))
        out[label] = {"rate": plan.input_rate, "worst_case_rate": plan.stats["survive_loss"]["worst_case_rate"],
                      "search": plan.stats["survive_loss"].get("search"), "seconds": time.perf_counter() - started}
    return out


def weighted_row(name: str, request: Request, time_limit_s: float, repeat: int) -> dict:
    """The worst-case objective's plan without and with weighted shares: R, worst-case R, planning ms (median)."""
    topology, cluster, entries = request
    out: dict = {"scenario": name, "machines": len(cluster.machines)}
    for label, weighted in (("survive", False), ("weighted", True)):
        options = PlanOptions(survive_loss=SurviveLoss(), weighted_shares=weighted, time_limit_s=time_limit_s)
        timed, cpu = [], []
        for _ in range(repeat):
            started, started_cpu = time.perf_counter(), time.process_time()
            plan = make_plan(topology, cluster, entries, None, options)
            timed.append((time.perf_counter() - started) * 1000.0)
            cpu.append((time.process_time() - started_cpu) * 1000.0)
        survived = plan.stats["survive_loss"]
        out[label] = {"rate": plan.input_rate, "worst_case_rate": survived["worst_case_rate"],
                      "search": survived.get("search"), "ms": statistics.median(timed),
                      "cpu_ms": statistics.median(cpu)}
        if weighted:
            out[label]["worst_case_rate_plan_shares"] = worst_with_plan_shares(request, plan)
    return out


def worst_with_plan_shares(request: Request, plan: Plan) -> float:
    """The least rate after a loss with its contingency applied and the plan's machine shares kept, resolved over
    the new placement as the weighted groupings resolve them (no shares are sent with a contingency)."""
    from bench.placement import ActualPlacement, placement_shares
    from planner.stream_shares import machine_shares

    topology, cluster, entries = request
    shares = machine_shares(plan)
    where = {(a.component, a.index): a.machine for a in plan.assignments}
    rates = [plan.input_rate] if len(plan.contingencies or []) < len(plan.machines) else []
    for contingency in plan.contingencies or []:
        moved = {**where, **{(m.component, m.index): m.machine for m in contingency.moves}}
        executors: dict[str, list[str]] = {}
        for (component, _), machine in sorted(moved.items()):
            executors.setdefault(component, []).append(machine)
        survivors = cluster.model_copy(update={"machines": [m for m in cluster.machines
                                                            if m.id != contingency.machine]})
        assignments = [InstanceAssignment(component=c, machine=m) for c, ms in executors.items() for m in ms]
        resolved = placement_shares(ActualPlacement(executors=executors), shares)
        rates.append(evaluate_assignments(topology, survivors, entries, assignments, shares=resolved or None).input_rate)
    return min(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit-s", type=float, default=10.0, help="options.time_limit_s of each plan (the service's default)")
    parser.add_argument("--cluster", choices=("paper", "default"), default="paper",
                        help="the paper's scenarios, or Linear, Diamond and Star on the default local cluster")
    parser.add_argument("--weighted", action="store_true",
                        help="the worst-case objective without and with options.weighted_shares instead")
    parser.add_argument("--repeat", type=int, default=1, help="--weighted: plans per figure, the median time is shown")
    parser.add_argument("--json", action="store_true", help="one JSON object per scenario instead of the table")
    args = parser.parse_args()
    if not args.json and args.weighted:
        print("| scenario | machines | survive: R | its worst-case R | ms (CPU) | survive + weighted shares: R "
              "| its worst-case R | ms (CPU) | its worst-case R, the plan's shares kept |")
        print("|---|---|---|---|---|---|---|---|---|")
    elif not args.json:
        print("| scenario | machines | nominal R | its worst-case R | worst-case objective: R | its worst-case R | nominal given up | worst case gained | search | s |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    for name, request in requests(args.cluster):
        if args.weighted:
            r = weighted_row(name, request, args.time_limit_s, args.repeat)
            if args.json:
                print(json.dumps(r), flush=True)
                continue
            s, w = r["survive"], r["weighted"]
            print(f"| {name} | {r['machines']} | {s['rate']:.2f} | {s['worst_case_rate']:.2f} | {s['ms']:.0f} "
                  f"({s['cpu_ms']:.0f}) | {w['rate']:.2f} | {w['worst_case_rate']:.2f} | {w['ms']:.0f} ({w['cpu_ms']:.0f}) | "
                  f"{w['worst_case_rate_plan_shares']:.2f} |", flush=True)
            continue
        r = objectives(name, request, args.time_limit_s)
        if args.json:
            print(json.dumps(r))
            continue
        n, w = r["nominal"], r["worst_case"]
        print(f"| {r['scenario']} | {r['machines']} | {n['rate']:.2f} | {n['worst_case_rate']:.2f} | {w['rate']:.2f} | "
              f"{w['worst_case_rate']:.2f} | {1 - w['rate'] / n['rate']:+.1%} | "
              f"{w['worst_case_rate'] / n['worst_case_rate'] - 1:+.1%} | {w['search']} | {w['seconds']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
