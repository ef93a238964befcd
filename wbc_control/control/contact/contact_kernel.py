"""The contact forces that balance the base rows, as one compiled call (numba).

`base_forces` solves the weighted normal equations (Golub & Van Loan 2013, sec 5.6) by their
Cholesky factor and declines, the caller then taking `lstsq` (`contacts.base_contact_forces`),
where the factor would lose digits: when the matrix is not positive definite or its condition
bound κ₂(S) ≤ tr(S) tr(S⁻¹) is too large. test/core/test_contact_kernel.py holds it to
`lstsq`. Compiled for explicit signatures when imported, from numba's on-disk cache after the
first time.
"""

import math

from numba import float64, int64
import numpy as np

from wbc_control.cholesky_kernel import cholesky, cholesky_solve, inverse_factor
from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import MATRIX, VECTOR


@kernel()
def _squared_sum(matrix):  # pragma: no cover - runs compiled
    total = 0.0
    for i in range(matrix.shape[0]):
        for j in range(matrix.shape[1]):
            total += matrix[i, j] * matrix[i, j]
    return total


@kernel()
def _trace(matrix):  # pragma: no cover - runs compiled
    total = 0.0
    for i in range(matrix.shape[0]):
        total += matrix[i, i]
    return total


@kernel(
    float64(MATRIX, VECTOR, int64, VECTOR, float64, float64[::1])
)  # fmt: skip
def base_forces(
    constraint, generalized_force, base_nv, shares, max_condition, forces
):  # pragma: no cover - runs compiled
    """Write the weighted minimum-norm f with A_bᵀ f = (M q̈ + h)_b; return ‖A_bᵀ f − t‖.

    f = W^½ Bᵀ (B Bᵀ)⁻¹ t with B = A_bᵀ W^½ (`contacts.base_contact_forces`), from the
    Cholesky factor of the normal equations G = B Bᵀ `(base_nv, base_nv)`. Returns −1 (f not
    written) when G is not positive definite or tr(G) tr(G⁻¹) > `max_condition`: the caller
    then takes the minimum-norm least-squares solution.

    Args:
        constraint: A `(m, nv)`; its first `base_nv` columns are A_b.
        generalized_force: M q̈ + h `(nv,)`; its first `base_nv` entries are t.
        base_nv: the base's velocity dimension.
        shares: w `(m,)`, each row's load share weight (≥ 0).
        max_condition: the largest κ₂(G) bound accepted.
        forces: f `(m,)`, written.
    """
    rows = constraint.shape[0]
    scale = np.sqrt(shares)
    gram = np.empty((base_nv, base_nv))
    for a in range(base_nv):
        for b in range(a, base_nv):
            total = 0.0
            for j in range(rows):
                total += constraint[j, a] * constraint[j, b] * shares[j]
            gram[a, b] = total
            gram[b, a] = total
    lower = cholesky(gram)
    if lower is None or not _trace(gram) * _squared_sum(inverse_factor(lower)) <= max_condition:
        return -1.0
    multipliers = cholesky_solve(lower, generalized_force[:base_nv])  # G⁻¹ t
    for j in range(rows):
        total = 0.0
        for a in range(base_nv):
            total += constraint[j, a] * scale[j] * multipliers[a]
        forces[j] = scale[j] * total
    residual = 0.0
    for a in range(base_nv):
        error = -generalized_force[a]
        for j in range(rows):
            error += constraint[j, a] * forces[j]
        residual += error * error
    return math.sqrt(residual)
