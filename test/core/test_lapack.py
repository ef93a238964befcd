"""The LAPACK factorisations (`wbc_control.lapack`) against their definitions.

Cholesky: A = RᵀR with R upper triangular where A is positive definite, None where it is not
(a negative or a zero pivot); its solve and the reciprocal condition estimate from R; the
triangular solve Rᵀ x = b; the pivoted QR A[:, p] = Q R, Q orthogonal, |Rᵢᵢ| falling and
revealing the rank.
"""

import numpy as np
import pytest

from wbc_control.lapack import (
    cholesky,
    cholesky_solve,
    pivoted_qr,
    reciprocal_condition,
    upper_transposed_solve,
)


def _positive_definite(size: int, seed: int) -> np.ndarray:
    factor = np.random.default_rng(seed).standard_normal((size, size + 2))
    return factor.dot(factor.T) + np.diag(np.linspace(0.1, 1.0, size))


def test_cholesky_factors_a_positive_definite_matrix_and_solves_with_it():
    matrix = _positive_definite(5, 1)
    upper = np.triu(cholesky(matrix))
    np.testing.assert_allclose(upper.T.dot(upper), matrix, rtol=1e-13, atol=1e-13)
    rhs = np.random.default_rng(2).standard_normal((5, 3))
    np.testing.assert_allclose(matrix.dot(cholesky_solve(cholesky(matrix), rhs)), rhs, atol=1e-12)
    vector = rhs[:, 1].copy()
    np.testing.assert_allclose(
        matrix.dot(cholesky_solve(cholesky(matrix), vector)), vector, atol=1e-12
    )


def test_cholesky_declines_a_matrix_that_is_not_positive_definite():
    assert cholesky(np.diag([1.0, -1e-3, 2.0])) is None
    assert cholesky(np.diag([1.0, 0.0, 2.0])) is None  # singular: the boundary
    assert cholesky(np.diag([1.0, 1e-300, 2.0])) is not None  # just inside it
    matrix = _positive_definite(4, 3)
    matrix[2, 2] = -matrix[2, 2]
    assert cholesky(matrix) is None


def test_reciprocal_condition_of_a_diagonal_matrix_is_its_smallest_over_largest_entry():
    spd = np.diag([4.0, 1.0, 0.25])
    assert reciprocal_condition(cholesky(spd), spd) == pytest.approx(1.0 / 16.0)
    matrix = _positive_definite(6, 5)
    exact = 1.0 / (np.linalg.norm(matrix, 1) * np.linalg.norm(np.linalg.inv(matrix), 1))
    estimate = reciprocal_condition(cholesky(matrix), matrix)
    assert exact / 3.0 <= estimate <= 3.0 * exact  # an estimate, within a small factor


def test_upper_transposed_solve_is_forward_substitution_with_the_transpose():
    rng = np.random.default_rng(6)
    triangle = np.triu(rng.standard_normal((4, 4))) + np.diag([2.0, -3.0, 1.5, 4.0])
    rhs = rng.standard_normal(4)
    np.testing.assert_allclose(
        triangle.T.dot(upper_transposed_solve(triangle, rhs)), rhs, atol=1e-13
    )


def test_pivoted_qr_reveals_the_rank():
    rng = np.random.default_rng(4)
    matrix = rng.standard_normal((6, 4)) * [1.0, 3.0, 0.5, 2.0]
    matrix[:, 2] = matrix[:, 0] + matrix[:, 1]  # rank 3
    orthogonal, triangle, pivots = pivoted_qr(matrix)
    np.testing.assert_allclose(orthogonal.T.dot(orthogonal), np.eye(6), atol=1e-14)
    np.testing.assert_allclose(matrix[:, pivots], orthogonal[:, :4].dot(triangle), atol=1e-13)
    diagonal = np.abs(np.diag(triangle))
    assert (np.diff(diagonal) <= 1e-12).all() and diagonal[3] < 1e-12 < diagonal[2]
    assert sorted(pivots) == [0, 1, 2, 3]
