"""A Flux topology file: read and checked here, so a bad file is refused before a JVM starts, its graph for the
planner, and a copy with the plan's parallelism for Flux to submit.

Flux (``org.apache.storm.flux.Flux``) builds a topology from YAML: ``name``, ``config`` (the topology conf),
``spouts`` and ``bolts`` (``id``, ``className``, ``parallelism``, ...) and ``streams`` (``from``, ``to``,
``grouping.type``). ``--filter props`` replaces ``${key}`` with the property's value and ``--env-filter``
``${ENV-NAME}`` with the environment's; both are applied here as Flux applies them, line by line, before parsing.
Pure except :func:`read_flux` and :func:`write_flux`.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from planner.model import Component, Stream, Topology as PlannerTopology
from topologies import conf as keys
from topologies.errors import TopologyError

FLUX_MAIN = "org.apache.storm.flux.Flux"

GROUPINGS = {
    "SHUFFLE": "shuffle", "LOCAL_OR_SHUFFLE": "local_or_shuffle", "FIELDS": "fields", "PARTIAL_KEY": "partial_key",
    "ALL": "all", "GLOBAL": "global", "NONE": "none", "DIRECT": "direct", "CUSTOM": "shuffle",
}
"""Flux's grouping types in the planner's names; a custom grouping is planned as shuffle (an even split)."""

_PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")


@dataclass
class FluxTopology:
    """One Flux file after property substitution: its name, components and streams as Flux will build them."""

    path: Path
    document: dict[str, Any]
    name: str
    spouts: list[str]
    bolts: list[str]
    parallelism: dict[str, int]
    streams: list[tuple[str, str, str]] = field(default_factory=list)
    """(from, to, the planner's grouping)."""

    @property
    def component_ids(self) -> list[str]:
        return self.spouts + self.bolts

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.document.get("config") or {})

    def profiles(self) -> dict[str, str]:
        """Component id -> profile key: the file's ``hetsched.component.profiles``, else the component's id."""
        named = self.config.get(keys.COMPONENT_PROFILES) or {}
        return {c: str(named.get(c, c)) for c in self.component_ids}


def parse_properties(text: str) -> dict[str, str]:
    """A Java properties file's ``key=value`` / ``key: value`` lines (``#`` and ``!`` start comments)."""
    result: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if match:
            result[match.group(1)] = match.group(2).strip()
        else:
            result[line] = ""
    return result


def substitute(text: str, properties: dict[str, str], env: dict[str, str] | None = None) -> str:
    """``${key}`` -> the property, ``${ENV-NAME}`` -> the environment variable (when ``env`` is given); others stay."""
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith("ENV-") and env is not None:
            return env.get(name[4:], match.group(0))
        return properties.get(name, match.group(0))

    return _PLACEHOLDER.sub(value, text)


def _component_ids(document: dict[str, Any], section: str, where: str) -> list[tuple[str, dict[str, Any]]]:
    entries = document.get(section) or []
    if not isinstance(entries, list):
        raise TopologyError(f"{where}: {section} must be a list of components, not {type(entries).__name__}")
    result = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not entry.get("id") or not entry.get("className"):
            raise TopologyError(f"{where}: {section} entry {i + 1} needs an id and a className")
        result.append((str(entry["id"]), entry))
    return result


def _parallelism(component: str, entry: dict[str, Any], where: str) -> int:
    value = entry.get("parallelism", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TopologyError(f"{where}: the parallelism of {component!r} must be a whole number of at least 1, not {value!r}"
                            + (" (a property the --filter file does not define?)" if isinstance(value, str) and "${" in value else ""))
    return value


def parse_flux(text: str, path: Path) -> FluxTopology:
    """The Flux topology in ``text`` (already substituted); every fault is one sentence naming the file."""
    where = f"the Flux file {path}"
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise TopologyError(f"{where} is not valid YAML{at}: {problem}") from None
    if not isinstance(document, dict):
        raise TopologyError(f"{where} is not a Flux topology (a YAML map with name, spouts, bolts and streams)")
    if document.get("includes"):
        raise TopologyError(f"{where} uses includes, which hetsched submit --flux does not follow (it must see every "
                            "component to give it the plan's parallelism); put the included parts into the file")
    if document.get("topologySource"):
        raise TopologyError(f"{where} names a topologySource, whose components hetsched cannot see; list spouts, "
                            "bolts and streams in the file instead")
    name = document.get("name")
    if not isinstance(name, str) or not name.strip():
        raise TopologyError(f"{where} has no topology name (name: ...)")
    config = document.get("config")
    if config is not None and not isinstance(config, dict):
        raise TopologyError(f"{where}: config must be a map of topology settings")
    spouts = _component_ids(document, "spouts", where)
    bolts = _component_ids(document, "bolts", where)
    if not spouts:
        raise TopologyError(f"{where} has no spouts")
    ids = [c for c, _ in spouts + bolts]
    duplicates = sorted({c for c in ids if ids.count(c) > 1})
    if duplicates:
        raise TopologyError(f"{where} names {', '.join(duplicates)} more than once")
    parallelism = {c: _parallelism(c, entry, where) for c, entry in spouts + bolts}
    streams = []
    for i, stream in enumerate(document.get("streams") or []):
        if not isinstance(stream, dict):
            raise TopologyError(f"{where}: stream {i + 1} is not a map with from, to and grouping")
        source, target = stream.get("from"), stream.get("to")
        unknown = [str(c) for c in (source, target) if c not in parallelism]
        if unknown:
            raise TopologyError(f"{where}: stream {i + 1} ({source} -> {target}) names {', '.join(unknown)}, "
                                f"which is not a spout or bolt of the file")
        grouping = (stream.get("grouping") or {}).get("type", "SHUFFLE") if isinstance(stream.get("grouping"), dict) else None
        if grouping is None or str(grouping).upper() not in GROUPINGS:
            raise TopologyError(f"{where}: stream {i + 1} ({source} -> {target}) has no grouping type Flux knows "
                                f"({', '.join(GROUPINGS)})")
        streams.append((str(source), str(target), GROUPINGS[str(grouping).upper()]))
    profiles = (config or {}).get(keys.COMPONENT_PROFILES)
    if profiles is not None and not isinstance(profiles, dict):
        raise TopologyError(f"{where}: config {keys.COMPONENT_PROFILES} must map component ids to profile keys")
    return FluxTopology(path=path, document=document, name=name.strip(), spouts=[c for c, _ in spouts],
                        bolts=[c for c, _ in bolts], parallelism=parallelism, streams=streams)


def read_flux(path: Path, filter_file: Path | None = None, env_filter: bool = False) -> FluxTopology:
    """Read the file, substitute as Flux would with ``--filter``/``--env-filter``, and check it."""
    if not path.is_file():
        raise TopologyError(f"the Flux file {path} does not exist")
    properties: dict[str, str] = {}
    if filter_file is not None:
        if not filter_file.is_file():
            raise TopologyError(f"the --filter properties file {filter_file} does not exist")
        properties = parse_properties(filter_file.read_text(encoding="utf-8", errors="replace"))
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TopologyError(f"the Flux file {path} is not UTF-8 text") from None
    text = substitute(text, properties, dict(os.environ) if env_filter else None)
    left = sorted(set(_PLACEHOLDER.findall(text)))
    if left:
        how = "--filter" if filter_file is None else f"the --filter file {filter_file}"
        if any(name.startswith("ENV-") for name in left) and not env_filter:
            how += " or --env-filter"
        raise TopologyError(f"the Flux file {path} uses {', '.join('${' + n + '}' for n in left)}, which {how} does "
                            "not define (Flux would fail on it)")
    return parse_flux(text, path)


def with_plan(flux: FluxTopology, parallelism: dict[str, int], name: str | None = None,
              conf: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Flux document with each named component's parallelism, the given name, and ``conf`` over its config."""
    unknown = sorted(set(parallelism) - set(flux.component_ids))
    if unknown:
        raise TopologyError(f"{flux.name} (the Flux file {flux.path}) has no component {', '.join(unknown)}; "
                            f"its components are {', '.join(flux.component_ids)}")
    document = dict(flux.document)
    for section in ("spouts", "bolts"):
        document[section] = [
            {**entry, "parallelism": parallelism[str(entry["id"])]} if str(entry["id"]) in parallelism else dict(entry)
            for entry in document.get(section) or []
        ]
    if name is not None:
        document["name"] = name
    if conf:
        document["config"] = {**(document.get("config") or {}), **conf}
    return document


def write_flux(document: dict[str, Any], destination: Path) -> Path:
    destination.write_text(yaml.safe_dump(document, sort_keys=False, default_flow_style=False), encoding="utf-8")
    return destination


def planner_topology(flux: FluxTopology, parallelism: dict[str, int] | None = None) -> PlannerTopology:
    """The graph in the planner's model, with each component's profile key and, where given, fixed instance counts."""
    parallelism = parallelism or {}
    profiles = flux.profiles()
    components = [
        Component(id=c, kind="spout" if c in flux.spouts else "bolt", profile=profiles[c], parallelism=parallelism.get(c))
        for c in flux.component_ids
    ]
    streams = [Stream(source=s, target=t, grouping=g) for s, t, g in flux.streams]  # type: ignore[arg-type]
    return PlannerTopology(name=flux.name, components=components, streams=streams)


def flux_args(copy: Path, filter_file: Path | None, env_filter: bool) -> list[str]:
    """Flux's arguments for a remote submit of ``copy``."""
    args = ["--remote", "--no-splash"]
    if filter_file is not None:
        args += ["--filter", str(filter_file)]
    if env_filter:
        args.append("--env-filter")
    return args + [str(copy)]
