"""What the service benchmarks share: a real ``hetsched serve`` of a checkout on a free port, and percentiles.

The scripts measure the service's own process (CPU, memory, children), so they start it
themselves and keep its ``Popen``.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HETSCHED = "from hetsched.cli import main; main()"
_LISTENING = re.compile(r"Uvicorn running on (http://[\d.]+:\d+)")


def start_service(tmp: Path, repo: Path = REPO, extra_args: Sequence[str] = (), python: str = sys.executable,
                  timeout_s: float = 120.0) -> tuple[subprocess.Popen, str]:
    """``hetsched serve`` of checkout ``repo`` on a free loopback port, database in ``tmp``; its process and URL."""
    log_path = tmp / "serve.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [python, "-c", HETSCHED, "serve", "--port", "0", "--db", str(tmp / "bench.db"), *extra_args],
            cwd=tmp, env={**os.environ, "PYTHONPATH": str(repo)}, stdout=log, stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = _LISTENING.search(log_path.read_text(errors="replace"))
        if found:
            return process, found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"hetsched serve did not start:\n{log_path.read_text(errors='replace')}")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]
