"""A stack's per-tick problem rows as compiled calls (numba): one call where numpy made many.

`weighted_rows` writes R = diag(√w E) J and T = √w E (ẍ* − J̇v) for every stacked row
(`StackProblem.levels` says what E is); `torque_and_joint_rows` writes the hard constraints'
torque-range and joint-bound rows (`StackProblem.hard_constraints`); `mobility_inverse` is the
M⁻¹ the row scales read. Compiled for explicit signatures when imported, from numba's on-disk
cache after the first time.
"""

import math

from numba import boolean, int64, types
import numpy as np

from wbc_control.exceptions import InvalidValue
from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import C_MATRIX, C_VECTOR, FLAGS, INDEX, MATRIX, VECTOR
from wbc_control.model.robot_state import RobotState

#: A group whose mean mobility is at or below this fraction of the largest row's has none.
MOBILITY_FLOOR = 1e-12
#: Where M is singular, the row scales read (M + δI)⁻¹ with δ this fraction of its largest
#: diagonal entry (`mobility_inverse`).
MASSLESS_REGULARISATION = 1e-8


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
    (consecutive, together every row), `roots` √w per row. Eⱼ = 1 / √(the mean mobility of
    row j's group, tr Λ⁻¹ / m over its m rows: unchanged by a rotation of a frame's axes), 0
    where that is at or below `MOBILITY_FLOOR` times the largest of all (Khatib 1987's Λ⁻¹ as
    the unit of a group's errors; `StackProblem.levels`).
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
        mean = 0.0
        for j in range(start, start + size):
            mean += mobility[j] / size
        scale = 1.0 / np.sqrt(mean) if mean > floor else 0.0
        for j in range(start, start + size):
            weight = roots[j] * scale
            for column in range(jacobian.shape[1]):
                rows[j, column] = weight * jacobian[j, column]
            targets[j] = weight * target[j]


@kernel()
def _same_finite(lower, upper, flags):  # pragma: no cover - runs compiled
    """Whether flags[i] says exactly where lower[i] or upper[i] is finite."""
    for i in range(flags.shape[0]):
        if (math.isfinite(lower[i]) or math.isfinite(upper[i])) != flags[i]:
            return False
    return True


@kernel(
    boolean(
        MATRIX, VECTOR, VECTOR, VECTOR, FLAGS, VECTOR, VECTOR, FLAGS, INDEX, int64, int64,
        C_MATRIX, C_VECTOR, C_VECTOR, C_VECTOR, C_VECTOR,
    ),
    any_layout=True,
)  # fmt: skip
def torque_and_joint_rows(
    mass,
    bias,
    window_lower,
    window_upper,
    finite,
    bounds_lower,
    bounds_upper,
    limited,
    actuated,
    torque_start,
    joints_start,
    rows,
    lower,
    upper,
    lowest,
    highest,
):  # pragma: no cover - runs compiled
    """Write the torque-range and joint-bound rows; False (nothing written) where they differ.

    From row `torque_start`, one per actuated joint i (q̈ coordinate `actuated[i]` = j) whose
    range [τ⁻ᵢ, τ⁺ᵢ] (`window_*`) is finite (`finite[i]`): M_j q̈ in [τ⁻ᵢ − h_j, τ⁺ᵢ − h_j]
    (the q̈ columns; the force columns are the caller's). From row `joints_start`, one per
    joint whose bounds [a⁻ᵢ, a⁺ᵢ] (`bounds_*`, empty without joint limits) are finite
    (`limited[i]`): their bounds, also into the box `lowest`, `highest` at j. The flags are
    the layout's: where the finite entries of this tick differ, the rows would not fit.
    """
    if not _same_finite(window_lower, window_upper, finite):
        return False
    if not _same_finite(bounds_lower, bounds_upper, limited):
        return False
    row = torque_start
    for i in range(finite.shape[0]):
        if finite[i]:
            j = actuated[i]
            for column in range(mass.shape[1]):
                rows[row, column] = mass[j, column]
            lower[row] = window_lower[i] - bias[j]
            upper[row] = window_upper[i] - bias[j]
            row += 1
    row = joints_start
    for i in range(limited.shape[0]):
        if limited[i]:
            j = actuated[i]
            lower[row] = lowest[j] = bounds_lower[i]
            upper[row] = highest[j] = bounds_upper[i]
            row += 1
    return True


def mobility_inverse(state: RobotState) -> np.ndarray:
    """M⁻¹ for the row scales, or (M + δI)⁻¹ where M is singular.

    A massless link that a constraint holds makes M singular; δ = `MASSLESS_REGULARISATION`
    times M's largest diagonal entry makes its direction a very mobile one, whose rows weigh
    little within their level.
    """
    try:
        return state.inverse_mass_matrix
    except InvalidValue:
        mass = state.mass_matrix
        shift = MASSLESS_REGULARISATION * float(np.abs(np.diag(mass)).max(initial=1.0))
        return np.linalg.inv(mass + shift * np.eye(mass.shape[0]))
