"""The cascade's dense factorisations, straight from LAPACK.

numpy's and scipy's wrappers check, convert and dispatch on every call, which costs more than
the factorisation itself at a robot's sizes (a 3 x 32 SVD: 15 µs through numpy, 8 µs here); the
cascade makes a dozen such calls per tick.
"""

import numpy as np
from scipy.linalg.lapack import get_lapack_funcs

_GESDD, _POTRF, _POTRS, _POCON, _GEQRF, _GEQP3, _ORGQR = get_lapack_funcs(
    ('gesdd', 'potrf', 'potrs', 'pocon', 'geqrf', 'geqp3', 'orgqr'), (np.zeros((1, 1)),)
)


def svd(matrix: np.ndarray, full: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(U, s, Vᵀ) of a non-empty matrix (divide and conquer, Golub & Van Loan 2013, sec 8.6)."""
    left, values, right_t, info = _GESDD(matrix, full_matrices=int(full))
    if info != 0:  # did not converge: numpy's driver reports it as an error
        return np.linalg.svd(matrix, full_matrices=full)
    return left, values, right_t


def cholesky(matrix: np.ndarray) -> np.ndarray | None:
    """The upper Cholesky factor of a symmetric matrix, None if it is not positive definite."""
    factor, info = _POTRF(matrix)
    return factor if info == 0 else None


def cholesky_solve(factor: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """A⁻¹ b from A's upper Cholesky factor."""
    return _POTRS(factor, rhs)[0]


def reciprocal_condition(factor: np.ndarray, matrix: np.ndarray) -> float:
    """LAPACK's estimate of 1 / κ₁(A) from A's Cholesky factor (Higham 2002, sec 15.3)."""
    return float(_POCON(factor, float(np.abs(matrix).sum(axis=0).max()))[0])


def pivoted_qr(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Q, R, p) of A[:, p] = Q R with Q square: QR with column pivoting.

    |Rᵢᵢ| falls, and the first r columns of Q span A's range where r of them are not
    negligible (a rank-revealing factorisation, Golub & Van Loan 2013, sec 5.4.2).
    """
    rows, columns = matrix.shape
    packed, pivots, reflectors, _, info = _GEQP3(matrix)
    if info != 0:  # pragma: no cover - only for invalid arguments
        raise ValueError(f'geqp3 failed ({info})')
    square = np.zeros((rows, rows))
    count = min(rows, columns)
    square[:, :count] = packed[:, :count]
    orthogonal, _, info = _ORGQR(square, reflectors)
    if info != 0:  # pragma: no cover - only for invalid arguments
        raise ValueError(f'orgqr failed ({info})')
    return orthogonal, np.triu(packed[:count]), pivots - 1


def orthonormal_range(matrix: np.ndarray) -> np.ndarray:
    """Q of A = Q R (thin, Householder): an orthonormal basis of A's range.

    A has full column rank (Golub & Van Loan 2013, sec 5.2).
    """
    packed, reflectors, _, info = _GEQRF(matrix)
    if info != 0:  # pragma: no cover - only for invalid arguments
        raise ValueError(f'geqrf failed ({info})')
    orthogonal, _, info = _ORGQR(packed[:, : matrix.shape[1]], reflectors)
    if info != 0:  # pragma: no cover - only for invalid arguments
        raise ValueError(f'orgqr failed ({info})')
    return orthogonal
