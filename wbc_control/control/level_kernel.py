"""One priority level of the recursion as one compiled call (numba).

The per-level algebra of `wbc_control.control.prioritized_controller` (Khatib 1987; Sentis &
Khatib 2005) for a level with Jacobian J, task-space target t = ẍ* − J̇v and null space N::

    Jp = J N,  M⁻¹Jpᵀ = N M⁻¹Jᵀ,  Φ = Jp M⁻¹Jpᵀ,  μ = diag(J M⁻¹Jᵀ)
    Λ, Λ_N  = the regularized task inertia of Φ         (wbc_control.control.task_inertia)
    q̈     += s M⁻¹Jpᵀ Λ (t − J q̈)                        (s: the level's SNS scale)
    N      ← N − M⁻¹Jpᵀ Λ_N Jp

made in one call because at these sizes (3 to 40 rows, 9 to 40 joints) each Python-level call
costs about as much as its arithmetic. Λ comes as its eigen-directions, Λ = Wᵀ diag(g) W
(`task_directions`); a level that leaves N as it is (the last one, and every try of the
joint-limit search) applies it as Wᵀ (g ∘ W r) and never forms the (m, m) matrix, the largest
saving on a long last level such as a humanoid's posture.

`regularized_task_inertia` in task_inertia.py stays the readable reference of the law
(Chiaverini 1997's variable damping per eigen-direction with the kinematic attenuation,
Nakamura & Hanafusa 1986); `task_inertia` here computes the same Λ and Λ_N, and
test/core/test_level_kernel.py holds the two equal.

The eigen-decomposition is `wbc_control.control.semidefinite_eigen`'s (through a pivoted
Cholesky factor where Φₛ has lost rank, else `symmetric_eigen`'s); eigenvector signs, the order
of equal eigenvalues and the basis of the structurally null directions (gain 0) do not change
Λ = Wᵀ diag(g) W.

Every function is compiled for explicit signatures when this module is imported, from numba's
on-disk cache after the first time (`kernel_cache.kernel`): a controller's first tick never
compiles, and an argument of another type is a TypeError, not a compilation.
"""

import math

from numba import boolean, float64, int64, types
import numpy as np

from wbc_control.control.semidefinite_eigen import semidefinite_eigen
from wbc_control.control.task_inertia import (
    BLOCKING_FRACTION,
    KINEMATIC_BAND,
    KINEMATIC_FACTOR,
    NO_AUTHORITY,
    STRUCTURALLY_NULL,
)
from wbc_control.kernel_cache import kernel

#: The law's constants, handed to the kernel as an argument: numba's cache would keep the value
#: a module-level constant of another file had when it compiled.
LAW = (NO_AUTHORITY, STRUCTURALLY_NULL, KINEMATIC_BAND, KINEMATIC_FACTOR, BLOCKING_FRACTION)
#: `null_update` of `level_step`: leave N, reduce it by M⁻¹Jpᵀ Λ_N Jp, or by M⁻¹Jpᵀ Λ Jp.
KEEP, BLOCKING, EXACT = 0, 1, 2

# Inputs are typed read-only (writable arrays convert to that; M† and task terms may be frozen).
_MATRIX = types.Array(float64, 2, 'A', readonly=True)
_VECTOR = types.Array(float64, 1, 'A', readonly=True)
_C_MATRIX = float64[:, ::1]
_C_VECTOR = float64[::1]
_LAW = types.UniTuple(float64, len(LAW))
_TINY = np.finfo(float).tiny


def _compiled(signature):
    """`kernel` for one signature, compiled now (or loaded from the cache).

    Task Jacobians may be views of any layout (`any_layout`): np.dot copies the rare odd one.
    """
    return kernel(signature, any_layout=True)


@kernel()
def _selected_columns(jacobian, columns):  # pragma: no cover - runs compiled
    """Whether J is a selection (rows of the identity: a posture, held joints), each row's column.

    Writes row i's column into `columns[i]` when it is. Products with a selection are exact
    copies (x · 1 + Σ y · 0 = x), so taking them by index gives the same numbers as the
    products, at no arithmetic.
    """
    size, nv = jacobian.shape
    for i in range(size):
        column = -1
        for k in range(nv):
            value = jacobian[i, k]
            if value == 1.0 and column < 0:
                column = k
            elif value != 0.0:
                return False
        if column < 0:
            return False
        columns[i] = column
    return size > 0


@kernel(inline='always')
def _matrix_of(work, at, rows, columns):  # pragma: no cover - runs compiled
    """The next `rows` × `columns` of the scratch vector `work` from `at`, and the offset past it.

    A level step takes its intermediates from one allocation: at these sizes numba's
    allocations, with their reference counting, cost about as much as the arithmetic.
    """
    return work[at : at + rows * columns].reshape((rows, columns)), at + rows * columns


@kernel(inline='always')
def _vector_of(work, at, size):  # pragma: no cover - runs compiled
    """The next `size` entries of the scratch vector `work` from `at`, and the offset past it."""
    return work[at : at + size], at + size


@kernel()
def _gain_matrix(scaled_vectors, gains, out):  # pragma: no cover - runs compiled
    """Write Wᵀ diag(gains) W into `out` `(m, m)`."""
    size = gains.shape[0]
    for a in range(size):
        for b in range(a, size):
            total = 0.0
            for i in range(size):
                total += scaled_vectors[i, a] * gains[i] * scaled_vectors[i, b]
            out[a, b] = total
            out[b, a] = total


@kernel()
def _damped_gains(sigma, band, null_count, out):  # pragma: no cover - runs compiled
    """σ⁻¹ → min(1/σ, σ/ε²) with ε = `band`, 0 for the first `null_count` (step 3), into `out`."""
    for i in range(sigma.shape[0]):
        if i < null_count:
            out[i] = 0.0
        elif sigma[i] < band:
            out[i] = sigma[i] * (1.0 / band**2)
        else:
            out[i] = 1.0 / sigma[i]


@kernel()
def _kinematic_factor(jacobian, scaled_vectors):  # pragma: no cover - runs compiled
    """κᵢ = ‖Jᵀfᵢ‖² / Σᵣ fᵢᵣ² ‖Jᵣ‖² for the rows fᵢ of W (task_inertia.py, step 3)."""
    size, nv = jacobian.shape
    row_norms = np.zeros(size)
    for r in range(size):
        for k in range(nv):
            row_norms[r] += jacobian[r, k] * jacobian[r, k]
    moved = np.dot(scaled_vectors, jacobian)
    factor = np.empty(size)
    for i in range(size):
        numerator = 0.0
        for k in range(nv):
            numerator += moved[i, k] * moved[i, k]
        denominator = 0.0
        for r in range(size):
            denominator += scaled_vectors[i, r] * scaled_vectors[i, r] * row_norms[r]
        factor[i] = numerator / max(denominator, _TINY)
    return factor


@kernel()
def _attenuation(sigma, band, kinematic, law):  # pragma: no cover - runs compiled
    """max((σ/ε_k)², (κᵢ/κ)²) capped at 1: < 1 only where both are small (step 3), `(m,)`."""
    weak = np.empty(sigma.shape[0])
    for i in range(sigma.shape[0]):
        weak[i] = min(max(sigma[i] * (1.0 / band), kinematic[i] * (1.0 / law[3])), 1.0) ** 2
    return weak


@_compiled(
    types.UniTuple(float64, 4)(
        _MATRIX, _VECTOR, _VECTOR, _MATRIX, boolean, boolean, float64, _LAW, _C_MATRIX,
        _C_VECTOR, _C_VECTOR,
    )
)  # fmt: skip
def task_directions(
    phi,
    sqrt_weights,
    mobility,
    jacobian,
    kinematic,
    need_blocking,
    threshold,
    law,
    vectors,
    gains,
    blocking_gains,
):  # pragma: no cover - runs compiled
    """Λ = Wᵀ diag(g) W and Λ_N = Wᵀ diag(g_N) W of task_inertia.py's docstring, as W, g, g_N.

    Writes W `(m, m)` into `vectors`, g into `gains` and g_N into `blocking_gains` `(m,)`;
    returns (condition number, directions inverted exactly, directions damped, 1.0 if g_N
    differs from g else 0.0). With no direction of authority, W and both gains are zero.
    """
    size = phi.shape[0]
    largest = 0.0
    for i in range(size):
        largest = max(largest, mobility[i])
    floor = law[0] * largest
    scale = np.zeros(size)
    active = False
    for i in range(size if largest > 0.0 else 0):
        if mobility[i] > floor and phi[i, i] > law[0] * mobility[i]:
            scale[i] = sqrt_weights[i] / math.sqrt(mobility[i])
            active = True
    if not active:
        vectors[:, :] = 0.0
        gains[:] = 0.0
        blocking_gains[:] = 0.0
        return np.inf, 0.0, 0.0, 0.0
    scaled = np.empty((size, size))  # Φₛ = D Φ D, from Φ's upper triangle
    for i in range(size):
        for j in range(i + 1):
            scaled[i, j] = scaled[j, i] = phi[j, i] * scale[i] * scale[j]
    sigma = np.empty(size)
    semidefinite_eigen(scaled, sigma, vectors)
    if sigma[0] < 0.0:  # rounding: Φₛ is positive semi-definite
        for i in range(size):
            sigma[i] = max(sigma[i], 0.0)
    sigma_max = sigma[size - 1]
    epsilon = threshold * sigma_max
    null_count = 0
    below_epsilon = 0
    for i in range(size):
        null_count += sigma[i] <= law[1] * sigma_max
        below_epsilon += sigma[i] < epsilon
    for i in range(size):  # W = (D U)ᵀ
        for j in range(size):
            vectors[i, j] *= scale[j]
    _damped_gains(sigma, epsilon, null_count, gains)
    kinematic_band = law[2] * threshold
    weak = kinematic and sigma[null_count] < kinematic_band * sigma_max
    exact = size - below_epsilon
    factor = sigma
    if weak:
        factor = _kinematic_factor(jacobian, vectors)
        attenuation = _attenuation(sigma, kinematic_band * sigma_max, factor, law)
        for i in range(size):
            gains[i] *= attenuation[i]
            exact -= i >= below_epsilon and attenuation[i] < 1.0
    separate = need_blocking and exact < size - null_count
    if separate:
        _damped_gains(sigma, law[4] * epsilon, null_count, blocking_gains)
        if weak:
            band = law[4] * kinematic_band * sigma_max
            attenuation = _attenuation(sigma, band, factor, law)
            for i in range(size):
                blocking_gains[i] *= attenuation[i]
    else:
        blocking_gains[:] = gains
    damped = size - exact - null_count
    return (
        sigma_max / sigma[null_count],
        float(exact),
        float(max(damped, 0)),
        1.0 if separate else 0.0,
    )


@_compiled(
    types.UniTuple(float64, 3)(
        _MATRIX, _VECTOR, _VECTOR, _MATRIX, boolean, boolean, float64, _LAW, _C_MATRIX, _C_MATRIX
    )
)
def task_inertia(
    phi,
    sqrt_weights,
    mobility,
    jacobian,
    kinematic,
    need_blocking,
    threshold,
    law,
    inertia,
    blocking,
):  # pragma: no cover - runs compiled
    """Λ and Λ_N of Φ by the scaled, variably damped inverse of task_inertia.py's docstring.

    The compiled twin of `regularized_task_inertia` (same arguments, μ always given: diag(Φ)
    on a first level), as matrices: `task_directions`' W and gains multiplied out. Writes Λ
    into `inertia` and Λ_N into `blocking` `(m, m)`; returns (condition number, directions
    inverted exactly, directions damped).
    """
    size = phi.shape[0]
    vectors = np.empty((size, size))
    gains = np.empty(size)
    blocking_gains = np.empty(size)
    condition, exact, damped, separate = task_directions(
        phi, sqrt_weights, mobility, jacobian, kinematic, need_blocking, threshold, law,
        vectors, gains, blocking_gains,
    )  # fmt: skip
    _gain_matrix(vectors, gains, inertia)
    if separate:
        _gain_matrix(vectors, blocking_gains, blocking)
    else:
        blocking[:, :] = inertia
    return condition, exact, damped


@_compiled(
    types.void(
        _MATRIX,
        _VECTOR,
        _VECTOR,
        _MATRIX,
        _C_MATRIX,
        boolean,
        float64,
        float64,
        boolean,
        int64,
        _LAW,
        _C_VECTOR,
        _C_VECTOR,
    )
)
def level_step(
    jacobian,
    target,
    sqrt_weights,
    inverse_inertia,
    null_space,
    first,
    threshold,
    scale,
    kinematic,
    null_update,
    law,
    acceleration,
    stats,
):  # pragma: no cover - runs compiled
    """One level of the recursion: q̈ and N updated in place (the module docstring).

    Args:
        jacobian: J `(m, nv)`.
        target: ẍ* − J̇v `(m,)`.
        sqrt_weights: √w per row `(m,)`.
        inverse_inertia: M⁻¹, or M† under contacts `(nv, nv)`.
        null_space: N `(nv, nv)`, the controller's buffer; ignored (N = I) and then written
            when `first`.
        first: no level above this one: N = I.
        threshold: ε of the task inertia, relative.
        scale: s, the level's SNS scale.
        kinematic: damp the directions Jp itself is losing (user levels; not joint limits).
        null_update: KEEP, BLOCKING (N −= M⁻¹Jpᵀ Λ_N Jp) or EXACT (N −= M⁻¹Jpᵀ Λ Jp).
        law: `LAW`.
        acceleration: q̈ `(nv,)`, updated.
        stats: written with (condition number, rank, damped) `(3,)`.
    """
    size, nv = jacobian.shape
    columns = np.empty(size, dtype=np.int64)
    selection = _selected_columns(jacobian, columns)
    # Every intermediate below, from one allocation: 4 (nv, m), 3 (m, m), 6 (m,), (nv,), (nv, nv).
    work = np.empty(4 * nv * size + 3 * size * size + 6 * size + nv + nv * nv)
    at = 0
    inverse_inertia_jt, at = _matrix_of(work, at, nv, size)  # M⁻¹Jᵀ `(nv, m)`
    if selection:  # columns of M⁻¹
        for a in range(nv):
            for i in range(size):
                inverse_inertia_jt[a, i] = inverse_inertia[a, columns[i]]
    else:
        np.dot(inverse_inertia, jacobian.T, inverse_inertia_jt)
    if first:
        projected = jacobian
        projected_inverse = inverse_inertia_jt
    else:
        projected, at = _matrix_of(work, at, size, nv)
        if selection:  # J N: rows of N
            for i in range(size):
                for b in range(nv):
                    projected[i, b] = null_space[columns[i], b]
        else:
            np.dot(jacobian, null_space, projected)
        projected_inverse, at = _matrix_of(work, at, nv, size)
        np.dot(null_space, inverse_inertia_jt, projected_inverse)  # M⁻¹Jpᵀ = N M⁻¹Jᵀ
    phi, at = _matrix_of(work, at, size, size)
    np.dot(projected, projected_inverse, phi)
    mobility, at = _vector_of(work, at, size)
    for i in range(size):
        if first:
            mobility[i] = phi[i, i]
        elif selection:
            mobility[i] = inverse_inertia[columns[i], columns[i]]
        else:
            total = 0.0
            for k in range(nv):
                total += jacobian[i, k] * inverse_inertia_jt[k, i]
            mobility[i] = total
    vectors, at = _matrix_of(work, at, size, size)
    gains, at = _vector_of(work, at, size)
    blocking_gains, at = _vector_of(work, at, size)
    stats[0], stats[1], stats[2], separate = task_directions(
        phi, sqrt_weights, mobility, projected, kinematic, null_update == BLOCKING, threshold,
        law, vectors, gains, blocking_gains,
    )  # fmt: skip
    residual, at = _vector_of(work, at, size)  # t − J q̈
    if selection:
        for i in range(size):
            residual[i] = target[i] - acceleration[columns[i]]
    else:
        np.dot(jacobian, acceleration, residual)
        for i in range(size):
            residual[i] = target[i] - residual[i]
    correction, at = _vector_of(work, at, nv)
    if null_update == KEEP:
        # N is not needed, nor Λ itself: Λ (t − J q̈) = Wᵀ (g ∘ W (t − J q̈)).
        directions, at = _vector_of(work, at, size)
        back, at = _vector_of(work, at, size)
        np.dot(vectors, residual, directions)
        for i in range(size):
            directions[i] *= gains[i]
        np.dot(vectors.T, directions, back)
        np.dot(projected_inverse, back, correction)
    else:
        task_matrix, at = _matrix_of(work, at, size, size)
        _gain_matrix(vectors, gains, task_matrix)  # Λ
        consistent_inverse, at = _matrix_of(work, at, nv, size)  # J̄
        np.dot(projected_inverse, task_matrix, consistent_inverse)
        np.dot(consistent_inverse, residual, correction)
    for k in range(acceleration.shape[0]):
        acceleration[k] += scale * correction[k]
    if null_update == KEEP:
        return
    if null_update == BLOCKING and separate:
        _gain_matrix(vectors, blocking_gains, task_matrix)  # Λ_N
        np.dot(projected_inverse, task_matrix, consistent_inverse)
    used, at = _matrix_of(work, at, nv, nv)
    np.dot(consistent_inverse, projected, used)
    for a in range(nv):
        for b in range(nv):
            if first:
                null_space[a, b] = (1.0 if a == b else 0.0) - used[a, b]
            else:
                null_space[a, b] -= used[a, b]
