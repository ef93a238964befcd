"""Dagger terms of the constrained-dynamics block matrix: a reference the tests hold to Johnson.

The controller solves contacts inside its hierarchical least squares
(`wbc_control.control.hierarchy.cascade`) and calls none of this; tests use it as the
independent contact dynamics of the equality case.

Equation numbers are those of A. M. Johnson, "Block Matrix Solutions" (2024 lecture notes).
Rigid contacts add the velocity constraint A q̇ = 0 to the equations of motion
M q̈ + C q̇ + N + Aᵀ λ = Υ (Johnson 2024, eqs 18-19). Both together give the block matrix
[M Aᵀ; A 0], whose inverse is written with the dagger terms (Johnson 2024, eq 5)::

    [M†  A†ᵀ]   [M  Aᵀ]⁻¹
    [A†  Λ† ] = [A  0 ]

M† is the inverse inertia in the constrained space, A† the mass-weighted left pseudoinverse of Aᵀ
and Λ† = -(A M⁻¹ Aᵀ)⁻¹ when M is invertible (Johnson 2024, eqs 6-8). The terms exist whenever
the block matrix is invertible (Johnson 2024, eq 32), even where M is singular (massless links,
Johnson 2024, eqs 30-34).

Sign convention (Johnson 2024, eq 18): λ enters as +Aᵀ λ on the left-hand side, so the
generalized force the constraint exerts on the robot is -Aᵀ λ.
"""

from dataclasses import dataclass
from typing import Literal, NamedTuple
import warnings

import numpy as np
import numpy.typing as npt
from scipy.linalg import LinAlgError, LinAlgWarning, cho_factor, cho_solve, lu_factor, lu_solve
from scipy.linalg.lapack import get_lapack_funcs

from wbc_control.exceptions import InvalidShape, InvalidValue, SingularConstraint
from wbc_control.model.robot_state import RobotState

Method = Literal['auto', 'schur', 'block_lu']

# 'auto' uses the Schur path only if M's Jacobi-scaled reciprocal condition estimate reaches this:
# beyond κ ≈ 1e8 forming M⁻¹ loses more digits than factoring the block matrix does.
SCHUR_MIN_RCOND = 1e-8

# Reciprocal condition estimate (of the equilibrated block matrix, or of A M⁻¹ Aᵀ) below which the
# block matrix is treated as singular: the dagger terms would carry no correct digit.
SINGULAR_RCOND = 1e-12

# Relative tolerance on max |M - Mᵀ| / max |M| before M is rejected as not symmetric.
SYMMETRY_RTOL = 1e-8

_METHODS = ('auto', 'schur', 'block_lu')


@dataclass(frozen=True)
class DaggerTerms:
    """Blocks of the inverse block matrix [M Aᵀ; A 0]⁻¹ (Johnson 2024, eq 5).

    The arrays are read-only.

    Attributes:
        m_dagger: M†, (n, n); symmetric positive semi-definite of nullity m (Johnson 2024,
            eq 16).
        a_dagger: A†, (m, n); A A†ᵀ = I, the mass-weighted left pseudoinverse of Aᵀ (Johnson
            2024, eq 13).
        lambda_dagger: Λ†, (m, m); symmetric negative semi-definite with the nullity of M
            (Johnson 2024, eq 17).
        method: 'schur' (Cholesky of M, Johnson 2024, eqs 6-8) or 'block_lu' (LU of the block
            matrix).
    """

    m_dagger: np.ndarray
    a_dagger: np.ndarray
    lambda_dagger: np.ndarray
    method: str


class ConstrainedAccelerations(NamedTuple):
    """Solution of the constrained equations of motion (Johnson 2024, eq 22).

    Attributes:
        qdd: Generalized accelerations q̈, (n,).
        lam: Constraint multipliers λ, (m,), with the sign of Johnson 2024, eq 18 (+Aᵀ λ on
            the left).
    """

    qdd: np.ndarray
    lam: np.ndarray


class _ScaledCholesky(NamedTuple):
    """Cholesky factor of s S s, s = diag(S)^(-1/2), and its reciprocal condition estimate."""

    factor: tuple[np.ndarray, bool]
    scale: np.ndarray  # (k,)
    rcond: float

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """Return S⁻¹ rhs for rhs of shape (k, r)."""
        scale = self.scale[:, None]  # (k, 1)
        return scale * cho_solve(self.factor, scale * rhs, check_finite=False)


def dagger_terms(
    M: npt.ArrayLike,
    A: npt.ArrayLike,
    *,
    method: Method = 'auto',
) -> DaggerTerms:
    """Compute the dagger terms M†, A†, Λ† of [M Aᵀ; A 0] (Johnson 2024, eq 5).

    Two paths give the same terms:

    - 'schur': Cholesky of M, then the Schur complement S_M = -A M⁻¹ Aᵀ (Johnson 2024, eqs 3,
      6-8), with M† = M⁻¹ (I - Aᵀ A†) from solves against the factor (M⁻¹ is never formed).
      Needs M positive definite.
    - 'block_lu': LU of the symmetrically equilibrated block matrix. Works whenever the block
      matrix is invertible, including singular M whose null space the constraints cover
      (massless links, Johnson 2024, eqs 30-34).

    Choice rule of 'auto': take 'schur' if the Cholesky factorization of the Jacobi-scaled M
    (diag(M)^(-1/2) M diag(M)^(-1/2)) succeeds and its LAPACK reciprocal condition estimate
    (xPOCON, 1-norm) is at least SCHUR_MIN_RCOND; otherwise take 'block_lu'. The Jacobi scaling
    makes the check unit-independent, and it is the scaled condition number that bounds the
    accuracy of a Cholesky solve (van der Sluis). With M that well conditioned, the block matrix is
    singular exactly when A M⁻¹ Aᵀ is, so a rank-deficient A raises from the Schur path.

    Args:
        M: Symmetric mass matrix, (n, n). Positive definite for 'schur'; may be singular for
            'block_lu' as long as condition Johnson 2024, eq 32, holds.
        A: Constraint Jacobian, (m, n), 1 <= m <= n, full row rank.
        method: 'auto', 'schur' or 'block_lu'.

    Returns:
        The dagger terms, with the path actually taken in `method`.

    Raises:
        InvalidShape: M is not square or A does not have n columns and at least one row.
        InvalidValue: Non-finite entries, M not symmetric, an unknown method, or method='schur'
            with an M that is not positive definite.
        SingularConstraint: The block matrix is not invertible (Johnson 2024, eq 32 fails, A is
            rank deficient, or m > n), judged by a reciprocal condition estimate below
            SINGULAR_RCOND.
    """
    if method not in _METHODS:
        raise InvalidValue(f'method must be one of {_METHODS}, got {method!r}')
    mass, jacobian = _validated_system(M, A)
    if method == 'block_lu':
        return _block_lu_terms(mass, jacobian)
    mass_cholesky = _scaled_cholesky(mass)
    if method == 'schur':
        if mass_cholesky is None:
            raise InvalidValue(
                f"method='schur' needs a positive definite M, but M {mass.shape} is not; "
                "use method='block_lu' or 'auto'"
            )
        return _schur_terms(mass, jacobian, mass_cholesky)
    if mass_cholesky is not None and mass_cholesky.rcond >= SCHUR_MIN_RCOND:
        return _schur_terms(mass, jacobian, mass_cholesky)
    return _block_lu_terms(mass, jacobian)


def constrained_accelerations(
    terms: DaggerTerms,
    tau_minus_h: npt.ArrayLike,
    a_dot_qdot: npt.ArrayLike,
) -> ConstrainedAccelerations:
    """Solve the constrained equations of motion with the dagger terms (Johnson 2024, eq 22).

    q̈ = M† (Υ - C q̇ - N) - A†ᵀ Ȧ q̇ and λ = A† (Υ - C q̇ - N) - Λ† Ȧ q̇, so that
    M q̈ + Aᵀ λ = Υ - C q̇ - N and A q̈ + Ȧ q̇ = 0 (Johnson 2024, eqs 18-20). Equal to the traditional
    solution, Johnson 2024, eqs 23-24, when M is invertible.

    Args:
        terms: Dagger terms from `dagger_terms`.
        tau_minus_h: Υ - C q̇ - N, (n,): applied torques minus Coriolis and gravity terms.
        a_dot_qdot: Constraint drift Ȧ q̇, (m,).

    Returns:
        The accelerations q̈ (n,) and constraint multipliers λ (m,).

    Raises:
        InvalidShape: A vector has the wrong length.
        InvalidValue: A vector has non-finite entries.
    """
    n, m = terms.m_dagger.shape[0], terms.lambda_dagger.shape[0]
    force = _validated_vector('tau_minus_h', tau_minus_h, n)  # (n,)
    drift = _validated_vector('a_dot_qdot', a_dot_qdot, m)  # (m,)
    qdd = terms.m_dagger @ force - terms.a_dagger.T @ drift  # (n,)
    lam = terms.a_dagger @ force - terms.lambda_dagger @ drift  # (m,)
    return ConstrainedAccelerations(qdd, lam)


def constraint_null_space_projector(terms: DaggerTerms, M: npt.ArrayLike) -> np.ndarray:
    """Dynamically consistent null-space projector of the constraint (Johnson 2024, eq 10).

    N_c = M† M = I - A†ᵀ A. It removes from a velocity every component that violates the
    constraint (A N_c = 0, Johnson 2024, eq 12) and leaves constraint-consistent velocities
    unchanged (N_c q̇ = q̇ when A q̇ = 0). It is the M-orthogonal projector: N_c² = N_c and M N_c is
    symmetric.

    Args:
        terms: Dagger terms from `dagger_terms` for this M.
        M: The mass matrix the terms were computed from, (n, n).

    Returns:
        N_c, (n, n).

    Raises:
        InvalidShape: M is not (n, n) with the n of `terms`.
        InvalidValue: M has non-finite entries.
    """
    n = terms.m_dagger.shape[0]
    mass = _validated_array('M', M, ndim=2)
    if mass.shape != (n, n):
        raise InvalidShape(f'M must be ({n}, {n}) to match the dagger terms, got {mass.shape}')
    return terms.m_dagger @ mass  # (n, n)


def _schur_terms(M: np.ndarray, A: np.ndarray, mass_cholesky: _ScaledCholesky) -> DaggerTerms:
    """Dagger terms from the Schur complement of M (Johnson 2024, eqs 3, 6-8)."""
    n, m = M.shape[0], A.shape[0]
    m_inv_at = mass_cholesky.solve(A.T)  # (n, m)
    delassus_cholesky = _scaled_cholesky(_symmetrized(A @ m_inv_at))  # A M⁻¹ Aᵀ = -S_M, (m, m)
    rcond = delassus_cholesky.rcond if delassus_cholesky is not None else 0.0
    if rcond < SINGULAR_RCOND:
        raise SingularConstraint(
            f'A {A.shape} is rank deficient: A M⁻¹ Aᵀ ({m}, {m}) is singular (reciprocal '
            f'condition estimate {rcond:.3g} < {SINGULAR_RCOND:g}), so the block matrix '
            '[M Aᵀ; A 0] is not invertible'
        )
    a_dagger = delassus_cholesky.solve(m_inv_at.T)  # (m, n), eq 7
    m_dagger = mass_cholesky.solve(np.eye(n) - A.T @ a_dagger)  # (n, n), eq 6
    lambda_dagger = -delassus_cholesky.solve(np.eye(m))  # (m, m), eq 8
    return _frozen_terms(_symmetrized(m_dagger), a_dagger, _symmetrized(lambda_dagger), 'schur')


def _block_lu_terms(M: np.ndarray, A: np.ndarray) -> DaggerTerms:
    """Dagger terms from an LU factorization of the whole block matrix (Johnson 2024, eq 5)."""
    n, m = M.shape[0], A.shape[0]
    block = np.block([[M, A.T], [A, np.zeros((m, m))]])  # (n + m, n + m)
    row_max = np.abs(block).max(axis=1)  # (n + m,)
    if np.any(row_max == 0.0):
        raise SingularConstraint(_zero_row_message(row_max == 0.0, n))
    scale = 1.0 / np.sqrt(row_max)  # (n + m,), symmetric equilibration keeps the structure
    scaled = scale[:, None] * block * scale[None, :]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', LinAlgWarning)
        lu_piv = lu_factor(scaled, check_finite=False)
    (gecon,) = get_lapack_funcs(('gecon',), (lu_piv[0],))
    rcond, _ = gecon(lu_piv[0], np.linalg.norm(scaled, 1))
    if not rcond >= SINGULAR_RCOND:
        raise SingularConstraint(
            f'block matrix [M Aᵀ; A 0] ({n + m}, {n + m}) with M {M.shape} and A {A.shape} is '
            f'singular (reciprocal condition estimate {rcond:.3g} < {SINGULAR_RCOND:g}): some '
            'velocity with A q̇ = 0 has M q̇ = 0 (Johnson 2024, eq 32), or A is rank deficient'
        )
    inverse = scale[:, None] * lu_solve(lu_piv, np.diag(scale), check_finite=False)
    a_dagger = 0.5 * (inverse[n:, :n] + inverse[:n, n:].T)  # (m, n)
    return _frozen_terms(
        _symmetrized(inverse[:n, :n]), a_dagger, _symmetrized(inverse[n:, n:]), 'block_lu'
    )


def _zero_row_message(zero_rows: np.ndarray, n: int) -> str:
    """Explain which rows of the block matrix are zero (zero_rows: (n + m,) bool)."""
    size = zero_rows.size
    reasons = []
    if zero_rows[:n].any():
        coordinates = np.flatnonzero(zero_rows[:n]).tolist()
        reasons.append(
            f'coordinate(s) {coordinates} have neither mass nor constraint (Johnson 2024, eq 32)'
        )
    if zero_rows[n:].any():
        reasons.append(f'constraint row(s) {np.flatnonzero(zero_rows[n:]).tolist()} of A are zero')
    detail = '; '.join(reasons)
    return f'block matrix [M Aᵀ; A 0] ({size}, {size}) is singular: {detail}'


def _scaled_cholesky(sym: np.ndarray) -> _ScaledCholesky | None:
    """Cholesky of a Jacobi-scaled symmetric matrix; None if it is not positive definite."""
    diagonal = np.diag(sym)  # (k,)
    if np.any(diagonal <= 0.0):
        return None
    scale = 1.0 / np.sqrt(diagonal)
    scaled = scale[:, None] * sym * scale[None, :]
    try:
        factor = cho_factor(scaled, check_finite=False)
    except LinAlgError:
        return None
    (pocon,) = get_lapack_funcs(('pocon',), (factor[0],))
    rcond, _ = pocon(factor[0], np.linalg.norm(scaled, 1), uplo='L' if factor[1] else 'U')
    return _ScaledCholesky(factor, scale, float(rcond))


def _validated_system(M: npt.ArrayLike, A: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Check shapes, finiteness, symmetry and m <= n; return float arrays with M symmetrized."""
    mass = _validated_array('M', M, ndim=2)
    n = mass.shape[0]
    if mass.shape != (n, n) or n == 0:
        raise InvalidShape(f'M must be square (n, n) with n >= 1, got shape {mass.shape}')
    jacobian = _validated_array('A', A, ndim=2)
    if jacobian.shape[1] != n or jacobian.shape[0] == 0:
        raise InvalidShape(
            f'A must be (m, {n}) with m >= 1 to match M {mass.shape}, got shape {jacobian.shape}'
        )
    asymmetry = np.abs(mass - mass.T).max()
    if asymmetry > SYMMETRY_RTOL * np.abs(mass).max():
        raise InvalidValue(f'M {mass.shape} is not symmetric: max |M - Mᵀ| = {asymmetry:.3g}')
    if jacobian.shape[0] > n:
        raise SingularConstraint(
            f'A {jacobian.shape} has more constraints (m={jacobian.shape[0]}) than coordinates '
            f'(n={n}), so it cannot have full row rank and [M Aᵀ; A 0] is singular'
        )
    return _symmetrized(mass), jacobian


def _validated_vector(name: str, value: npt.ArrayLike, length: int) -> np.ndarray:
    """Return `value` as a finite float vector of the given length."""
    vector = _validated_array(name, value, ndim=1)
    if vector.shape != (length,):
        raise InvalidShape(f'{name} must have shape ({length},), got {vector.shape}')
    return vector


def _validated_array(name: str, value: npt.ArrayLike, *, ndim: int) -> np.ndarray:
    """Return `value` as a finite float64 array with `ndim` dimensions."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InvalidValue(f'{name} must be a real numeric array: {error}') from error
    if array.ndim != ndim:
        raise InvalidShape(f'{name} must be {ndim}-D, got shape {array.shape}')
    if not np.all(np.isfinite(array)):
        raise InvalidValue(f'{name} {array.shape} contains NaN or Inf')
    return array


def _symmetrized(matrix: np.ndarray) -> np.ndarray:
    """Return (X + Xᵀ) / 2: removes rounding asymmetry from symmetric results."""
    return 0.5 * (matrix + matrix.T)


def _frozen_terms(
    m_dagger: np.ndarray, a_dagger: np.ndarray, lambda_dagger: np.ndarray, method: str
) -> DaggerTerms:
    """Build read-only DaggerTerms from freshly computed arrays."""
    for block in (m_dagger, a_dagger, lambda_dagger):
        block.setflags(write=False)
    return DaggerTerms(m_dagger, a_dagger, lambda_dagger, method)


def schur_dagger_terms(
    state: RobotState,
    constraint: np.ndarray,
    out: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, str] | None:
    """M† and A†ᵀ by the Schur complement of M (Johnson 2024, eqs 6-7), from the tick's Cholesky.

    With X = M⁻¹Aᵀ and the Delassus matrix D = A M⁻¹ Aᵀ::

        A†ᵀ = X D⁻¹ (eq 7),   M† = M⁻¹ − A†ᵀ Xᵀ (eq 6)

    These are the terms `dagger_terms` computes on its 'schur' path; this one reuses the M⁻¹
    that `RobotState` forms once per tick from its Cholesky factor (`schur_terms`). It declines
    (returns None)
    unless M and D are positive definite and provably well conditioned,
    κ₂ ≤ 1 / `SCHUR_MIN_RCOND`, where forming M⁻¹ keeps enough digits: the caller then uses
    the block matrix. The proof is the bound κ₂(S) ≤ tr(S) tr(S⁻¹) of a symmetric positive
    definite S (λ_max ≤ tr S and 1/λ_min ≤ tr S⁻¹), two traces of matrices formed anyway.

    Args:
        state: this tick's robot state.
        constraint: A, `(m, nv)`.
        out: buffers for M† `(nv, nv)` and A†ᵀ `(nv, m)`, C-ordered; None: new arrays.

    Returns:
        `(M†, A†ᵀ, 'schur')`, `(nv, nv)` and `(nv, m)`, or None.
    """
    try:
        inverse_mass = state.inverse_mass_matrix  # (nv, nv) M⁻¹
    except InvalidValue:  # M is not positive definite
        return None
    if out is None:
        nv, rows = inverse_mass.shape[0], constraint.shape[0]
        out = np.empty((nv, nv)), np.empty((nv, rows))
    m_dagger, a_dagger_t = out
    done = schur_terms(
        state.mass_matrix, inverse_mass, constraint, SCHUR_MIN_RCOND, m_dagger, a_dagger_t
    )
    return (m_dagger, a_dagger_t, 'schur') if done else None


def schur_terms(mass, inverse_mass, constraint, min_rcond, m_dagger, a_dagger_t) -> bool:
    """Write M† and A†ᵀ by the Schur complement of M (Johnson 2024, eqs 6-7); whether it did.

    With X = M⁻¹Aᵀ and the Delassus matrix D = A M⁻¹ Aᵀ: A†ᵀ = X D⁻¹ (eq 7), M† = M⁻¹ − A†ᵀ Xᵀ
    (eq 6). Declines (False, the outputs not written) unless M and D are positive definite with
    tr(S) tr(S⁻¹) ≤ 1 / `min_rcond`, the proof that κ₂(S) is small enough for M⁻¹ and D⁻¹.
    """
    if not np.trace(mass) * np.trace(inverse_mass) * min_rcond <= 1.0:
        return False
    inverse_mass_at = inverse_mass @ constraint.T  # X
    delassus = constraint @ inverse_mass_at  # D
    try:
        inverse_factor = np.linalg.inv(np.linalg.cholesky(delassus))  # L⁻¹
    except np.linalg.LinAlgError:
        return False
    if not np.trace(delassus) * np.sum(inverse_factor**2) * min_rcond <= 1.0:
        return False
    a_dagger_t[:] = inverse_mass_at @ (inverse_factor.T @ inverse_factor)
    m_dagger[:] = inverse_mass - a_dagger_t @ inverse_mass_at.T
    return True
