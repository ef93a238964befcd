"""One stage of the cascade: min ½ zᵀ H z + gᵀ z over the inequalities, in the stage's free z.

The stage's unknowns are the coordinates z of x = x₀ + Z z in the directions Z the equalities
and the levels above leave free (`wbc_control.control.hierarchy.cascade`). Where the problem's
closed-form solution meets the inequalities it is the answer (and more precise than an
iterative solve); else DAQP solves the QP (Arnström, Bemporad & Axehill 2022), and quadprog
(Goldfarb & Idnani 1983) where DAQP finds no solution (it can take a degenerate feasible problem
for an infeasible one). Over the hard equalities' own freedom, where no stage above left the
point on a bound, DAQP's proof that the rows conflict is final: the cascade is then solved
again with rows made soft (`stack_problem`), at once.
"""

from functools import cache
from typing import NamedTuple

import numpy as np
import quadprog

from wbc_control.control.hierarchy.stage_kernel import (
    MEETS_ALL,
    STUCK,
    stage_problem,
    working_set,
)
from wbc_control.numerics import einsum

try:  # optional: faster and more precise where installed (pip only, no rosdep key)
    import daqp
except ImportError:  # pragma: no cover - the test environments install it
    daqp = None

#: How far the closed-form step may leave an inequality and still count as meeting it.
PRIMAL_TOLERANCE = 1e-8
#: DAQP's feasibility tolerance where it fails at `PRIMAL_TOLERANCE` (in the units of rows
#: scaled to unit norm: rad/s² of a joint, N m of a torque).
DEGENERATE_TOLERANCE = 1e-6
#: How far a stage's solution may leave an inequality (the QP solver's rounding) and the next
#: stage still start from it.
CARRIED_TOLERANCE = 1e-5
#: A row whose gradient in a stage's free directions is below this fraction of its gradient in
#: the hard equalities' freedom is soft in that stage (`stage_kernel.stage_problem`: its
#: slack's weight rises without bound as the ratio nears it): a degenerate vertex the stages
#: above left the point on.
DEGENERATE = 1e-2
#: The same for a joint's acceleration bound. Hard, such a row moves the stage's step by
#: 1 / ratio per unit of its room: a posture level blocked by a joint bound that the levels
#: above left it little grip on turned small changes of the state into command steps and limit
#: cycles. A joint bound is the viability ceiling's tracking law (`control.constraints.
#: joint_limits`), which the next tick's bound corrects. At 0.1 (0.01 before) a Kinova arm
#: reaching out of reach stopped creeping (0.024 rad/s after 6 s); at 0.3 a UR10 reaching back
#: makes no 17 N m step and 8 more of 120 random reaches rest (a Z1 whose posture held to an
#: elbow bound cycled at 0.1-0.2 rad/s; `dev/unconfigured_reach.py --starts 12 --seed 1`). The
#: torque range, the friction cones and the bounds of a joint with holding walls (its effort
#: limit cannot hold the arm everywhere, `gravity_holding`) are physical and keep `DEGENERATE`:
#: at 0.1 a lower level's slack took a Panda's torque 37 N m past its effort limit, and at 0.3
#: Talos' left arm, soft at its shoulder's wall, swung at 1.9 rad/s.
JOINT_DEGENERATE = 0.3
#: A soft row's slack costs this times the QP's mean curvature (squared).
SOFT_WEIGHT = 1e4


#: DAQP's exit flag for a problem whose constraints have no common point.
DAQP_INFEASIBLE = -1
#: `_daqp`'s answer where DAQP proved the stage infeasible (no fallback to try).
INFEASIBLE = np.zeros(0)

#: No working set to start from (`solve_stage`'s `warm` None).
_COLD = np.zeros(0, dtype=np.int8)
_COLD.flags.writeable = False


class Inequalities(NamedTuple):
    """Rows C x in [lower, upper] over x = (q̈, f); `soft` rows may give way (a slack each)."""

    rows: np.ndarray  # (r, nx)
    lower: np.ndarray  # (r,), -inf where unbounded below
    upper: np.ndarray  # (r,), +inf where unbounded above
    soft: np.ndarray  # (r,) bool
    norms: np.ndarray  # (r,) ‖row Z₀‖, its gradient in what the hard equalities leave free
    degenerate: np.ndarray  # (r,) below this ratio to `norms` a row is soft in a stage
    #: (r,) bool: soft in a stage below the first level where x₀ is on or past one of the
    #: row's bounds (`stage_rows.stage_inequalities`)
    yielding: np.ndarray


def inequalities(
    rows, lower, upper, soft, basis=None, degenerate=None, yielding=None
) -> Inequalities:
    """`Inequalities` with their row norms in the equalities' freedom, once for every stage.

    `basis`: Z₀, an orthonormal basis of what the hard equalities leave free (None: all of x);
    `degenerate`: each row's threshold (`degenerate_ratios`; None: `DEGENERATE` for all);
    `yielding`: the rows soft below the first level where the point is on them (None: none).
    A stage measures how much of a row its freedom keeps against this (`DEGENERATE`): the
    equalities hold exactly, so what they take from a row is no rounding of the stages above.
    """
    reduced = rows if basis is None else rows.dot(basis)
    norms = np.sqrt(einsum('ij,ij->i', reduced, reduced))
    if degenerate is None:
        degenerate = _degenerate(norms.shape[0])
    if yielding is None:
        yielding = no_rows(norms.shape[0])
    return Inequalities(rows, lower, upper, soft, norms, degenerate, yielding)


def degenerate_ratios(joint: np.ndarray) -> np.ndarray:
    """Each row's degenerate ratio, read-only: `JOINT_DEGENERATE` or `DEGENERATE`.

    `joint`: which rows are a joint's tracking law (its acceleration bound, no holding walls).
    """
    thresholds = np.where(joint, JOINT_DEGENERATE, DEGENERATE)
    thresholds.flags.writeable = False
    return thresholds


@cache
def no_rows(count: int) -> np.ndarray:
    """`count` False row flags (no row soft, none yielding), read-only, shared per count."""
    flags = np.zeros(count, dtype=bool)
    flags.flags.writeable = False
    return flags


@cache
def _degenerate(count: int) -> np.ndarray:
    """`degenerate_ratios` of `count` rows none of which is a joint bound, built once per count."""
    return degenerate_ratios(np.zeros(count, dtype=bool))


def solve_stage(
    problem: np.ndarray,
    inequality: Inequalities,
    point: np.ndarray,
    basis: np.ndarray,
    warm: np.ndarray | None = None,
    first: bool = False,
) -> tuple[np.ndarray | None, str, np.ndarray | None]:
    """(z, '', active) of min ½ zᵀ H z + gᵀ z s.t. lower ≤ C (x₀ + Z z) ≤ upper.

    (None, why, None) where the stage has no solution. `problem` `(size + 2, size)` stacks H,
    gᵀ and z*ᵀ, the problem's solution without the inequalities (`level_kernel.level_problem`).
    Soft rows get a slack each, penalised `SOFT_WEIGHT` times the
    curvature: violated only where nothing else is possible (`stage_kernel`). `active` says
    which hard rows bind at the solution (+1 upper, -1 lower, 0 none, one per row of
    `inequality`); a `warm` such guess is DAQP's first working set. `first`: x₀ and Z are the
    hard equalities' own solution and freedom (no stage above moved x₀ onto a bound), where
    DAQP's proof of infeasibility is trusted (`_daqp`) and no row yields.
    """
    rows, lower, upper, soft, norms, degenerate, yielding = inequality
    if first:  # no level above has set directions: nothing yields
        yielding = no_rows(lower.shape[0])
    verdict, qp, bounds, sense_hard, warmed = stage_problem(
        problem, rows, lower, upper, soft, yielding, norms, point, basis,
        _COLD if warm is None else warm,
        PRIMAL_TOLERANCE, CARRIED_TOLERANCE, degenerate, SOFT_WEIGHT,
    )  # fmt: skip
    size, count = problem.shape[1], lower.shape[0]
    if verdict == MEETS_ALL:
        return problem[size + 1], '', np.zeros(count, dtype=np.int8)
    if verdict == STUCK:
        return None, 'a constraint no direction left can meet', None
    total, handed = qp.shape[1], bounds.shape[1]
    curvature, gradient, handed_rows = qp[:total], qp[total], qp[total + 1 :]
    low, high = bounds[0], bounds[1]
    sense, hard = sense_hard[:handed], sense_hard[handed:]
    z, multipliers = _daqp(curvature, gradient, handed_rows, low, high, sense, warmed, first)
    if z is INFEASIBLE:
        return None, 'the hard constraints have no common solution (DAQP)', None
    if z is None:
        z = _quadprog(curvature, gradient, handed_rows, low, high)
        if isinstance(z, str):
            return None, z, None
        return z[:size], '', np.zeros(count, dtype=np.int8)
    return z[:size], '', working_set(count, hard, multipliers)


def _daqp(curvature, gradient, rows, lower, upper, sense, warmed: bool, first: bool = False):
    """(z, multipliers) of min ½ zᵀ H z + gᵀ z s.t. lower ≤ rows z ≤ upper, (None, None) if none.

    `sense`: DAQP's first working set (`stage_kernel.SENSE_LOWER`, ...), which DAQP overwrites;
    where it fails from there (`warmed`: `sense` was not empty) it starts afresh.
    The point the stages above left often sits on more bounds than the stage has unknowns (no
    LICQ); where DAQP's working set cycles there at `PRIMAL_TOLERANCE`, it solves at the
    looser `DEGENERATE_TOLERANCE`. `first` (a stage over the hard equalities' own freedom,
    whose closed cones are equalities already, `stack_problem`): there no stage above left x₀
    on a bound, and DAQP's flag `DAQP_INFEASIBLE`, a dual ray that proves the rows have no
    common point (Arnström, Bemporad & Axehill 2022, sec 4), ends the search at once:
    (`INFEASIBLE`, None).
    """
    if daqp is None:
        return None, None
    z, _, flag, info = daqp.solve(
        curvature, gradient, rows, upper, lower, sense, primal_tol=PRIMAL_TOLERANCE
    )
    if flag < 1 and not (first and flag == DAQP_INFEASIBLE):  # afresh, then looser
        retries = (PRIMAL_TOLERANCE,) if warmed else ()
        for tolerance in (*retries, DEGENERATE_TOLERANCE):
            cold = np.zeros_like(sense)
            z, _, flag, info = daqp.solve(
                curvature, gradient, rows, upper, lower, cold, primal_tol=tolerance
            )
            if flag >= 1 or (first and flag == DAQP_INFEASIBLE):
                break
    if flag >= 1:
        return z, info['lam']  # arrays (DAQP's Python interface returns np.asarray of both)
    return (INFEASIBLE if first and flag == DAQP_INFEASIBLE else None), None


def _quadprog(curvature, gradient, rows, lower, upper) -> np.ndarray | str:
    """The solution by quadprog of the same problem (rows z ≥ b form), or why it has none."""
    below, above = np.isfinite(lower), np.isfinite(upper)
    constraints = np.vstack([rows[below], -rows[above]])
    bounds = np.concatenate([lower[below], -upper[above]])
    try:
        return quadprog.solve_qp(curvature, -gradient, constraints.T, bounds, 0)[0]
    except ValueError as failure:  # 'constraints are inconsistent', 'G not positive definite'
        return f'quadprog: {failure}'
