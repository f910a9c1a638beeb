"""Every knob of the ``fast`` strategy in one typed object."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FastTuning:
    """How hard ``fast`` searches; the defaults are what benchmarks/planner_*.py measured."""

    size_divisors: tuple[int, ...] = (1, 2, 4, 8)
    """Instance size limits tried: at most the thread cap and 1/d of a machine. Big instances pay the MET
    less often, small ones pack better; each is packed and scored, and the best is polished."""
    polish_work_cells: int = 2_000_000
    """Local search budget in (component x machine) array cells: each step costs about that many."""
    min_polish_steps: int = 100
    """Local search steps allowed whatever the budget."""
    polish_all_max_cells: int = 500
    """Up to this many (component x machine) cells every candidate packing is polished, not only the best,
    and the paper plan is a candidate as well."""
    size_alternatives_gap: float = 0.05
    """Small requests only: every size choice of the coordinate search whose LP rate is within this fraction of
    the best one is packed and polished too (the best LP can round worse than a slightly lower one)."""
    size_alternatives_max: int = 4
    """Small requests only: at most this many such alternatives per size limit, the highest LP rates first."""
    packing_steps: int = 7
    """Bisection steps on the packing target rate between ``packing_low`` and 1 times the LP rate."""
    packing_low: float = 0.8
    """Lowest packing target, as a fraction of the LP rate."""
    resize_starts: int = 1
    """Small requests only: the jumps start from this many of the best polished layouts (distinct), sharing one
    budget, the best end kept. Measured on the 200 requests: 2 starts raised 5 more requests and took 1.6x the CPU
    (median), so one."""
    resize_rounds: int = 8
    """Small requests only: rounds of instance-count jumps (each: every free component, every count tried,
    then a polish), stopping at the first round that finds no higher rate."""
    resize_polish_steps: int = 200
    """Most polish steps after one jump."""
    resize_work_cells: int = 20_000
    """Polish budget over all jumps of one request, in (component x machine) cells as ``polish_work_cells``
    (at least ``min_polish_steps``)."""
    repack_polished: int = 3
    """Of the fresh packings (every instance placed anew), only this many, those that start highest, are polished."""
    repack_rates: int = 5
    """Rates, from the current one to the fluid bound, at which every instance is placed anew (with the fewest
    instances that fit and with the current counts) before the count jumps."""
    resize_gap: float = 0.02
    """The count jumps run only while R is more than this fraction below the fluid bound (nothing much to gain)."""
    resize_large_gap: float = 0.05
    """Requests over ``polish_all_max_cells``: the jumps run only while R is more than this fraction below the
    fluid bound (measured: at 2% they took 1.7x the planning time at 1,000 and 5,000 machines for +0.3% R)."""
    resize_large_polish_steps: int = 10
    """Requests over ``polish_all_max_cells``: most polish steps after one jump (each step scans every machine)."""
    resize_large_steps: int = 40
    """Requests over ``polish_all_max_cells``: polish steps over all jumps (no fresh packings are tried there)."""
    resize_max_step: int = 64
    """Largest count jump tried: n + 1, n + 2, n + 4, ... up to n + this."""
    colocate_steps: int = 50
    """Where tuples crossing workers cost CPU: most co-location moves (planner.strategies.fast.colocate)."""
    colocate_targets: int = 8
    colocate_work_cells: int = 5_000_000
    colocate_min_trials: int = 200
    """Co-location: closed-form evaluations allowed, as (component + stream) x machine cells (each evaluation costs
    about that many), and at least this many; a step's candidates are all tried once begun."""
    """Co-location: machines tried per component, the roomiest of those hosting one of its stream neighbours."""
    joint_work_cells: int = 20_000
    joint_unit_cells: int = 40
    joint_min_solves: int = 40
    """With ``options.weighted_shares`` (planner.strategies.fast.joint_shares): shares LPs allowed, this many cells
    over (``joint_unit_cells`` + instances + machines) per LP (an LP costs a fixed overhead plus its rows), and on
    small requests (``polish_all_max_cells``) at least ``joint_min_solves``. Measured: Linear, Diamond and Star on
    the default cluster end by themselves (115-155 LPs); Linear on 1,000 machines gets 4 (0.3 s of CPU)."""
    joint_all_machines: int = 12
    joint_destinations: int = 2
    """Up to ``joint_all_machines`` machines, a move or an added instance may go to any; on more, to the
    ``joint_destinations`` of each machine type with the most CPU left (machines of a type differ only by load)."""
    joint_spread_max_cells: int = 60
    """Up to this many (component x machine) cells, the search also starts from every free component on every
    machine, dropping what does not pay its MET."""
    joint_reserve_s: float = 0.05
    """Seconds of the time limit the search leaves for scoring the plan (or three of its slowest LPs, if more)."""


DEFAULT_TUNING = FastTuning()
