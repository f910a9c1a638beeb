"""Request bodies shown in /docs (and tried first by schema-driven test tools): they plan as they stand."""
from __future__ import annotations

_TOPOLOGY = {
    "name": "linear",
    "components": [
        {"id": "spout", "kind": "spout", "profile": "spout"},
        {"id": "low", "kind": "bolt", "profile": "lowCompute"},
        {"id": "high", "kind": "bolt", "profile": "highCompute", "parallelism": 3},
    ],
    "streams": [
        {"from": "spout", "to": "low", "grouping": "shuffle"},
        {"from": "low", "to": "high", "grouping": "shuffle"},
    ],
}
_CLUSTER = {
    "machine_types": [{"name": "small", "capacity": 100, "cores": 1, "slots": 4},
                      {"name": "large", "capacity": 100, "cores": 4, "slots": 4}],
    "machines": [{"id": "sup-a", "type": "small"}, {"id": "sup-b", "type": "large"}],
}
_ENTRIES = [
    {"profile": profile, "machine_type": machine_type, "e": e, "met": 1.5, "alpha": 1.0}
    for profile, costs in {"spout": (0.002, 0.0005), "lowCompute": (0.004, 0.001), "highCompute": (0.0191, 0.005)}.items()
    for machine_type, e in zip(("small", "large"), costs)
]

PROFILE_SET = {"name": "micro", "entries": _ENTRIES, "source": {"run": "example"}}
PLAN_REQUEST = {
    "topology": _TOPOLOGY,
    "cluster": _CLUSTER,
    "profiles": {"entries": _ENTRIES},
    "options": {"initial_rate": 1.0, "max_utilization": 1.0, "tolerance": 0.001},
}
EVALUATION_REQUEST = {
    "topology": _TOPOLOGY,
    "cluster": _CLUSTER,
    "profiles": {"entries": _ENTRIES},
    "assignments": [
        {"component": "spout", "machine": "sup-a"},
        {"component": "low", "machine": "sup-b"},
        {"component": "high", "machine": "sup-a"},
        {"component": "high", "machine": "sup-b"},
        {"component": "high", "machine": "sup-b"},
    ],
}
