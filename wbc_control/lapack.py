"""The package's dense factorisations, straight from LAPACK (resolved once, here).

numpy's and scipy's wrappers check, convert and dispatch on every call, which costs more than
the factorisation itself at a robot's sizes (a 32 x 32 Cholesky solve: 14 µs through numpy,
7 µs here). Used by the model (M's Cholesky factor, `model.robot_state`), the contacts' normal
equations (`control.contact.contacts`) and the cascade (`control.hierarchy.cascade`).
"""

from functools import cache

import numpy as np
from scipy.linalg.lapack import get_lapack_funcs

_POTRF, _POTRS, _POCON, _GEQP3, _ORGQR, _TRTRS = get_lapack_funcs(
    ('potrf', 'potrs', 'pocon', 'geqp3', 'orgqr', 'trtrs'), (np.zeros((1, 1)),)
)


def cholesky(matrix: np.ndarray) -> np.ndarray | None:
    """The upper Cholesky factor of a symmetric matrix, None if it is not positive definite.

    As scipy's `cho_factor`, the strictly lower triangle is left as the input's (not zeroed):
    `cholesky_solve` and `reciprocal_condition` read the upper one only.
    """
    factor, info = _POTRF(matrix, clean=False)
    return factor if info == 0 else None


def cholesky_solve(factor: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """A⁻¹ b from A's upper Cholesky factor."""
    return _POTRS(factor, rhs)[0]


def reciprocal_condition(factor: np.ndarray, matrix: np.ndarray) -> float:
    """LAPACK's estimate of 1 / κ₁(A) from A's Cholesky factor (Higham 2002, sec 15.3)."""
    norm = float(np.maximum.reduce(np.add.reduce(np.abs(matrix), axis=0)))  # ‖A‖₁
    return float(_POCON(factor, norm)[0])


def upper_transposed_solve(triangle: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The x of Rᵀ x = b, R upper triangular and non-singular (forward substitution)."""
    solution, info = _TRTRS(triangle, rhs, trans=1)
    if info != 0:  # pragma: no cover - a zero pivot: the caller's rank test excludes it
        raise ValueError(f'trtrs failed ({info})')
    return solution


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
    triangle = packed[:count]  # geqp3's own copy of A: zeroed in place, as np.triu would
    triangle[_below_diagonal(count, columns)] = 0.0
    return orthogonal, triangle, pivots - 1


@cache
def _below_diagonal(rows: int, columns: int) -> np.ndarray:
    """The mask of a rows x columns matrix's strictly lower triangle, read-only (shared)."""
    mask = np.tri(rows, columns, -1, dtype=bool)
    mask.flags.writeable = False
    return mask
