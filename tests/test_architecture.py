"""ARCHITECTURE.md's rule: Python packages import one way, toward planner/ (module-level imports; a lazy import
inside a function is allowed where ARCHITECTURE.md names it)."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAYERS = ["planner", "observe", "topologies", "cluster", "spark_profiling", "bench", "hetsched", "benchmarks"]
"""Each package may import, at module level, only itself and the packages before it."""
ALLOWED = {("observe/topology_graph.py", "topologies")}
"""Named in ARCHITECTURE.md: observe reads one key name from topologies.conf."""


def module_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_packages_import_toward_the_planner():
    wrong = []
    for rank, package in enumerate(LAYERS):
        later = set(LAYERS[rank + 1:])
        for path in sorted((REPO / package).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            for imported in module_level_imports(path) & later:
                if (relative, imported) not in ALLOWED:
                    wrong.append(f"{relative} imports {imported}")
    assert not wrong, "imports against the one-way rule of ARCHITECTURE.md: " + "; ".join(wrong)


def test_every_layer_is_a_top_level_folder_named_in_architecture_md():
    text = (REPO / "ARCHITECTURE.md").read_text()
    for package in LAYERS:
        assert (REPO / package).is_dir() and f"`{package}/`" in text, package
