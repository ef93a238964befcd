"""The compiled Cholesky helpers (`wbc_control.cholesky_kernel`) against numpy.

S = L Lᵀ with L lower triangular where S is positive definite and None where a pivot is not
> 0 (a negative or a zero one, or NaN); L⁻¹; and the solution of L Lᵀ x = b.
"""

import numpy as np

from wbc_control.cholesky_kernel import cholesky, cholesky_solve, inverse_factor


def _positive_definite(size: int, seed: int) -> np.ndarray:
    factor = np.random.default_rng(seed).standard_normal((size, size + 2))
    return factor.dot(factor.T) + np.diag(np.linspace(0.1, 1.0, size))


def test_cholesky_is_numpys_lower_factor():
    matrix = _positive_definite(6, 7)
    lower = cholesky(matrix)
    np.testing.assert_allclose(lower, np.linalg.cholesky(matrix), rtol=1e-12, atol=1e-13)
    assert not np.triu(lower, 1).any()


def test_cholesky_declines_where_a_pivot_is_not_positive():
    assert cholesky(np.diag([1.0, -1e-3, 2.0])) is None
    assert cholesky(np.diag([1.0, 0.0, 2.0])) is None  # singular: the boundary
    assert cholesky(np.diag([1.0, 1e-300, 2.0])) is not None  # just inside it
    assert cholesky(np.diag([1.0, np.nan, 2.0])) is None
    matrix = _positive_definite(4, 8)
    matrix[0, 3] = matrix[3, 0] = 2.0 * np.sqrt(matrix[0, 0] * matrix[3, 3])  # indefinite
    assert cholesky(matrix) is None


def test_inverse_factor_and_solve():
    matrix = _positive_definite(5, 9)
    lower = cholesky(matrix)
    inverse = inverse_factor(lower)
    np.testing.assert_allclose(inverse.dot(lower), np.eye(5), atol=1e-12)
    np.testing.assert_allclose(
        inverse.T.dot(inverse), np.linalg.inv(matrix), rtol=1e-10, atol=1e-12
    )
    rhs = np.random.default_rng(10).standard_normal(5)
    np.testing.assert_allclose(
        cholesky_solve(lower, rhs), np.linalg.solve(matrix, rhs), rtol=1e-10
    )
