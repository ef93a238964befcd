"""The regularized task inertia of a level, compiled (numba): Λ and Λ_N as eigen-directions.

Λ = Wᵀ diag(g) W and Λ_N = Wᵀ diag(g_N) W of the scaled, variably damped inverse of
`wbc_control.control.task_inertia` (Chiaverini 1997's variable damping per eigen-direction
with the kinematic attenuation; Nakamura & Hanafusa 1986), from Φ = Jp M⁻¹Jpᵀ and the
mobilities μ = diag(J M⁻¹Jᵀ). `task_directions` returns W and the gains, which
`level_kernel.level_step` applies without forming Λ where it can; `task_inertia` multiplies
them out, the compiled twin of `regularized_task_inertia` that test/core/test_level_kernel.py
holds equal to it.

The eigen-decomposition is `wbc_control.control.semidefinite_eigen`'s (through a pivoted
Cholesky factor where Φₛ has lost rank, else `symmetric_eigen`'s); eigenvector signs, the order
of equal eigenvalues and the basis of the structurally null directions (gain 0) do not change
Λ = Wᵀ diag(g) W.
"""

import math

from numba import boolean, float64, types
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
from wbc_control.kernel_types import C_MATRIX, C_VECTOR, MATRIX, VECTOR

#: The law's constants, handed to the kernels as an argument: numba's cache would keep the value
#: a module-level constant of another file had when it compiled.
LAW = (NO_AUTHORITY, STRUCTURALLY_NULL, KINEMATIC_BAND, KINEMATIC_FACTOR, BLOCKING_FRACTION)

#: The type of `LAW` in the kernels' signatures.
LAW_TYPE = types.UniTuple(float64, len(LAW))
_TINY = np.finfo(float).tiny


@kernel()
def gain_matrix(scaled_vectors, gains, out):  # pragma: no cover - runs compiled
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


@kernel(
    types.UniTuple(float64, 4)(
        MATRIX, VECTOR, VECTOR, MATRIX, boolean, boolean, float64, LAW_TYPE, C_MATRIX,
        C_VECTOR, C_VECTOR,
    ),
    any_layout=True,
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


@kernel(
    types.UniTuple(float64, 3)(
        MATRIX, VECTOR, VECTOR, MATRIX, boolean, boolean, float64, LAW_TYPE, C_MATRIX, C_MATRIX
    ),
    any_layout=True,
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
    gain_matrix(vectors, gains, inertia)
    if separate:
        gain_matrix(vectors, blocking_gains, blocking)
    else:
        blocking[:, :] = inertia
    return condition, exact, damped
