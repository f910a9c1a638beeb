"""benchmarks/ is a package of documented tools: every module is in its README's index and imports without path hacks."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOOLS = sorted(p for p in (REPO / "benchmarks").glob("*.py") if p.name != "__init__.py")


def test_every_tool_is_in_the_index():
    index = (REPO / "benchmarks" / "README.md").read_text()
    missing = [p.stem for p in TOOLS if f"`{p.stem}" not in index]
    assert TOOLS and not missing, f"benchmarks/README.md does not list {missing}"


def test_no_tool_edits_the_import_path():
    hacked = [p.name for p in TOOLS if "sys.path.insert" in p.read_text()]
    assert not hacked, f"{hacked} insert into sys.path; import through the benchmarks package instead"
