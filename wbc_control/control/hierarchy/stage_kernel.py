"""A stage's QP in its free directions, as one compiled call (numba).

`stage_problem` maps the hard inequalities lower ≤ C x ≤ upper to the stage's unknowns z of
x = x₀ + Z z and decides what `stage_qp.solve_stage` does with each row: nothing where the
stage's closed-form step meets them all; else which rows go to the QP solver (scaled to unit
norm) and which of those are soft, with a slack each; or that a row no direction can move makes
the stage infeasible. Compiled for an explicit signature when imported, from numba's on-disk
cache after the first time.
"""

import math

from numba import boolean, float64, int8, int64, intc, types
import numpy as np

from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import C_MATRIX, FLAGS, MATRIX, VECTOR

#: `stage_problem`'s verdicts.
MEETS_ALL, NEEDS_QP, STUCK = 0, 1, 2

#: A row is hard from this share r of the degenerate ratio on. Below, its slack's weight grows as
#: (r / (1 − r))², 10⁶ here, so that a row turns hard with no step of the solution (a weight
#: that stopped at a finite value let a posture level move 46 rad/s² further on one side of the
#: ratio than on the other: an 8 N m command step for a change of the state of 1e-15).
HARD_SHARE = 0.999

#: DAQP's constraint flags: active at the lower bound (ACTIVE | LOWER), active at the upper.
SENSE_LOWER, SENSE_UPPER = 3, 1

STAGE_PROBLEM = types.Tuple(
    (
        int64, C_MATRIX, C_MATRIX, types.Array(intc, 1, 'C'), boolean,
    )
)  # fmt: skip
#: A working set: per row, -1 bound at its lower side, +1 at its upper, 0 free.
WORKING_SET = types.Array(int8, 1, 'A', readonly=True)
#: The numbers in C of the hard rows handed to the QP (`stage_problem`'s `hard`).
HARD_ROWS = types.Array(intc, 1, 'A', readonly=True)


@kernel(
    STAGE_PROBLEM(
        MATRIX, MATRIX, VECTOR, VECTOR, FLAGS, FLAGS, VECTOR, VECTOR, MATRIX, WORKING_SET,
        float64, float64, VECTOR, float64,
    ),
    any_layout=True,
)  # fmt: skip
def stage_problem(
    problem,
    rows,
    lower,
    upper,
    soft,
    yielding,
    norms,
    point,
    basis,
    warm,
    primal,
    carried,
    degenerate,
    soft_weight,
):  # pragma: no cover - runs compiled
    """(verdict, qp, bounds, sense_hard, warmed): the stage's QP (module docstring).

    The QP is min ½ zᵀ H z + gᵀ z s.t. lower ≤ rows z ≤ upper over z and a slack per soft row;
    `qp` stacks H, gᵀ and the rows, `bounds` lowerᵀ and upperᵀ, `sense_hard` `sense` (one
    entry per row of the QP) and `hard`: fewer arrays to hand back, as numba boxes each one
    with a Python call. `problem` stacks the stage's own H, gᵀ and closed-form step z*ᵀ over
    z (`level_kernel.level_problem`).
    A row i of C goes to the solver where ‖cᵢ Z‖ is above 1e-12 of the largest and of
    `norms`ᵢ (a row the stage cannot move is not its to meet), scaled to
    cᵢ Z / ‖cᵢ Z‖, with the bounds (lowerᵢ − cᵢ x₀) / ‖cᵢ Z‖, (upperᵢ − cᵢ x₀) / ‖cᵢ Z‖ widened
    to 0 where x₀ meets them to `carried` (relative); the hard ones first, in order (`hard`:
    their numbers in C). A row is soft where marked so or where its ratio ‖cᵢ Z‖ / `norms`ᵢ
    (its gradient in the hard equalities' freedom, `stage_qp.inequalities`) is below
    `HARD_SHARE` of `degenerate`ᵢ, or where it is `yielding` and x₀ is on or past one of its
    bounds (to `carried`); it goes once, lowerᵢ ≤ cᵢ z + sᵢ ≤ upperᵢ (at the optimum
    |sᵢ| is its violation), or twice where lowerᵢ > upperᵢ, cᵢ z + sᵢ ≥ lowerᵢ then
    cᵢ z − sᵢ ≤ upperᵢ after all the others (|sᵢ| half the gap), and sᵢ costs
    w (r / (1 − r))² ‖cᵢ Z‖² sᵢ² in the scaled units, r = ratio / `degenerate`ᵢ (the
    factor 1 for a row marked soft), w = `soft_weight` times H's mean curvature. z* meets a
    row to `primal` (relative). `sense`: DAQP's first working
    set over the rows handed over, from `warm` (the rows of C that bound the stage at the last
    tick, as `stage_qp.solve_stage`'s `active`; empty or over another count of rows: none) for
    the hard rows, free for the others; `warmed`: any row of it not free.
    """
    count, size = rows.shape[0], basis.shape[1]
    hessian, gradient, step = problem[:size], problem[size], problem[size + 1]
    c_rows = np.ascontiguousarray(rows)
    matrix = c_rows.dot(np.ascontiguousarray(basis))
    offset = c_rows.dot(np.ascontiguousarray(point))
    values = matrix.dot(np.ascontiguousarray(step))
    empty = (np.zeros((0, 0)), np.zeros((0, 0)))
    none = np.zeros(0, np.intc)
    meets = True
    for i in range(count):
        slack = primal * (1.0 + abs(values[i]))
        if values[i] < lower[i] - offset[i] - slack or values[i] > upper[i] - offset[i] + slack:
            meets = False
            break
    if meets:
        return (MEETS_ALL, *empty, none, False)
    reduced_norms = np.empty(count)
    for i in range(count):
        total = 0.0
        for j in range(size):
            total += matrix[i, j] * matrix[i, j]
        reduced_norms[i] = math.sqrt(total)
    threshold = 1e-12 * max(reduced_norms.max() if count else 0.0, 1e-300)
    low, high = np.empty(count), np.empty(count)
    weight = np.full(count, -1.0)  # < 0: a hard row, else the slack's relative weight
    hard_count = soft_count = gap_count = 0
    for i in range(count):
        low[i], high[i] = lower[i] - offset[i], upper[i] - offset[i]
        widen = carried * (1.0 + abs(offset[i]))
        on_bound = low[i] >= -widen or high[i] <= widen
        if low[i] <= widen:
            low[i] = min(low[i], 0.0)
        if high[i] >= -widen:
            high[i] = max(high[i], 0.0)
        norm = reduced_norms[i]
        ratio = norm / max(norms[i], 1e-300)
        share = ratio / degenerate[i]
        is_soft = soft[i] or share < HARD_SHARE or (yielding[i] and on_bound)
        if not norm > max(threshold, 1e-12 * norms[i]):
            slack = primal * (1.0 + abs(values[i]))
            if not is_soft and (low[i] > slack or high[i] < -slack):
                return (STUCK, *empty, none, False)
            reduced_norms[i] = 0.0  # not handed over
            continue
        if is_soft:
            factor = 1.0  # marked soft, or yielding
            if not soft[i] and share < HARD_SHARE:
                factor = (share / (1.0 - share)) ** 2
                if yielding[i] and on_bound:
                    factor = min(factor, 1.0)
            weight[i] = factor * norm * norm
            soft_count += 1
            if low[i] > high[i]:
                gap_count += 1
        else:
            hard_count += 1
    total = size + soft_count
    handed = hard_count + soft_count + gap_count
    qp = np.zeros((total + 1 + handed, total))
    curvature, linear, out = qp[:total], qp[total], qp[total + 1 :]
    for i in range(size):
        for j in range(size):
            curvature[i, j] = 0.5 * (hessian[i, j] + hessian[j, i])
    mean = 0.0
    for i in range(size):
        mean += hessian[i, i]
    scale = soft_weight * max(mean / size, 1e-300)
    linear[:size] = gradient
    bounds = np.empty((2, handed))
    out_lower, out_upper = bounds[0], bounds[1]
    sense_hard = np.zeros(handed + hard_count, np.intc)
    sense, hard = sense_hard[:handed], sense_hard[handed:]
    h = s = g = 0
    for i in range(count):
        norm = reduced_norms[i]
        if norm == 0.0:
            continue
        if weight[i] < 0.0:
            first = second = h
            hard[h] = i
            out_lower[h], out_upper[h] = low[i] / norm, high[i] / norm
            h += 1
        else:
            first = second = hard_count + s
            out_lower[first], out_upper[first] = low[i] / norm, high[i] / norm
            out[first, size + s] = 1.0
            if low[i] > high[i]:  # no sᵢ meets both sides: one row per side
                second = hard_count + soft_count + g
                out_upper[first] = math.inf
                out_lower[second], out_upper[second] = -math.inf, high[i] / norm
                out[second, size + s] = -1.0
                g += 1
            curvature[size + s, size + s] = max(scale * weight[i], 1e-12 * scale)
            s += 1
        for j in range(size):
            out[first, j] = out[second, j] = matrix[i, j] / norm
    warmed = False
    if warm.shape[0] == count:
        for h in range(hard_count):
            side = warm[hard[h]]
            if side != 0:
                sense[h] = SENSE_LOWER if side < 0 else SENSE_UPPER
                warmed = True
    return NEEDS_QP, qp, bounds, sense_hard, warmed


@kernel(types.Array(int8, 1, 'C')(int64, HARD_ROWS, VECTOR))
def working_set(count, hard, multipliers):  # pragma: no cover - runs compiled
    """The side each of `count` rows binds at a QP's solution: +1 upper, -1 lower, 0 none.

    sign(λ) of the rows `hard` (as `stage_problem` handed them over: the QP's multipliers
    `multipliers` are theirs first, in that order), 0 for the others.
    """
    active = np.zeros(count, np.int8)
    for h in range(hard.shape[0]):
        if multipliers[h] > 0.0:
            active[hard[h]] = 1
        elif multipliers[h] < 0.0:
            active[hard[h]] = -1
    return active
