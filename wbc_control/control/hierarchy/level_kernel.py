"""A priority level's least-squares problem in its freedom, as one compiled call (numba).

`level_problem` builds the QP of one level of the cascade (the module docstring of
`wbc_control.control.hierarchy.cascade`): the level's rows in the stage's unknowns z of
x = x₀ + Z z, the split of the z-directions into those the level sets and those it leaves to
the levels below, the regularisation of its weak directions (Chiaverini 1997's variable
damping, per direction, its stiffness bounded) and the closed-form step where nothing binds.
Compiled for an explicit signature when imported, from numba's on-disk cache after the first
time.
"""

import math

from numba import boolean, float64, int64, types
import numpy as np

from wbc_control.cholesky_kernel import cholesky, cholesky_solve
from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import C_MATRIX, C_VECTOR, MATRIX, VECTOR

LEVEL_PROBLEM = types.Tuple(
    (boolean, C_MATRIX, C_VECTOR, C_VECTOR, C_MATRIX, int64, int64, float64, float64)
)


@kernel()
def _damping(values, demand, band, stiffness):  # pragma: no cover - runs compiled
    """λᵢ² per direction: Chiaverini's (1997) variable damping with a demand-bounded stiffness.

    λᵢ² = (1 − sᵢ² / (ε s_max)²) λ²_max,ᵢ inside the band sᵢ < ε s_max, 0 outside, with
    λ²_max,ᵢ = max((ε s_max)², s_max |cᵢ| / k), cᵢ = uᵢᵀ (T − R x₀) the level's demand along
    the direction and k = `stiffness`. Near a singularity the level's push sᵢ cᵢ / λᵢ² along vᵢ
    grows with sᵢ at a rate of about s_max |cᵢ| / λ²_max per radian: a stiffness that a large
    demand (a target out of reach) would make too high for the loop to follow; the second
    term holds it at k.
    """
    edge = band * values[0]
    weights = np.zeros(values.shape[0])
    for i in range(values.shape[0]):
        if values[i] < edge:
            peak = max(edge * edge, values[0] * abs(demand[i]) / stiffness)
            weights[i] = (1.0 - (values[i] / edge) ** 2) * peak
    return weights


@kernel(
    LEVEL_PROBLEM(
        MATRIX, VECTOR, int64, VECTOR, MATRIX, int64, VECTOR, float64, boolean, float64, float64
    ),
    any_layout=True,
)  # fmt: skip
def level_problem(
    rows,
    target,
    generic_rank,
    point,
    basis,
    moving,
    reference,
    band,
    orthonormal,
    tie_break,
    stiffness,
):  # pragma: no cover - runs compiled
    """(authority, H, g, z*, fixed, directions, weak, condition, regularisation) of a level.

    The level's rows R `(m, nv)` and target T, x₀ = `point`, Z = `basis` whose first `moving`
    columns change q̈ (`cascade.Freedom`). With R Z = U S Vᵀ over those columns (Golub & Van
    Loan 2013, sec 2.4), the level sets the first min(`generic_rank`, m) columns of V and
    leaves `fixed`, the others. sᵢ, vᵢ are the singular values and joint-space directions of
    R Q, Q an orthonormal basis of the range of Z's q̈ rows (Z's q̈ rows themselves where they
    are `orthonormal`: no contact forces); a direction is weak where sᵢ < ε s_max (ε = `band`)
    and gets λᵢ² > 0 (`_damping`, k = `stiffness`). The QP is ½ ‖D z − b‖² + ½ t s₀² ‖Fᵀ z‖²
    (F: `fixed` and the force-only columns; t = `tie_break`), D z − b stacking
    R Z z − (T − R x₀) and λᵢ (vᵢᵀ Z z − vᵢᵀ (q̈_ref − x₀)); H = DᵀD + t s₀² F Fᵀ, g = −Dᵀ b,
    z* = −H⁻¹ g, the least-norm least-squares step (the least-squares solution where the
    Cholesky factor fails). `authority` is False where the level can move nothing; the rest is
    then empty. The report: the level's generic directions, how many are weak, s_max / s_min
    over them (inf: one lost), the largest λᵢ² / s_max².
    """
    nv, count, size = rows.shape[1], rows.shape[0], basis.shape[1]
    joints = np.ascontiguousarray(basis[:nv, :moving])
    level_rows = np.ascontiguousarray(rows)
    reduced = level_rows.dot(joints)  # (m, moving) R Z
    nothing = (False, np.zeros((0, 0)), np.zeros(0), np.zeros(0), np.zeros((0, 0)), 0, 0, 0.0, 0.0)
    if count == 0 or moving == 0:
        return nothing
    left, singular, right_t = np.linalg.svd(reduced, True)
    rank = min(generic_rank, singular.shape[0])
    if rank == 0 or not singular[0] > 0.0:
        return nothing
    fixed = np.ascontiguousarray(right_t[rank:].T)
    if orthonormal:
        basis_q, left_q, values, right = joints, left, singular, right_t
    else:
        basis_q, _ = np.linalg.qr(joints)
        left_q, values, right = np.linalg.svd(level_rows.dot(basis_q), False)
    directions_count = min(generic_rank, values.shape[0])
    weak_count, condition, regularisation = 0, math.inf, 0.0
    weights = np.zeros(0)
    weak_rows = np.zeros((0, nv))
    residual = target - level_rows.dot(np.ascontiguousarray(point[:nv]))
    if directions_count > 0 and values[0] > 0.0:
        largest = values[0]
        demand = np.ascontiguousarray(left_q[:, :directions_count]).T.dot(residual)
        weights = _damping(values[:directions_count], demand, band, stiffness)
        weak = np.flatnonzero(weights > 0.0)
        weak_count = weak.shape[0]
        weak_rows = np.ascontiguousarray(right[weak]).dot(np.ascontiguousarray(basis_q.T))
        weights = weights[weak]
        smallest = values[directions_count - 1]
        condition = largest / smallest if smallest > 0.0 else math.inf
        regularisation = weights.max() / largest**2 if weak_count else 0.0
    else:
        directions_count = 0
    design = np.zeros((count + weak_count, size))
    design[:count, :moving] = reduced
    goal = np.empty(count + weak_count)
    goal[:count] = residual
    if weak_count:
        root = np.sqrt(weights)
        along = weak_rows.dot(joints)
        aims = weak_rows.dot(np.ascontiguousarray(reference - point[:nv]))
        for i in range(weak_count):
            design[count + i, :moving] = root[i] * along[i]
            goal[count + i] = root[i] * aims[i]
    hessian = design.T.dot(design)
    gradient = -design.T.dot(goal)
    curvature = tie_break * singular[0] ** 2
    hessian[:moving, :moving] += curvature * fixed.dot(fixed.T)
    for i in range(moving, size):
        hessian[i, i] += curvature
    lower = cholesky(hessian)
    if lower is None:
        step = np.linalg.lstsq(design, goal)[0]
    else:
        step = -cholesky_solve(lower, gradient)
    return (
        True, hessian, gradient, step, fixed, directions_count, weak_count, condition,
        regularisation,
    )  # fmt: skip
