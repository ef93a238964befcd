"""A stage's inequality rows in its free directions, as one compiled call (numba).

`stage_rows` maps the hard inequalities lower ≤ C x ≤ upper to the stage's unknowns z of
x = x₀ + Z z, and decides what `stage_qp.solve_stage` does with each row: nothing where the
stage's closed-form step meets them all, else which rows go to the QP solver (scaled to unit
norm), which of those are soft and how stiff, and whether a row no direction can move makes
the stage infeasible. Compiled for an explicit signature when imported, from numba's on-disk
cache after the first time.
"""

import math

from numba import float64, int64, types
import numpy as np

from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import C_MATRIX, C_VECTOR, FLAGS, MATRIX, VECTOR

#: `stage_rows`' verdicts.
MEETS_ALL, NEEDS_QP, STUCK = 0, 1, 2


@kernel(
    types.Tuple((int64, C_MATRIX, C_VECTOR, C_VECTOR, C_VECTOR, types.Array(int64, 1, 'C')))(
        MATRIX, VECTOR, VECTOR, FLAGS, VECTOR, VECTOR, MATRIX, VECTOR, float64, float64,
        float64,
    ),
    any_layout=True,
)  # fmt: skip
def stage_rows(
    rows, lower, upper, soft, norms, point, basis, step, primal, carried, degenerate
):  # pragma: no cover - runs compiled
    """(verdict, rows, lower, upper, stiffness, index) of the stage's rows (the module docstring).

    For every row i of C that goes to the solver, in order: its row cᵢ Z / ‖cᵢ Z‖ and bounds
    (lowerᵢ − cᵢ x₀) / ‖cᵢ Z‖, (upperᵢ − cᵢ x₀) / ‖cᵢ Z‖, widened to 0 where x₀ meets them to
    `carried` (relative); `stiffness` < 0 for a hard row, else the slack's relative weight in
    the scaled units, (min(ratio / `degenerate`, 1))² ‖cᵢ Z‖² (1 ‖cᵢ Z‖² for a row soft
    already), ratio = ‖cᵢ Z‖ / ‖cᵢ‖; `index` the row's number in C. A row is soft here where
    its ratio is below `degenerate`, and goes to the solver where ‖cᵢ Z‖ is above 1e-12 of the
    largest. `step`: the stage's closed-form step, which meets a row to `primal` (relative).
    """
    count, size = rows.shape[0], basis.shape[1]
    matrix = np.ascontiguousarray(rows).dot(np.ascontiguousarray(basis))
    offset = np.ascontiguousarray(rows).dot(np.ascontiguousarray(point))
    values = matrix.dot(np.ascontiguousarray(step))
    meets = True
    for i in range(count):
        slack = primal * (1.0 + abs(values[i]))
        if values[i] < lower[i] - offset[i] - slack or values[i] > upper[i] - offset[i] + slack:
            meets = False
            break
    empty = np.zeros(0)
    if meets:
        return MEETS_ALL, np.zeros((0, size)), empty, empty, empty, np.zeros(0, np.int64)
    reduced_norms = np.empty(count)
    largest = 0.0
    for i in range(count):
        total = 0.0
        for j in range(size):
            total += matrix[i, j] * matrix[i, j]
        reduced_norms[i] = math.sqrt(total)
        largest = max(largest, reduced_norms[i])
    threshold = 1e-12 * max(largest, 1e-300)
    out_rows = np.empty((count, size))
    out_lower, out_upper = np.empty(count), np.empty(count)
    stiffness, index = np.empty(count), np.empty(count, np.int64)
    kept = 0
    for i in range(count):
        low, high = lower[i] - offset[i], upper[i] - offset[i]
        widen = carried * (1.0 + abs(offset[i]))
        if low <= widen:
            low = min(low, 0.0)
        if high >= -widen:
            high = max(high, 0.0)
        norm = reduced_norms[i]
        ratio = norm / max(norms[i], 1e-300)
        is_soft = soft[i] or ratio < degenerate
        if not norm > threshold:
            slack = primal * (1.0 + abs(values[i]))
            if not is_soft and (low > slack or high < -slack):
                return STUCK, np.zeros((0, size)), empty, empty, empty, np.zeros(0, np.int64)
            continue
        scale = 1.0 / norm
        for j in range(size):
            out_rows[kept, j] = scale * matrix[i, j]
        out_lower[kept], out_upper[kept] = scale * low, scale * high
        if is_soft:
            relative = 1.0 if soft[i] else min(ratio / degenerate, 1.0) ** 2
            stiffness[kept] = relative * norm * norm
        else:
            stiffness[kept] = -1.0
        index[kept] = i
        kept += 1
    return (
        NEEDS_QP,
        out_rows[:kept].copy(),
        out_lower[:kept].copy(),
        out_upper[:kept].copy(),
        stiffness[:kept].copy(),
        index[:kept].copy(),
    )
