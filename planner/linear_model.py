"""A small builder for sparse linear and mixed-integer models solved by HiGHS (scipy.optimize.milp).

The bound (planner.bounds) and the exact search (planner.strategies.optimal)
state their models row by row with named meaning; this keeps the index
bookkeeping of scipy's matrix form in one place.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult
from scipy.sparse import coo_array

from planner.highs import solve_milp


@dataclass
class LinearModel:
    """Variables with bounds and integrality, rows ``lo <= sum coef * var <= hi``, a linear objective (minimised)."""

    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    integer: list[int] = field(default_factory=list)
    objective: list[float] = field(default_factory=list)
    _rows: list[int] = field(default_factory=list)
    _cols: list[int] = field(default_factory=list)
    _vals: list[float] = field(default_factory=list)
    _row_lo: list[float] = field(default_factory=list)
    _row_hi: list[float] = field(default_factory=list)

    def var(self, lo: float = 0.0, hi: float = np.inf, integer: bool = False, cost: float = 0.0) -> int:
        """Add one variable; returns its index."""
        self.lower.append(lo)
        self.upper.append(hi)
        self.integer.append(1 if integer else 0)
        self.objective.append(cost)
        return len(self.lower) - 1

    def row(self, coefs: dict[int, float], lo: float = -np.inf, hi: float = np.inf) -> None:
        """Add ``lo <= sum coefs[v] * v <= hi``; zero coefficients are dropped."""
        index = len(self._row_lo)
        for col, val in coefs.items():
            if val != 0.0:
                self._rows.append(index)
                self._cols.append(col)
                self._vals.append(float(val))
        self._row_lo.append(lo)
        self._row_hi.append(hi)

    @property
    def n_vars(self) -> int:
        return len(self.lower)

    @property
    def n_rows(self) -> int:
        return len(self._row_lo)

    def solve(
        self, time_limit_s: float | None = None, mip_rel_gap: float | None = None, presolve: bool = True
    ) -> OptimizeResult:
        """Solve with HiGHS; the caller reads ``status`` (0 solved, 1 time limit, 2 infeasible, 3 unbounded, 4 error)."""
        constraints = []
        if self.n_rows:
            matrix = coo_array(
                (self._vals, (self._rows, self._cols)), shape=(self.n_rows, self.n_vars)
            ).tocsr()
            constraints.append(LinearConstraint(matrix, np.array(self._row_lo), np.array(self._row_hi)))
        options: dict[str, float | bool] = {"presolve": presolve}
        if time_limit_s is not None:
            options["time_limit"] = max(float(time_limit_s), 1e-3)
        if mip_rel_gap is not None:
            options["mip_rel_gap"] = mip_rel_gap
        return solve_milp(
            np.array(self.objective),
            options,
            integrality=np.array(self.integer),
            bounds=Bounds(np.array(self.lower), np.array(self.upper)),
            constraints=constraints,
        )
