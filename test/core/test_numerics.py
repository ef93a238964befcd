"""The compiled routines called without their wrappers (`wbc_control.numerics`).

They give the bits of the public functions they stand for, on the shapes a tick hands them.
"""

import numpy as np
import pytest
from scipy.optimize import nnls

from wbc_control import numerics
from wbc_control.numerics import einsum, nnls_residual, singular_values


@pytest.mark.parametrize('seed', range(5))
def test_nnls_residual_is_scipys_rnorm_to_the_bit(seed):
    rng = np.random.default_rng(seed)
    unit = rng.standard_normal((12, 6))
    unit /= np.linalg.norm(unit, axis=1)[:, None]
    inward = -unit.sum(axis=0)
    assert nnls_residual(unit.T, inward) == nnls(unit.T, inward)[1]  # a strided transpose
    rhs = rng.standard_normal(12)
    assert nnls_residual(unit, rhs) == nnls(unit, rhs)[1]


def test_nnls_residual_is_zero_where_a_nonnegative_combination_meets_the_target():
    columns = np.array([[1.0, 0.0, -1.0], [0.0, 1.0, -1.0]])
    assert nnls_residual(columns, np.zeros(2)) == 0.0
    assert nnls_residual(columns, np.array([-1.0, -1.0])) == pytest.approx(0.0, abs=1e-15)
    assert nnls_residual(np.eye(2), np.array([-3.0, 4.0])) == 3.0  # x ≥ 0 cannot reach -3


def test_einsum_is_numpys_row_wise_dot():
    rows = np.random.default_rng(3).standard_normal((7, 5))
    assert np.array_equal(einsum('ij,ij->i', rows, rows), np.einsum('ij,ij->i', rows, rows))


@pytest.mark.parametrize('shape', [(12, 6), (17, 6), (6, 6), (3, 5)])
def test_singular_values_are_numpys_to_the_bit(shape):
    rng = np.random.default_rng(shape[0])
    matrix = rng.standard_normal(shape)
    matrix[-1] = matrix[0]  # rank-deficient where square
    expected = np.linalg.svd(matrix, compute_uv=False)
    assert np.array_equal(singular_values(matrix), expected)
    assert np.array_equal(singular_values(matrix.T), np.linalg.svd(matrix.T, compute_uv=False))


def test_singular_values_raise_numpys_error_where_lapack_fails():
    matrix = np.ones((12, 6))
    matrix[0, 0] = np.nan
    with pytest.raises(np.linalg.LinAlgError, match='did not converge'):
        singular_values(matrix)


def test_every_private_routine_this_numpy_and_scipy_have_passed_its_probe():
    """Where they exist (numpy 2, scipy ≥ 1.15) they answer the probe as the public functions."""
    assert numerics._singular_values is numerics._svd_gufunc
    assert numerics._compiled_nnls is numerics._nnls_routine


def test_a_private_routine_that_changed_falls_back_to_the_public_function():
    """One whose signature changed (it raises) or whose answer differs is not used."""

    def renamed_argument(matrix, signature):
        raise TypeError("unexpected keyword argument 'signature'")

    def call(routine):
        return routine(np.eye(2), signature='d->d')

    assert numerics.verified(renamed_argument, call, np.ones(2)) is None
    assert numerics.verified(lambda matrix, signature: np.zeros(2), call, np.ones(2)) is None
    assert numerics.verified(lambda matrix, signature: np.ones(2), call, np.ones(2)) is not None
    assert numerics.verified(None, call, np.ones(2)) is None
