"""Results files that survive a crash and are readable by their owner only.

A result is written whole or not at all: into a temporary file in the same folder, fsynced, then
renamed over the old one (``os.replace`` is atomic on one file system), so a kill, a full disk or an
error half-way leaves the previous version intact. Lines appended to a record file are flushed and
fsynced one by one, so a killed run keeps every line it finished. Results describe the cluster and
its measurements: folders made here are 0700 and files 0600, whatever the umask.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

PRIVATE_FOLDER_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_folder(path: Path) -> Path:
    """``path`` as a folder, made 0700 if this call creates it (an existing folder keeps its mode)."""
    path = Path(path)
    if not path.is_dir():
        path.mkdir(mode=PRIVATE_FOLDER_MODE, parents=True, exist_ok=True)
        path.chmod(PRIVATE_FOLDER_MODE)
    return path


def write_atomic(path: Path, content: str | bytes) -> Path:
    """Replace ``path`` by ``content`` in one step (mode 0600); on any failure the old file is left as it was."""
    path = Path(path)
    private_folder(path.parent)
    data = content.encode("utf-8") if isinstance(content, str) else content
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, PRIVATE_FILE_MODE)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_folder(path.parent)
    return path


def write_json_atomic(path: Path, data: Any) -> Path:
    """``data`` as indented JSON, atomically (:func:`write_atomic`); values JSON lacks are written as text."""
    return write_atomic(path, json.dumps(data, indent=2, default=str) + "\n")


def open_private_append(path: Path):
    """``path`` opened to append text, created 0600 (and its folder 0700) if it is new."""
    path = Path(path)
    private_folder(path.parent)
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE_MODE)
    return os.fdopen(descriptor, "a", encoding="utf-8")


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable; some file systems cannot open a folder, and then the rename is all there is."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
