"""Scheduling rounds at cluster scale: HetschedScheduler, Storm's RAS and DefaultScheduler on hundreds of supervisors.

For each size (supervisors x topologies x machine types) it generates a scenario (mixed topology sizes, some with
stored plans, some tenants with priorities and minimum rates) and a profile set covering its machine types, starts
``hetsched serve`` (a free loopback port, a fresh database), stores the set and the stored plans, and runs
``org.hetsched.storm.SchedulerScaleBenchmark``: Storm's own ``Cluster``/``Topologies`` objects, round after round
as Nimbus runs them, the plugin asking the real planner through a proxy that counts its requests. Reports per
scheduler the milliseconds of ``schedule()`` per round, the JVM heap, the service's memory, planner requests per
round and the rounds (and seconds) until every topology is placed.

    .venv/bin/python -m benchmarks.scheduler_scale [--sizes 100x50x3,300x150x5,1000x500x10] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import random
import signal
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
from rich.console import Console
from rich.table import Table

from benchmarks.plugin_schedule_time import java_class_path
from benchmarks.serving import percentile, start_service
from planner.model import ProfileEntry, ProfileSet

MAIN = "org.hetsched.storm.SchedulerScaleBenchmark"
PROFILE_SET = "scale"
COMPONENT_PROFILES = {"spout": "spout", "low": "lowCompute", "mid": "midCompute", "high": "highCompute"}
BASE_E = {"spout": 0.001, "lowCompute": 0.01, "midCompute": 0.02, "highCompute": 0.04}
"""Seconds of a 1-core machine per tuple; a type with more cores (and speed) divides it."""
SHAPES = {  # executors of spout, low, mid, high, ackers; topology.workers
    "small": (1, 2, 2, 2, 1, 2),
    "medium": (2, 6, 8, 8, 2, 4),
    "large": (4, 20, 30, 30, 4, 8),
}
console = Console(width=220)


@dataclass(frozen=True)
class Size:
    supervisors: int
    topologies: int
    types: int

    @classmethod
    def parse(cls, text: str) -> Size:
        """'1000x500x10': supervisors x topologies x machine types (3 types where the third is left out)."""
        parts = [int(p) for p in text.lower().split("x")]
        if len(parts) not in (2, 3) or min(parts) < 1:
            raise argparse.ArgumentTypeError(f"size {text!r} is not SUPERVISORSxTOPOLOGIES[xTYPES]")
        return cls(parts[0], parts[1], parts[2] if len(parts) == 3 else 3)


def machine_types(count: int) -> list[tuple[str, int, float]]:
    """(name, cores, speed per core) of each machine type: cores 1, 2, 4, 8 in turn, speed 0.6 to 1.4."""
    return [(f"t{i}", (1, 2, 4, 8)[i % 4], round(0.6 + 0.8 * i / max(1, count - 1), 3)) for i in range(count)]


def profile_set(types: list[tuple[str, int, float]]) -> ProfileSet:
    """Every profile key of the scenario on every machine type: e shrinks with cores x speed."""
    entries = [ProfileEntry(profile=p, machine_type=name, e=round(e / (cores * speed), 6),
                            met=0.5 if p == "spout" else 1.0)
               for name, cores, speed in types for p, e in BASE_E.items()]
    return ProfileSet(name=PROFILE_SET, entries=entries,
                      source={"generated": "benchmarks.scheduler_scale", "machine_base_load": {t[0]: 5.0 for t in types}})


def scenario(size: Size, seed: int) -> dict:
    """Supervisors of ``size.types`` types and topologies 60% small, 30% medium, 10% large, each with its shape's
    workers as its worker budget (``hetsched.max.workers``); a fifth of them tenants with a priority (0-10) and a
    minimum rate, a tenth of the small ones with a stored plan (``stored_plan`` names the four supervisors it is made
    for)."""
    rng = random.Random(seed)
    types = machine_types(size.types)
    supervisors = [{"id": f"sup-{i:04d}", "type": types[i % len(types)][0], "cores": types[i % len(types)][1], "slots": 4}
                   for i in range(size.supervisors)]
    topologies = []
    for i in range(size.topologies):
        shape = rng.choices(list(SHAPES), weights=(6, 3, 1))[0]
        spout, low, mid, high, ackers, workers = SHAPES[shape]
        conf: dict = {"hetsched.profiles": PROFILE_SET, "hetsched.component.profiles": COMPONENT_PROFILES,
                      "hetsched.max.workers": workers}  # an operator at scale budgets workers as topology.workers does
        if rng.random() < 0.2:
            conf |= {"topology.priority": rng.randint(0, 10), "hetsched.min.rate": 0.5}
        topology = {"id": f"scale-{i:04d}-1", "name": f"scale-{i:04d}", "shape": shape, "spout": spout, "low": low,
                    "mid": mid, "high": high, "ackers": ackers, "workers": workers, "conf": conf}
        if shape == "small" and rng.random() < 0.1:
            topology["stored_plan"] = [supervisors[rng.randrange(size.supervisors)]["id"] for _ in range(4)]
        topologies.append(topology)
    return {"supervisors": supervisors, "topologies": topologies}


def stored_plan_request(topology: dict, supervisors: list[dict]) -> dict:
    """The plan request, made before submission, of a topology with a stored plan: on its four supervisors."""
    names = sorted(set(topology["stored_plan"]))
    chosen = [s for s in supervisors if s["id"] in names]
    types = sorted({s["type"] for s in chosen})
    return {
        "topology": {"name": topology["name"],
                     "components": [{"id": c, "kind": "spout" if c == "spout" else "bolt", "profile": p,
                                     "parallelism": topology[c]} for c, p in COMPONENT_PROFILES.items()],
                     "streams": [{"from": a, "to": b} for a, b in (("spout", "low"), ("low", "mid"), ("mid", "high"))]},
        "cluster": {"machine_types": [{"name": t, "capacity": 95, "slots": 4} for t in types],
                    "machines": [{"id": s["id"], "type": s["type"]} for s in chosen]},
        "profiles": {"name": PROFILE_SET},
    }


def prepare_planner(url: str, size: Size, plan: dict) -> None:
    """Stores the profile set and every stored plan, writing each plan's id into its topology's conf."""
    with httpx.Client(base_url=url, timeout=120) as http:
        answer = http.put(f"/v1/profiles/{PROFILE_SET}", json=profile_set(machine_types(size.types)).model_dump(mode="json"))
        answer.raise_for_status()
        for topology in plan["topologies"]:
            if "stored_plan" in topology:
                answer = http.post("/v1/plans", json=stored_plan_request(topology, plan["supervisors"]))
                if answer.status_code != 201:
                    raise SystemExit(f"storing the plan of {topology['name']} failed: HTTP {answer.status_code} {answer.text}")
                topology["conf"]["hetsched.plan.id"] = answer.json()["id"]


def tenant_request(topology: dict, supervisors: list[dict]) -> dict:
    """The plan request the plugin sends for a topology: every executor count fixed, every supervisor, its tenant."""
    request = stored_plan_request({**topology, "stored_plan": [s["id"] for s in supervisors]}, supervisors)
    request["topology"]["components"].append({"id": "__acker", "kind": "bolt", "parallelism": topology["ackers"]})
    for t in request["cluster"]["machine_types"]:
        t["capacity"] = 95.0
    conf = topology["conf"]
    if "hetsched.max.workers" in conf:
        request["topology"]["max_workers"] = conf["hetsched.max.workers"]
    request["tenant"] = {"priority": conf.get("topology.priority", 29), "min_rate": conf.get("hetsched.min.rate", 0.0)}
    return request


def newcomer_times(size: Size, args: argparse.Namespace) -> list[dict]:
    """Each topology planned as a newcomer beside those before it, one after another, until the time limit: the
    seconds each plan request took against the tenants already registered."""
    plan = scenario(size, args.seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="scheduler-scale-") as tmp:
        process, url = start_service(Path(tmp), extra_args=args.serve_arg)
        try:
            with httpx.Client(base_url=url, timeout=600) as http:
                http.put(f"/v1/profiles/{PROFILE_SET}",
                         json=profile_set(machine_types(size.types)).model_dump(mode="json")).raise_for_status()
                started = time.monotonic()
                for i, topology in enumerate(plan["topologies"]):
                    t0 = time.monotonic()
                    answer = http.post("/v1/plans", json=tenant_request(topology, plan["supervisors"]))
                    body = answer.json()
                    tenancy = body.get("stats", {}).get("tenancy", {}) if answer.status_code == 201 else {}
                    rows.append({"tenants_before": i, "seconds": time.monotonic() - t0, "status": answer.status_code,
                                 "shape": topology["shape"], "replaced": len(tenancy.get("replaced", [])),
                                 "evicted": len(tenancy.get("evicted", []))})
                    if time.monotonic() - started > args.time_limit_s:
                        break
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=15)
    return rows


def peak_rss_mb(process: subprocess.Popen) -> float:
    """The service's processes' peak resident memory (VmHWM), summed: the service and its planning processes."""
    total = 0.0
    try:
        for p in [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]:
            for line in Path(f"/proc/{p.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) / 1024
    except (psutil.Error, OSError):
        pass
    return total


def run_size(size: Size, args: argparse.Namespace, classpath: str) -> dict:
    plan = scenario(size, args.seed)
    with tempfile.TemporaryDirectory(prefix="scheduler-scale-") as tmp:
        process, url = start_service(Path(tmp), extra_args=args.serve_arg)
        try:
            prepare_planner(url, size, plan)
            scenario_file = Path(tmp) / "scenario.json"
            scenario_file.write_text(json.dumps(plan))
            command = ["java", f"-Xmx{args.heap}", "-cp", classpath, "-Dlog4j2.level=WARN", MAIN, str(scenario_file),
                       url, args.schedulers, str(args.max_rounds), str(int(args.round_interval_s * 1000)),
                       str(args.time_limit_s), str(args.steady_rounds)]
            with console.status(f"{size.supervisors} supervisors, {size.topologies} topologies, {size.types} types"):
                done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"the benchmark failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
            result = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])
            result["types"] = size.types
            result["service_peak_rss_mb"] = round(peak_rss_mb(process), 1)
            result["shapes"] = {s: sum(t["shape"] == s for t in plan["topologies"]) for s in SHAPES}
            result["stored_plans"] = sum("stored_plan" in t for t in plan["topologies"])
            result["tenants_with_priority"] = sum("topology.priority" in t["conf"] for t in plan["topologies"])
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
            if args.service_log:
                args.service_log.write_text((Path(tmp) / "serve.log").read_text(errors="replace"))
    return result


def summary_rows(result: dict) -> list[dict]:
    """One row per scheduler: ms per round (median, range, p99), memory, requests per round, rounds to place all."""
    rows = []
    for r in result["results"]:
        ms = [x["ms"] for x in r["rounds"]]
        requests = [x["requests"] for x in r["rounds"]]
        rows.append({
            "supervisors": result["supervisors"], "topologies": result["topologies"], "types": result["types"],
            "scheduler": r["scheduler"], "rounds": len(ms), "ms_median": statistics.median(ms), "ms_min": min(ms),
            "ms_max": max(ms), "ms_p99": percentile(ms, 99), "heap_mb_max": max(x["heap_mb"] for x in r["rounds"]),
            "heap_after_gc_mb": r["heap_after_gc_mb"],
            "service_rss_mb": result["service_peak_rss_mb"] if r["scheduler"] == "hetsched" else None,
            "requests_median": statistics.median(requests), "requests_max": max(requests),
            "rounds_to_place_all": r.get("rounds_to_place_all"), "seconds_to_place_all": r.get("seconds_to_place_all"),
            "placed": r["placed"], "off_plan_executors": r.get("off_plan_executors"), "statuses": r["statuses"],
            "status_reasons": r.get("status_reasons", {}),
        })
    return rows


def report(rows: list[dict], interval_s: float) -> None:
    table = Table(title=f"schedule() per round, rounds every {interval_s:g} s until every topology is placed, then steady")
    columns = ("sup", "topo", "types", "scheduler", "ms/round median (range)", "p99", "heap MB", "service MB",
               "requests/round median (max)", "rounds (s) to place all", "placed", "off plan")
    for column in columns:
        table.add_column(column, justify="left" if column == "scheduler" else "right")
    for r in rows:
        to_place = ("-" if r["rounds_to_place_all"] is None
                    else f"{r['rounds_to_place_all']} ({r['seconds_to_place_all']:.1f})")
        table.add_row(str(r["supervisors"]), str(r["topologies"]), str(r["types"]), r["scheduler"],
                      f"{r['ms_median']:.1f} ({r['ms_min']:.1f}-{r['ms_max']:.1f})", f"{r['ms_p99']:.1f}",
                      f"{r['heap_mb_max']:.0f}", "-" if r["service_rss_mb"] is None else f"{r['service_rss_mb']:.0f}",
                      f"{r['requests_median']:g} ({r['requests_max']})", to_place,
                      f"{r['placed']}/{r['topologies']}",
                      "-" if r["off_plan_executors"] is None else str(r["off_plan_executors"]))
    console.print(table)
    for r in rows:
        if r["placed"] < r["topologies"] or (r["scheduler"] == "hetsched" and set(r["statuses"]) - {"placed by planner"}):
            console.print(f"{r['supervisors']}x{r['topologies']} {r['scheduler']}: statuses {r['statuses']}, "
                          f"why: {r['status_reasons']}")


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100x50x3,300x150x5,1000x500x10",
                        help="comma-separated SUPERVISORSxTOPOLOGIESxTYPES")
    parser.add_argument("--schedulers", default="hetsched,ras,default")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--round-interval-s", type=float, default=1.0, help="a round starts this often (Nimbus: 10 s)")
    parser.add_argument("--max-rounds", type=int, default=2000)
    parser.add_argument("--time-limit-s", type=int, default=600, help="per scheduler and size")
    parser.add_argument("--steady-rounds", type=int, default=5, help="rounds measured after every topology is placed")
    parser.add_argument("--heap", default="4g", help="the harness JVM's -Xmx (Nimbus's heap)")
    parser.add_argument("--serve-arg", action="append", default=[], help="passed to hetsched serve (repeatable)")
    parser.add_argument("--service-log", type=Path, help="copy the planning service's log here (the last size's)")
    parser.add_argument("--json", type=Path, help="write every round of every run here")
    parser.add_argument("--newcomers", action="store_true",
                        help="no Storm: plan each topology as a newcomer beside the ones before it and time each request")
    args = parser.parse_args(argv)
    sizes = [Size.parse(s) for s in args.sizes.split(",")]
    if args.newcomers:
        for size in sizes:
            rows = newcomer_times(size, args)
            if args.json:
                args.json.write_text(json.dumps(rows, indent=1))
            table = Table(title=f"a newcomer beside the tenants before it: {size.supervisors} supervisors, {size.types} types")
            for column in ("tenants before", "shape", "seconds", "HTTP", "re-placed", "evicted"):
                table.add_column(column, justify="right")
            for r in rows:
                table.add_row(str(r["tenants_before"]), r["shape"], f"{r['seconds']:.2f}", str(r["status"]),
                              str(r["replaced"]), str(r["evicted"]))
            console.print(table)
        return []
    classpath = java_class_path()
    results = [run_size(size, args, classpath) for size in sizes]
    rows = [row for result in results for row in summary_rows(result)]
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    report(rows, args.round_interval_s)
    return rows


if __name__ == "__main__":
    main()
