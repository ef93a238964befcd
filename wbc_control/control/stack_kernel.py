"""A whole priority stack solved in one compiled call (numba), joint-limit search included.

The levels' rows are stacked, highest level first: J `(R, nv)`, t = ẍ* − J̇v `(R,)` and √w
`(R,)`, level k's rows `offsets[k]:offsets[k + 1]`. `solve_stack` runs the recursion of
`wbc_control.control.prioritized_controller` (Khatib 1987; Sentis & Khatib 2005), one
`level_step` per level; under joint limits, if its q̈ leaves a joint's acceleration bounds, the
multi-task SNS (Flacco, De Luca & Khatib 2012, Algorithm 2) from the top: per level the search
for its saturated set (`joint_limit_kernel.search_level`), then the level settled from the state
the chosen try left: its joints already held, and on the last level, unscaled, its step already
taken.

One call for the stack rather than one or two per level from Python (the same calls in the same
order on the same operands, so the same q̈ to the bit): at 2 to 5 levels each Python-level call
cost about as much as a level's arithmetic. The readable reference of the search stays
`JointLimits.saturate_levels` driven through `LevelSearch.try_set`;
test/core/test_joint_limit_kernel.py holds the two equal.
"""

from numba import boolean, float64, types
import numpy as np

from wbc_control.control.joint_limit_kernel import TOLERANCES, search_level, within_bounds
from wbc_control.control.level_kernel import BLOCKING, KEEP, level_step
from wbc_control.control.task_inertia_kernel import LAW_TYPE
from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import INDEX, MATRIX, VECTOR


@kernel(
    types.UniTuple(float64, 2)(
        MATRIX, VECTOR, MATRIX, VECTOR, VECTOR, INDEX, float64, LAW_TYPE, boolean, INDEX,
        VECTOR, VECTOR, TOLERANCES, float64[::1], float64[:, ::1], boolean[:, ::1],
        float64[:, ::1], float64[::1], float64[:, ::1],
    ),
)  # fmt: skip
def solve_stack(
    inverse_inertia,
    start,
    jacobian,
    target,
    sqrt_weights,
    offsets,
    threshold,
    law,
    limited,
    joints,
    lower,
    upper,
    tolerances,
    acceleration,
    null_space,
    level_active,
    level_values,
    level_scales,
    stats,
):  # pragma: no cover - runs compiled
    """q̈ of the stack; the joint-limit search if `limited` and the recursion leaves [a⁻, a⁺].

    Args:
        inverse_inertia: M⁻¹, or M† under contacts `(nv, nv)`.
        start: q̈ before the first level `(nv,)`.
        jacobian: the levels' stacked J `(R, nv)`.
        target: their ẍ* − J̇v `(R,)`.
        sqrt_weights: their √w per row `(R,)`.
        offsets: level k's rows are offsets[k]:offsets[k + 1] `(levels + 1,)`.
        threshold: ε of the task inertia.
        law: `task_inertia_kernel.LAW`.
        limited: enforce the joints' acceleration bounds (`lower`, `upper`).
        joints: each actuated joint's velocity index `(n,)` (empty when not `limited`).
        lower: a⁻ `(n,)`.
        upper: a⁺ `(n,)`.
        tolerances: (bound tolerance, level tolerance) of joint_limits.py.
        acceleration: written with q̈ `(nv,)`.
        null_space: N, scratch `(nv, nv)`.
        level_active: row k written with the joints saturated just above level k, the last
            row with all of them `(levels + 1, n)`; all False when nothing saturates.
        level_values: their targets, where active `(levels + 1, n)`.
        level_scales: each level's scale `(levels,)`.
        stats: each level's (condition, rank, damped) `(levels, 3)`.

    Returns (the least level scale, the number of joints saturated): (1, 0) when nothing
    saturates. The count spares the caller a look at `level_active` on every tick.
    """
    count = offsets.shape[0] - 1
    acceleration[:] = start
    level_active[:, :] = False
    top_level = np.empty(acceleration.shape[0] if limited and count > 0 else 0)
    for k in range(count):
        rows = slice(offsets[k], offsets[k + 1])
        level_step(
            jacobian[rows], target[rows], sqrt_weights[rows], inverse_inertia, null_space,
            k == 0, threshold, 1.0, True, BLOCKING if k < count - 1 else KEEP, law,
            acceleration, stats[k],
        )  # fmt: skip
        level_scales[k] = 1.0
        if k == 0 and top_level.shape[0] > 0:
            # The search's first try at level 0 holds no joint: this q̈ exactly (Λ does not
            # depend on the null-space update, the only difference between the two steps).
            top_level[:] = acceleration
    if not limited or within_bounds(acceleration, joints, lower, upper, tolerances[0]):
        return 1.0, 0.0
    acceleration[:] = start
    unknown = np.empty(0)
    held, values = level_active[count], level_values[count]
    nv = acceleration.shape[0]
    kept, kept_null_space, kept_stats = np.empty((2, nv)), np.empty((nv, nv)), np.empty(3)
    first, least, saturated = True, 1.0, 0.0
    for k in range(count):
        rows = slice(offsets[k], offsets[k + 1])
        level_jacobian, level_target = jacobian[rows], target[rows]
        level_weights, active = sqrt_weights[rows], level_active[k]
        scale, held_first, own_step = search_level(
            inverse_inertia, acceleration, null_space, first, level_jacobian, level_target,
            level_weights, threshold, law, joints, lower, upper, held, k == 0, tolerances,
            active, level_values[k], top_level if k == 0 else unknown, kept, kept_null_space,
            kept_stats,
        )  # fmt: skip
        last = k == count - 1
        if last and own_step == 1.0 and scale == 1.0:  # the try took this very step
            acceleration[:] = kept[1]
            stats[k, :] = kept_stats
        else:  # the level step from the held state the try made
            acceleration[:] = kept[0]
            if held_first == 0.0:
                null_space[:, :] = kept_null_space
            level_step(
                level_jacobian, level_target, level_weights, inverse_inertia, null_space,
                held_first == 1.0, threshold, scale, True, KEEP if last else BLOCKING, law,
                acceleration, stats[k],
            )  # fmt: skip
        first = False
        level_scales[k], least = scale, min(least, scale)
        # A joint is saturated at one level at most: those held above are not free below.
        for i in range(active.shape[0]):
            if active[i]:
                held[i], values[i] = True, level_values[k, i]
                saturated += 1.0
    return least, saturated
