"""Every HiGHS call of the planner goes through here, so that no solver writes to standard output.

``hetsched plan --json`` prints the plan on stdout; HiGHS logs there when asked,
and some of its C code prints there unasked (e.g.
``HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();``).
So every solve runs with HiGHS's output switched off and, around it, file
descriptor 1 pointed at standard error: nothing is lost, and stdout stays the
caller's. Several threads may solve at once (the service): the first to enter
redirects, the last to leave restores.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from scipy.optimize import OptimizeResult, linprog, milp

_lock = threading.Lock()
_depth = 0
_saved_stdout: int | None = None


def _load_libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


_libc = _load_libc()


def _flush_c_stdio() -> None:
    """Write out what C code buffered for stdout, so it lands where fd 1 points now."""
    if _libc is not None and hasattr(_libc, "fflush"):
        _libc.fflush(None)


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 at standard error for the duration (nested and thread-safe)."""
    global _depth, _saved_stdout
    with _lock:
        if _depth == 0:
            try:
                sys.stdout.flush()
                _flush_c_stdio()
                _saved_stdout = os.dup(1)
                os.dup2(2, 1)
            except (OSError, ValueError):
                _saved_stdout = None
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved_stdout is not None:
                _flush_c_stdio()
                os.dup2(_saved_stdout, 1)
                os.close(_saved_stdout)
                _saved_stdout = None


def solve_milp(c: np.ndarray, options: dict[str, Any], **kwargs: Any) -> OptimizeResult:
    """``scipy.optimize.milp`` with HiGHS's output off and stdout kept clean (``options`` as milp takes them)."""
    quiet = {**options, "disp": False, "output_flag": False}
    with stdout_to_stderr(), warnings.catch_warnings():
        # output_flag is a HiGHS option milp passes on verbatim, with a warning that says so
        warnings.filterwarnings("ignore", message="Unrecognized options detected", category=RuntimeWarning)
        return milp(c, options=quiet, **kwargs)


def solve_lp(c: np.ndarray, options: dict[str, Any] | None = None, **kwargs: Any) -> OptimizeResult:
    """``scipy.optimize.linprog(method="highs")`` with HiGHS's output off and stdout kept clean."""
    with stdout_to_stderr():
        return linprog(c, method="highs", options={**(options or {}), "disp": False}, **kwargs)
