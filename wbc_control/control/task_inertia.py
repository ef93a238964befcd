"""Regularized task-space inertia Λ = (J M⁻¹ Jᵀ)⁻¹ near singularities.

Φ = Jp M⁻¹ Jpᵀ (the inverse task-space inertia, Khatib 1987) loses rank at kinematic
singularities and, for tasks below other priority levels, wherever the higher levels already
use the directions the task needs. Inverting it exactly there gives unbounded torques.

The rule, in four steps:

1. Scale (Jacobi): row i is normalised by √μᵢ, μᵢ = (J M⁻¹ Jᵀ)ᵢᵢ the mobility of the task row
   *before* projection into the higher levels' null space, so that linear (1/kg) and angular
   (1/(kg m²)) rows are comparable and the threshold below is dimensionless; then each row is
   multiplied by √wᵢ, the weight of its task within the level. Normalising by the unprojected
   mobility is what makes a row that the higher levels almost block show up as a small
   eigenvalue, to be damped; normalising by the projected Φᵢᵢ would blow such a row up instead
   (thousands of N m on a Panda posture below its hand). Rows with μᵢ ≤ 1e-12 max μ, or whose
   projected Φᵢᵢ ≤ 1e-12 μᵢ, are directions the task has no authority over at all; they are
   dropped (their Λ rows are zero).
2. Eigen-decompose the scaled, symmetric Φₛ = U diag(σ) Uᵀ.
3. Invert each eigenvalue with the variable damping of Chiaverini (1997), λ² = (1 − (σ/ε)²) λ²_max
   inside the band σ < ε and 0 outside it, with λ_max = ε and ε = `threshold` · σ_max:

       σ⁻¹ → σ / (σ² + λ²) = min(1/σ, σ/ε²).

   Outside every band Λ is the exact inverse, so strict priority and J q̈ + J̇v = ẍ* hold
   exactly; inside, the gain falls to 0 at σ = 0, continuous and bounded by 1/ε. Why this law:
   the damping rises smoothly as σ falls (Nakamura & Hanafusa 1986) and, applied to each
   eigen-direction separately as in Chiaverini (1997) and the numerical filtering of
   Maciejewski & Klein (1988), leaves the healthy directions exact.

   A direction with σ ≤ `STRUCTURALLY_NULL` σ_max is structurally null (the level has more
   rows than the degrees of freedom left to it): its σ is the rounding of Φ, up to about
   1e-12 σ_max after a few levels' projections, and its gain is 0 rather than σ/ε², which
   would turn that rounding into entries of Λ up to 1e-6 of its largest (a numerical rank, as
   in the rank-deficient least squares of Golub & Van Loan 2013, sec 5.5). At σ = 1e-9 σ_max
   the gain steps from 1e-6 of the band's largest, 1/ε, to 0 (1e-4 for Λ_N of step 4), where
   the direction is all but gone.

   Why two bands: a direction asks for a torque of about √σ · gain · error, so with the law
   above the torque peaks at the band edge at √(σ_far / ε) times what it is where σ = σ_far.
   Crossing a stretched elbow with ε = 1e-3 σ_max that was 4 to 5 times the torque 0.3 rad
   away, with a steep edge; bounding it needs a band ten times wider. But σ is also small
   where only the inertia is ill-conditioned (a Jacobi-scaled Panda M⁻¹ reaches
   σ_min/σ_max = 0.006 with no singularity anywhere), and damping there would cost exact
   tracking for nothing. So the wide band ε_k = `KINEMATIC_BAND` · ε applies only to
   directions that the level's Jacobian Jp (what the higher levels, joint limits included,
   leave free) is itself losing, measured without the inertia by

       κᵢ = ‖Jpᵀ fᵢ‖² / Σᵣ fᵢᵣ² ‖Jpᵣ‖²,   fᵢ = D uᵢ (the direction in task coordinates),

   1 for a posture's rows, → 0 for the direction a stretched arm loses or a joint at its
   limit takes away. The gain is then
   multiplied by max((σ/ε_k)², (κᵢ/κ)²) capped at 1 (κ = `KINEMATIC_FACTOR`): the same law
   as above with band ε_k where κᵢ is small, no change where κᵢ ≥ κ; continuous in both.
4. The null space handed to lower levels, N ← N − M⁻¹Jpᵀ Λ_N Jp, uses Λ_N with the same law
   but a band `BLOCKING_FRACTION` times narrower: a damped direction still counts as taken by
   this level. With Λ_N = Λ a lower level would see a slice 1 − (σ/ε)² of the direction free,
  , invert it with gain up to 1/ε and spend it undoing this level's acceleration:
   a 1,000 N m spike on the Panda's posture below a near-singular hand. Λ_N still falls to 0
   at σ = 0, so N stays continuous through the singularity.

Kinematic singularities are told from structural rank loss (a level with more rows than the
degrees of freedom left to it, e.g. a posture below a hand pose) by the level's *generic* rank
(`wbc_control.control.generic_ranks`): the rank its stacked Jacobians have at almost every
configuration. A level that inverts fewer directions exactly than its generic rank has lost the
difference to a singularity, also at the exact singular configuration where σ = 0.

When the stack of one level is rank-deficient (conflicting tasks of equal priority), the
weights decide how the residual is shared: the solution minimises Σ wᵢ ‖ẍᵢ − ẍᵢ*‖² over the
Jacobi-normalised rows.
"""

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import NamedTuple

import eigenpy
import numpy as np

NO_AUTHORITY = 1e-12
STRUCTURALLY_NULL = 1e-9
#: ε_k / ε: the band of directions J itself is losing is this much wider (step 3).
KINEMATIC_BAND = 10.0
#: κ: a direction with κᵢ ≥ κ is not one J is losing, however small its σ (step 3).
KINEMATIC_FACTOR = 0.1
#: The band of Λ_N (step 4 of the module docstring) relative to the band of Λ.
BLOCKING_FRACTION = 1e-2

# One C call, where `ndarray.sum` adds a Python wrapper per call.
_SUM = np.add.reduce
_TINY = np.finfo(float).tiny


class TaskInertia(NamedTuple):
    """A level's regularized task-space inertia and how healthy it is."""

    inertia: np.ndarray  # (m, m) Λ
    condition_number: float  # σ_max / σ_min over the non-null scaled directions
    rank: int  # directions inverted exactly (σ ≥ ε)
    damped: int  # directions attenuated by damping (structurally null ones excluded)
    blocking: np.ndarray  # (m, m) Λ_N, for the null space left to lower levels


def regularized_task_inertia(
    phi: np.ndarray,
    sqrt_weights: np.ndarray,
    threshold: float,
    mobility: np.ndarray | None = None,
    jacobian: np.ndarray | None = None,
    need_blocking: bool = True,
) -> TaskInertia:
    """Λ from Φ = Jp M⁻¹ Jpᵀ by the scaled, variably damped inverse of the module docstring.

    The readable reference of the law: the controller's tick runs its compiled twin,
    `wbc_control.control.task_inertia_kernel.task_inertia`, which test/core/test_level_kernel.py
    holds equal to this one. The eigen-decomposition is Eigen's `SelfAdjointEigenSolver`
    through eigenpy (a Pinocchio dependency); like numpy's `eigh` it reads the lower triangle
    and returns ascending eigenvalues, which lets the counts below bisect a plain list.

    Args:
        phi: Φ, symmetric positive semi-definite, `(m, m)`.
        sqrt_weights: √w per row, positive, `(m,)`.
        threshold: ε relative to the largest scaled eigenvalue, in (0, 1).
        mobility: μ, the diagonal of the unprojected J M⁻¹ Jᵀ, `(m,)`; None when Φ itself is
            unprojected (the first level), then μ = diag(Φ).
        jacobian: the level's projected Jp, `(m, nv)`, for the kinematic measure κᵢ of
            step 3; None: no kinematic damping (only the band of Φ).
        need_blocking: False for the last level, whose Λ_N (step 4) nobody uses; then
            `blocking` is Λ.
    """
    size = phi.shape[0]
    diagonal = phi.diagonal()
    mobility = diagonal if mobility is None else mobility
    mobility_values = mobility.tolist()
    largest = max(mobility_values, default=0.0)
    if not largest > 0.0:
        return _empty(size)
    # Every row has authority when min Φᵢᵢ > 1e-12 max μ (as Φᵢᵢ ≤ μᵢ ≤ max μ); on plain
    # floats, which cost less than numpy's elementwise tests for these few rows.
    floor = NO_AUTHORITY * largest
    if min(mobility_values if diagonal is mobility else diagonal.tolist()) > floor:
        scale = sqrt_weights / np.sqrt(mobility)
    else:
        active = (mobility > floor) & (diagonal > NO_AUTHORITY * mobility)
        if not active.any():
            return _empty(size)
        scale = np.zeros(size)
        scale[active] = sqrt_weights[active] / np.sqrt(mobility[active])
    # Φₛ = D Φ D = U diag(σ) Uᵀ with D = diag(scale).
    solver = eigenpy.SelfAdjointEigenSolver((phi * scale).T * scale)
    sigma = solver.eigenvalues()  # ascending
    if sigma[0] < 0.0:  # rounding: Φₛ is positive semi-definite
        sigma = np.maximum(sigma, 0.0)
    sigma_values = sigma.tolist()
    sigma_max = sigma_values[-1]
    epsilon = threshold * sigma_max
    null_count = bisect_right(sigma_values, STRUCTURALLY_NULL * sigma_max)
    below_epsilon = bisect_left(sigma_values, epsilon)
    # Λ = D U diag(σ⁻¹) Uᵀ D = Wᵀ diag(σ⁻¹) W with W = (D U)ᵀ.
    scaled_vectors_t = solver.eigenvectors().T * scale  # (m, m) W
    inverse = _damped_inverse(sigma, epsilon, below_epsilon, null_count)  # step 3
    weak = None
    kinematic_band = KINEMATIC_BAND * threshold
    # Only non-null directions can be weak; structurally null ones have no gain to attenuate.
    if jacobian is not None and sigma_values[null_count] < kinematic_band * sigma_max:
        weak = _kinematic_attenuation(
            sigma, kinematic_band * sigma_max, jacobian, scaled_vectors_t
        )
        inverse *= weak
    inertia = (scaled_vectors_t.T * inverse).dot(scaled_vectors_t)
    exact = size - below_epsilon
    if weak is not None:
        exact -= int(_SUM(weak[below_epsilon:] < 1.0))
    blocking = inertia
    if need_blocking and exact < size - null_count:
        narrow = BLOCKING_FRACTION * epsilon
        inverse = _damped_inverse(sigma, narrow, bisect_left(sigma_values, narrow), null_count)
        if weak is not None:
            band = BLOCKING_FRACTION * kinematic_band * sigma_max
            inverse *= _kinematic_attenuation(sigma, band, jacobian, scaled_vectors_t)
        blocking = (scaled_vectors_t.T * inverse).dot(scaled_vectors_t)
    condition = sigma_max / sigma_values[null_count]
    damped = size - exact - null_count
    return TaskInertia(inertia, condition, exact, damped if damped > 0 else 0, blocking)


def _kinematic_attenuation(
    sigma: np.ndarray, band: float, jacobian: np.ndarray, scaled_vectors_t: np.ndarray
) -> np.ndarray:
    """max((σ/ε_k)², (κᵢ/κ)²) capped at 1: < 1 only where both are small (step 3), `(m,)`."""
    by_sigma = sigma * (1.0 / band)
    by_kinematics = _kinematic_factor(jacobian, scaled_vectors_t) * (1.0 / KINEMATIC_FACTOR)
    return np.minimum(np.maximum(by_sigma, by_kinematics), 1.0) ** 2


def _kinematic_factor(jacobian: np.ndarray, scaled_vectors_t: np.ndarray) -> np.ndarray:
    """κᵢ = ‖Jᵀfᵢ‖² / Σᵣ fᵢᵣ² ‖Jᵣ‖² for each eigen-direction fᵢ = D uᵢ (rows of W), `(m,)`.

    1 for rows that move orthogonal joint combinations (a posture), → 0 where J loses the
    direction; inertia plays no part. A zero denominator means fᵢ lives on rows of J that are
    zero, so the numerator is zero too and κᵢ = 0.
    """
    row_norms = _SUM(jacobian * jacobian, axis=1)  # (m,) ‖Jᵣ‖²
    moved = scaled_vectors_t.dot(jacobian)  # (m, nv) rows fᵢᵀ J
    denominator = (scaled_vectors_t * scaled_vectors_t).dot(row_norms)
    return _SUM(moved * moved, axis=1) / np.maximum(denominator, _TINY)


def _damped_inverse(
    sigma: np.ndarray, epsilon: float, below_epsilon: int, null_count: int
) -> np.ndarray:
    """σ⁻¹ → min(1/σ, σ/ε²) for ascending σ, the first `below_epsilon` < ε (step 3).

    The first `null_count` (structurally null, all below ε) get 0.
    """
    if below_epsilon == 0:
        return 1.0 / sigma
    inverse = sigma * (1.0 / epsilon**2)
    inverse[below_epsilon:] = 1.0 / sigma[below_epsilon:]
    inverse[:null_count] = 0.0
    return inverse


def _empty(size: int) -> TaskInertia:
    zeros = np.zeros((size, size))
    return TaskInertia(zeros, np.inf, 0, 0, zeros)


def projected_terms(
    jacobian: np.ndarray,
    null_space: np.ndarray | None,
    inverse_inertia: Callable[[np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Jp = J N `(m, nv)`, M⁻¹Jpᵀ `(nv, m)` and the mobility μ = diag(J M⁻¹ Jᵀ) `(m,)`.

    The reference of the projection `wbc_control.control.level_kernel.level_step` makes.

    One application of M⁻¹ (or M†) per level: M⁻¹Jpᵀ = M⁻¹Nᵀ Jᵀ = N M⁻¹Jᵀ, because N M⁻¹ is
    symmetric (N M⁻¹ = M⁻¹ − Σ M⁻¹Jpᵀ Λ Jp M⁻¹ for symmetric Λ, damped or not), and the same
    M⁻¹Jᵀ gives the unprojected mobility that scales the level in `regularized_task_inertia`.
    `null_space` None stands for N = I (the first level), where μ = diag(Φ) is left to it.
    """
    inverse_inertia_jt = inverse_inertia(jacobian.T)  # (nv, m) M⁻¹Jᵀ
    if null_space is None:
        return jacobian, inverse_inertia_jt, None
    mobility = _SUM(jacobian * inverse_inertia_jt.T, axis=1)
    return jacobian.dot(null_space), null_space.dot(inverse_inertia_jt), mobility
