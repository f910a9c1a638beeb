"""The ``fast`` strategy: plan on machine types with a small LP, round to instances, then polish with the closed form.

Its steps are its modules: ``fluid_lp`` (1), ``sizing`` (2), ``packing`` (3),
``polish`` (4), ``resize`` (5, small requests), ``colocate`` (6, remote costs), ``joint_shares`` (7, weighted
shares), ``orchestration`` (the order and the candidates), ``tuning``
(every knob, with the defaults the benchmarks ran with).

Why it is fast: machines of one type are interchangeable in the model, so the
hard part (how much of each component each type should carry) is a linear
program over (component x machine type) flows, whose size does not grow with
the number of machines. Why it is good: that LP is the fluid optimum; what is
left is rounding to equal-sized instances, which a local search on the
closed-form ``R_max`` (planner.simulator) repairs.

1. Fluid LP: maximise R subject to every component's flow ``beta_c * R``
   being spread over the types, each type's total load (per-tuple cost plus
   the MET of the instances the flow needs) within its machines' capacity.
   With each type's largest possible instance size this is an upper bound on
   R (``stats["fluid_bound"]``) when no component has fixed parallelism.
2. Instance size: all instances of a component get the same share (shuffle
   splits evenly), so one size per component must fit the thread cap of every
   type it runs on: the largest that fits the types its LP flow uses, then a
   coordinate search over the other types' sizes re-solves the LP with the MET
   each choice really costs. Smaller limits (1/2, 1/4, 1/8 of a machine) are
   tried as well: big instances pay the MET less often, small ones pack better.
   On small requests the coordinate search also starts from each component's size on the
   type that carries most of its flow (where the optimum moves several components to other
   types at once), and the other tries within 5% of the best LP rate are packed and polished
   too: the best LP can round worse than a slightly lower one.
3. Packing, for each size choice: at a target rate, the instances are spread
   over the machines of each type as the LP flows say, biggest first onto the
   least loaded machines; a bisection on the target keeps the packing with the
   highest closed-form rate.
4. Polish: while it helps, add an instance of a component on the bottleneck,
   or move or swap one off the bottleneck machine (on small requests also with
   a ``global``-fed instance 0, scored by the closed form), whichever raises the
   closed-form R_max most; on a plateau (several machines tied) take the move
   that relieves the bottleneck without making a new one. Where the bottleneck
   is the thread cap of an instance 0 that a ``global`` stream feeds whole,
   first move that instance to the type where R rises most (searched with and
   without this move; the better end is kept). Every step is
   checked with the exact closed form, so R_max never goes down; the best
   placement seen is returned. On small requests every packing is polished.
5. Jumps, on small requests: the polish takes one instance at a time and only
   upward, but some optima are several instances away (a slower type usable
   only once each instance of a component fits its thread cap, 5 instances
   where 3 and 4 do worse; a ``global``-fed instance 0 relieved only by dozens
   more instances; counts that pack whole machines). So: every instance placed
   anew at rates up to the fluid bound (with the current counts, and with the
   fewest that fit 1/d of a machine), instance 0 moved, a component's count
   jumped by 1, 2, 4, ... 64 or halved; each polished, kept where R ends higher.
6. Remote tuples, where the profiles give them a cost (``colocate``): moves that put instances beside their
   stream neighbours, a polish, and fast's own remote-blind plan polished as one more start; the highest R wins.
7. Weighted shares, with ``options.weighted_shares`` (``joint_shares``): steps 1-6 plan for an even split; a local
   search scored by the shares LP (planner.stream_shares) then drops, moves or adds instances while R with the
   shares rises, so counts and placement are chosen for what the weighted split reaches. With
   ``options.survive_loss`` too, step 6's plan goes to the worst-case search in the stats
   (``planner.survive.EVEN_START_KEY``, which planner.api takes out), which makes the survive plan without shares
   from it and never answers below it.

Components fed by an ``all`` grouping or by ``global`` streams only keep one
instance (more would only add load, or get nothing); components without cost
(system components) one instance on the least loaded machine; fixed
parallelism is kept and only placed. On small requests the local search also
starts from the ``paper`` plan, so ``fast`` never ends below it there.
"""
from __future__ import annotations

from planner.strategies.fast.orchestration import plan
from planner.strategies.fast.tuning import FastTuning

__all__ = ["FastTuning", "plan"]
