"""What the compose-cluster profiling benchmarks (``compose_live_profile.py``) share:
the logged CLI calls, the cluster brought up and always down, the records copied out of the planner container,
the records table and ``hetsched aggregate`` on them, and the ``run``/``analyze`` command line's common part."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

REPO = Path(__file__).resolve().parents[1]

RECORDS_IN_PLANNER = "/var/lib/hetsched/records"
"""The planner container's records store (``records/`` next to HETSCHED_DB, in the planner-data volume)."""
CLI = [sys.executable, "-m", "hetsched.cli"]


class Log:
    """Every command and its output, printed and kept for OUT-run.txt."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, text: str) -> None:
        stamped = f"[{time.strftime('%H:%M:%S', time.gmtime())}] {text}"
        print(stamped, flush=True)
        self.lines.append(stamped)

    def run(self, command: list[str], env: dict[str, str] | None = None, check: bool = True) -> str:
        self.say("$ " + shlex.join(command))
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, check=False)
        output = (done.stdout + done.stderr).rstrip()
        if output:
            print(output, flush=True)
            self.lines.append(output)
        if check and done.returncode != 0:
            raise SystemExit(f"error: `{shlex.join(command[:4])} ...` exited with {done.returncode}")
        return done.stdout


def cli_env(token: str | None = None) -> dict[str, str]:
    """The environment of the CLI calls: no planner URL or Nimbus of the shell's, the compose planner's token."""
    env = {k: v for k, v in os.environ.items() if k not in ("HETSCHED_PLANNER_URL", "HETSCHED_NIMBUS")}
    if token:
        env["HETSCHED_PLANNER_TOKEN"] = token
    return env


def metrics_summary(planner_url: str, token: str) -> dict[str, Any]:
    """The planner's own count of the batches and records the workers sent it (``GET /v1/metrics/summary``)."""
    import httpx

    answer = httpx.get(f"{planner_url}/v1/metrics/summary", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    answer.raise_for_status()
    return answer.json()


# --- run --------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ComposeRun:
    """The compose cluster a ``run`` brought up, and how the CLI reaches it."""

    cluster: Any
    token: str
    env: dict[str, str]
    """The CLI's environment, with the compose planner's token."""
    nimbus: str
    home: Path


@contextlib.contextmanager
def compose_cluster(log: Log, home: Path, port_base: int, out_prefix: str, out: dict[str, Any]) -> Iterator[ComposeRun]:
    """``hetsched cluster up --compose``; at the end, whatever happened, ``cluster down`` and what it left (in
    ``out["left_after_down"]``), then ``OUT-run.txt`` (the log) and ``OUT-run.json`` (``out``) written."""
    from cluster.compose_cluster import ComposeCluster

    cluster = None
    try:
        log.run([*CLI, "cluster", "up", "--compose", "--home", str(home), "--port-base", str(port_base)], cli_env())
        cluster = ComposeCluster(home=home)
        token = cluster.planner_token()
        yield ComposeRun(cluster, token, cli_env(token), f"127.0.0.1:{cluster.nimbus_port}", home)
    finally:
        if cluster is not None or (home / "compose").is_dir():
            log.run([*CLI, "cluster", "down", "--compose", "--home", str(home)], cli_env(), check=False)
            left = ComposeCluster(home=home).leftovers()
            out["left_after_down"] = left
            log.say(f"left after down: {left or 'nothing'}")
        Path(f"{out_prefix}-run.txt").write_text("\n".join(log.lines) + "\n")
        Path(f"{out_prefix}-run.json").write_text(json.dumps(out, indent=2, default=str) + "\n")


def kill_and_copy_records(log: Log, run: ComposeRun, topology: str, out_prefix: str, out: dict[str, Any],
                          list_store: bool = False) -> None:
    """Kill the topology, let its last batches arrive, copy its records out of the planner container into
    ``OUT-records/`` (with ``list_store``, first list the whole store) and keep the planner's own count of them."""
    from cluster import compose

    log.run([*CLI, "kill", topology, "--wait", "--nimbus", run.nimbus], run.env)
    time.sleep(10)  # the hook's last batches (every 5 s) reach the store
    records_dir = Path(f"{out_prefix}-records")
    records_dir.mkdir(parents=True, exist_ok=True)
    planner = run.cluster.container_id(compose.PLANNER_SERVICE)
    if list_store:
        log.run(["docker", "exec", planner, "sh", "-c", f"find {RECORDS_IN_PLANNER} -type d; echo files: $(find {RECORDS_IN_PLANNER} -type f | wc -l), "
                 f"lines: $(find {RECORDS_IN_PLANNER} -type f -name '*.jsonl' | xargs cat | wc -l)"])
    log.run(["docker", "cp", f"{planner}:{RECORDS_IN_PLANNER}/topology={topology}", str(records_dir)])
    summary = metrics_summary(run.cluster.planner_url, run.token)
    out["planner_metrics_summary"] = summary
    log.say("the planner's GET /v1/metrics/summary: " + json.dumps(summary, indent=1))


# --- analyze ----------------------------------------------------------------------------------------------------

def load_records(records_dir: Path, topology: str) -> list[dict[str, Any]]:
    """The topology's records copied out by ``run``; none is an error (one sentence)."""
    from benchmarks.worker_metrics import records_of

    records = records_of(records_dir, topology)
    if not records:
        raise SystemExit(f"error: no records of {topology} under {records_dir}")
    return records


def records_header(topology: str, topology_id: str | None = None) -> str:
    """The first line of ``OUT-records.txt``: when, and whose records."""
    whose = f"{topology} ({topology_id})" if topology_id is not None else topology
    return f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} records of {whose} from the compose planner's store"


def records_table(records: list[dict[str, Any]]) -> list[str]:
    """Records, batches and executors per machine and worker, with the components and the shipping delay."""
    by_worker: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_worker[(str(r.get("machine")), str(r.get("machine_type")), str(r.get("worker_id")))].append(r)
    lines = [f"{'machine':<10} {'type':<7} {'worker (host:port)':<28} {'records':>7} {'batches':>7} {'executors':>9} "
             f"{'span s':>7} {'delay ms':>8}  records per component"]
    for (machine, mtype, worker), rs in sorted(by_worker.items()):
        delays = [1000 * (r["received_at"] - r["ts"]) for r in rs if r.get("received_at") and r.get("ts")]
        components: dict[str, int] = defaultdict(int)
        for r in rs:
            components[r["component"]] += 1
        span = max(r["ts"] for r in rs) - min(r["ts"] for r in rs)
        lines.append(f"{machine:<10} {mtype:<7} {worker:<28} {len(rs):>7} {len({r['batch_id'] for r in rs}):>7} "
                     f"{len({(r['component'], r['task_id']) for r in rs}):>9} {span:>7.0f} "
                     f"{statistics.median(delays) if delays else float('nan'):>8.0f}  "
                     + ", ".join(f"{c} {n}" for c, n in sorted(components.items())))
    lines.append(f"total {len(records)} records in {len({r['batch_id'] for r in records})} batches; "
                 f"largest worker_dropped: {max((r.get('worker_dropped') or 0) for r in records)}; "
                 "delay: median of received_at - ts (the planner's clock minus the worker's)")
    return lines


def write_and_aggregate(lines: list[str], records_dir: Path, topology: str, out_prefix: str, name: str) -> None:
    """``OUT-records.txt`` (``lines``, printed too), then ``hetsched aggregate --store`` on the records into
    ``OUT-profile.json`` as profile set ``name``, its output in ``OUT-aggregate.txt``."""
    log = Log()
    Path(f"{out_prefix}-records.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    log.run(["nice", "-n", "19", *CLI, "aggregate", "--store", str(records_dir), "--topology", topology,
             "--out", f"{out_prefix}-profile.json", "--name", name], cli_env(), check=False)
    Path(f"{out_prefix}-aggregate.txt").write_text("\n".join(log.lines) + "\n")


# --- the command line -------------------------------------------------------------------------------------------

def command_line(description: str, analyze_help: str) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser,
                                                                argparse.ArgumentParser]:
    """The parser with its ``run`` (``--home``, ``--port-base`` so far) and ``analyze`` (``--out``) commands; each
    benchmark adds its own options to both."""
    parser = argparse.ArgumentParser(description=description)
    sub = parser.add_subparsers(dest="command", required=True)
    live = sub.add_parser("run", help="the live run on the compose cluster (hold /tmp/hetsched-live.lock)")
    live.add_argument("--home", type=Path, required=True, help="the compose cluster's home (made and removed here)")
    live.add_argument("--port-base", type=int, required=True, help="Nimbus Thrift on it, the planner on it + 1")
    offline = sub.add_parser("analyze", help=analyze_help)
    offline.add_argument("--out", required=True, help="the prefix given to run")
    return parser, live, offline


def dispatch(parser: argparse.ArgumentParser, run: Callable[[argparse.Namespace], int],
             analyze: Callable[[argparse.Namespace], int]) -> int:
    args = parser.parse_args()
    return run(args) if args.command == "run" else analyze(args)
