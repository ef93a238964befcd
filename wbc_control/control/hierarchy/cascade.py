"""The priority levels under inequalities: one least-squares QP per level (quadprog).

Unknowns x = (q̈, f): the joint accelerations and, on a floating base with contacts, the
contact forces. Every level keeps the hard constraints

    A q̈ = −Ȧq̇                              rigid contacts (Johnson 2024, eq 19)
    M_b q̈ + h_b = A_bᵀ f                   the unactuated base rows of M q̈ + h = Sᵀτ + Aᵀf
    τ⁻ ≤ M_a q̈ + h_a − A_aᵀ f ≤ τ⁺          the command's range (effort and rate limits)
    a⁻ ≤ q̈ᵢ ≤ a⁺                           joint limits (`control.constraints.joint_limits`)
    C f ≤ 0                                 friction pyramids, unilateral normal forces
                                            (`control.constraints.friction`)

and, level k = 1, 2, ... in turn, minimises its acceleration residual without changing what
the levels above achieved (the cascade of Kanoun, Lamiraux & Wieber 2011, eq 9; Escande,
Mansard & Wieber 2014, eq 5):

    min ‖R_k q̈ − T_k‖² + Σᵢ λᵢ² (vᵢᵀ (q̈ − q̈_ref))²
    s.t. the hard constraints,  R_j q̈ = R_j q̈*_j for every j < k,

R_k = W E J_k and T_k = W E (ẍ*_k − J̇_k v): the Euclidean residual of the level's tasks, each
weighted by √w (its `weight`) and each group of rows of one unit (a frame task's linear rows,
its angular rows, a joint) by E, the inverse of the group's largest row norm, so that the
residual and the band below are free of units. What freedom the levels leave is resolved last
by the least xᵀ H₀ x: the kinetic energy q̈ᵀ M q̈ and the weighted norm of the contact forces.
Where no inequality binds and no level is weak this is exactly the recursion of Khatib (1987)
and Sentis & Khatib (2005) with the dynamically consistent inverse (docs/theory.md, "The
equality case").

The middle term regularises a level near a kinematic singularity. sᵢ are the singular values
of R_k restricted to the joint accelerations the constraints and the levels above leave free,
vᵢ the joint-space directions: a direction is weak where sᵢ < ε s_max (ε =
`singular_value_threshold`) and gets λᵢ² = ε² s_max² − sᵢ², Chiaverini's (1997) variable
damping (λ² = (1 − (s/ε)²) λ²_max with λ_max = ε s_max) applied to each direction. The level
then achieves, along vᵢ, a blend of its own task and of q̈_ref, the motion the levels below ask
for (their joint-posture accelerations), with the weight 1 − (sᵢ/ε s_max)² of q̈_ref rising
continuously from 0 at the edge of the band to 1 at the singularity, where the generic
direction the level has lost counts with sᵢ = 0. So a direction the level can hardly move
follows the posture instead of being driven with a gain of 1/s: at a target out of reach the
arm settles into its posture rather than wandering along the workspace boundary at its
velocity limits, and the torque stays continuous through a singularity. The term acts only in
the span of the level's own rows, which the levels below may not change anyway.
"""

from typing import NamedTuple

import quadprog

try:  # optional: faster and more precise where installed (pip only, no rosdep key)
    import daqp
except ImportError:  # pragma: no cover - the test environments install it
    daqp = None
import numpy as np

#: A level's tie-break: the curvature, relative to its largest, of each step along directions
#: its residual does not see. It keeps the QP well conditioned; it biases the level only where
#: an inequality makes a step along them pay off, and then by about this fraction.
LEVEL_TIE_BREAK = 1e-3
#: A squared singular value at or below this fraction of the largest is not a direction the
#: equality rows fix (a numerical rank, Golub & Van Loan 2013, sec 5.5).
RANK_TOLERANCE = 1e-9
#: How far the closed-form step may leave an inequality and still count as meeting it.
PRIMAL_TOLERANCE = 1e-8
#: How far a stage's solution may leave an inequality (the QP solver's rounding) and the next
#: stage still start from it.
CARRIED_TOLERANCE = 1e-5
#: A row whose gradient in a stage's free directions is below this fraction of its own is
#: soft in that stage.
DEGENERATE = 1e-2
#: A soft row's slack costs this times the QP's mean curvature (squared).
SOFT_WEIGHT = 1e4


class LevelRows(NamedTuple):
    """One level's weighted least-squares rows and how many directions it has generically."""

    rows: np.ndarray  # (m, nv) R = √w J
    target: np.ndarray  # (m,) T = √w (ẍ* − J̇v)
    generic_rank: int


class HardConstraints(NamedTuple):
    """Rows G x in [lower, upper] (equal bounds: equalities) over x = (q̈, f).

    Rows marked `soft` may be violated where the others leave no solution, by as little as
    possible (a penalised slack each).
    """

    rows: np.ndarray  # (r, nx)
    lower: np.ndarray  # (r,)
    upper: np.ndarray  # (r,)
    equality: np.ndarray  # (r,) bool
    soft: np.ndarray | None = None  # (r,) bool


class CascadeResult(NamedTuple):
    """The cascade's solution, or why there is none, and each level's weights."""

    solution: np.ndarray | None  # (nx,) x = (q̈, f), None if the hard constraints conflict
    status: str  # '' when solved, else what failed
    levels: list  # LevelWeights per level solved


def solve_cascade(
    levels: list[LevelRows],
    hard: HardConstraints,
    metric: np.ndarray,
    reference: np.ndarray,
    band: float,
    reweigh=None,
) -> CascadeResult:
    """X of the module docstring: one QP per level, then the least energy and forces if free.

    The equalities (the hard ones, then each level's achieved R q̈) are eliminated rather than
    handed to the solver: x = x₀ + Z z with Z an orthonormal basis of their null space
    (Golub & Van Loan 2013, sec 6.2; the null-space method of Kanoun, Lamiraux & Wieber 2011),
    so that they hold to rounding and each QP in z has inequalities only. The tie-break of a
    level acts on the directions its residual does not see, so it biases nothing.

    Args:
        levels: the levels, highest first.
        hard: the hard constraints.
        metric: H₀ `(nx, nx)`, positive definite: the last tie-break (the inertia for q̈).
        reference: q̈_ref `(nv,)`.
        band: ε, `singular_value_threshold`.
        reweigh: given the forces of the first force stage, the diagonal of the force block of
            H₀ for a second one (the load-proportional friction of the controller); None: one.
    """
    nx, nv = metric.shape[0], reference.shape[0]
    equal = hard.equality
    point, basis = _affine_solutions(hard.rows[equal], hard.lower[equal])
    if point is None:
        return CascadeResult(None, 'the contact constraints are inconsistent', [])
    soft = np.zeros(equal.shape, dtype=bool) if hard.soft is None else hard.soft
    inequality = HardConstraints(
        hard.rows[~equal], hard.lower[~equal], hard.upper[~equal], equal[~equal], soft[~equal]
    )
    weights = []
    for level in levels:
        if basis.shape[1] == 0:
            weights.append(LevelWeights(0, 0, np.inf, 0.0))
            continue
        rows = np.zeros((level.rows.shape[0], nx))
        rows[:, :nv] = level.rows
        reduced = rows.dot(basis)  # (m, d) R Z
        moved, fixed, singular = _split_motion(reduced, basis[:nv], level.generic_rank)
        if not moved.shape[1]:  # nothing this level can move: no authority, no pins
            weights.append(LevelWeights(0, 0, np.inf, 0.0))
            continue
        scale = singular[0] ** 2
        design, goal = reduced, level.target - rows.dot(point)  # the least-squares rows in z
        regularisation = _regularisation(level.rows, basis[:nv], band, level.generic_rank)
        if regularisation.directions.shape[0]:
            directions = np.zeros((regularisation.directions.shape[0], nx))
            directions[:, :nv] = regularisation.directions
            root = np.sqrt(regularisation.weights)[:, None]
            aims = regularisation.directions.dot(reference) - directions.dot(point)
            design = np.vstack([design, root * directions.dot(basis)])
            goal = np.concatenate([goal, root[:, 0] * aims])
        hessian = design.T.dot(design)
        gradient = -design.T.dot(goal)
        hessian += LEVEL_TIE_BREAK * scale * fixed.dot(fixed.T)
        unbounded = np.linalg.lstsq(design, goal, rcond=None)[0]  # exact where nothing binds
        step, status = _solve(hessian, gradient, inequality, point, basis, unbounded)
        if step is None:
            return CascadeResult(None, status, weights)
        point = point + basis.dot(step)
        basis = basis.dot(fixed)
        weights.append(regularisation.report)
    # Least kinetic energy over the directions that move the joints, then the least weighted
    # forces over those that change the forces alone (internal forces): lexicographic, so the
    # force norm biases no joint acceleration.
    moving, still = _moving_and_still(basis[:nv])
    point, status = _least(metric, slice(0, nv), basis.dot(moving), inequality, point)
    if point is None:
        return CascadeResult(None, status, weights)
    if nx > nv and still.shape[1]:
        internal = basis.dot(still)
        start = point
        point, status = _least(metric, slice(nv, nx), internal, inequality, start)
        if point is not None and reweigh is not None:  # weights from this tick's own forces
            weighted = metric.copy()
            weighted[nv:, nv:] = np.diag(reweigh(point[nv:]))
            point, status = _least(weighted, slice(nv, nx), internal, inequality, start)
        if point is None:
            return CascadeResult(None, status, weights)
    return CascadeResult(point, '', weights)


def _least(metric, block: slice, directions, inequality, point):
    """(x, status): x = x₀ + Z z minimising the `block` part of xᵀ H₀ x over z, or (None, why)."""
    if not directions.shape[1]:
        return point, ''
    part = np.zeros(metric.shape)
    part[block, block] = metric[block, block]
    hessian = directions.T.dot(part).dot(directions)
    if not _positive_definite(hessian):
        return None, (
            'the inertia is singular in a direction nothing fixes (a massless link that no '
            'contact holds?)'
        )
    gradient = directions.T.dot(part).dot(point)
    unbounded = -np.linalg.solve(hessian, gradient)
    step, status = _solve(hessian, gradient, inequality, point, directions, unbounded)
    if step is None:
        return None, status
    return point + directions.dot(step), ''


def _positive_definite(matrix: np.ndarray) -> bool:
    """Whether a symmetric matrix is numerically positive definite (Cholesky succeeds)."""
    try:
        np.linalg.cholesky(matrix + 1e-12 * np.abs(matrix).max(initial=0.0) * np.eye(len(matrix)))
    except np.linalg.LinAlgError:
        return False
    values = np.linalg.eigvalsh(matrix)
    return bool(values[0] > 1e-10 * max(values[-1], 1e-300))


def _affine_solutions(rows: np.ndarray, values: np.ndarray):
    """(x₀, Z): a solution of rows x = values and an orthonormal basis of rows' null space.

    x₀ is None if the equalities have no solution (to rounding).
    """
    nx = rows.shape[1]
    if rows.shape[0] == 0:
        return np.zeros(nx), np.eye(nx)
    left, singular, right_t = np.linalg.svd(rows, full_matrices=True)
    rank = int((singular**2 > RANK_TOLERANCE * singular[0] ** 2).sum()) if singular.size else 0
    point = right_t[:rank].T.dot(left[:, :rank].T.dot(values) / singular[:rank])
    error = rows.dot(point) - values
    if np.abs(error).max(initial=0.0) > 1e-9 * (1.0 + np.abs(values).max(initial=0.0)):
        return None, None
    return point, right_t[rank:].T


def _split_motion(reduced: np.ndarray, motion: np.ndarray, generic_rank: int):
    """`_split` among the z-directions that move the joints (`motion` = Z's q̈ rows).

    A level's rows see q̈ only: a direction that changes the contact forces alone (an internal
    force) is never one the level has lost at a singularity, and stays free for the force
    distribution of the last stage.
    """
    if motion.shape[0] == motion.shape[1] or not reduced.shape[0]:
        return _split(reduced, generic_rank)
    joints, forces = _moving_and_still(motion)
    moved, fixed, values = _split(reduced.dot(joints), generic_rank)
    return joints.dot(moved), np.hstack([joints.dot(fixed), forces]), values


def _moving_and_still(part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal bases of the z-directions that change `part` and of those that do not.

    `part` is some rows of an orthonormal Z (its q̈ rows). Z's columns have unit norm, so a
    singular value of its part is the share of a direction in that part: one below
    √`RANK_TOLERANCE` is none (an absolute test: when the part is rounding, its largest
    singular value is rounding too).
    """
    _, singular, right_t = np.linalg.svd(part, full_matrices=True)
    rank = int((singular**2 > RANK_TOLERANCE).sum())
    return right_t[:rank].T, right_t[rank:].T


def _split(reduced: np.ndarray, generic_rank: int):
    """(moved, fixed, singular values) of R Z: bases of the z-directions it moves and leaves.

    The columns of `moved` span the directions the level sets, those of `fixed` the ones it
    leaves to the levels below.

    A level moves as many as it has at almost every configuration (its generic rank), the one
    nearly lost at a singularity included: its regularisation sets that one, and it stays
    fixed for the levels below on both sides of the singularity and at it.
    """
    size = reduced.shape[1]
    if reduced.shape[0] == 0 or size == 0:
        return np.zeros((size, 0)), np.eye(size), np.zeros(0)
    _, singular, right_t = np.linalg.svd(reduced, full_matrices=True)
    if not singular[0] > 0.0:
        return np.zeros((size, 0)), np.eye(size), singular
    rank = min(generic_rank, singular.shape[0])
    return right_t[:rank].T, right_t[rank:].T, singular


class Regularisation(NamedTuple):
    """A level's weak directions (unit rows in q̈), their weights λᵢ², and its report."""

    directions: np.ndarray  # (w, nv)
    weights: np.ndarray  # (w,)
    report: 'LevelWeights'


class LevelWeights(NamedTuple):
    """What a level's kinematics were this tick, for its report."""

    directions: int  # generic directions the level has in the freedom left to it
    weak: int  # of which weak (regularised)
    condition: float  # s_max / s_min over them (inf: a lost one)
    regularisation: float  # the largest λᵢ² / s_max²


def _regularisation(
    rows: np.ndarray, free: np.ndarray, band: float, generic_rank: int
) -> Regularisation:
    """The level's weak directions and weights λᵢ² = ε² s_max² − sᵢ² (the module docstring).

    sᵢ are the singular values of R Q, Q an orthonormal basis of the joint accelerations the
    hard constraints and the levels above leave free (`free`, their q̈ part, may carry
    forces: its range is taken); vᵢ = Q wᵢ the joint-space directions.
    """
    left, singular, right_t = np.linalg.svd(free, full_matrices=False)
    keep = singular > 1e-12 * max(singular[0], 1e-300) if singular.size else singular > 0
    basis = left[:, keep]  # (nv, dq) orthonormal
    if not basis.shape[1]:
        return Regularisation(
            np.zeros((0, rows.shape[1])), np.zeros(0), LevelWeights(0, 0, np.inf, 0.0)
        )
    _, values, right = np.linalg.svd(rows.dot(basis), full_matrices=False)
    count = min(generic_rank, values.shape[0])
    if count == 0 or not values[0] > 0.0:
        return Regularisation(
            np.zeros((0, rows.shape[1])), np.zeros(0), LevelWeights(0, 0, np.inf, 0.0)
        )
    largest = values[0]
    values = values[:count]
    weights = np.maximum((band * largest) ** 2 - values**2, 0.0)
    weak = weights > 0.0
    directions = right[:count][weak].dot(basis.T)  # (w, nv) unit rows
    smallest = values[-1]
    condition = largest / smallest if smallest > 0.0 else np.inf
    report = LevelWeights(
        count, int(weak.sum()), condition, float(weights.max(initial=0.0)) / largest**2
    )
    return Regularisation(directions, weights[weak], report)


def _solve(
    hessian: np.ndarray,
    gradient: np.ndarray,
    inequality: HardConstraints,
    point: np.ndarray,
    basis: np.ndarray,
    unbounded: np.ndarray,
) -> tuple[np.ndarray | None, str]:
    """Z of min ½ zᵀ H z + gᵀ z s.t. lower ≤ C (x₀ + Z z) ≤ upper.

    `unbounded` is the problem's solution without the inequalities, computed in closed form;
    where it meets them it is the answer (and more precise than an iterative solve), else
    DAQP solves the QP (Arnström, Bemporad & Axehill 2022), and quadprog (Goldfarb & Idnani
    1983) where DAQP finds no solution (it can take a degenerate feasible problem for an
    infeasible one). Soft rows get a slack each, penalised `SOFT_WEIGHT` times the curvature:
    violated only where nothing else is possible.
    """
    matrix = inequality.rows.dot(basis)
    offset = inequality.rows.dot(point)
    low = inequality.lower - offset
    high = inequality.upper - offset
    values = matrix.dot(unbounded)
    slack = PRIMAL_TOLERANCE * (1.0 + np.abs(values))
    if (values >= low - slack).all() and (values <= high + slack).all():
        return unbounded, ''
    # The point the previous stage left meets the inequalities up to the solver's rounding:
    # widen them by that much, so that it never makes the next stage infeasible.
    carried = CARRIED_TOLERANCE * (1.0 + np.abs(offset))
    low = np.where(low <= carried, np.minimum(low, 0.0), low)
    high = np.where(high >= -carried, np.maximum(high, 0.0), high)
    size = hessian.shape[0]
    soft = inequality.soft if inequality.soft is not None else np.zeros(len(low), dtype=bool)
    # A row the stage can hardly move (the levels above fix it all but a sliver) is soft here:
    # hard, it would let a sliver's sign decide whether a large step is allowed, and the
    # solution would jump (a constraint nearly dependent on the pinned ones, no LICQ).
    # Its stiffness falls with the sliver, (ratio / DEGENERATE)², so that it is as good as hard
    # where the row turns soft and the solution moves continuously through the switch.
    full = np.linalg.norm(inequality.rows, axis=1)
    ratio = np.linalg.norm(matrix, axis=1) / np.maximum(full, 1e-300)
    stiffness = np.where(soft, 1.0, np.minimum(ratio / DEGENERATE, 1.0) ** 2)
    soft = soft | (ratio < DEGENERATE)
    count = int(soft.sum())
    curvature = 0.5 * (hessian + hessian.T)
    if count:  # z extended by one slack per soft row
        extended = np.zeros((size + count, size + count))
        extended[:size, :size] = curvature
        weight = SOFT_WEIGHT * max(np.trace(curvature) / size, 1e-300)
        extended[size:, size:] = np.diag(np.maximum(weight * stiffness[soft], 1e-12 * weight))
        curvature, gradient = extended, np.concatenate([gradient, np.zeros(count)])
        loosen = np.zeros((len(low), count))
        loosen[np.flatnonzero(soft), np.arange(count)] = 1.0
        matrix = np.hstack([matrix, np.zeros((len(low), count))])
        upper_rows = matrix - np.hstack([np.zeros((len(low), size)), loosen])
        lower_rows = matrix + np.hstack([np.zeros((len(low), size)), loosen])
        positive = np.hstack([np.zeros((count, size)), np.eye(count)])
    else:
        upper_rows = lower_rows = matrix
        positive = np.zeros((0, size))
    # Rows scaled to unit norm (quadprog's consistency test is absolute); a zero row binds
    # nothing where its bounds admit 0 and makes the problem infeasible where they do not.
    norms = np.linalg.norm(matrix, axis=1)
    moving = norms > 1e-12 * max(float(norms.max(initial=0.0)), 1e-300)
    stuck = ~moving & ~soft & ((low > slack) | (high < -slack))
    if stuck.any():
        return None, 'a constraint no direction left can meet'
    scale = np.where(moving, 1.0 / np.where(moving, norms, 1.0), 0.0)
    finite_low, finite_high = moving & np.isfinite(low), moving & np.isfinite(high)
    rows = np.vstack(
        [
            scale[finite_low, None] * lower_rows[finite_low],
            -scale[finite_high, None] * upper_rows[finite_high],
            positive,
        ]
    )
    bounds = np.concatenate(
        [
            scale[finite_low] * low[finite_low],
            -scale[finite_high] * high[finite_high],
            np.zeros(positive.shape[0]),
        ]
    )
    z = _daqp(curvature, gradient, rows, bounds)
    if z is None:
        try:
            z = quadprog.solve_qp(curvature, -gradient, rows.T, bounds, 0)[0]
        except ValueError as failure:  # 'constraints are inconsistent', 'G not positive definite'
            return None, f'quadprog: {failure}'
    return z[:size], ''


def _daqp(curvature, gradient, rows, bounds) -> np.ndarray | None:
    """DAQP's solution of min ½ zᵀ H z + gᵀ z s.t. rows z ≥ bounds, None where it finds none."""
    if daqp is None:
        return None
    upper = np.full(bounds.shape[0], np.inf)
    sense = np.zeros(bounds.shape[0], dtype=np.intc)
    z, _, flag, _ = daqp.solve(
        np.ascontiguousarray(curvature), np.ascontiguousarray(gradient),
        np.ascontiguousarray(rows), upper, np.ascontiguousarray(bounds), sense,
        primal_tol=PRIMAL_TOLERANCE,
    )  # fmt: skip
    return np.asarray(z) if flag >= 1 else None
