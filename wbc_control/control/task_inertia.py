"""Regularized task-space inertia Λ = (J M⁻¹ Jᵀ)⁻¹ near singularities.

Φ = Jp M⁻¹ Jpᵀ (the inverse task-space inertia, Khatib 1987) loses rank at kinematic
singularities and, for tasks below other priority levels, wherever the higher levels already
use the directions the task needs. Inverting it exactly there gives unbounded torques.

The rule, in three steps:

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
3. Invert each eigenvalue with variable damping (Nakamura & Hanafusa 1986; Chiaverini 1997):
   with ε = `threshold` · σ_max and damping λ² = ε² − σ² for σ < ε (else 0),

       σ⁻¹ → σ / (σ² + λ²) = min(1/σ, σ/ε²).

   Away from singularity (σ ≥ ε in every direction) Λ is the exact inverse, so strict priority
   and J q̈ + J̇v = ẍ* hold exactly. Below ε the gain falls linearly to 0 at σ = 0: it is
   continuous in σ and bounded by 1/ε, so torques stay finite and continuous through a
   singularity. Directions with σ ≈ 0 (the structural rank loss of lower levels) contribute
   nothing, which makes Λ a pseudo-inverse there.

When the stack of one level is rank-deficient (conflicting tasks of equal priority), the
weights decide how the residual is shared: the solution minimises Σ wᵢ ‖ẍᵢ − ẍᵢ*‖² over the
Jacobi-normalised rows.
"""

from bisect import bisect_left, bisect_right
from typing import NamedTuple

import eigenpy
import numpy as np

NO_AUTHORITY = 1e-12
STRUCTURALLY_NULL = 1e-9


class TaskInertia(NamedTuple):
    """A level's regularized task-space inertia and how healthy it is."""

    inertia: np.ndarray  # (m, m) Λ
    condition_number: float  # σ_max / σ_min over the non-null scaled directions
    rank: int  # directions inverted exactly (σ ≥ ε)
    damped: int  # directions attenuated by damping (structurally null ones excluded)


def regularized_task_inertia(
    phi: np.ndarray,
    sqrt_weights: np.ndarray,
    threshold: float,
    mobility: np.ndarray | None = None,
) -> TaskInertia:
    """Λ from Φ = Jp M⁻¹ Jpᵀ by the scaled, variably damped inverse of the module docstring.

    Cost notes (this runs once per level and tick on matrices of 3 to 40 rows): the
    eigen-decomposition is Eigen's `SelfAdjointEigenSolver` through eigenpy (a Pinocchio
    dependency), a fraction of the cost of numpy's `eigh` at these sizes; like `eigh` it reads
    the lower triangle and returns ascending eigenvalues, which lets the counts below bisect a
    plain list; the scalings D Φ D and D U are written as row-wise broadcasts.

    Args:
        phi: Φ, symmetric positive semi-definite, `(m, m)`.
        sqrt_weights: √w per row, positive, `(m,)`.
        threshold: ε relative to the largest scaled eigenvalue, in (0, 1).
        mobility: μ, the diagonal of the unprojected J M⁻¹ Jᵀ, `(m,)`; None when Φ itself is
            unprojected (the first level), then μ = diag(Φ).
    """
    size = phi.shape[0]
    diagonal = phi.diagonal()
    mobility = diagonal if mobility is None else mobility
    mobility_values = mobility.tolist()
    largest = max(mobility_values, default=0.0)
    if not largest > 0.0:
        return TaskInertia(np.zeros((size, size)), np.inf, 0, 0)
    if _every_row_has_authority(diagonal.tolist(), mobility_values, largest):
        scale = sqrt_weights / np.sqrt(mobility)
    else:
        active = (mobility > NO_AUTHORITY * largest) & (diagonal > NO_AUTHORITY * mobility)
        scale = np.zeros(size)
        scale[active] = sqrt_weights[active] / np.sqrt(mobility[active])
        if not active.any():
            return TaskInertia(np.zeros((size, size)), np.inf, 0, 0)
    # Φₛ = D Φ D = U diag(σ) Uᵀ with D = diag(scale).
    solver = eigenpy.SelfAdjointEigenSolver((phi * scale).T * scale)
    sigma = solver.eigenvalues()  # ascending
    sigma_values = sigma.tolist()
    if sigma_values[0] < 0.0:  # rounding: Φₛ is positive semi-definite
        sigma = np.maximum(sigma, 0.0)
        sigma_values = sigma.tolist()
    sigma_max = sigma_values[-1]
    epsilon = threshold * sigma_max
    null_count = bisect_right(sigma_values, STRUCTURALLY_NULL * sigma_max)
    below_epsilon = bisect_left(sigma_values, epsilon)
    # σ⁻¹ → min(1/σ, σ/ε²): σ/ε² below ε, 1/σ from ε on.
    if below_epsilon == 0:
        inverse = 1.0 / sigma
    else:
        inverse = sigma * (1.0 / epsilon**2)
        inverse[below_epsilon:] = 1.0 / sigma[below_epsilon:]
    # Λ = D U diag(σ⁻¹) Uᵀ D = Wᵀ diag(σ⁻¹) W with W = (D U)ᵀ.
    scaled_vectors_t = solver.eigenvectors().T * scale  # (m, m) W
    inertia = (scaled_vectors_t.T * inverse).dot(scaled_vectors_t)
    condition = sigma_max / sigma_values[null_count]
    damped = max(below_epsilon - null_count, 0)
    return TaskInertia(inertia, condition, size - below_epsilon, damped)


def _every_row_has_authority(
    diagonal: list[float], mobility: list[float], largest_mobility: float
) -> bool:
    """μᵢ > 1e-12 max μ and Φᵢᵢ > 1e-12 μᵢ for every row (step 1 of the module docstring).

    On plain lists: for these few rows, Python's comparisons cost less than numpy's
    elementwise tests and reduction.
    """
    floor = NO_AUTHORITY * largest_mobility
    return all(mu > floor and phi > NO_AUTHORITY * mu for phi, mu in zip(diagonal, mobility))
