"""Eigen-decomposition of a positive semi-definite matrix of low rank, compiled (numba).

A task level's scaled Φₛ = D Jp M⁻¹ Jpᵀ D is positive semi-definite, and on a long level low in
the stack most of its directions are structurally null: a humanoid's 32-row posture under two
feet and 12 rows above has rank 14 to 17. Its factor by Cholesky with complete (diagonal)
pivoting, Φₛ = R Rᵀ with R `(m, r)` (Higham 2002, "Accuracy and Stability of Numerical
Algorithms", 2nd ed., sec 10.3), stopped as LAPACK's dpstrf is when no remaining pivot exceeds
m · ε_mach · max diag Φₛ, reveals r at O(m r²). The non-zero eigenvalues of R Rᵀ are those of
the r × r matrix C = Rᵀ R = Uᵀ diag(μ) U, and for each the eigenvector of Φₛ is w = R u / √μ
(R = Wᵀ diag(√μ) U is R's singular value decomposition; Golub & Van Loan 2013, sec 2.4): one
eigen-decomposition of size r instead of m.

The m − r directions left out get the eigenvalue 0 and a zero row in place of an eigenvector.
What they leave out of Φₛ is below the last pivot's bound, at most about m² ε_mach σ_max (the
remainder of a positive semi-definite matrix after pivoted Cholesky), plus Φₛ's own rounding:
far below the structurally null limit of `wbc_control.control.task_inertia` (1e-9 σ_max),
where the task inertia gives a direction the gain 0 whatever its eigenvector. At full rank
(r = m) it is `symmetric_eigen` of Φₛ itself.
"""

import math

from numba import float64, int64
import numpy as np

from wbc_control.control.symmetric_eigen import symmetric_eigen
from wbc_control.kernel_cache import kernel

_EPSILON = 2.0**-52


@kernel()
def pivoted_cholesky(matrix, factor):  # pragma: no cover - runs compiled
    """Write R `(m, m)`, its first r columns Φ ≈ R Rᵀ (Higham 2002, sec 10.3); return r.

    Each step takes the largest remaining diagonal of the Schur complement as its pivot; the
    factor stops when none exceeds m · ε_mach · max diag Φ (a zero matrix has rank 0).
    Columns from r on are zero. Reads the lower triangle of `matrix`.
    """
    size = matrix.shape[0]
    remaining = np.empty(size)
    largest = 0.0
    for i in range(size):
        remaining[i] = matrix[i, i]
        largest = max(largest, matrix[i, i])
    tolerance = size * _EPSILON * largest
    pivoted = np.zeros(size, dtype=np.bool_)
    factor[:, :] = 0.0
    for k in range(size):
        pivot, best = -1, tolerance
        for i in range(size):
            if not pivoted[i] and remaining[i] > best:
                pivot, best = i, remaining[i]
        if pivot < 0:
            return k
        pivoted[pivot] = True
        root = math.sqrt(best)
        factor[pivot, k] = root
        for i in range(size):
            if pivoted[i]:
                continue
            total = matrix[i, pivot] if i > pivot else matrix[pivot, i]
            for j in range(k):
                total -= factor[i, j] * factor[pivot, j]
            value = total / root
            factor[i, k] = value
            remaining[i] -= value * value
    return size


@kernel(int64(float64[:, ::1], float64[::1], float64[:, ::1]))
def semidefinite_eigen(matrix, values, vectors):  # pragma: no cover - runs compiled
    """Eigenvalues (ascending) and eigenvectors (rows) of a PSD matrix; returns its rank r.

    `matrix` `(m, m)` is read from its lower triangle, not written. Below full rank the first
    m − r values are 0 with zero rows in `vectors` (the module docstring), and the others come
    from the r × r matrix Rᵀ R; at full rank, `symmetric_eigen` of the matrix.
    """
    size = matrix.shape[0]
    factor = np.empty((size, size))
    rank = pivoted_cholesky(matrix, factor)
    if rank == 0:  # a zero (or empty) matrix; symmetric_eigen needs at least one row
        values[:] = 0.0
        vectors[:, :] = 0.0
        return 0
    if rank == size:
        symmetric_eigen(matrix, values, vectors)
        return rank
    gram = np.empty((rank, rank))  # C = Rᵀ R, R the first `rank` columns of `factor`
    for a in range(rank):
        for b in range(a + 1):
            total = 0.0
            for i in range(size):
                total += factor[i, a] * factor[i, b]
            gram[a, b] = total
            gram[b, a] = total
    small_values = np.empty(rank)
    small_vectors = np.empty((rank, rank))
    symmetric_eigen(gram, small_values, small_vectors)
    null = size - rank
    values[:null] = 0.0
    vectors[:null, :] = 0.0
    for k in range(rank):
        mu = small_values[k]
        row = null + k
        if not mu > 0.0:  # rounding of a direction kept at the factor's smallest pivot
            values[row] = 0.0
            vectors[row, :] = 0.0
            continue
        values[row] = mu
        inverse_root = 1.0 / math.sqrt(mu)
        for i in range(size):
            total = 0.0
            for a in range(rank):
                total += factor[i, a] * small_vectors[k, a]
            vectors[row, i] = total * inverse_root
    return rank
