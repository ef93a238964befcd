"""The eigen-decomposition of a positive semi-definite matrix through its pivoted Cholesky factor.

`semidefinite_eigen` must give, for Φ = G Gᵀ of any rank r ≤ m: r eigenvalues as LAPACK's (to
its backward error, a few m·ε·‖Φ‖), their eigenvectors orthonormal with Φ w = μ w, and the
m − r others 0 with zero rows; at full rank exactly `symmetric_eigen`'s decomposition. The
pivoted factor (Higham 2002, sec 10.3) must reproduce Φ and stop at its rank.
"""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from wbc_control.control.semidefinite_eigen import pivoted_cholesky, semidefinite_eigen
from wbc_control.control.symmetric_eigen import symmetric_eigen

RELATIVE = 1e-13


def gram(rng: np.random.Generator, size: int, rank: int, spread: float = 1.0) -> np.ndarray:
    """G Gᵀ with G `(size, rank)`, its non-zero eigenvalues spread over `spread` decades."""
    basis, _ = np.linalg.qr(rng.standard_normal((size, size)))
    spectrum = np.logspace(-spread, 0.0, rank) if rank else np.empty(0)
    factor = basis[:, :rank] * np.sqrt(spectrum)
    return factor @ factor.T


def decomposed(matrix: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    size = len(matrix)
    values, vectors = np.full(size, np.nan), np.full((size, size), np.nan)
    rank = semidefinite_eigen(np.ascontiguousarray(matrix), values, vectors)
    return rank, values, vectors


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 40), st.floats(0.0, 1.0))
def test_every_rank_decomposes_like_lapack(seed, size, rank_fraction):
    rng = np.random.default_rng(seed)
    rank = int(round(rank_fraction * size))
    matrix = gram(rng, size, rank, spread=rng.uniform(0.0, 10.0))
    found, values, vectors = decomposed(matrix)
    scale = max(float(np.linalg.norm(matrix, 2)), 1e-300)
    assert found == rank
    assert np.all(np.diff(values) >= 0.0)
    np.testing.assert_allclose(values, np.linalg.eigvalsh(matrix), atol=RELATIVE * scale)
    null = size - rank
    assert not values[:null].any() and not vectors[:null].any()
    kept, mu = vectors[null:], values[null:]
    np.testing.assert_allclose((kept.T * mu) @ kept, matrix, atol=RELATIVE * scale)
    # w = R u / √μ: from the r × r matrix Rᵀ R, whose rounding is ε ‖Φ‖, an eigenvector of a
    # small μ carries about ε ‖Φ‖ / μ of it (a direction the task inertia damps, gain σ/ε²).
    unit = 10 * size * np.finfo(float).eps * scale
    assert np.all(np.abs(kept @ kept.T - np.eye(rank)) <= unit / np.minimum.outer(mu, mu))
    residual = np.linalg.norm(matrix @ kept.T - kept.T * mu, axis=0)
    assert np.all(residual <= unit * np.sqrt(scale / mu))


@pytest.mark.parametrize('size', [1, 3, 9, 32])
def test_at_full_rank_it_is_the_symmetric_eigen_decomposition_to_the_bit(size):
    matrix = gram(np.random.default_rng(size), size, size, spread=3.0)
    values, vectors = np.empty(size), np.empty((size, size))
    symmetric_eigen(matrix.copy(), values, vectors)
    rank, found_values, found_vectors = decomposed(matrix)
    assert rank == size
    np.testing.assert_array_equal(found_values, values)
    np.testing.assert_array_equal(found_vectors, vectors)


def test_the_pivoted_factor_reproduces_the_matrix_and_stops_at_its_rank():
    rng = np.random.default_rng(3)
    for size, rank in ((6, 0), (6, 3), (32, 14), (32, 17), (9, 9)):
        matrix = gram(rng, size, rank)
        factor = np.full((size, size), np.nan)
        found = pivoted_cholesky(np.ascontiguousarray(matrix), factor)
        assert found == rank
        assert not factor[:, rank:].any()
        np.testing.assert_allclose(factor @ factor.T, matrix, atol=1e-14 * size)


def test_rounding_below_the_last_pivot_is_left_out_and_a_zero_matrix_has_rank_0():
    """Φ = G Gᵀ + rounding-sized noise: the rank of G, the noise in the zero directions."""
    rng = np.random.default_rng(8)
    matrix = gram(rng, 12, 5)
    noise = rng.standard_normal((12, 12)) * 1e-17
    rank, values, _ = decomposed(matrix + noise + noise.T)
    assert rank == 5 and not values[:7].any()
    rank, values, vectors = decomposed(np.zeros((4, 4)))
    assert rank == 0 and not values.any() and not vectors.any()
    assert decomposed(np.zeros((0, 0)))[0] == 0


@pytest.mark.parametrize('scale', [1e-30, 1e-12, 1.0, 1e12])
def test_the_rank_and_the_spectrum_do_not_depend_on_the_unit(scale):
    """The stopping pivot is relative to the matrix (m ε max diag), not an absolute number."""
    matrix = gram(np.random.default_rng(4), 10, 4, spread=3.0)
    rank, values, _ = decomposed(scale * matrix)
    reference_rank, reference_values, _ = decomposed(matrix)
    assert rank == reference_rank == 4
    np.testing.assert_allclose(values, scale * reference_values, rtol=1e-12, atol=0.0)
