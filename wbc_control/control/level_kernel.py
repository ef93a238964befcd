"""One priority level of the recursion as one compiled call (numba).

The per-level algebra of `wbc_control.control.prioritized_controller` (Khatib 1987; Sentis &
Khatib 2005) for a level with Jacobian J, task-space target t = ẍ* − J̇v and null space N::

    Jp = J N,  M⁻¹Jpᵀ = N M⁻¹Jᵀ,  Φ = Jp M⁻¹Jpᵀ,  μ = diag(J M⁻¹Jᵀ)
    Λ, Λ_N  = the regularized task inertia of Φ         (wbc_control.control.task_inertia)
    q̈     += s M⁻¹Jpᵀ Λ (t − J q̈)                        (s: the level's SNS scale)
    N      ← N − M⁻¹Jpᵀ Λ_N Jp

made in one call because at these sizes (3 to 40 rows, 9 to 40 joints) each Python-level call
costs about as much as its arithmetic. Λ comes as its eigen-directions, Λ = Wᵀ diag(g) W
(`task_inertia_kernel.task_directions`, the compiled law of task_inertia.py); a level that
leaves N as it is (the last one, and every try of the joint-limit search) applies it as
Wᵀ (g ∘ W r) and never forms the (m, m) matrix, the largest saving on a long last level such
as a humanoid's posture.

Every function is compiled for explicit signatures when this module is imported, from numba's
on-disk cache after the first time (`kernel_cache.kernel`): a controller's first tick never
compiles, and an argument of another type is a TypeError, not a compilation.
"""

from numba import boolean, float64, int64, types
import numpy as np

from wbc_control.control.task_inertia_kernel import LAW_TYPE, gain_matrix, task_directions
from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import C_MATRIX, C_VECTOR, MATRIX, VECTOR

#: `null_update` of `level_step`: leave N, reduce it by M⁻¹Jpᵀ Λ_N Jp, or by M⁻¹Jpᵀ Λ Jp.
KEEP, BLOCKING, EXACT = 0, 1, 2


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


@kernel(
    types.void(
        MATRIX,
        VECTOR,
        VECTOR,
        MATRIX,
        C_MATRIX,
        boolean,
        float64,
        float64,
        boolean,
        int64,
        LAW_TYPE,
        C_VECTOR,
        C_VECTOR,
    ),
    any_layout=True,  # task Jacobians may be views of any layout: np.dot copies the odd one
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
        law: `task_inertia_kernel.LAW`.
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
        gain_matrix(vectors, gains, task_matrix)  # Λ
        consistent_inverse, at = _matrix_of(work, at, nv, size)  # J̄
        np.dot(projected_inverse, task_matrix, consistent_inverse)
        np.dot(consistent_inverse, residual, correction)
    for k in range(acceleration.shape[0]):
        acceleration[k] += scale * correction[k]
    if null_update == KEEP:
        return
    if null_update == BLOCKING and separate:
        gain_matrix(vectors, blocking_gains, task_matrix)  # Λ_N
        np.dot(projected_inverse, task_matrix, consistent_inverse)
    used, at = _matrix_of(work, at, nv, nv)
    np.dot(consistent_inverse, projected, used)
    for a in range(nv):
        for b in range(nv):
            if first:
                null_space[a, b] = (1.0 if a == b else 0.0) - used[a, b]
            else:
                null_space[a, b] -= used[a, b]
