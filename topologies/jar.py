"""The topology jar without lein: a zip whose ``resources/`` holds this package's Python sources.

A Storm supervisor extracts a jar's ``resources/`` into the topology's code
directory, and a shell component's process starts there, so
``streamparse_run topologies.bolts.LowCompute`` imports the code that was
submitted. The jar holds no Java: shell components run inside Storm's own
``ShellBolt``/``ShellSpout`` from the worker classpath.
"""
from __future__ import annotations

import zipfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
RESOURCES = "resources"
MANIFEST = "Manifest-Version: 1.0\r\nCreated-By: hetsched\r\n\r\n"
_FIXED_TIME = (2024, 1, 1, 0, 0, 0)
"""Entry timestamps, fixed so the same sources make the same jar."""


def source_files(package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """The package's Python files, relative to its parent, in a fixed order."""
    return sorted(
        p.relative_to(package_dir.parent)
        for p in package_dir.rglob("*.py")
        if "__pycache__" not in p.parts
    )


def _write(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    zf.writestr(info, data)


def build_jar(destination: Path, package_dir: Path = PACKAGE_DIR) -> Path:
    """Write the jar to ``destination`` (a file path) and return it."""
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(destination, "w") as zf:
        _write(zf, "META-INF/MANIFEST.MF", MANIFEST.encode())
        for relative in source_files(package_dir):
            _write(zf, f"{RESOURCES}/{relative.as_posix()}", (package_dir.parent / relative).read_bytes())
    return destination
