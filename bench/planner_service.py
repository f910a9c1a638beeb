"""The bench's own planning service: the planner's FastAPI app under uvicorn, in its own process.

It listens on a free loopback port with a database in the bench's output folder, so a
bench never meets another planner's plans, and it is stopped when the bench ends.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from planner.client import PlannerClient, PlannerClientError
from bench.errors import BenchError
from planner.durable import open_private_append
from planner.service.settings import SHARE_MODE_ENV, log_config

STARTUP_TIMEOUT_S = 90.0
_LISTENING = re.compile(r"Uvicorn running on (http://[\d.]+:\d+)")
REPO = Path(__file__).resolve().parents[1]


class PlannerService:
    """``uvicorn --factory planner.service.app:create_app`` on 127.0.0.1, any free port."""

    def __init__(self, db_path: Path, log_path: Path, share_mode: str = "weighted") -> None:
        self.db_path = Path(db_path)
        self.log_path = Path(log_path)
        self.share_mode = share_mode
        """How tenants share what their minimums leave (``$HETSCHED_SHARE_MODE`` of the service)."""
        self.process: subprocess.Popen | None = None
        self.url = ""

    def start(self) -> str:
        """Start the service and return its URL once it answers /healthz."""
        env = {**os.environ, "HETSCHED_DB": str(self.db_path), "PYTHONPATH": str(REPO),
               SHARE_MODE_ENV: self.share_mode}
        env.pop("HETSCHED_PLANNER_TOKEN", None)
        logging_file = self.log_path.with_name(f"{self.log_path.stem}-logging.json")
        logging_file.write_text(json.dumps(log_config("info")))  # the service's own lines too, not uvicorn's alone
        args = [sys.executable, "-m", "uvicorn", "--factory", "planner.service.app:create_app",
                "--host", "127.0.0.1", "--port", "0", "--no-access-log", "--log-config", str(logging_file)]
        earlier = len(self._log())  # appended to: a service started before in this folder left its address in it
        with open_private_append(self.log_path) as log:
            self.process = subprocess.Popen(args, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            found = _LISTENING.search(self._log()[earlier:])
            if found:
                self.url = found.group(1)
                break
            if self.process.poll() is not None:
                raise BenchError(f"the planning service exited with {self.process.returncode}; its log "
                                 f"{self.log_path}:\n{self._log()[-2000:]}")
            time.sleep(0.1)
        else:
            self.stop()
            raise BenchError(f"the planning service did not start within {STARTUP_TIMEOUT_S:g} s (log {self.log_path})")
        try:
            with PlannerClient(self.url) as client:
                client.health()
        except PlannerClientError as exc:
            self.stop()
            raise BenchError(f"the planning service at {self.url} does not answer: {exc}") from None
        return self.url

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)

    def _log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __enter__(self) -> "PlannerService":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
