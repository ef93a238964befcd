"""The compiled routines called without their wrappers (`wbc_control.numerics`).

They give the bits of the public functions they stand for, on the shapes a tick hands them.
"""

import numpy as np
import pytest
from scipy.optimize import nnls

from wbc_control.numerics import einsum, nnls_residual


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
