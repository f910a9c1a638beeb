"""The bind-address shim for a supervisor and its workers, and for two Nimbus daemons (cluster/native/bind_address.c).

Storm 2.8 offers no setting for the address of a worker's Netty server, so each supervisor of the
local cluster runs with ``LD_PRELOAD`` of a small shared library that turns a wildcard bind into a
bind to the machine's own 127.0.0.x; its workers inherit the environment. A leader and a standby
Nimbus share one Thrift port, so each runs with it too, bound to its own address. The library is compiled
once with the host's C compiler into the cache; without a compiler the workers listen on every
address and :func:`shim_library` says why.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from cluster.storm_home import cache_dir

SOURCE = Path(__file__).with_name("native") / "bind_address.c"
BIND_ADDRESS_ENV = "HETSCHED_BIND_ADDRESS"


def shim_library() -> tuple[Path | None, str]:
    """The compiled shim (built when missing or older than its source), or None and the reason."""
    library = cache_dir() / "hetsched-bind-address.so"
    if library.is_file() and library.stat().st_mtime >= SOURCE.stat().st_mtime:
        return library, ""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None, "no C compiler (cc or gcc) to build the bind-address shim"
    library.parent.mkdir(parents=True, exist_ok=True)
    partial = library.with_suffix(".so.partial")
    done = subprocess.run(
        [compiler, "-shared", "-fPIC", "-O2", "-o", str(partial), str(SOURCE), "-ldl"],
        capture_output=True, text=True,
    )
    if done.returncode != 0:
        return None, f"{Path(compiler).name} could not build {SOURCE.name}: {done.stderr.strip().splitlines()[-1:] or done.returncode}"
    partial.replace(library)
    return library, ""


def machine_environment(env: dict[str, str], host: str, library: Path) -> dict[str, str]:
    """``env`` for a daemon on ``host`` whose wildcard binds (a supervisor's workers' too) go to ``host``."""
    preload = " ".join(p for p in (str(library), env.get("LD_PRELOAD", "")) if p)
    return {**env, "LD_PRELOAD": preload, BIND_ADDRESS_ENV: host}
