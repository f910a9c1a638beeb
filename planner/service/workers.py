"""Planning in worker processes the service can kill: a plan past its time limit really stops.

A thread cannot be stopped, so the planner core runs in warm worker processes (forked from a
forkserver that has the planner's modules loaded, so a replacement costs milliseconds). Each
request takes an idle worker (its planning slot), sends it a task through a pipe and waits for
the answer as plain data. A worker that overruns the time limit by ``KILL_GRACE_S`` is killed
(SIGKILL); its slot comes free only once the process has ended and a fresh worker has taken
its place.

Two lanes: requests up to the small size (plugin-sized) have a lane of their own, so they
never queue behind large plans; they also take a worker of the large lane when it comes free
first. Large requests use the large lane only.
"""
from __future__ import annotations

import logging
import multiprocessing
import signal
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import anyio
import psutil  # type: ignore[import-untyped]  # no stubs in the venv (types-psutil)

from planner.errors import PlanningError, PlanningTimeout
from planner.service.errors import ServiceError

log = logging.getLogger("hetsched.service")

KILL_GRACE_S = 1.0
"""How long past the time limit a worker may take to answer before it is killed."""
JOIN_TIMEOUT_S = 10.0
"""How long a killed worker may take to end (SIGKILL ends it at once unless the kernel is stuck)."""
RECYCLE_RSS_MB = 300.0
"""A worker holding more memory than this after a task (a large plan's tables, kept by the allocator) is replaced,
so idle workers hold only what the loaded modules need (about 120 MB each, most of it shared)."""
PRELOAD = ["planner.api", "planner.strategies", "planner.service.planning"]
"""Modules the forkserver imports once, so that each worker starts with them loaded."""

_context = multiprocessing.get_context("forkserver")


class WorkerCrash(RuntimeError):
    """The task raised something other than a PlanningError in the worker (a bug), or the worker died."""


def _serve(conn: Connection) -> None:
    """A worker's loop: one ``(func, args)`` task at a time, answered ``(kind, payload)`` as plain data."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            func, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            answer: tuple[str, Any] = ("ok", func(*args))
        except PlanningTimeout as exc:
            answer = ("time_limit", str(exc))
        except PlanningError as exc:
            answer = ("planning_error", str(exc))
        except Exception as exc:
            answer = ("crash", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        conn.send(answer)


@dataclass
class Worker:
    """One planning process and the parent's end of its pipe."""

    process: BaseProcess
    conn: Connection

    @classmethod
    def start(cls) -> Worker:
        parent, child = _context.Pipe()
        process = _context.Process(target=_serve, args=(child,), name="hetsched-planning-worker", daemon=True)
        process.start()
        child.close()
        return cls(process, parent)

    def call(self, func: Callable[..., Any], args: tuple[Any, ...], timeout_s: float | None) -> tuple[str, Any]:
        """Send the task and wait for its answer (blocking: run it in a thread); TimeoutError past ``timeout_s``."""
        self.conn.send((func, args))
        if not self.conn.poll(timeout_s):
            raise TimeoutError
        try:
            return self.conn.recv()
        except (EOFError, OSError):  # OSError: the pipe reset by a process that died mid-answer (seen at 1,000 machines)
            self.process.join(JOIN_TIMEOUT_S)
            return ("crash", f"the planning process ended without an answer (exit code {self.process.exitcode})")

    def kill(self) -> None:
        """SIGKILL the process and wait until it has ended."""
        self.process.kill()
        self.process.join(JOIN_TIMEOUT_S)
        self.conn.close()

    def rss_mb(self) -> float:
        try:
            return psutil.Process(self.process.pid).memory_info().rss / 1e6
        except psutil.NoSuchProcess:
            return 0.0

    def stop(self) -> None:
        """Ask the worker to end (its pipe closes), killing it if it does not."""
        self.conn.close()
        self.process.join(1.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(JOIN_TIMEOUT_S)


class Lane:
    """A fixed set of workers; an idle one is a free planning slot."""

    def __init__(self, name: str, workers: int):
        self.name = name
        self.size = workers
        self.workers: list[Worker] = []
        self.idle: list[Worker] = []

    def start(self) -> None:
        for _ in range(self.size):
            worker = Worker.start()
            self.workers.append(worker)
            self.idle.append(worker)

    async def replace(self, dead: Worker) -> Worker:
        """Kill ``dead`` (waiting until it has ended) and start its successor."""
        await anyio.to_thread.run_sync(dead.kill)
        fresh = await anyio.to_thread.run_sync(Worker.start)
        self.workers = [fresh if w is dead else w for w in self.workers]
        return fresh

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()


@dataclass
class _Waiter:
    """A request waiting for a slot: a small one takes a worker of either lane, a large one of the large lane."""

    small: bool
    ready: anyio.Event = field(default_factory=anyio.Event)
    slot: tuple[Lane, Worker] | None = None


class PlanningPool:
    """The service's planning lanes: ``large`` for every request, ``small`` for small ones only.

    Waiting requests are served first come, first served among those a freed worker may
    serve, so a small request never waits behind large ones while its own lane has room.
    """

    def __init__(self, large_workers: int, small_workers: int):
        self.large = Lane("large", large_workers)
        self.small = Lane("small", small_workers)
        self._waiting: deque[_Waiter] = deque()

    def start(self) -> None:
        started = time.perf_counter()
        _context.set_forkserver_preload(PRELOAD)
        self.large.start()
        self.small.start()
        log.info("planning workers: %d for every request, %d more for small ones (started in %.0f ms)",
                 self.large.size, self.small.size, (time.perf_counter() - started) * 1000)

    def stop(self) -> None:
        self.small.stop()
        self.large.stop()

    def children(self) -> list[int]:
        return [w.process.pid for lane in (self.large, self.small) for w in lane.workers if w.process.pid]

    def _lanes(self, small: bool) -> tuple[Lane, ...]:
        return (self.small, self.large) if small else (self.large,)

    async def _take(self, small: bool, queue_wait_s: float) -> tuple[Lane, Worker]:
        for lane in self._lanes(small):
            if lane.idle:
                return lane, lane.idle.pop()
        waiter = _Waiter(small)
        self._waiting.append(waiter)
        try:
            with anyio.move_on_after(queue_wait_s):
                await waiter.ready.wait()
        except BaseException:  # cancelled while waiting: leave no slot behind
            if waiter.slot is not None:
                self._give_back(*waiter.slot)
            else:
                self._waiting.remove(waiter)
            raise
        if waiter.slot is not None:
            return waiter.slot
        self._waiting.remove(waiter)
        raise ServiceError(503, "busy", f"the planner is busy: no planning slot came free within {queue_wait_s:g} s; "
                           "try again later", headers={"Retry-After": "5"})

    def _give_back(self, lane: Lane, worker: Worker) -> None:
        """The worker to the first waiting request it may serve, else back to its lane's idle ones."""
        for waiter in self._waiting:
            if waiter.small or lane is self.large:
                self._waiting.remove(waiter)
                waiter.slot = (lane, worker)
                waiter.ready.set()
                return
        lane.idle.append(worker)

    async def run(self, func: Callable[..., Any], *args: Any, small: bool, limit_s: float | None,
                  queue_wait_s: float) -> Any:
        """``func(*args)`` in a worker once a slot is free; its plain-data answer, or the core's PlanningError.

        ``func`` must be importable by name (a module-level function) and return plain data.
        The time limit counts computing only, not the wait for a slot; a wait longer than
        ``queue_wait_s`` is answered 503 (busy). Past ``limit_s + KILL_GRACE_S`` the worker is
        killed and replaced before its slot is given to the next caller.
        """
        lane, worker = await self._take(small, queue_wait_s)
        healthy = False
        try:
            timeout = None if limit_s is None else limit_s + KILL_GRACE_S
            kind, payload = await anyio.to_thread.run_sync(worker.call, func, args, timeout, abandon_on_cancel=True)
            healthy = kind != "crash"
            if healthy and (rss_mb := worker.rss_mb()) > RECYCLE_RSS_MB:
                log.info("planning worker %s holds %.0f MB after its task; replacing it", worker.process.pid, rss_mb)
                healthy = False
        except TimeoutError:
            log.warning("%s overran the time limit of %g s; its worker (pid %s) is killed", getattr(func, "__name__", func),
                        limit_s, worker.process.pid)
            raise PlanningTimeout(
                f"planning stopped at the service's time limit of {limit_s:g} s: "
                "choose a faster strategy or a smaller input"
            ) from None
        finally:
            with anyio.CancelScope(shield=True):
                self._give_back(lane, worker if healthy else await lane.replace(worker))
        if kind == "ok":
            return payload
        if kind == "time_limit":
            raise PlanningTimeout(payload)
        if kind == "planning_error":
            raise PlanningError(payload)
        raise WorkerCrash(payload)
