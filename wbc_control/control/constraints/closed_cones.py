"""Contact cones that admit no force but zero, told apart so that they become equalities.

A contact's friction pyramid and sole rows are homogeneous, C f ≤ 0 over its own force
components f. Where the contact frame is tilted against the world's vertical (the pyramids'
normal, `control.constraints.friction`) far enough, no force but f = 0 meets them all: the cone
is closed to a point. Written as inequalities, that is f = 0 as more rows than f has components,
all active at one vertex (no linear independence of the active rows): an active-set solver
(DAQP, quadprog) then takes the feasible problem for an infeasible one. Written as the
equalities C f = 0 (rank: f's size) it is exact and eliminated with the other equalities.
"""

import numpy as np

from wbc_control.numerics import einsum, nnls_residual, singular_values

#: How far, in the rows' own norm, a certificate's combination may be from zero per unit of
#: the rows' smallest singular value (`closed`): well below 1, where the proof holds.
CERTIFICATE_MARGIN = 1e-6


def closed(rows: np.ndarray) -> bool:
    """Whether {f : rows f ≤ 0} is {0} (rows `(k, d)`), proved by a certificate.

    A point strictly inside, C d < 0, proves it is not; d = −Σ ĉᵢ (the unit rows' inward
    mean) is one wherever the cone is wide open about it (a level sole). Else: the rows ĉᵢ
    positively span ℝᵈ exactly when they have rank d and some y > 0 has Σ yᵢ ĉᵢ = 0 (Davis 1954,
    "Theory of positive linear dependence", Theorem 3.6); then ĉᵢ f ≤ 0 for all i only at
    f = 0. y = 1 + w ≥ 1 comes from the nonnegative least squares min ‖Ĉᵀ(1 + w)‖, w ≥ 0
    (Lawson & Hanson 1974, ch. 23); with r = Ĉᵀy its residual, every f of the cone has
    |ĉᵢ f| ≤ ‖r‖ ‖f‖, so ‖Ĉ f‖ ≤ √k ‖r‖ ‖f‖ < σ_min(Ĉ) ‖f‖ forces f = 0. False where that does
    not hold: the cone may still be closed, never wrongly taken for one.
    """
    norms = np.sqrt(einsum('ij,ij->i', rows, rows))
    if rows.shape[0] <= rows.shape[1] or not np.minimum.reduce(norms) > 0.0:
        return False
    unit = rows / norms[:, None]
    inward = -np.add.reduce(unit, axis=0)
    if np.logical_and.reduce(unit.dot(inward) < 0.0):
        return False
    residual = nnls_residual(unit.T, inward)  # ‖Ĉᵀ w − inward‖ = ‖Ĉᵀ (1 + w)‖
    bound = np.sqrt(unit.shape[0]) * residual
    if not bound < CERTIFICATE_MARGIN:  # σ_min(Ĉ) ≤ 1: no proof whatever it is
        return False
    return bool(bound < CERTIFICATE_MARGIN * singular_values(unit)[-1])
