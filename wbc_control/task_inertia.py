"""Regularized task-space inertia Λ = (J M⁻¹ Jᵀ)⁻¹ near singularities.

Φ = Jp M⁻¹ Jpᵀ (the inverse task-space inertia, Khatib 1987) loses rank at kinematic
singularities and, for tasks below other priority levels, wherever the higher levels already
use the directions the task needs. Inverting it exactly there gives unbounded torques.

The rule, in three steps:

1. Scale (Jacobi): rows are normalised by √Φᵢᵢ, so that linear (1/kg) and angular (1/(kg m²))
   rows are comparable and the threshold below is dimensionless; then each row is multiplied by
   √wᵢ, the weight of its task within the level. Rows with Φᵢᵢ ≤ 1e-12 max Φ are directions the
   task has no authority over at all; they are dropped (their Λ rows are zero).
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

from typing import NamedTuple

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
    phi: np.ndarray, sqrt_weights: np.ndarray, threshold: float
) -> TaskInertia:
    """Λ from Φ = Jp M⁻¹ Jpᵀ by the scaled, variably damped inverse of the module docstring.

    Args:
        phi: Φ, symmetric positive semi-definite, `(m, m)`.
        sqrt_weights: √w per row, positive, `(m,)`.
        threshold: ε relative to the largest scaled eigenvalue, in (0, 1).
    """
    diagonal = np.diag(phi)
    largest = diagonal.max(initial=0.0)
    size = phi.shape[0]
    if not largest > 0.0:
        return TaskInertia(np.zeros((size, size)), np.inf, 0, 0)
    scale = np.zeros(size)
    active = diagonal > NO_AUTHORITY * largest
    scale[active] = sqrt_weights[active] / np.sqrt(diagonal[active])
    scaled = scale[:, np.newaxis] * phi * scale[np.newaxis, :]
    sigma, vectors = np.linalg.eigh(scaled)
    np.maximum(sigma, 0.0, out=sigma)
    sigma_max = sigma[-1]
    epsilon = threshold * sigma_max
    exact = sigma >= epsilon
    inverse = np.where(exact, 1.0 / np.where(exact, sigma, 1.0), sigma / epsilon**2)
    inertia_scaled = (vectors * inverse) @ vectors.T
    inertia = scale[:, np.newaxis] * inertia_scaled * scale[np.newaxis, :]
    non_null = sigma > STRUCTURALLY_NULL * sigma_max
    condition = float(sigma_max / sigma[non_null].min())
    damped = int(np.count_nonzero(non_null & ~exact))
    return TaskInertia(inertia, condition, int(np.count_nonzero(exact)), damped)
