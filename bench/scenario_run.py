"""What every live bench scenario (multi-tenant, machine-loss) does around its runs, kept in one place so that
each scenario's module holds only what it measures: its results folder, its own cluster, the clean-up that always
runs, and the last save."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable, Iterator

from bench import scenario_files
from bench.errors import BenchError
from bench.experiment import _signals_interrupt
from bench.run import RunContext, _wait_workers_gone
from cluster.errors import ClusterError
from cluster.layout import port_span
from cluster.local import LocalCluster
from cluster.ports import free_port_base
from cluster.spec import ClusterSpec
from observe.nimbus import NimbusError, connect
from observe.progress import Reporter
from planner.client import PlannerClientError
from planner.durable import private_folder
from topologies.errors import TopologyError


def check_schedulers(scenario: str, schedulers: tuple[str, ...], known: tuple[str, ...]) -> None:
    """Settings name at least one scheduler, each one the scenario runs; otherwise one sentence naming them."""
    unknown = [s for s in schedulers if s not in known]
    if unknown or not schedulers:
        raise BenchError(f"the {scenario} scenario runs {', '.join(known)}; not {', '.join(unknown) or 'none'}")


def results_folder(out: Path) -> None:
    """Make the (private) results folder; a folder that cannot be made is one sentence."""
    try:
        private_folder(out)
    except OSError as exc:
        raise BenchError(f"cannot make the results folder {out}: {exc.strerror or exc}") from None


def scenario_cluster(spec: ClusterSpec, out: Path, port_base: int | None) -> LocalCluster:
    """The scenario's own local cluster in ``out/cluster``, on ``port_base`` or on free ports."""
    return LocalCluster(spec, home=out / "cluster",
                        port_base=port_base or free_port_base(port_span(len(spec.machine_ids()))))


@contextlib.contextmanager
def recorded_errors(data: dict[str, Any], cluster: LocalCluster, stop_planner: Callable[[], None]) -> Iterator[None]:
    """Run the body with SIGTERM/SIGHUP as Ctrl-C; an interrupt or a bench failure ends it as ``data["error"]``
    rather than an exception (what was measured so far is still saved), and the cluster and the planner are always
    stopped. ``stop_planner`` is called at the end, so it stops whichever planner the body last started."""
    with _signals_interrupt():
        try:
            yield
        except KeyboardInterrupt as exc:
            data["error"] = f"interrupted ({str(exc) or 'Ctrl-C'})"
        except (BenchError, ClusterError, PlannerClientError, TopologyError) as exc:
            data["error"] = str(exc)
        finally:
            try:
                if cluster.is_running():
                    cluster.down()
            except ClusterError as exc:
                data["error"] = f"{data['error']}; {exc}" if data["error"] else str(exc)
            stop_planner()


def kill_topologies(ctx: RunContext, topologies: list[tuple[str, str | None]], reporter: Reporter, what: str) -> None:
    """Kill each (name, id) topology Nimbus still runs, then wait until each is gone with its workers, so the next run
    has the CPU to itself; an id not known (a submission that failed half-way) is the one Nimbus shows. A failure is
    logged as could not kill ``what``, not raised: the run's own result comes first."""
    try:
        with connect(ctx.handle.nimbus, leader_timeout_s=30) as nimbus:
            found = {name: nimbus.find(name) for name, _ in topologies}
            for name, running in found.items():
                if running is not None:
                    nimbus.kill(name, wait_s=0)
            for name, topology_id in topologies:
                topology_id = topology_id or getattr(found[name], "id", None)
                if topology_id:
                    nimbus.wait_gone(name, 120)
                    _wait_workers_gone(topology_id)
    except (NimbusError, BenchError, TopologyError, OSError) as exc:
        reporter.log(f"[yellow]could not kill {what}: {exc}[/yellow]")


def finish(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """Stamp the end, save the result a last time and say where it is."""
    data["finished_at"] = scenario_files.now()
    scenario_files.save(path, data)
    data["saved_to"] = str(path)
    return data
