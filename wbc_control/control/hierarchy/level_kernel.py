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
from wbc_control.kernel_types import C_MATRIX, MATRIX, VECTOR

#: A level whose rows' largest singular value in its freedom is at or below this fraction of
#: their norm moves nothing: what remains is the rounding of R Z where the equalities and the
#: levels above hold every direction its rows see (a robot whose contacts take no force).
NO_AUTHORITY = 1e-12

#: The largest clamp weight μᵢ² (`_clamps`), in units of s_max². Uncapped, μᵢ² grows as 1 / hᵢ
#: while the room hᵢ closes and is 0 once it has closed, and the level's QP switched from tick to
#: tick between a direction held still and one left free: the Unitree Z1 reaching 1.2 m beyond
#: its reach made 193 command steps above 5 % of its largest effort limit and still moved at
#: 0.21 rad/s after 6 s; capped, none and at rest (test_unconfigured_robots.py). Of 1, 3, 10,
#: 100 and 10⁴, 3 left the fewest steps (`dev/out_of_reach_sweep.py`).
CLAMP_LIMIT = 3.0

#: k (1/s²): the largest stiffness of a weak direction's push, s_max |c| / λ²_max (`_damping`),
#: at rest. ω = √k = 100 rad/s keeps ω dt at 0.2 for a 500 Hz loop, and the reference's
#: damping (`REFERENCE_DAMPING`, 100/s) gives it ζ = 0.5; a target out of reach
#: makes the plain band's stiffness 10 to 100 times this, which a rate-limited command cannot
#: follow (a limit cycle through the singularity). A softer push trades one arm for another
#: (`dev/unconfigured_reach.py --starts 12 --seed 1`, test_edges.py's runs): at 3 × 10³ the Z1
#: rests from 12 of 12 random starts (7 at 10⁴) and the xArm7 from 9 and 12 (7 and 9; without
#: and with the rate limit), but the Panda towards (−0.2, 1.2, 1.4) m creeps at 0.04 rad/s (as
#: with 3 × 10³ up to the speed where 10⁴ v₀ / ‖q̇‖ is lower); at 5 × 10³ 99 of the 120 random
#: runs rest (94), but the Panda towards (1.5, 0, 0.5) m steps by 6.2 N m without the rate limit.
WEAK_STIFFNESS = 1e4
#: v₀ (rad/s): above this joint speed the weak directions' stiffness falls as 1 / ‖q̇‖
#: (`weak_stiffness`).
STIFFNESS_SPEED = 1.5
#: g: a command the torque-rate limit holds (a filtered share s of its ticks on the rate
#: window's edge, `rate_hold`) softens the weak directions to k / (1 + g s). At 10 a UR10 at
#: 1000 N m/s rests in the four directions where it cycled (1.3-1.9 rad/s) and the Panda at 150,
#: 300 and 600 N m/s settles as without (at 30 it cycled at 300 N m/s towards (−0.2, 1.2, 1.4)
#: m; `dev/unconfigured_reach.py --arm ur10 --rate-limit 1000`).
RATE_SOFTENING = 10.0
#: K (1/s) of the damped reference q̈_posture − K v, the weak directions' target, at speed.
REFERENCE_DAMPING = 100.0
#: v_K (rad/s): below this joint speed K fades in proportion (`reference_damping`).
DAMPING_SPEED = 0.3

LEVEL_PROBLEM = types.Tuple((boolean, C_MATRIX, int64, int64, int64, float64, float64))


def weak_stiffness(squared_speed: float, rate_share: float = 0.0) -> float:
    """The stiffness k of this tick: `WEAK_STIFFNESS` min(1, v₀ / ‖q̇‖) / (1 + g s).

    v₀ = `STIFFNESS_SPEED`; g = `RATE_SOFTENING`, s = `rate_share`, how much the torque-rate
    limit holds the command (`rate_hold`): a push the rate-limited command cannot follow is
    softened while it cannot.

    k bounds how much a weak direction's push changes per radian the configuration moves
    (`_damping`); moving at ‖q̇‖ rad/s it changes at up to k ‖q̇‖ a second, so k alone lets an
    arm that passes a singularity at its velocity limits (reaching for a target out of reach)
    step its command: a UR10 by 23 N m in a tick. Scaled, the push changes at most at k v₀ a
    second; below v₀, and at rest, where the arm settles, k is `WEAK_STIFFNESS` / (1 + g s).
    `squared_speed`: ‖q̇‖² over the actuated joints (its root is taken only above v₀).
    """
    stiffness = WEAK_STIFFNESS / (1.0 + RATE_SOFTENING * rate_share)
    if squared_speed > STIFFNESS_SPEED * STIFFNESS_SPEED:
        return stiffness * STIFFNESS_SPEED / math.sqrt(squared_speed)
    return stiffness


def reference_damping(squared_speed: float) -> float:
    """K of this tick: `REFERENCE_DAMPING` min(1, ‖q̇‖ / v_K), v_K = `DAMPING_SPEED`.

    K brakes an arm that meets a singularity at speed (the damped reference that brings it to
    rest at the edge of its workspace). Settling, it would hold a weak direction's motion at
    q̈_posture − K v, an over-damped posture whose slow pole kp / (kd + K) let a Panda reaching
    out of reach creep at 0.027 rad/s after 6 s (test_edges.py); faded, the weak direction
    settles as the posture does, and its target meets what the posture asks of the directions
    the level leaves free, so the two agree where a weak direction turns into a free one.
    `squared_speed`: ‖q̇‖² over the actuated joints.
    """
    if squared_speed >= DAMPING_SPEED * DAMPING_SPEED:
        return REFERENCE_DAMPING
    return REFERENCE_DAMPING * math.sqrt(squared_speed) / DAMPING_SPEED


@kernel()
def _band_profile(values, band):  # pragma: no cover - runs compiled
    """ρᵢ = 1 − (sᵢ / ε s_max)² inside the band sᵢ < ε s_max, 0 outside (Chiaverini 1997).

    Continuous: 0 at the band's edge, 1 for a direction lost (sᵢ = 0).
    """
    edge = band * values[0]
    profile = np.zeros(values.shape[0])
    for i in range(values.shape[0]):
        if values[i] < edge:
            profile[i] = 1.0 - (values[i] / edge) ** 2
    return profile


@kernel()
def _damping(values, profile, demand, band, stiffness):  # pragma: no cover - runs compiled
    """λᵢ² per direction: Chiaverini's (1997) variable damping with a demand-bounded stiffness.

    λᵢ² = ρᵢ λ²_max, ρᵢ = `profile` (`_band_profile`), with
    λ²_max = max((ε s_max)², s_max ‖c‖ / k) and k = `stiffness`; ‖c‖² = Σ ρⱼ cⱼ² / maxⱼ ρⱼ
    over the weak directions, cⱼ = uⱼᵀ (T − R x₀) the level's demand along each. Near a
    singularity the level's push sᵢ cᵢ / λᵢ² along vᵢ grows with sᵢ at a rate of about
    s_max |cᵢ| / λ²_max per radian: a stiffness that a large demand (a target out of reach)
    would make too high for the loop to follow; the second term holds it at k. Taken over the
    band rather than along each direction, the peak does not depend on how the SVD splits the
    demand between directions of (nearly) equal singular values, a split that turns quickly
    with the configuration; with one weak direction ‖c‖ is its |c|. A direction entering the
    band adds ρ = 0 to the sum: the weights stay continuous.
    """
    edge = band * values[0]
    deepest = profile.max() if values.shape[0] else 0.0
    if not deepest > 0.0:
        return profile
    spread = 0.0
    for i in range(values.shape[0]):
        spread += profile[i] / deepest * demand[i] * demand[i]  # the deepest: exactly cᵢ²
    peak = max(edge * edge, values[0] * math.sqrt(spread) / stiffness)
    return profile * peak


@kernel()
def _clamps(values, demand, directions, low, high):  # pragma: no cover - runs compiled
    """μᵢ² per direction: the damping towards no motion that keeps its step in the joint box.

    Selectively damped least squares (Buss & Kim 2005, sec 3): the level's own step along the
    joint-space direction wᵢ (a row of `directions`), cᵢ / sᵢ, is held to the largest step the
    joint bounds allow that way from x₀, hᵢ = max wᵢᵀ d over low ≤ d ≤ high (the box's support,
    in the direction of cᵢ's sign). Where |cᵢ| / sᵢ > hᵢ, μᵢ² = sᵢ |cᵢ| / hᵢ − sᵢ² makes
    sᵢ cᵢ / (sᵢ² + μᵢ²) = ±hᵢ; else μᵢ² = 0. A step inside every bound is inside the box's
    support, so where no bound binds the level is untouched (the equality case holds).
    μᵢ² is at most `CLAMP_LIMIT` s_max² (s_max = values[0]), and that where hᵢ ≤ 0 (no room
    that way): as hᵢ falls to 0 the weight then meets its value at 0 instead of growing without
    bound and dropping to none, and the bounds themselves clip what the capped step leaves.
    """
    out = np.zeros(values.shape[0])
    limit = CLAMP_LIMIT * values[0] * values[0]
    for i in range(values.shape[0]):
        if not values[i] > 0.0:
            continue
        sign = 1.0 if demand[i] >= 0.0 else -1.0
        reach = 0.0
        for j in range(directions.shape[1]):
            along = sign * directions[i, j]
            if along > 0.0:
                reach += along * high[j]
            elif along < 0.0:
                reach += along * low[j]
        if abs(demand[i]) > values[i] * reach:
            out[i] = limit
            if reach > 0.0:
                out[i] = min(limit, values[i] * abs(demand[i]) / reach - values[i] * values[i])
    return out


@kernel(
    LEVEL_PROBLEM(
        MATRIX, VECTOR, int64, VECTOR, MATRIX, int64, VECTOR, float64, boolean, float64, float64,
        VECTOR, VECTOR,
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
    lowest,
    highest,
):  # pragma: no cover - runs compiled
    """(authority, problem, free, directions, weak, condition, regularisation) of a level.

    The level's rows R `(m, nv)` and target T, x₀ = `point`, Z = `basis` whose first `moving`
    columns change q̈ (`cascade.Freedom`). With R Z = U S Vᵀ over those columns (Golub & Van
    Loan 2013, sec 2.4), the level sets the first min(`generic_rank`, m) columns of V and
    leaves `fixed`, the others. sᵢ, vᵢ are the singular values and joint-space directions of
    R Q, Q an orthonormal basis of the range of Z's q̈ rows (Z's q̈ rows themselves where they
    are `orthonormal`: no contact forces); a direction is weak where sᵢ < ε s_max (ε = `band`)
    and gets λᵢ² > 0 (`_damping`, k = `stiffness`). The QP is
    ½ ‖D z − b‖² + ½ t s₀² (‖Fᵀ (z − ρ z_ref)‖² + ‖z_f‖²) (F: `fixed`; z_f: the force-only
    columns; t = `tie_break`; z_ref the least-squares solution of Z's q̈ rows z = q̈_ref − x₀;
    ρ = maxᵢ ρᵢ, `_band_profile`), D z − b stacking R Z z − (T − R x₀) and λᵢ (vᵢᵀ Z z −
    vᵢᵀ (q̈_ref − x₀)); H = DᵀD + t s₀² F Fᵀ (+ t s₀² on z_f), g = −Dᵀ b − t s₀² ρ F Fᵀ z_ref,
    z* = −H⁻¹ g (the least-squares solution where the Cholesky factor fails). A weak level's
    tie-break leaves the directions it does not set towards where the levels below ask for
    them, as far as it is weak: they move them anyway, and where a joint bound blocks the
    direction the level pushes it keeps the level from turning them away from q̈_ref for a
    sliver of its residual (Talos' left arm, its shoulder on its bound, the hand reaching 1.2 m
    in front: a 17 Hz oscillation of the wrist at 0.20 rad/s with the tie-break towards no
    motion). A level with no weak direction keeps it towards no motion: where it can meet its
    target inside the bounds it does, exactly. `problem` `(size + 2 + moving, size)` stacks
    H, gᵀ, z*ᵀ (as `stage_kernel.stage_problem` reads them) and `fixed` `(moving, free)` in its
    first `free` columns (one array to hand back instead of four: numba boxes each with a
    Python call).
    `authority` is False where the level can move nothing (s_max at most `NO_AUTHORITY`
    ‖R‖_F); the rest is then empty. A direction whose step would leave the joint box
    [`lowest`, `highest`] (per q̈ coordinate, ±inf where unbounded) is damped towards x₀
    besides (`_clamps`: μᵢ (vᵢᵀ Z z) in D z − b). The report: the level's generic
    directions, how many are weak (in the band; clamped ones are not counted), s_max / s_min
    over them (inf: one lost), the largest λᵢ² / s_max².
    """
    nv, count, size = rows.shape[1], rows.shape[0], basis.shape[1]
    joints = np.ascontiguousarray(basis[:nv, :moving])
    level_rows = np.ascontiguousarray(rows)
    reduced = level_rows.dot(joints)  # (m, moving) R Z
    nothing = (False, np.zeros((0, 0)), 0, 0, 0, 0.0, 0.0)
    if count == 0 or moving == 0:
        return nothing
    left, singular, right_t = np.linalg.svd(reduced, True)
    rank = min(generic_rank, singular.shape[0])
    if rank == 0 or not singular[0] > NO_AUTHORITY * math.sqrt((level_rows * level_rows).sum()):
        return nothing
    fixed = np.ascontiguousarray(right_t[rank:].T)
    if orthonormal:
        basis_q, left_q, values, right = joints, left, singular, right_t
        triangle = np.eye(0)
    else:
        basis_q, triangle = np.linalg.qr(joints)
        left_q, values, right = np.linalg.svd(level_rows.dot(basis_q), False)
    directions_count = min(generic_rank, values.shape[0])
    weak_count, damped_count, condition, regularisation = 0, 0, math.inf, 0.0
    weights = np.zeros(0)
    deepest = 0.0  # maxᵢ ρᵢ
    shares = np.zeros(0)
    damped_rows = np.zeros((0, nv))
    residual = target - level_rows.dot(np.ascontiguousarray(point[:nv]))
    if directions_count > 0 and values[0] > 0.0:
        largest = values[0]
        demand = np.ascontiguousarray(left_q[:, :directions_count]).T.dot(residual)
        profile = _band_profile(values[:directions_count], band)
        deepest = profile.max()
        towards_reference = _damping(values[:directions_count], profile, demand, band, stiffness)
        directions = np.ascontiguousarray(right[:directions_count]).dot(
            np.ascontiguousarray(basis_q.T)
        )
        towards_none = _clamps(
            values[:directions_count], demand, directions, lowest - point[:nv],
            highest - point[:nv],
        )  # fmt: skip
        weights = towards_reference + towards_none
        shares = np.zeros(directions_count)  # of the damping that pulls towards q̈_ref
        for i in range(directions_count):
            if weights[i] > 0.0:
                shares[i] = towards_reference[i] / weights[i]
        damped = np.flatnonzero(weights > 0.0)
        damped_count = damped.shape[0]
        damped_rows = np.ascontiguousarray(directions[damped])
        weights = weights[damped]
        shares = shares[damped]
        weak_count = int((towards_reference > 0.0).sum())
        smallest = values[directions_count - 1]
        condition = largest / smallest if smallest > 0.0 else math.inf
        regularisation = towards_reference.max() / largest**2 if weak_count else 0.0
    else:
        directions_count = 0
    design = np.zeros((count + damped_count, size))
    design[:count, :moving] = reduced
    goal = np.empty(count + damped_count)
    goal[:count] = residual
    if damped_count:
        root = np.sqrt(weights)
        along = damped_rows.dot(joints)
        aims = damped_rows.dot(np.ascontiguousarray(reference - point[:nv]))
        for i in range(damped_count):
            design[count + i, :moving] = root[i] * along[i]
            goal[count + i] = root[i] * shares[i] * aims[i]
    hessian = design.T.dot(design)
    gradient = -design.T.dot(goal)
    curvature = tie_break * singular[0] ** 2
    leaves = fixed.dot(fixed.T)
    hessian[:moving, :moving] += curvature * leaves
    if deepest > 0.0:  # a weak level: its tie-break aims at ρ z_ref
        aim = basis_q.T.dot(np.ascontiguousarray(reference - point[:nv]))
        if not orthonormal:
            aim = np.linalg.solve(triangle, aim)
        gradient[:moving] -= curvature * deepest * leaves.dot(aim)
    for i in range(moving, size):
        hessian[i, i] += curvature
    lower = cholesky(hessian)
    if lower is None:
        step = np.linalg.lstsq(design, goal)[0]
    else:
        step = -cholesky_solve(lower, gradient)
    free = fixed.shape[1]
    problem = np.zeros((size + 2 + moving, size))
    problem[:size] = hessian
    problem[size] = gradient
    problem[size + 1] = step
    problem[size + 2 :, :free] = fixed
    return True, problem, free, directions_count, weak_count, condition, regularisation
