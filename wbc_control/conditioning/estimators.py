"""Conditioning diagnostics of the joint-space inertia matrix M (Shah & Saha 2013).

An ill-conditioned M magnifies small errors in the generalized forces into large errors in the
joint accelerations (Shah & Saha 2013, eq 4), so its 2-norm condition number kappa (eq 6) is worth
watching. The exact kappa needs a symmetric eigen-solve; the paper's cheap estimate is the diagonal
ratio scaled by its value at an anchor sample, where an exact kappa was computed (eq 15). This
module gives both, and an estimator that runs the estimate every sample and the eigen-solve at a
lower rate.

M may be any array-like square matrix; a float64 array is read in place, never copied.
"""

import math
import numbers
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from wbc_control.exceptions import InvalidShape, InvalidValue

# M is symmetric by construction (pinocchio's crba fills both triangles); a larger mismatch means
# a caller passed something else, such as a single triangle from an older pinocchio.
_SYMMETRY_RTOL = 1e-9
# The ufuncs' reductions: `ndarray.min` / `max` add a Python wrapper to each call.
_MIN, _MAX = np.minimum.reduce, np.maximum.reduce
_FLOAT = np.dtype(float)
# Sample times are sums or products of decimal steps; without this slack a period of 0.5 s sampled
# every 10 ms would fire one sample late whenever the time of the 50th sample lands below 0.5.
_TIME_TOLERANCE_S = 1e-9


class SpectralCondition(NamedTuple):
    """Extreme eigenvalues of M and its 2-norm condition number (Shah & Saha 2013, eq 6)."""

    lambda_min: float
    lambda_max: float
    condition_number: float


class ConditioningEstimate(NamedTuple):
    """One sample of :class:`ScaledDiagonalRatioEstimator`.

    Attributes:
        diagonal_ratio: delta = max M_ii / min M_ii of this sample.
        scaled_diagonal_ratio: delta_s = alpha * delta, the estimate of kappa (Shah & Saha 2013,
            eq 15); on an anchored sample it is the exact kappa itself.
        alpha: Scale factor kappa / delta of the latest anchor, in force after this sample.
        condition_number: Exact kappa if it was computed on this sample, else None.
        lambda_min: Smallest eigenvalue of M if computed on this sample, else None.
        lambda_max: Largest eigenvalue of M if computed on this sample, else None.
        estimate_relative_error: |delta_s - kappa| / kappa with the alpha in force before this
            sample, when an exact kappa was computed on this sample and an earlier anchor existed;
            else None.
        anchored: True if alpha was (re-)anchored on this sample.
    """

    diagonal_ratio: float
    scaled_diagonal_ratio: float
    alpha: float
    condition_number: float | None
    lambda_min: float | None
    lambda_max: float | None
    estimate_relative_error: float | None
    anchored: bool


def condition_number(inertia: npt.ArrayLike) -> SpectralCondition:
    """Compute kappa_2(M) = lambda_max / lambda_min by an eigen-solve (Shah & Saha 2013, eq 6).

    For a symmetric positive-definite M the singular values are the eigenvalues, so eq (5) becomes
    eq (6).

    Args:
        inertia: Symmetric positive-definite matrix, (n, n).

    Returns:
        The extreme eigenvalues and their ratio kappa_2 >= 1.

    Raises:
        InvalidShape: If ``inertia`` is not a non-empty square matrix.
        InvalidValue: If it is non-finite, not symmetric or not positive definite.
    """
    matrix = _checked_symmetric(inertia)
    eigenvalues = np.linalg.eigvalsh(matrix)  # ascending
    lambda_min, lambda_max = float(eigenvalues[0]), float(eigenvalues[-1])
    if not lambda_min > 0.0:
        raise InvalidValue(
            f'M is not positive definite: its smallest eigenvalue is {lambda_min:.6g}'
        )
    kappa = lambda_max / lambda_min
    if not math.isfinite(kappa):
        raise InvalidValue(
            f'M is numerically singular: lambda_max / lambda_min = {lambda_max:.6g} / '
            f'{lambda_min:.6g} overflows'
        )
    return SpectralCondition(lambda_min, lambda_max, kappa)


def diagonal_ratio(inertia: npt.ArrayLike) -> float:
    """Compute the diagonal ratio delta = max M_ii / min M_ii (Shah & Saha 2013, section 4).

    The paper writes delta = I_11 / I_nn for a serial chain, whose first diagonal element is the
    largest and last the smallest; max / min equals that there and extends to trees. Since
    lambda_min <= M_ii <= lambda_max, delta <= kappa_2 always. Only the diagonal is read, so this
    costs O(n) and does not detect an indefinite M whose diagonal is positive.

    Args:
        inertia: Square matrix with a positive diagonal, (n, n).

    Returns:
        delta >= 1.

    Raises:
        InvalidShape: If ``inertia`` is not a non-empty square matrix.
        InvalidValue: If a diagonal element is non-finite or not positive.
    """
    diagonal = _as_square(inertia).diagonal()
    smallest, largest = _MIN(diagonal), _MAX(diagonal)  # NaN propagates: fails the test below
    if not (smallest > 0.0 and largest < math.inf):
        raise InvalidValue(
            f'M must have a finite positive diagonal, got min {smallest:.6g}, max {largest:.6g}'
        )
    return float(largest / smallest)


def pivot_ratio(inertia: npt.ArrayLike) -> float:
    """Compute the pivot ratio of M: largest over smallest pivot of Gaussian elimination.

    Included only as Shah & Saha 2013's NEGATIVE result: the paper (section 4, Fig. 4) shows that
    the pivot ratio of Mittra and Klein does not follow the trend of the condition number of a
    serial chain's inertia matrix. Do not use it to estimate kappa; use :func:`diagonal_ratio`
    scaled as in :class:`ScaledDiagonalRatioEstimator`.

    The pivots of elimination without pivoting are the diagonal of D in M = L D L^T, obtained from
    the Cholesky factor M = C C^T as diag(C)^2.

    Args:
        inertia: Symmetric positive-definite matrix, (n, n).

    Returns:
        max pivot / min pivot >= 1.

    Raises:
        InvalidShape: If ``inertia`` is not a non-empty square matrix.
        InvalidValue: If it is non-finite, not symmetric or not positive definite.
    """
    matrix = _checked_symmetric(inertia)
    try:
        cholesky_factor = np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError as error:
        raise InvalidValue('M is not positive definite: its Cholesky factor fails') from error
    pivots = np.square(np.diagonal(cholesky_factor))
    return float(pivots.max() / pivots.min())


class ScaledDiagonalRatioEstimator:
    """Estimate kappa_2(M) every sample by the scaled diagonal ratio (Shah & Saha 2013, eq 15).

    delta_s = alpha * delta with alpha = kappa(t0) / delta(t0), anchored at the first sample, so
    that delta_s equals kappa there. Two optional periods add exact eigen-solves:

    - ``rescale_period_s`` re-anchors alpha with the exact kappa once that much time has passed
      since the last anchor (0: never, the paper's estimator);
    - ``exact_period_s`` computes the exact kappa, without re-anchoring, to publish it and the
      error of the estimate at a lower rate than delta_s (0: only when anchoring).

    ``update(..., force_exact=True)`` computes the exact kappa on that sample regardless. On
    samples without an exact kappa the cost is one pass over the diagonal of M.
    """

    def __init__(self, rescale_period_s: float = 0.0, exact_period_s: float = 0.0) -> None:
        self._rescale_period_s = _checked_period('rescale_period_s', rescale_period_s)
        self._exact_period_s = _checked_period('exact_period_s', exact_period_s)
        self.reset()

    @property
    def rescale_period_s(self) -> float:
        """Period of re-anchoring alpha in seconds, 0 for never."""
        return self._rescale_period_s

    @property
    def exact_period_s(self) -> float:
        """Period of exact kappa evaluations in seconds, 0 for only when anchoring."""
        return self._exact_period_s

    @property
    def alpha(self) -> float | None:
        """Scale factor in force, None before the first sample."""
        return self._alpha

    def reset(self) -> None:
        """Forget the anchor and the clock: the next sample anchors alpha again."""
        self._alpha: float | None = None
        self._last_t_s: float | None = None
        self._anchor_t_s = -math.inf
        self._exact_t_s = -math.inf

    def update(
        self, inertia: npt.ArrayLike, t_s: float, force_exact: bool = False
    ) -> ConditioningEstimate:
        """Add the sample M(t_s) and return the estimate of its condition number.

        Args:
            inertia: Inertia matrix at time ``t_s``, (n, n), symmetric positive definite.
            t_s: Sample time in seconds, finite and not earlier than the previous sample.
            force_exact: Compute the exact kappa on this sample even if no period is due.

        Returns:
            The sample's diagonal ratio, scaled diagonal ratio and, when computed, exact kappa.

        Raises:
            InvalidShape: If ``inertia`` is not a non-empty square matrix.
            InvalidValue: If M's diagonal is not finite and positive, if an exact kappa is due and
                M is not symmetric positive definite, or if ``t_s`` is not finite or goes back in
                time (call :meth:`reset` after a clock jump).
        """
        self._advance_clock(t_s)
        ratio = diagonal_ratio(inertia)
        anchor_due = self._alpha is None or _elapsed(self._rescale_period_s, self._anchor_t_s, t_s)
        exact_due = force_exact or _elapsed(self._exact_period_s, self._exact_t_s, t_s)
        if not (anchor_due or exact_due):
            return ConditioningEstimate(
                diagonal_ratio=ratio,
                scaled_diagonal_ratio=self._alpha * ratio,
                alpha=self._alpha,
                condition_number=None,
                lambda_min=None,
                lambda_max=None,
                estimate_relative_error=None,
                anchored=False,
            )
        return self._exact_sample(inertia, t_s, ratio, anchor_due)

    def _exact_sample(
        self, inertia: npt.ArrayLike, t_s: float, ratio: float, anchor: bool
    ) -> ConditioningEstimate:
        spectrum = condition_number(inertia)
        kappa = spectrum.condition_number
        self._exact_t_s = t_s
        error = None
        if self._alpha is not None:
            error = abs(self._alpha * ratio - kappa) / kappa
        if anchor:
            self._alpha = kappa / ratio
            self._anchor_t_s = t_s
        scaled = kappa if anchor else self._alpha * ratio
        return ConditioningEstimate(
            diagonal_ratio=ratio,
            scaled_diagonal_ratio=scaled,
            alpha=self._alpha,
            condition_number=kappa,
            lambda_min=spectrum.lambda_min,
            lambda_max=spectrum.lambda_max,
            estimate_relative_error=error,
            anchored=anchor,
        )

    def _advance_clock(self, t_s: float) -> None:
        if not math.isfinite(t_s):
            raise InvalidValue(f't_s must be finite, got {t_s!r}')
        if self._last_t_s is not None and t_s < self._last_t_s:
            raise InvalidValue(
                f't_s went back in time from {self._last_t_s!r} to {t_s!r}; call reset() after a '
                'clock jump'
            )
        self._last_t_s = t_s


def _elapsed(period_s: float, since_t_s: float, t_s: float) -> bool:
    return period_s > 0.0 and t_s - since_t_s >= period_s - _TIME_TOLERANCE_S


def _checked_period(name: str, period_s: float) -> float:
    valid = isinstance(period_s, numbers.Real) and not isinstance(period_s, bool)
    if not (valid and math.isfinite(period_s) and period_s >= 0.0):
        raise InvalidValue(f'{name} must be finite and >= 0 (0 disables it), got {period_s!r}')
    return float(period_s)


def _as_square(inertia: npt.ArrayLike) -> np.ndarray:
    # A float64 array as is: the diagonal ratio is meant to cost next to nothing.
    is_float_array = type(inertia) is np.ndarray and inertia.dtype == _FLOAT
    matrix = inertia if is_float_array else np.asarray(inertia, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise InvalidShape(f'M must be a non-empty square matrix, got shape {matrix.shape}')
    return matrix


def _checked_symmetric(inertia: npt.ArrayLike) -> np.ndarray:
    matrix = _as_square(inertia)
    if not np.all(np.isfinite(matrix)):
        raise InvalidValue('M has non-finite entries')
    asymmetry = np.max(np.abs(matrix - matrix.T))
    if asymmetry > _SYMMETRY_RTOL * np.max(np.abs(matrix)):
        raise InvalidValue(
            f'M is not symmetric: max |M - M^T| = {asymmetry:.6g}; pass the full matrix, not '
            'one triangle'
        )
    return matrix
