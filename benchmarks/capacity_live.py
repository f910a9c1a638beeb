"""Issue 34, live: the machine ``hetsched capacity`` says to add next, added to the compose cluster, predicted against measured.

The capacity answer (``planner.capacity.plan_capacity``, no service) for Linear at ``--target-rate`` on the default
spec's three machines, planned as ``hetsched bench`` plans them (the shipped profile set's base load taken off each
machine), with small, medium and large on offer at ``--prices``. The compose containers share one host, so each type
is offered only as many times as its quota still fits in the host's cores (``--host-cores`` less the default
cluster's quotas less ``--reserve-cores`` for ZooKeeper, Nimbus and the planner). The largest gain of ``add_next`` is
the machine to add: a spec with one more of its type is written into OUT, and ``hetsched bench --cluster compose
--schedulers planned --topologies linear`` runs on both specs, alternated round by round (the first side of a round
is the other one the next round, so drift of the host falls on both). The measured input rate R (the spouts'
tuples/s, the figure the results page calls the input rate) of each pair gives a ratio four/three; its median (min-max)
stands against the answer's predicted gain, the added machine's rate over the three machines'.

    .venv/bin/python -m benchmarks.capacity_live [--repeats 3] [--out var/capacity-live] \\
        [--prices small=1,medium=2,large=4] [--host-cores 2.0] [--reserve-cores 0.2] [--target-rate 20] [--dry-run]
    .venv/bin/python -m benchmarks.capacity_live --report var/capacity-live

Live (it starts the compose cluster twice per round): run it under the host's lock, ``flock /tmp/hetsched-live.lock``.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import yaml
from rich.console import Console
from rich.table import Table

from cluster.errors import ClusterError
from cluster.spec import DEFAULT_SPEC, ClusterSpec, load_spec, parse_spec
from planner.capacity_model import Addition, CapacityAnswer, CapacityRequest, CapacityTopology, OfferedType
from planner.durable import write_json_atomic
from planner.errors import PlanningError
from planner.model import Cluster, ProfileRef, Topology

REPO = Path(__file__).resolve().parents[1]
TOPOLOGY = "linear"
SCHEDULER = "planned"
PROFILE_SET = "default-cluster"
"""The shipped profile set ``hetsched bench`` plans with by default (profiles/default-cluster.json)."""
RESULT_FILE = "capacity-live.json"
BASE, ADDED = "base", "added"
"""The two sides: the default spec's machines, and those with the machine the answer adds."""
CLI = [sys.executable, "-m", "hetsched.cli"]
"""The ``hetsched`` entry point (pyproject.toml: hetsched.cli:main) of this interpreter."""
CORE_SLACK = 1e-9
"""Cores of float rounding forgiven when a quota is fitted into what is left of the host."""

console = Console(highlight=False, width=max(Console().width, 160))


def say(text: str) -> None:
    """One progress line, stamped in UTC as the other live tools do."""
    console.print(f"[{time.strftime('%H:%M:%S', time.gmtime())}] {text}")


# --- the request (pure) ------------------------------------------------------------------------------------------

def parse_prices(text: str, machine_types: list[str]) -> dict[str, float]:
    """``small=1,medium=2`` as type -> price per machine; every type of the spec needs one."""
    prices: dict[str, float] = {}
    for pair in (p.strip() for p in text.split(",") if p.strip()):
        name, eq, value = pair.partition("=")
        name = name.strip()
        try:
            price = float(value)
        except ValueError:
            price = math.nan
        if not eq or not name or not math.isfinite(price) or price < 0:
            raise SystemExit(f"--prices: {pair!r} is not TYPE=PRICE with a price of 0 or more (e.g. small=1,medium=2)")
        if name not in machine_types:
            raise SystemExit(f"--prices names machine type {name}, which the cluster spec does not declare "
                             f"(its types: {', '.join(machine_types)})")
        prices[name] = price
    missing = [t for t in machine_types if t not in prices]
    if missing:
        raise SystemExit(f"--prices gives no price for machine type {missing[0]}: give one for each of "
                         f"{', '.join(machine_types)}")
    return prices


def cores_left(spec: ClusterSpec, host_cores: float, reserve_cores: float) -> float:
    """Cores of the host not yet taken by the spec's quotas and the reserve (ZooKeeper, Nimbus, the planner)."""
    return host_cores - spec.total_cpu_cores - reserve_cores


def available_machines(spec: ClusterSpec, host_cores: float, reserve_cores: float) -> dict[str, int]:
    """Machine type -> how many more of its quota fit in the cores left; none fits: one sentence, exit."""
    if not math.isfinite(host_cores) or host_cores <= 0 or not math.isfinite(reserve_cores) or reserve_cores < 0:
        raise SystemExit("--host-cores must be above 0 and --reserve-cores 0 or more")
    left = cores_left(spec, host_cores, reserve_cores)
    available = {t.name: max(0, math.floor((left + CORE_SLACK) / t.cpu_cores)) for t in spec.machine_types}
    if not any(available.values()):
        smallest = min(spec.machine_types, key=lambda t: t.cpu_cores)
        raise SystemExit(f"--host-cores {host_cores:g} leaves {max(left, 0.0):.2f} cores after the cluster's quotas "
                         f"({spec.total_cpu_cores:g}) and the reserve ({reserve_cores:g}), less than the smallest "
                         f"machine ({smallest.name}, {smallest.cpu_cores:g} cores): no machine can be added")
    return available


def host_sentence(spec: ClusterSpec, host_cores: float, reserve_cores: float, available: dict[str, int]) -> str:
    """Why each type is offered as often as it is, in one sentence."""
    fits = ", ".join(f"{n} {t}" for t, n in available.items())
    return (f"The compose containers share one host of {host_cores:g} cores: the cluster's quotas take "
            f"{spec.total_cpu_cores:g} and {reserve_cores:g} is kept for ZooKeeper, Nimbus and the planner, so the "
            f"{max(cores_left(spec, host_cores, reserve_cores), 0.0):.2f} cores left fit at most {fits} more.")


def build_request(topology: Topology, cluster: Cluster, prices: dict[str, float], available: dict[str, int],
                  target_rate: float, entries: list) -> CapacityRequest:
    """Capacity for ``target_rate`` tuples/s on the cluster's machines (owned), each type offered at its price."""
    if not math.isfinite(target_rate) or target_rate <= 0:
        raise SystemExit("--target-rate must be a rate above 0 tuples/s")
    return CapacityRequest(
        topologies=[CapacityTopology(topology=topology, target_rate=target_rate)],
        machine_types=[OfferedType(**t.model_dump(), price=prices[t.name], available=available.get(t.name, 0))
                       for t in cluster.machine_types],
        owned=list(cluster.machines), profiles=ProfileRef(entries=entries))


def chosen_addition(answer: CapacityAnswer) -> Addition:
    """The first of ``add_next`` (largest gain); the owned machines must already sustain the target."""
    if answer.purchase.buy:
        bought = ", ".join(f"{n} x {t}" for t, n in answer.purchase.buy.items())
        raise SystemExit(f"the default cluster does not sustain the target rate (the answer buys {bought}); "
                         "lower --target-rate")
    if not answer.add_next:
        raise SystemExit("the answer names no machine to add: no type can be bought on this host")
    return answer.add_next[0]


# --- the spec (pure) ---------------------------------------------------------------------------------------------

def spec_with_one_more(data: dict[str, Any], machine_type: str) -> dict[str, Any]:
    """The spec's YAML data with one more machine of ``machine_type``, named for it; the input is left alone."""
    out = copy.deepcopy(data)
    for t in out.get("machine_types") or []:
        if t.get("name") == machine_type:
            t["count"] = int(t.get("count", 1)) + 1
            break
    else:
        raise SystemExit(f"the cluster spec has no machine type {machine_type}")
    out["name"] = f"{out.get('name', 'default')}-plus-{machine_type}"[:40].rstrip("-")
    parse_spec(out, source="the spec with one more machine")  # the same checks as load_spec
    return out


def write_spec(data: dict[str, Any], path: Path, note: str) -> ClusterSpec:
    """The spec written as YAML with a comment saying where it came from, and loaded back as hetsched bench will."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {note}\n" + yaml.safe_dump(data, sort_keys=False))
    return load_spec(path)


# --- a bench's rates (pure) --------------------------------------------------------------------------------------

def run_rates(bench: dict[str, Any], topology: str = TOPOLOGY, scheduler: str = SCHEDULER) -> dict[str, Any]:
    """The run's measured input rate R and sink throughput (tuples/s), and the bench's own prediction of R;
    or why there is none (``status`` failed, ``error`` one sentence)."""
    runs = [r for r in bench.get("runs") or [] if r.get("topology") == topology and r.get("scheduler") == scheduler]
    if not runs:
        return {"status": "failed", "error": bench.get("error") or f"the bench holds no {scheduler} run of {topology}"}
    run = runs[-1]
    measured = run.get("measured") or {}
    if run.get("status") != "ok" or measured.get("input_rate") is None:
        return {"status": "failed",
                "error": run.get("reason") or bench.get("error") or f"the {scheduler} run of {topology} measured nothing"}
    return {"status": "ok", "input_rate": float(measured["input_rate"]),
            "sink_throughput": measured.get("sink_throughput"),
            "predicted_input_rate": (run.get("predicted") or {}).get("input_rate"),
            "plan_mismatches": len(run.get("plan_mismatches") or []), "flow_imbalance": run.get("flow_imbalance")}


def side_order(round_number: int) -> tuple[str, str]:
    """Round 1 runs the base first, round 2 the added side first, and so on."""
    return (BASE, ADDED) if round_number % 2 == 1 else (ADDED, BASE)


def spread(values: list[float]) -> dict[str, Any]:
    """Median and range; None each where there is no value."""
    if not values:
        return {"n": 0, "median": None, "min": None, "max": None}
    return {"n": len(values), "median": statistics.median(values), "min": min(values), "max": max(values)}


def gain_summary(benches: list[dict[str, Any]]) -> dict[str, Any]:
    """Per round, measured R added / base; median and range over the rounds where both sides measured, the others
    left out and counted."""
    rounds: dict[int, dict[str, float | None]] = {}
    for b in benches:
        rounds.setdefault(b["round"], {BASE: None, ADDED: None})[b["side"]] = (
            b.get("input_rate") if b.get("status") == "ok" else None)
    ratios, left_out = [], []
    for number in sorted(rounds):
        base, added = rounds[number][BASE], rounds[number][ADDED]
        if base and added is not None:
            ratios.append(added / base)
        else:
            left_out.append(number)
    return {**spread(ratios), "ratios": ratios, "left_out": left_out}


def side_summary(benches: list[dict[str, Any]], side: str) -> dict[str, Any]:
    """A side's runs: how many, and the measured R (and the bench's predicted R) of those that measured."""
    mine = [b for b in benches if b["side"] == side]
    ok = [b for b in mine if b.get("status") == "ok"]
    return {"runs": len(mine), "measured": spread([b["input_rate"] for b in ok]),
            "bench_predicted": spread([b["predicted_input_rate"] for b in ok if b.get("predicted_input_rate") is not None])}


# --- the tables --------------------------------------------------------------------------------------------------

def add_next_table(data: dict[str, Any]) -> Table:
    table = Table(title=f"The machine to add next ({TOPOLOGY} at {data['request']['target_rate']:g} tuples/s; "
                        f"three machines: R {data['predicted'][BASE]:.2f} tuples/s)")
    for col in ("machine type", "price", "available", "predicted R (tuples/s)", "gain (scale)", "R four / three",
                "bottleneck"):
        table.add_column(col, justify="left" if col in ("machine type", "bottleneck") else "right")
    for a in data["add_next"]:
        table.add_row(a["machine_type"], f"{a['price']:g}", str(data["request"]["available"].get(a["machine_type"], "-")),
                      f"{a['rate']:.2f}", f"{a['gain']:+.3f}", f"{a['rate'] / data['predicted'][BASE]:.3f}",
                      a["bottleneck"] or "-")
    return table


def _range(s: dict[str, Any], digits: int = 2) -> str:
    if not s["n"]:
        return "-"
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}-{s['max']:.{digits}f})"


def result_table(data: dict[str, Any]) -> Table:
    table = Table(title="Measured against predicted input rate R, tuples/s (median (min-max) over the runs)")
    for col in ("side", "spec", "runs measured", "measured R", "predicted R (capacity)", "predicted R (bench)"):
        table.add_column(col, justify="left" if col in ("side", "spec") else "right")
    for side in (BASE, ADDED):
        s = side_summary(data["benches"], side)
        label = "three machines" if side == BASE else f"four: + {data['added']['machine_type']}"
        table.add_row(label, Path(data["specs"][side]).name, f"{s['measured']['n']}/{s['runs']}", _range(s["measured"]),
                      f"{data['predicted'][side]:.2f}", _range(s["bench_predicted"]))
    return table


def gain_line(data: dict[str, Any]) -> str:
    g = gain_summary(data["benches"])
    left = f"; rounds left out (a side failed): {', '.join(map(str, g['left_out']))}" if g["left_out"] else ""
    measured = _range(g, 3) if g["n"] else "none yet"
    return (f"measured gain: median of the per-round ratios four/three {measured} over {g['n']} rounds, against "
            f"predicted gain {data['predicted']['gain']:.3f}{left}")


def show(data: dict[str, Any]) -> None:
    console.print(add_next_table(data))
    console.print(result_table(data))
    console.print(gain_line(data))
    for b in data["benches"]:
        if b.get("status") != "ok":
            console.print(f"round {b['round']} {b['side']}: failed: {b.get('error')}")


# --- live --------------------------------------------------------------------------------------------------------

def bench_command(spec: Path, out: Path) -> list[str]:
    return [*CLI, "bench", "--cluster", "compose", "--topologies", TOPOLOGY, "--schedulers", SCHEDULER,
            "--spec", str(spec), "--out", str(out)]


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def run_bench(spec: Path, out: Path) -> dict[str, Any]:
    """One ``hetsched bench``, its output kept in OUT/<side>-<round>.log; its rates, or why there are none."""
    command = bench_command(spec, out)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)
    out.with_suffix(".log").write_text(f"$ {shlex.join(command)}\n{done.stdout}{done.stderr}")
    record: dict[str, Any] = {"exit_code": done.returncode, "elapsed_s": round(time.perf_counter() - started, 1)}
    try:
        rates = run_rates(json.loads((out / "bench.json").read_text()))
    except (OSError, ValueError) as exc:
        rates = {"status": "failed", "error": f"no bench.json ({type(exc).__name__}); the bench said: "
                                              f"{last_line(done.stderr or done.stdout)}"}
    return {**record, **rates}


def answer_dict(answer: CapacityAnswer) -> list[dict[str, Any]]:
    return [{"machine_type": a.machine_type, "price": a.price, "rate": a.rates[TOPOLOGY], "gain": a.gain,
             "scale": a.scale, "bottleneck": a.bottleneck, "lp_gap": a.lp_gap, "placement_proven": a.placement_proven}
            for a in answer.add_next]


def plan(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """The capacity answer and the spec with its machine added: the result's head, before any bench."""
    from bench.errors import BenchError
    from bench.profiles import load_profile_set
    from planner.capacity import plan_capacity
    from planner.profiles import machine_base_load
    from topologies.catalog import lookup, planner_topology

    try:
        spec = load_spec(DEFAULT_SPEC)
        profile_set, origin = load_profile_set(PROFILE_SET)
        base_load = machine_base_load(profile_set)
    except (ClusterError, BenchError, PlanningError) as exc:
        raise SystemExit(str(exc)) from None
    prices = parse_prices(args.prices, [t.name for t in spec.machine_types])
    available = available_machines(spec, args.host_cores, args.reserve_cores)
    sentence = host_sentence(spec, args.host_cores, args.reserve_cores, available)
    say(sentence)
    request = build_request(planner_topology(lookup(TOPOLOGY)), spec.planner_cluster(base_load), prices, available,
                            args.target_rate, list(profile_set.entries))
    say(f"capacity: {TOPOLOGY} at {args.target_rate:g} tuples/s on {len(request.owned)} owned machines, profile set "
        f"{profile_set.name} ({origin}), prices {', '.join(f'{t}={p:g}' for t, p in prices.items())}")
    started = time.perf_counter()
    try:
        answer = plan_capacity(request, list(profile_set.entries))
    except PlanningError as exc:
        raise SystemExit(f"capacity planning failed: {exc}") from None
    addition = chosen_addition(answer)
    base_rate, added_rate = answer.purchase.rates[TOPOLOGY], addition.rates[TOPOLOGY]
    say(f"capacity answered in {time.perf_counter() - started:.1f} s: add one {addition.machine_type} "
        f"(R {base_rate:.2f} -> {added_rate:.2f} tuples/s, predicted gain {added_rate / base_rate:.3f})")
    with_one = spec_with_one_more(yaml.safe_load(DEFAULT_SPEC.read_text()), addition.machine_type)
    spec_path = out / f"spec-plus-{addition.machine_type}.yaml"
    try:
        added_spec = write_spec(with_one, spec_path, f"{DEFAULT_SPEC.name} with one more {addition.machine_type}: "
                                "the machine hetsched capacity adds next (benchmarks/capacity_live.py)")
    except ClusterError as exc:
        raise SystemExit(str(exc)) from None
    say(f"spec written: {spec_path} ({len(added_spec.machine_ids())} machines, "
        f"{added_spec.total_cpu_cores:g} cores of quota)")
    return {
        "what": "issue 34: the machine hetsched capacity adds next, added to the compose cluster; predicted against "
                "measured input rate R (tuples/s)",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "request": {"topology": TOPOLOGY, "target_rate": args.target_rate, "profile_set": profile_set.name,
                    "profile_origin": str(origin), "base_load": base_load, "prices": prices, "available": available,
                    "owned": [m.id for m in request.owned], "host_cores": args.host_cores,
                    "reserve_cores": args.reserve_cores, "quota_cores": round(spec.total_cpu_cores, 6)},
        "host": sentence,
        "purchase": {"rate": base_rate, "scale": answer.purchase.scale, "bottleneck": answer.purchase.bottleneck},
        "add_next": answer_dict(answer),
        "added": {"machine_type": addition.machine_type, "machines": len(added_spec.machine_ids())},
        "specs": {BASE: str(DEFAULT_SPEC), ADDED: str(spec_path.resolve())},
        "predicted": {BASE: base_rate, ADDED: added_rate, "gain": added_rate / base_rate},
        "benches": [],
    }


def run_rounds(data: dict[str, Any], out: Path, repeats: int, bench: Callable[[Path, Path], dict[str, Any]] = run_bench
               ) -> None:
    """``repeats`` rounds of one bench per side, sides alternated; the result saved after every bench, a failed one
    recorded and passed over."""
    for number in range(1, repeats + 1):
        for side in side_order(number):
            folder = out / f"{side}-{number}"
            say(f"round {number}/{repeats}, {side}: hetsched bench on {Path(data['specs'][side]).name} -> {folder}")
            record = {"round": number, "side": side, "out": str(folder), **bench(Path(data["specs"][side]), folder)}
            data["benches"].append(record)
            save(data, out)
            if record["status"] == "ok":
                say(f"round {number}, {side}: R {record['input_rate']:.2f} tuples/s, sink "
                    f"{record.get('sink_throughput') or 0.0:.2f} tuples/s ({record.get('elapsed_s', 0.0):.0f} s)")
            else:
                say(f"round {number}, {side}: failed: {record['error']}")


def save(data: dict[str, Any], out: Path) -> None:
    data["updated_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    data["gain"] = gain_summary(data["benches"])
    write_json_atomic(out / RESULT_FILE, data)


def result_path(path: Path) -> Path:
    return path / RESULT_FILE if path.is_dir() else path


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="rounds, each one bench per side (sides alternated)")
    parser.add_argument("--out", type=Path, default=REPO / "var" / "capacity-live",
                        help="folder for the spec, every bench and capacity-live.json")
    parser.add_argument("--prices", default="small=1,medium=2,large=4", help="TYPE=PRICE per machine, comma-separated")
    parser.add_argument("--host-cores", type=float, default=2.0, help="cores of the host the containers share")
    parser.add_argument("--reserve-cores", type=float, default=0.2, help="cores kept for ZooKeeper, Nimbus, the planner")
    parser.add_argument("--target-rate", type=float, default=20.0,
                        help="tuples/s Linear must sustain: below what the default cluster does")
    parser.add_argument("--dry-run", action="store_true", help="the capacity answer and the spec only, no bench")
    parser.add_argument("--report", type=Path, metavar="OUT", help="only print the result of an earlier run")
    args = parser.parse_args()
    if args.report is not None:
        try:
            data = json.loads(result_path(args.report).read_text())
        except (OSError, ValueError) as exc:
            raise SystemExit(f"cannot read {result_path(args.report)}: {exc}") from None
        if not isinstance(data, dict) or not {"add_next", "predicted", "benches", "specs"} <= set(data):
            raise SystemExit(f"{result_path(args.report)} is not a result of benchmarks.capacity_live")
        show(data)
        return
    if args.repeats < 1:
        raise SystemExit("--repeats must be 1 or more")
    out: Path = args.out.resolve()
    earlier = sorted(p.name for p in out.glob(f"{BASE}-*")) + sorted(p.name for p in out.glob(f"{ADDED}-*"))
    if earlier and not args.dry_run:
        raise SystemExit(f"{out} already holds benches of an earlier run ({earlier[0]}, ...): give another --out")
    out.mkdir(parents=True, exist_ok=True)
    data = plan(args, out)
    save(data, out)
    console.print(add_next_table(data))
    if args.dry_run:
        say(f"dry run: no bench; written {out / RESULT_FILE}")
        for side in (BASE, ADDED):
            say(f"would run: {shlex.join(bench_command(Path(data['specs'][side]), out / f'{side}-1'))}")
        return
    run_rounds(data, out, args.repeats)
    console.print(result_table(data))
    console.print(gain_line(data))
    say(f"written {out / RESULT_FILE}")


if __name__ == "__main__":
    main()
