"""The joint-limit level's per-tick work as compiled calls (numba).

`search_level` is the inner loop of the multi-task SNS (Flacco, De Luca & Khatib 2012,
Algorithm 2) for level k, the levels above it settled (q̈ and N after them given): try a
saturated set of joints, held at their bounds by rows eᵢᵀ just above level k (`level_step` with
the exact null-space update); with q̈₀ (level k left out) and q̈₁ (in full), q̈(s) = q̈₀ +
s (q̈₁ − q̈₀) is affine in the level's scale s; find the largest s ∈ [0, 1] that keeps the free
joints within [a⁻, a⁺]; saturate the joint that limits it at the bound it reaches, and try
again, at most once per joint. Free joints that q̈₀ itself drives out of their bounds are
saturated at once (no scale for that set). The result is the set with the largest s whose
q̈(s) keeps every joint within its bounds. `JointLimits.saturate_levels` with
`JointLimits.plan` (joint_limits.py) is the readable reference of the same search, run level by
level through `LevelSearch.try_set`; test/core/test_joint_limit_kernel.py holds the two equal.

`acceleration_bounds` computes [a⁻, a⁺] and `fitted_acceleration` the torque fit; they are
the only implementation of `JointLimits.bounds` and `torque_fit.fit_torque`.

At these sizes (7 to 40 joints, a handful of tries per level) numpy spent most of the time in
per-call overhead. Compiled for explicit signatures when imported, from numba's on-disk cache
after the first time.
"""

from numba import boolean, float64, types
import numpy as np

from wbc_control.control.bounded_least_squares import box_least_squares
from wbc_control.control.level_kernel import EXACT, KEEP, level_step
from wbc_control.control.task_inertia_kernel import LAW_TYPE
from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import FLAGS, INDEX, MATRIX, VECTOR

#: (bound tolerance, level tolerance) of joint_limits.py, handed over as an argument: numba's
#: cache would keep the values module constants of another file had when it compiled.
TOLERANCES = types.UniTuple(float64, 2)


@kernel()
def hold_joints(
    inverse_inertia, acceleration, null_space, first, joints, active, values, threshold, law
):
    """Hold the `active` joints at `values` by rows eᵢᵀ (q̈, N in place); the new `first`."""
    count = 0
    for i in range(active.shape[0]):
        count += active[i]
    if count == 0:
        return first
    rows = np.zeros((count, acceleration.shape[0]))
    target = np.empty(count)
    row = 0
    for i in range(active.shape[0]):
        if active[i]:
            rows[row, joints[i]] = 1.0
            target[row] = values[i]
            row += 1
    stats = np.empty(3)
    weights = np.ones(count)
    level_step(
        rows, target, weights, inverse_inertia, null_space, first, threshold, 1.0, False,
        EXACT, law, acceleration, stats,
    )  # fmt: skip
    return False


@kernel()
def _within(unforced, full, scale, joints, lower, upper, tolerance):
    """Whether q̈₀ + s (q̈₁ − q̈₀) keeps every joint within [a⁻ − tol, a⁺ + tol]."""
    for i in range(joints.shape[0]):
        j = joints[i]
        value = unforced[j] + scale * (full[j] - unforced[j])
        if not (value <= upper[i] + tolerance and value >= lower[i] - tolerance):
            return False  # NaN too
    return True


@kernel(
    boolean(VECTOR, INDEX, VECTOR, VECTOR, float64)
)  # fmt: skip
def within_bounds(acceleration, joints, lower, upper, tolerance):  # pragma: no cover
    """Whether q̈ keeps every joint within [a⁻ − tol, a⁺ + tol] (False for a NaN)."""
    return _within(acceleration, acceleration, 0.0, joints, lower, upper, tolerance)


@kernel()
def _saturate_outside(unforced, joints, lower, upper, free, tolerance, active, values):
    """Saturate the free joints q̈₀ drives out of bounds, at the bound; whether there were any."""
    found = False
    for i in range(joints.shape[0]):
        value = unforced[joints[i]]
        if free[i] and (value > upper[i] + tolerance or value < lower[i] - tolerance):
            active[i] = True
            values[i] = min(max(value, lower[i]), upper[i])
            found = True
    return found


@kernel()
def _limiting_joint(unforced, full, joints, lower, upper, free, tolerance):
    """(the largest scale in [0, 1] within the free joints' bounds, the joint that sets it)."""
    critical, room = 0, np.inf
    for i in range(joints.shape[0]):
        change = full[joints[i]] - unforced[joints[i]]
        if free[i] and abs(change) > tolerance:
            edge = upper[i] if change > 0.0 else lower[i]
            joint_room = (edge - unforced[joints[i]]) / change
            if joint_room < room:
                critical, room = i, joint_room
    return min(max(room, 0.0), 1.0), critical


@kernel()
def _keep(held, full, null_space, stats, first, own_step, kept, kept_null_space, kept_stats):
    """Copy a try's held state (q̈, N unless N = I) and its step into the `kept` buffers.

    Returns (1.0 if N = I, 1.0 if `full` and `stats` are the try's own step), as floats.
    """
    kept[0, :] = held
    kept[1, :] = full
    if not first:
        kept_null_space[:, :] = null_space
    kept_stats[:] = stats
    return 1.0 if first else 0.0, 1.0 if own_step else 0.0


@kernel(
    types.UniTuple(float64, 3)(
        MATRIX, VECTOR, MATRIX, boolean, MATRIX, VECTOR, VECTOR, float64, LAW_TYPE, INDEX,
        VECTOR, VECTOR, FLAGS, boolean, TOLERANCES, boolean[::1], float64[::1], VECTOR,
        float64[:, ::1], float64[:, ::1], float64[::1],
    ),
)  # fmt: skip
def search_level(
    inverse_inertia,
    settled,
    null_space,
    first,
    jacobian,
    target,
    sqrt_weights,
    threshold,
    law,
    joints,
    lower,
    upper,
    held,
    top,
    tolerances,
    active,
    values,
    known_full,
    kept,
    kept_null_space,
    kept_stats,
):  # pragma: no cover - runs compiled
    """The saturated set and scale of the next level (the module docstring).

    Args:
        inverse_inertia: M⁻¹, or M† under contacts `(nv, nv)`.
        settled: q̈ after the settled levels `(nv,)`.
        null_space: N after them `(nv, nv)`; ignored when `first` (N = I).
        first: no level is settled.
        jacobian: the level's J `(m, nv)`.
        target: its ẍ* − J̇v `(m,)`.
        sqrt_weights: its √w per row `(m,)`.
        threshold: ε of the task inertia.
        law: `task_inertia_kernel.LAW`.
        joints: each actuated joint's velocity index `(n,)`.
        lower: a⁻ `(n,)`.
        upper: a⁺ `(n,)`.
        held: joints saturated by the levels above `(n,)`: not free.
        top: level 0 (if no set keeps the bounds, the last one tried is used, else none).
        tolerances: (bound tolerance, level tolerance).
        active: written with the chosen set's joints `(n,)`.
        values: written with their targets `(n,)` (where `active`).
        known_full: the level's q̈ with no joint held, already computed `(nv,)` (the
            recursion's, for level 0), or empty: the first try takes it instead of a level step.
        kept: written with the chosen set's try: q̈ with its joints held (row 0) and with the
            level added in full (row 1) `(2, nv)`.
        kept_null_space: written with N after holding them `(nv, nv)` (unless N = I still).
        kept_stats: written with that try's level (condition, rank, damped) `(3,)`.

    Returns (the level's scale, 1.0 if N = I still after holding the set, 1.0 if row 1 of
    `kept` and `kept_stats` are that try's own level step, unscaled and leaving N as it is).
    The settling of the level starts from the held state the try already computed.
    """
    n, nv = joints.shape[0], settled.shape[0]
    bound_tolerance, level_tolerance = tolerances
    unforced, full = np.empty(nv), np.empty(nv)
    work_null_space = np.empty((nv, nv))
    stats = np.empty(3)
    trying, trying_values = np.zeros(n, dtype=np.bool_), np.zeros(n)
    free = np.empty(n, dtype=np.bool_)
    best_scale, tried_scale = -1.0, 0.0
    tried, tried_values = np.zeros(n, dtype=np.bool_), np.zeros(n)
    inner_first, own_step, best = first, False, (0.0, 0.0)
    for attempt in range(n + 1):
        unforced[:] = settled
        if not first:
            work_null_space[:, :] = null_space
        known = attempt == 0 and known_full.shape[0] == nv  # nothing held yet: that very step
        if not known:
            inner_first = hold_joints(
                inverse_inertia, unforced, work_null_space, first, joints, trying,
                trying_values, threshold, law,
            )  # fmt: skip
        tried[:] = trying
        tried_values[:] = trying_values
        tried_scale = 0.0
        any_free = False
        for i in range(n):
            free[i] = not (trying[i] or held[i])
            any_free |= free[i]
        # Checked on q̈₀ before the level's step, which a set rejected here never needs (a
        # quarter of the tries on the benchmark's Panda states).
        if _saturate_outside(
            unforced, joints, lower, upper, free, bound_tolerance, trying, trying_values
        ):
            continue  # no scale keeps this set within the bounds
        if known:
            full[:] = known_full
        else:
            full[:] = unforced
            level_step(
                jacobian, target, sqrt_weights, inverse_inertia, work_null_space, inner_first,
                threshold, 1.0, True, KEEP, law, full, stats,
            )  # fmt: skip
            own_step = True
        scale, critical = _limiting_joint(
            unforced, full, joints, lower, upper, free, bound_tolerance
        )
        tried_scale = scale
        if scale > best_scale and _within(
            unforced, full, scale, joints, lower, upper, level_tolerance
        ):
            best_scale = scale
            active[:] = trying
            values[:] = trying_values
            best = _keep(unforced, full, work_null_space, stats, inner_first, own_step, kept,
                         kept_null_space, kept_stats)  # fmt: skip
        if scale >= 1.0 or not any_free:
            break
        joint = joints[critical]
        trying[critical] = True
        trying_values[critical] = (
            upper[critical] if full[joint] > unforced[joint] else lower[critical]
        )
    if best_scale >= 0.0:
        return best_scale, best[0], best[1]
    if top:  # the last set tried: its held state is the one in the work buffers
        active[:] = tried
        values[:] = tried_values
        best = _keep(unforced, full, work_null_space, stats, inner_first, own_step, kept,
                     kept_null_space, kept_stats)  # fmt: skip
        return tried_scale, best[0], 0.0
    active[:] = False
    best = _keep(settled, settled, null_space, stats, first, False, kept, kept_null_space,
                 kept_stats)  # fmt: skip
    return 0.0, best[0], 0.0


@kernel()
def _ceiling(distance, max_speed, kp, kd, deceleration):  # pragma: no cover - runs compiled
    """v⁺(d): inf for a joint without limits (d = inf) and no velocity limit."""
    ceiling = min((kp / kd) * distance, max_speed)
    if distance > 0.0:
        ceiling = min(ceiling, np.sqrt(2.0 * deceleration * abs(distance)))
    return ceiling


@kernel(
    types.void(
        VECTOR, VECTOR, INDEX, INDEX, VECTOR, VECTOR, VECTOR, float64, float64, float64,
        float64[::1], float64[::1],
    ),
)  # fmt: skip
def acceleration_bounds(
    q, v, positions, velocities, lower_wall, upper_wall, max_speed, kp, kd, deceleration, lower,
    upper,
):  # fmt: skip  # pragma: no cover - runs compiled
    """Write a⁻ and a⁺ of every joint (`JointLimits.bounds`, joint_limits.py's docstring).

    aᵢ⁺ = kd (v⁺(dᵢ) − q̇ᵢ) with v⁺(d) = min(ω d, √(2 A d), v_max), d the distance to the upper
    wall, and symmetrically aᵢ⁻; a⁻ ≤ a⁺ even where both walls are close. Joint i's position
    is q[positions[i]] and its speed v[velocities[i]], read here rather than gathered by numpy.
    """
    for i in range(positions.shape[0]):
        position, velocity = q[positions[i]], v[velocities[i]]
        up = _ceiling(upper_wall[i] - position, max_speed[i], kp, kd, deceleration)
        down = _ceiling(position - lower_wall[i], max_speed[i], kp, kd, deceleration)
        upper[i] = kd * (up - velocity)
        lower[i] = min(kd * (-down - velocity), upper[i])


@kernel(
    types.void(
        MATRIX, VECTOR, VECTOR, FLAGS, VECTOR, VECTOR, VECTOR, VECTOR, TOLERANCES,
        float64[::1],
    ),
    any_layout=True,
)  # fmt: skip
def fitted_acceleration(
    inverse_inertia, bias, acceleration, held, lower, upper, torque_lower, torque_upper, fit, out
):  # pragma: no cover - runs compiled
    """Write into `out` the q̈ nearest `acceleration` whose torque M q̈ + h is in the range.

    `out` may be `acceleration` itself (read before it is written). Written in place, not
    returned: an array returned to Python costs a Python-level call (numba's boxing).

    `torque_fit.fit_torque`'s loop (fully actuated fixed base: q̈ and the joints share
    indices): least squares in τ within [τ⁻, τ⁺] (`box_least_squares`), the `held` joints and
    any the fit drives beyond [a⁻, a⁺] weighed fit[0] times as much, the latter held at the
    bound from then on; a joint counts as beyond past fit[1] (rad/s²).
    """
    held_weight, tolerance = fit
    size = acceleration.shape[0]
    target, holding = acceleration.copy(), held.copy()
    free_acceleration = np.dot(inverse_inertia, np.ascontiguousarray(bias))  # M⁻¹ h
    matrix, rhs = np.empty((size, size)), np.empty(size)
    fitted = acceleration.copy()
    for _ in range(size):
        for i in range(size):
            weight = held_weight if holding[i] else 1.0
            rhs[i] = weight * (target[i] + free_acceleration[i])
            for j in range(size):
                matrix[i, j] = weight * inverse_inertia[i, j]
        torque = box_least_squares(matrix, rhs, torque_lower, torque_upper)
        fitted = np.dot(inverse_inertia, torque - bias)
        outside = False
        for i in range(size):
            if not holding[i] and not (
                fitted[i] <= upper[i] + tolerance and fitted[i] >= lower[i] - tolerance
            ):
                holding[i] = True
                target[i] = min(max(fitted[i], lower[i]), upper[i])
                outside = True
        if not outside:
            break
    out[:] = fitted
