"""The optional parts of hetsched (pip extras), and the one-sentence refusal of a command whose part is not installed.

``pip install hetsched`` is the planner, its service and the command line; Spark profiling, the
streamparse topologies and the bench are extras, so a planner host does not carry PySpark.
"""
from __future__ import annotations

import importlib.util
from collections.abc import Iterable

EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "spark": ("pyspark",),
    "topologies": ("streamparse", "thriftpy2", "pkg_resources"),
    "bench": ("matplotlib", "streamparse", "thriftpy2", "pkg_resources"),
}
"""The top-level modules each extra of pyproject.toml installs (pkg_resources: setuptools<82, which streamparse needs)."""


def missing_modules(extras: Iterable[str]) -> list[str]:
    """The modules of these extras that cannot be imported here, found without importing them."""
    wanted = dict.fromkeys(m for extra in extras for m in EXTRA_MODULES[extra])
    return [module for module in wanted if importlib.util.find_spec(module) is None]


def extra_of_module(module: str | None) -> str | None:
    """The first extra that installs this (possibly dotted) module, or None for a module of no extra."""
    top = (module or "").partition(".")[0]
    return next((extra for extra, modules in EXTRA_MODULES.items() if top in modules), None)


def install_command(extras: Iterable[str]) -> str:
    return f"pip install 'hetsched[{','.join(extras)}]'"


def refusal(command: str, extras: Iterable[str], missing: Iterable[str]) -> str:
    """One sentence: which command needs which extra, what is missing, and the pip command that installs it."""
    extras, missing = tuple(extras), tuple(missing)
    named = " and ".join(extras) + (" extra" if len(extras) == 1 else " extras")
    are = "is" if len(missing) == 1 else "are"
    return f"{command} needs the {named} of hetsched ({', '.join(missing)} {are} not installed); install with: {install_command(extras)}"
