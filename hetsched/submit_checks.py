"""What ``hetsched submit`` checks before anything reaches Nimbus: the profile set against the topology's pairs,
and whether the workers can load the metrics hook; and the defaults a planned submission gets.

The plugin plans a topology only where its profile set has an entry for every (profile key, machine
type) pair the topology needs on the cluster; otherwise it places it evenly (docs/operations/plugin.md).
Submit says so first, in one sentence, so the operator learns it at the prompt, not from a status line.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hetsched.inventory import META_KEY, MetaKeys
from observe.nimbus import NimbusAddress, try_summary
from planner.client import PlannerClient, PlannerClientError
from planner.model import ProfileSet
from topologies.conf import METRICS_TOKEN
from topologies.errors import TopologyError

LOAD_AWARE_KEY = "topology.disable.loadaware.messaging"
"""Storm's switch for its load-aware, locality-preferring shuffle, which the planner does not model."""

LIVE_PROFILING = "hetsched tune {name} --store DIR --explore"


@dataclass(frozen=True)
class ClusterMachines:
    """The machine types of the cluster a submission goes to, and where they were read (None: not known here)."""

    types: frozenset[str] | None
    source: str
    workers_have_plugin: bool
    """Whether this cluster's workers are known to have the plugin jar on their class path (the local and compose
    clusters put it there); elsewhere submit cannot tell."""


def cluster_machines(address: NimbusAddress, storm_yamls: Iterable[Path] = ()) -> ClusterMachines:
    """The machine types of the cluster whose Nimbus is ``address``: the supervisors' storm.yaml files given, else
    the local or compose cluster this checkout started, else unknown (Nimbus does not report scheduler meta)."""
    files = list(storm_yamls)
    local = _started_here(address)
    if files:
        return ClusterMachines(frozenset(declared_type(f) for f in files), "the --storm-yaml files",
                               local is not None)
    if local is not None:
        return ClusterMachines(frozenset(m.type for m in local.layout.machines), f"the {local_kind(local)} cluster's spec",
                               True)
    return ClusterMachines(None, "", False)


def local_kind(cluster: Any) -> str:
    return "compose" if type(cluster).__name__ == "ComposeCluster" else "local"


def _started_here(address: NimbusAddress) -> Any:
    """The local or compose cluster this checkout runs whose Nimbus is ``address``, else None."""
    try:
        from cluster import running_cluster

        local = running_cluster()
        if local is not None and (local.layout.nimbus_host, local.layout.nimbus_port) == (address.host, address.port):
            return local
    except Exception:  # no local cluster package, spec or home: not one of ours
        pass
    try:
        from cluster.compose_cluster import compose_cluster_at

        return compose_cluster_at(address)
    except Exception:  # no compose spec or home
        return None


def read_storm_yaml(path: Path | str) -> Any:
    """A supervisor's storm.yaml as YAML gives it; a file that cannot be read or parsed is one sentence."""
    try:
        return yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise TopologyError(f"cannot read --storm-yaml {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise TopologyError(f"--storm-yaml {path} is not YAML: {str(exc).splitlines()[0]}") from None


def declared_type(path: Path, keys: MetaKeys = MetaKeys()) -> str:
    """The machine type a supervisor's storm.yaml declares (its ``supervisor.scheduler.meta``), else the default."""
    conf = read_storm_yaml(path)
    if not isinstance(conf, dict):
        raise TopologyError(f"--storm-yaml {path} is not a storm.yaml (not a YAML mapping)")
    meta = conf.get(META_KEY)
    value = meta.get(keys.machine_type) if isinstance(meta, dict) else None
    return value.strip() if isinstance(value, str) and value.strip() else keys.default_type


def fetch_profile_set(name: str, planner_url: str, topology: str) -> ProfileSet | None:
    """The newest version of the set, or None where the planner does not answer (Nimbus may reach one this host
    cannot). A set the planner does not have is refused here, with what to do instead."""
    with PlannerClient(planner_url, timeout_s=10.0) as client:
        try:
            return client.get_profile_set(name)
        except PlannerClientError as exc:
            if exc.status == 404:
                raise TopologyError(f"the planner at {client.url} has no profile set {name!r}{_names(client)}: omit "
                                    f"--profiles to place {topology} evenly, then profile it live with "
                                    f"`{LIVE_PROFILING.format(name=topology)}`, or name another set") from None
            if exc.status is not None:
                raise TopologyError(str(exc)) from None
            return None


def _names(client: PlannerClient) -> str:
    try:
        names = client.profile_set_names()
    except (PlannerClientError, ValueError, KeyError, TypeError):
        return ""
    return f" (it has {', '.join(names)})" if names else " (it has none)"


def missing_pairs(profile_set: ProfileSet, component_keys: Mapping[str, str],
                  machine_types: Iterable[str] | None) -> dict[str, list[str]]:
    """Profile key -> the machine types the set lacks it on, for the keys the topology's components use.

    With the cluster's machine types unknown, a key is missing only where the set has it on no type at all.
    """
    have: dict[str, set[str]] = {}
    for entry in profile_set.entries:
        have.setdefault(entry.profile, set()).add(entry.machine_type)
    keys = sorted(set(component_keys.values()))
    if machine_types is None:
        return {k: [] for k in keys if k not in have}
    types = sorted(set(machine_types))
    missing = {k: [t for t in types if t not in have.get(k, set())] for k in keys}
    return {k: ts for k, ts in missing.items() if ts}


def missing_sentence(set_name: str, missing: Mapping[str, list[str]], component_keys: Mapping[str, str],
                     topology: str) -> str:
    """One sentence: the set, every missing pair (by the components that use the key), and what to do."""
    parts = []
    for key, types in missing.items():
        components = sorted(c for c, k in component_keys.items() if k == key)
        who = ", ".join(components) + ("" if components == [key] else f" (profile key {key})")
        where = f"on machine type{'s' if len(types) > 1 else ''} {', '.join(types)}" if types else "on any machine type"
        parts.append(f"{who} {where}")
    return (f"profile set {set_name!r} has no profile for {'; for '.join(parts)}: omit --profiles to place {topology} "
            f"evenly, then profile it live with `{LIVE_PROFILING.format(name=topology)}` (its workers' records flow "
            "from the even placement), or add these pairs to the set")


def check_profile_pairs(set_name: str, planner_url: str | None, component_keys: Mapping[str, str], topology: str,
                        machines: ClusterMachines) -> str | None:
    """Refuse (TopologyError) a set the planner lacks, or one without the topology's pairs on the cluster's types.

    Returns a note to print where the check was partial (the cluster's machine types are not known here), else None.
    """
    if not planner_url:
        return None
    profile_set = fetch_profile_set(set_name, planner_url, topology)
    if profile_set is None:
        return f"profile set {set_name!r} not checked: the planner at {planner_url} did not answer"
    missing = missing_pairs(profile_set, component_keys, machines.types)
    if missing:
        raise TopologyError(missing_sentence(set_name, missing, component_keys, topology))
    if machines.types is None:
        return (f"profile set {set_name!r} has every profile key of {topology}, but this host does not know the "
                "cluster's machine types (Nimbus does not report them): give the supervisors' storm.yaml with "
                "--storm-yaml to check every (profile key, machine type) pair")
    return None


def planned_defaults(conf: dict[str, Any], load_aware: bool) -> dict[str, Any]:
    """``--conf`` with what a topology the planner places gets unless the conf says otherwise: Storm's load-aware
    shuffle off, since the planner models shuffle as an even split (plans fall short with it on)."""
    if load_aware:
        if conf.get(LOAD_AWARE_KEY) is True:
            raise TopologyError(f"--load-aware keeps Storm's load-aware shuffle, and --conf {LOAD_AWARE_KEY}=true "
                                "turns it off: give one of them")
        return {**conf, LOAD_AWARE_KEY: False}
    return {LOAD_AWARE_KEY: True, **conf}


def metrics_choice(metrics: bool | None, machines: ClusterMachines, address: NimbusAddress) -> bool:
    """Whether to turn the workers' metrics hook on. Asked for (True/False): as asked. Not asked: on where the
    workers are known to have the plugin jar (the clusters this checkout starts); elsewhere refused, since a
    worker without the jar does not start (ClassNotFoundException) and one without the hook sends no records."""
    if metrics is not None:
        return metrics
    if machines.workers_have_plugin or try_summary(address) is None:
        return True  # a Nimbus that does not answer stops the submission itself, with its own sentence
    raise TopologyError(
        f"cannot tell whether the workers of Nimbus {address} have the plugin jar in extlib/, which the metrics "
        "hook needs (a worker without it does not start): copy storm-plugin/target/hetsched-storm-plugin.jar into "
        "$STORM_HOME/extlib/ on every supervisor host and submit with --metrics, or submit with --no-metrics "
        "(no worker records, so `hetsched tune` cannot profile it live)")


def workers_records_token(topology: str | None, address: NimbusAddress, planner: str | None) -> tuple[dict[str, str], str | None]:
    """The conf that gives a topology's workers its own records token (``hetsched.metrics.token``), or none and why.

    With it the workers post this topology's records and nothing else, so they need no planner token of their
    supervisors'. The planner is the one this command reaches (``--planner``, the compose cluster's, else the
    default) with ``$HETSCHED_PLANNER_TOKEN``, which needs the records scope.
    """
    if topology is None:
        return {}, ("the app's main class names its topology itself, so its workers get no records token of their own "
                    "and post records with their supervisors' planner token, if any")
    from hetsched.ops_cmd import planner_of

    url, token = planner_of(address, {}, planner)
    try:
        with PlannerClient(url, token, timeout_s=10.0) as client:
            return {METRICS_TOKEN: client.records_token(topology)}, None
    except PlannerClientError as exc:
        return {}, (f"{topology}'s workers get no records token of their own ({exc}); they post records with their "
                    "supervisors' planner token, if any")
