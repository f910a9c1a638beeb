"""The Flux topology ``topologies/flux/words-cpu.yaml`` profiled from its own worker records on the compose cluster.

The same shape as ``benchmarks/compose_live_profile.py`` (Linear there), for the issue's Java topology: Storm's own
``TestWordSpout`` and ``TestWordCounter`` around the project's ``CpuWorkBolt`` (5 ms of its thread's CPU per
tuple). ``TestWordSpout`` keeps its own pace (a word per 100 ms per instance), so, as ``flux_live_profile.sh``
does on the local cluster, the input rate is stepped by running the file with 1, 2 and 3 spout instances in turn
under the same name. ``run``, under the live lock:

1. ``hetsched cluster up --compose``;
2. for each spout count: ``hetsched submit --flux`` (metrics on, no ``--planner``: the compose supervisors'
   storm.yaml sends the records to ``http://planner:8765`` with the token), ``--step-s`` seconds;
3. the topology killed, its records copied out of the planner container, the planner's own count of them;
4. with ``--check-linear``, the two addresses of the compose planner: Linear submitted with a stored plan read from
   the planner as this machine reaches it (``--planner http://127.0.0.1:PORT``) and the workers' metrics sent where
   they reach it (``--metrics-url http://planner:8765``), then ``hetsched placement`` with no ``--planner`` (it
   finds the compose planner and its token from the cluster's home), and the planner's count of Linear's records;
5. ``hetsched cluster down --compose``, always, and what it left.

``analyze``: the records per worker and ``hetsched aggregate --store`` on them.

    flock /tmp/hetsched-live.lock .venv/bin/python benchmarks/compose_flux_profile.py run --home /tmp/flux-compose \\
        --port-base 22400 --out docs/results/measurements/issue19/compose-flux
    .venv/bin/python benchmarks/compose_flux_profile.py analyze --out docs/results/measurements/issue19/compose-flux
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from compose_live_profile import CLI, RECORDS_IN_PLANNER, Log, cli_env, load_records, metrics_summary, records_table  # noqa: E402

FLUX_FILE = REPO / "topologies" / "flux" / "words-cpu.yaml"
JAR = REPO / "topologies" / "java" / "target" / "hetsched-java-topologies.jar"
NAME = "words-cpu"


def with_spouts(text: str, n: int) -> str:
    """The Flux file with ``n`` instances of its spout ``words`` (the first ``parallelism:`` after ``id: "words"``)."""
    head, sep, tail = text.partition('id: "words"')
    return head + sep + re.sub(r"parallelism: \d+", f"parallelism: {n}", tail, count=1)


def run(args: argparse.Namespace) -> int:
    from cluster import compose
    from cluster.compose_cluster import ComposeCluster

    if not JAR.is_file():
        raise SystemExit(f"error: {JAR} is missing: mvn -q -f topologies/java/pom.xml -DskipTests package")
    spouts = [int(x) for x in args.spouts.split(",")]
    log = Log()
    out: dict[str, Any] = {"topology": NAME, "spouts": spouts, "step_s": args.step_s}
    home = args.home.resolve()
    cluster = None
    work = Path(tempfile.mkdtemp(prefix="compose-flux-"))
    try:
        log.run([*CLI, "cluster", "up", "--compose", "--home", str(home), "--port-base", str(args.port_base)], cli_env())
        cluster = ComposeCluster(home=home)
        token = cluster.planner_token()
        env = cli_env(token)
        nimbus = f"127.0.0.1:{cluster.nimbus_port}"
        steps = []
        for n in spouts:
            flux = work / f"words-cpu-{n}.yaml"
            flux.write_text(with_spouts(FLUX_FILE.read_text(), n))
            log.run([*CLI, "submit", "--flux", str(flux), "--jar", str(JAR), "--force", "--nimbus", nimbus], env)
            start = time.time()
            time.sleep(args.step_s)
            steps.append({"spouts": n, "start": start, "end": time.time()})
            log.say(f"{n} spout instance(s): {steps[-1]['end'] - start:.0f} s")
        out["steps"] = steps
        log.run([*CLI, "placement", NAME, "--nimbus", nimbus, "--measure", "0"], env, check=False)
        log.run([*CLI, "kill", NAME, "--wait", "--nimbus", nimbus], env)
        time.sleep(10)  # the hook's last batches (every 5 s) reach the store
        records_dir = Path(f"{args.out}-records")
        records_dir.mkdir(parents=True, exist_ok=True)
        planner = cluster.container_id(compose.PLANNER_SERVICE)
        log.run(["docker", "cp", f"{planner}:{RECORDS_IN_PLANNER}/topology={NAME}", str(records_dir)])
        summary = metrics_summary(cluster.planner_url, token)
        out["planner_metrics_summary"] = summary
        log.say("the planner's GET /v1/metrics/summary: " + json.dumps(summary, indent=1))
        if args.check_linear:
            out["linear_check"] = check_linear(log, cluster, env, nimbus, home, token)
    finally:
        if cluster is not None or (home / "compose").is_dir():
            log.run([*CLI, "cluster", "down", "--compose", "--home", str(home)], cli_env(), check=False)
            left = ComposeCluster(home=home).leftovers()
            out["left_after_down"] = left
            log.say(f"left after down: {left or 'nothing'}")
        Path(f"{args.out}-run.txt").write_text("\n".join(log.lines) + "\n")
        Path(f"{args.out}-run.json").write_text(json.dumps(out, indent=2, default=str) + "\n")
    return 1 if out.get("left_after_down") else 0


def check_linear(log: Log, cluster: Any, env: dict[str, str], nimbus: str, home: Path, token: str) -> dict[str, Any]:
    """Linear by a stored plan with --planner (this machine's address) and --metrics-url (the workers'), then
    ``hetsched placement`` without --planner; what the planner counted of its records."""
    import glob

    from cluster import compose
    from planner.client import PlannerClient
    from planner.model import PlanRequest, ProfileRef, ProfileSet
    from planner.profiles import machine_base_load
    from topologies.catalog import lookup, planner_topology

    profiles = REPO / "profiles" / "default-cluster.json"
    log.run([*CLI, "profiles", "put", "default-cluster", str(profiles), "--url", cluster.planner_url], env)
    profile_set = ProfileSet.model_validate_json(profiles.read_text())
    with PlannerClient(cluster.planner_url, token=token) as client:
        plan = client.plan(PlanRequest(topology=planner_topology(lookup("linear")),
                                       cluster=cluster.spec.planner_cluster(machine_base_load(profile_set)),
                                       profiles=ProfileRef(name=profile_set.name)))
    log.run([*CLI, "submit", "linear", "--plan", plan.id, "--profiles", profile_set.name, "--planner", cluster.planner_url,
             "--metrics-url", compose.PLANNER_URL, "--nimbus", nimbus, "-c", "topology.disable.loadaware.messaging=true"], env)
    time.sleep(75)
    storm_yamls = sorted(glob.glob(str(REPO / compose.CONF_FOLDER / "supervisor-*.yaml")))
    placement = log.run([*CLI, "placement", "linear", "--nimbus", nimbus, "--measure", "0",
                         *[a for y in storm_yamls for a in ("--storm-yaml", y)]],
                        {**env, "HETSCHED_CLUSTER_HOME": str(home)}, check=False)
    summary = metrics_summary(cluster.planner_url, token)
    linear = [w for w in summary["workers"] if str(w.get("topology_id", "")).startswith("linear-")]
    log.say("Linear's records at the compose planner: " + json.dumps(linear, indent=1))
    log.run([*CLI, "kill", "linear", "--wait", "--nimbus", nimbus], env, check=False)
    return {"plan_id": plan.id, "predicted_in_placement": "predicted: CPU percent" in placement, "workers": linear}


def analyze(args: argparse.Namespace) -> int:
    log = Log()
    records = load_records(Path(f"{args.out}-records"), NAME)
    if not records:
        raise SystemExit(f"error: no records of {NAME} under {args.out}-records")
    lines = [f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} records of {NAME} from the compose planner's store",
             *records_table(records)]
    Path(f"{args.out}-records.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    log.run(["nice", "-n", "19", *CLI, "aggregate", "--store", f"{args.out}-records", "--topology", NAME,
             "--out", f"{args.out}-profile.json", "--name", f"{NAME}-compose-live"], cli_env(), check=False)
    Path(f"{args.out}-aggregate.txt").write_text("\n".join(log.lines) + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    live = sub.add_parser("run", help="the live run on the compose cluster (hold /tmp/hetsched-live.lock)")
    live.add_argument("--home", type=Path, required=True, help="the compose cluster's home (made and removed here)")
    live.add_argument("--port-base", type=int, required=True, help="Nimbus Thrift on it, the planner on it + 1")
    live.add_argument("--spouts", default="1,2,3", help="spout instances of each step (a word per 100 ms each)")
    live.add_argument("--step-s", type=float, default=120.0)
    live.add_argument("--out", required=True, help="prefix of the output files")
    live.add_argument("--check-linear", action="store_true", help="then Linear with --planner and --metrics-url, and placement")
    offline = sub.add_parser("analyze", help="records per worker and hetsched aggregate")
    offline.add_argument("--out", required=True, help="the prefix given to run")
    args = parser.parse_args()
    return run(args) if args.command == "run" else analyze(args)


if __name__ == "__main__":
    sys.exit(main())
