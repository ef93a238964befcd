"""A stack's level rows scaled per unit group and weighted, as one compiled call (numba).

`weighted_rows` writes R = diag(√w E) J and T = √w E (ẍ* − J̇v) for every stacked row
(`StackProblem.row_scales` says what E is), so that a tick builds its levels' rows with one
call instead of a chain of small numpy ones. Compiled for an explicit signature when imported,
from numba's on-disk cache after the first time.
"""

import math

from numba import types
import numpy as np

from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import C_MATRIX, C_VECTOR, INDEX, MATRIX, VECTOR

#: A group whose largest mobility is at or below this fraction of the stack's largest has none.
MOBILITY_FLOOR = 1e-12


@kernel()
def _nan_max(first, second):  # pragma: no cover - runs compiled
    """np.maximum of two floats: NaN if either is."""
    if math.isnan(first) or math.isnan(second):
        return math.nan
    return first if first >= second else second


@kernel(
    types.void(VECTOR, INDEX, INDEX, VECTOR, MATRIX, VECTOR, C_MATRIX, C_VECTOR),
    any_layout=True,
)
def weighted_rows(
    mobility, group_starts, group_sizes, roots, jacobian, target, rows, targets
):  # pragma: no cover - runs compiled
    """Rows = diag(√w E) J and targets = √w E T over the stacked rows, written in place.

    `mobility` (J M⁻¹ Jᵀ)ⱼⱼ per row, `group_starts` / `group_sizes` each unit group's rows
    (consecutive, together every row), `roots` √w per row. Eⱼ = 1 / √(the largest mobility of
    row j's group), 0 where that is at or below `MOBILITY_FLOOR` times the largest of all
    (Khatib 1987's Λ⁻¹ diagonal as the unit of a group's errors; `StackProblem.row_scales`).
    """
    count = mobility.shape[0]
    if count == 0:
        return
    peak = mobility[0]
    for j in range(1, count):
        peak = _nan_max(peak, mobility[j])
    floor = MOBILITY_FLOOR * peak
    for group in range(group_starts.shape[0]):
        start, size = group_starts[group], group_sizes[group]
        largest = mobility[start]
        for j in range(start + 1, start + size):
            largest = _nan_max(largest, mobility[j])
        scale = 1.0 / np.sqrt(largest) if largest > floor else 0.0
        for j in range(start, start + size):
            weight = roots[j] * scale
            for column in range(jacobian.shape[1]):
                rows[j, column] = weight * jacobian[j, column]
            targets[j] = weight * target[j]
