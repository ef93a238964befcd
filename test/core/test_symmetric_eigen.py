"""The compiled symmetric eigen-decomposition against LAPACK and the eigen equation.

`symmetric_eigen` (tred2 then tql2, Wilkinson & Reinsch 1971) must give A = Vᵀ diag(λ) V with V
orthogonal and λ ascending, for every symmetric matrix a task level can produce: dense, already
diagonal or tridiagonal (nothing to reduce), block-diagonal (the QL sweep splits), with repeated
or zero eigenvalues, and with eigenvalues spread over many orders of magnitude. Its reference
is `numpy.linalg.eigh` (LAPACK), an independent implementation. Eigenvectors of a repeated
eigenvalue are not unique, so they are checked through A vᵢ = λᵢ vᵢ and orthogonality.
"""

import numpy as np
import pytest

from wbc_control.control.symmetric_eigen import symmetric_eigen

#: Backward error of a stable symmetric eigensolver: a few n·ε relative to ‖A‖ (Wilkinson &
#: Reinsch 1971, II/2 and II/3); 1e-13 leaves room for n up to 40.
RELATIVE = 1e-13


def decomposed(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(λ, V) of `matrix` by `symmetric_eigen`, on a copy."""
    size = len(matrix)
    values, vectors = np.full(size, np.nan), np.full((size, size), np.nan)
    symmetric_eigen(np.array(matrix, dtype=float, order='C'), values, vectors)
    return values, vectors


def assert_decomposes(matrix: np.ndarray) -> None:
    """λ as LAPACK's, ascending; V orthogonal; A vᵢ = λᵢ vᵢ; A = Vᵀ diag(λ) V."""
    values, vectors = decomposed(matrix)
    scale = max(float(np.linalg.norm(matrix, 2)), 1e-300)
    size = len(matrix)
    assert np.all(np.diff(values) >= 0.0), values
    np.testing.assert_allclose(values, np.linalg.eigvalsh(matrix), rtol=0, atol=RELATIVE * scale)
    np.testing.assert_allclose(vectors @ vectors.T, np.eye(size), rtol=0, atol=RELATIVE)
    np.testing.assert_allclose(
        matrix @ vectors.T, vectors.T * values, rtol=0, atol=RELATIVE * scale
    )
    np.testing.assert_allclose(
        (vectors.T * values) @ vectors, matrix, rtol=0, atol=RELATIVE * scale
    )


def random_symmetric(rng: np.random.Generator, size: int) -> np.ndarray:
    """A dense symmetric matrix with normally distributed entries."""
    matrix = rng.standard_normal((size, size))
    return matrix + matrix.T


@pytest.mark.parametrize('size', [1, 2, 3, 4, 5, 8, 13, 24, 40])
def test_dense_matrices_decompose_like_lapack(size):
    rng = np.random.default_rng(size)
    for _ in range(5):
        assert_decomposes(random_symmetric(rng, size))


@pytest.mark.parametrize('size', [2, 3, 6, 12])
def test_positive_semidefinite_matrices_of_every_rank(size):
    """Φ-like matrices G Gᵀ of rank 0 to n: the zero eigenvalues stay at zero to round-off."""
    rng = np.random.default_rng(100 + size)
    for rank in range(size + 1):
        factor = rng.standard_normal((size, rank))
        matrix = factor @ factor.T
        assert_decomposes(matrix)
        if rank:
            values, _ = decomposed(matrix)
            assert np.all(np.abs(values[: size - rank]) <= RELATIVE * np.abs(matrix).max())


def test_diagonal_matrices_are_sorted_with_unit_vectors():
    """Nothing to reduce or iterate: λ is the sorted diagonal, V a signed permutation."""
    diagonal = np.array([3.0, -1.0, 7.0, 0.0, -4.0, 2.5])
    values, vectors = decomposed(np.diag(diagonal))
    np.testing.assert_array_equal(values, np.sort(diagonal))
    order = np.argsort(diagonal)
    np.testing.assert_array_equal(np.abs(vectors), np.eye(len(diagonal))[order])


def test_tridiagonal_and_block_diagonal_matrices():
    """Off-diagonal zeros split the QL sweep into blocks, including 1 × 1 blocks."""
    rng = np.random.default_rng(7)
    for size in (2, 3, 5, 9):
        main, off = rng.standard_normal(size), rng.standard_normal(size - 1)
        tridiagonal = np.diag(main) + np.diag(off, 1) + np.diag(off, -1)
        assert_decomposes(tridiagonal)
        split = tridiagonal.copy()
        split[size // 2, size // 2 - 1] = split[size // 2 - 1, size // 2] = 0.0
        assert_decomposes(split)
    blocks = np.zeros((7, 7))
    blocks[:3, :3] = random_symmetric(rng, 3)
    blocks[4:, 4:] = random_symmetric(rng, 3)
    blocks[3, 3] = -2.0
    assert_decomposes(blocks)
    assert_decomposes(blocks[::-1, ::-1].copy())


def test_repeated_eigenvalues():
    """The identity, a scaled identity, a projector and ±1 reflections: multiple eigenvalues."""
    rng = np.random.default_rng(3)
    basis, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    for matrix in (
        np.eye(5),
        -3.0 * np.eye(4),
        basis[:, :2] @ basis[:, :2].T,
        basis @ np.diag([1.0, 1.0, 1.0, -1.0, -1.0, 2.0]) @ basis.T,
        np.ones((4, 4)),
    ):
        assert_decomposes(matrix)


def test_eigenvalues_spread_over_many_orders_of_magnitude():
    """A scaled task inertia's spectrum near a singularity: 1 down to 1e-12, scaled by 1e±150.

    At 1e160 the squares in a rotation's norm would overflow: there hypot takes them. (Past
    about 1e±160 tred2 and tql2's own products leave the range of doubles; the scaled Φ a
    level decomposes has entries of the order of its weights.)
    """
    rng = np.random.default_rng(11)
    basis, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    spectrum = np.logspace(-12, 0, 8)
    for scale in (1e-150, 1e-6, 1.0, 1e6, 1e150, 1e160):
        assert_decomposes(scale * (basis * spectrum) @ basis.T)
        assert_decomposes(scale * (basis * -spectrum[::-1]) @ basis.T)


def test_only_the_lower_triangle_is_read():
    rng = np.random.default_rng(5)
    for size in (2, 4, 9):
        matrix = random_symmetric(rng, size)
        lower = np.tril(matrix) + np.triu(np.full((size, size), np.nan), 1)
        values, vectors = decomposed(lower)
        expected_values, expected_vectors = decomposed(matrix)
        np.testing.assert_array_equal(values, expected_values)
        np.testing.assert_array_equal(vectors, expected_vectors)
