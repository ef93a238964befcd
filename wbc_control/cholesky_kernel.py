"""Cholesky factorisation and its solves for the compiled kernels (numba), written out.

S = L Lᵀ column by column, L⁻¹ and L Lᵀ x = b by forward and back substitution (Golub &
Van Loan 2013, secs 3.1 and 4.2), at the few-by-few sizes of a contact's normal equations or
a priority level's Hessian. Written out rather than numba's `np.linalg.cholesky`, which raises
on a matrix that is not positive definite: here that is None, a case the callers handle. The
callers (`control.contact.contact_kernel`, `control.hierarchy.level_kernel`) compile these
into their own machine code, so this file is in `kernel_cache.KERNEL_SOURCES`.
"""

import math

import numpy as np

from wbc_control.kernel_cache import kernel


@kernel()
def cholesky(matrix):  # pragma: no cover - runs compiled
    """L of S = L Lᵀ (lower, column by column); None if S is not numerically PD.

    A pivot that is not > 0 (NaN included) means S is not numerically positive definite.
    """
    size = matrix.shape[0]
    lower = np.zeros((size, size))
    for j in range(size):
        pivot = matrix[j, j]
        for k in range(j):
            pivot -= lower[j, k] * lower[j, k]
        if not pivot > 0.0:
            return None
        lower[j, j] = math.sqrt(pivot)
        for i in range(j + 1, size):
            total = matrix[i, j]
            for k in range(j):
                total -= lower[i, k] * lower[j, k]
            lower[i, j] = total / lower[j, j]
    return lower


@kernel()
def inverse_factor(lower):  # pragma: no cover - runs compiled
    """Y = L⁻¹ (lower triangular) by forward substitution; S⁻¹ = Yᵀ Y, tr(S⁻¹) = Σ Y²."""
    size = lower.shape[0]
    inverse = np.zeros((size, size))
    for j in range(size):
        inverse[j, j] = 1.0 / lower[j, j]
        for i in range(j + 1, size):
            total = 0.0
            for k in range(j, i):
                total -= lower[i, k] * inverse[k, j]
            inverse[i, j] = total / lower[i, i]
    return inverse


@kernel()
def cholesky_solve(lower, rhs):  # pragma: no cover - runs compiled
    """The solution x of L Lᵀ x = rhs: forward, then back substitution."""
    size = lower.shape[0]
    x = np.empty(size)
    for i in range(size):
        total = rhs[i]
        for k in range(i):
            total -= lower[i, k] * x[k]
        x[i] = total / lower[i, i]
    for i in range(size - 1, -1, -1):
        total = x[i]
        for k in range(i + 1, size):
            total -= lower[k, i] * x[k]
        x[i] = total / lower[i, i]
    return x
