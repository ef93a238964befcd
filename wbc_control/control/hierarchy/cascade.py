"""The priority levels under inequalities: one least-squares QP per level.

Unknowns x = (q̈, f): the joint accelerations and, on a floating base with contacts, the
contact forces. Every level keeps the hard constraints

    A q̈ = −Ȧq̇ − K A q̇                     rigid contacts (Johnson 2024, eq 19; the contact
                                            velocity damped, `contacts.contact_acceleration`)
    M_b q̈ + h_b = A_bᵀ f                   the unactuated base rows of M q̈ + h = Sᵀτ + Aᵀf
    τ⁻ ≤ M_a q̈ + h_a − A_aᵀ f ≤ τ⁺          the command's range (effort and rate limits)
    a⁻ ≤ q̈ᵢ ≤ a⁺                           joint limits (`control.constraints.joint_limits`;
                                            they yield below the first level, `stage_rows`)
    C f ≤ 0                                 friction pyramids, unilateral normal forces
                                            (`control.constraints.friction`)

and, level k = 1, 2, ... in turn, minimises its acceleration residual without changing what
the levels above achieved (the cascade of Kanoun, Lamiraux & Wieber 2011, eq 9; Escande,
Mansard & Wieber 2014, eq 5):

    min ‖R_k q̈ − T_k‖² + Σᵢ λᵢ² (vᵢᵀ (q̈ − q̈_ref))² + Σᵢ μᵢ² (vᵢᵀ (q̈ − x₀))²
    s.t. the hard constraints,  R_j q̈ = R_j q̈*_j for every j < k,

R_k = W E J_k and T_k = W E (ẍ*_k − J̇_k v): the Euclidean residual of the level's tasks, each
weighted by √w (its `weight`) and each group of rows of one unit (a frame task's linear rows,
its angular rows, a joint) by E, the inverse of the group's largest row norm, so that the
residual and the band below are free of units. What freedom the levels leave is resolved last
by the least xᵀ H₀ x: the kinetic energy q̈ᵀ M q̈ and the weighted norm of the contact forces.
Where no inequality binds and no level is weak this is exactly the recursion of Khatib (1987)
and Sentis & Khatib (2005) with the dynamically consistent inverse (docs/theory.md, "The
equality case").

The middle term regularises a level near a kinematic singularity. sᵢ are the singular values of R_k
restricted to the joint accelerations the constraints and the levels above leave free, vᵢ the
joint-space directions: a direction is weak where sᵢ < ε s_max (ε = `singular_value_threshold`,
widened at speed by `moving_band`) and
gets λᵢ² = (1 − (sᵢ/ε s_max)²) λ²_max, Chiaverini's (1997) variable damping applied to each
direction, with λ²_max = max(ε² s_max², s_max ‖c‖ / k): cᵢ = uᵢᵀ (T_k − R_k x₀) is the level's
demand along the direction, ‖c‖ its norm over the weak directions (each weighed by its profile
relative to the deepest's, `level_kernel._damping`: no split of the band by the SVD changes
it), and the second term bounds the stiffness of the level's push sᵢ cᵢ /
(sᵢ² + λᵢ²) as the configuration moves sᵢ, at k = `WEAK_STIFFNESS` (a target out of reach makes cᵢ
large and the plain band's push stiffer than a 500 Hz loop can follow), scaled by min(1, v₀ / ‖q̇‖)
so that the push changes at most at k v₀ a second however fast the arm passes the singularity
(`weak_stiffness`). Outside the band, and wherever the demand is small, this is the plain band:
λ²_max = ε² s_max², λᵢ² = ε² s_max² − sᵢ². The level then achieves, along vᵢ, a blend of its own
task and of q̈_ref, the motion the levels below ask for (their joint-posture accelerations), with
the weight 1 − (sᵢ/ε s_max)² of q̈_ref rising continuously from 0 at the edge of the band to 1 at
the singularity, where the generic direction the level has lost counts with sᵢ = 0. So a direction
the level can hardly move follows the posture instead of being driven with a gain of 1/s: at a
target out of reach the arm settles into its posture rather than wandering along the workspace
boundary at its velocity limits, and the torque stays continuous through a singularity. The term
acts only in the span of the level's own rows, which the levels below may not change anyway.

The last term holds each direction's step inside the joint bounds' box, the selectively damped
least squares of Buss & Kim (2005): where the level's step along vᵢ, |cᵢ| / sᵢ, is larger than
the room hᵢ the joint bounds leave that way from x₀ (the box's support), μᵢ² = sᵢ |cᵢ| / hᵢ − sᵢ²
damps it to exactly hᵢ, towards no motion (not towards q̈_ref: a direction the level has full
authority over keeps its priority), with μᵢ² at most 3 s_max², also where hᵢ ≤ 0 (continuous
as the room closes, `level_kernel.CLAMP_LIMIT`); else μᵢ = 0. A step that meets every joint
bound is inside the box's support, so where no bound binds the level is untouched. Clamped this
way, a demand far beyond the bounds no longer makes the level's solution race along the
directions the bounds do not yet hold, which, as a bound released or bound, stepped the command
by tens of N m.

Each level's problem is built by one compiled call (`level_kernel`), each stage's QP solved by
`stage_qp` (DAQP, quadprog where DAQP finds no solution), warm-started from the rows that bound
the same stage at the previous tick (`WorkingSets`).
"""

from typing import NamedTuple

import numpy as np

from wbc_control import lapack
from wbc_control.control.hierarchy.level_kernel import WEAK_STIFFNESS, level_problem
from wbc_control.control.hierarchy.stage_qp import Inequalities, solve_stage
from wbc_control.control.hierarchy.stage_rows import (
    stage_inequalities,
    unbounded_box,
)

#: A level's tie-break: the curvature, relative to its largest, of each step along directions
#: its residual does not see (about the motion the levels below ask for as far as the level is
#: weak, `level_problem`). It keeps the QP well conditioned; it biases the level only where an
#: inequality makes a step along them pay off, and then by about this fraction.
LEVEL_TIE_BREAK = 1e-3
#: A squared singular value at or below this fraction of the largest is not a direction the
#: equality rows fix (a numerical rank, Golub & Van Loan 2013, sec 5.5).
RANK_TOLERANCE = 1e-9
#: A last stage's curvature whose reciprocal condition number is at or below this is singular:
#: a direction neither the inertia nor a constraint fixes.
SINGULAR_INERTIA = 1e-12


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
    #: (lowest, highest) `(nv,)`: the joint rows' bounds by q̈ coordinate, ±inf where none
    #: (the box that holds each level's steps, `level_kernel._clamps`); None: no joint rows.
    box: tuple[np.ndarray, np.ndarray] | None = None
    #: (r,) each row's degenerate ratio (`stage_qp.degenerate_ratios`); None: `DEGENERATE`.
    degenerate: np.ndarray | None = None
    #: (r,) bool, the joint-bound rows: they yield below the first level
    #: (`stage_rows.stage_inequalities`); None: none.
    joint: np.ndarray | None = None


class CascadeResult(NamedTuple):
    """The cascade's solution, or why there is none, and each level's weights."""

    solution: np.ndarray | None  # (nx,) x = (q̈, f), None if the hard constraints conflict
    status: str  # '' when solved, else what failed
    #: Per level solved, its `LevelWeights`' fields (a plain tuple, as `level_problem` returns
    #: them: built every tick, read only for a report).
    levels: list
    working_sets: tuple = ()  # per stage, the hard rows that bound it (`WorkingSets`)
    #: Where it failed: its inequalities (`stage_qp.Inequalities`), then `level_problem`'s
    #: answers for the leading levels solved over the hard equalities' own freedom, the same
    #: for a cascade over the same rows with other rows soft (`solve_cascade`'s `leading`).
    leading: tuple = ()


class LevelWeights(NamedTuple):
    """What a level's kinematics were this tick, for its report (`CascadeResult.levels`)."""

    directions: int  # generic directions the level has in the freedom left to it
    weak: int  # of which weak (regularised)
    condition: float  # s_max / s_min over them (inf: a lost one)
    regularisation: float  # the largest λᵢ² / s_max²


NO_AUTHORITY = LevelWeights(0, 0, np.inf, 0.0)


class Freedom(NamedTuple):
    """x = x₀ + Z z: what the equalities and the levels solved so far leave free.

    Z is orthonormal; its first `moving` columns change the joint accelerations, the others
    only the contact forces (internal forces), which no level's rows see.
    """

    point: np.ndarray  # (nx,) x₀
    basis: np.ndarray  # (nx, d) Z
    moving: int


class WorkingSets:
    """The rows that bound each stage at the last tick: DAQP's first working set at this one.

    Consecutive ticks share most of their binding rows (joints at their bounds, torques at
    their limits); a stage starts from its own at the previous tick (`next(previous, None)`,
    one per stage in order), which `stage_kernel.stage_problem` takes where it was over the
    same rows (a warm start). Each stage appends to `found` the rows that bound it (None: it
    solved no QP).
    """

    __slots__ = ('previous', 'found')

    def __init__(self, previous: tuple) -> None:
        self.previous = iter(previous)
        self.found: list[np.ndarray | None] = []


def solve_cascade(
    levels: list[LevelRows],
    hard: HardConstraints,
    metric: np.ndarray,
    reference: np.ndarray,
    band: float,
    reweigh=None,
    warm: tuple = (),
    freedom: Freedom | None = None,
    leading: tuple = (),
    stiffness: float = WEAK_STIFFNESS,
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
        band: ε, `singular_value_threshold`, as widened at speed (`moving_band`).
        reweigh: given the forces of the first force stage, the diagonal of the force block of
            H₀ for a second one (the load-proportional friction of the controller); None: one.
        warm: the `working_sets` of the previous tick's result (a warm start; () none).
        freedom: `equality_freedom(hard, nv)` where already known (the same hard rows solved
            again with other rows soft); None: found here.
        leading: the `leading` of a failed cascade over the same levels, `freedom`,
            reference, band, stiffness and joint box (only which rows are soft differs): its
            inequalities' norms and levels' problems, not computed again.
        stiffness: k of the weak directions (`weak_stiffness`).
    """
    nx, nv = metric.shape[0], reference.shape[0]
    if freedom is None:
        freedom = equality_freedom(hard, nv)
    if freedom is None:
        return CascadeResult(None, 'the contact constraints are inconsistent', [])
    inequality = stage_inequalities(hard, freedom.basis, leading[0] if leading else None)
    leading = leading[1:]
    box = hard.box if hard.box is not None else unbounded_box(nv)
    sets = WorkingSets(warm)
    weights, built = [], []
    point, basis, moving = freedom  # `Freedom`'s fields, level by level
    # Z's columns are orthonormal in q̈ without forces: R Z's decomposition is that of R Q.
    orthonormal = nx == nv
    for k, level in enumerate(levels):
        first = basis is freedom.basis  # still the hard equalities' own
        if first and k < len(leading):
            problem = leading[k]
        else:  # the level's QP (the module docstring) over x₀ + Z z
            problem = level_problem(
                level.rows, level.target, level.generic_rank, point, basis, moving, reference,
                band, orthonormal, LEVEL_TIE_BREAK, stiffness, *box,
            )  # fmt: skip
        if first:
            built.append(problem)
        solved = _solve_level(problem, point, basis, moving, inequality, sets, first)
        point, basis, moving, report = solved
        if point is None:  # `report` says why
            return CascadeResult(None, report, weights, leading=(inequality, *built))
        weights.append(report)
    # Least kinetic energy over the directions that move the joints, then the least weighted
    # forces over those that change the forces alone (internal forces): lexicographic, so the
    # force norm biases no joint acceleration.
    point, status = _least(metric, slice(0, nv), basis[:, :moving], inequality, point, sets)
    if point is None:
        return CascadeResult(None, status, weights)
    if nx > nv and basis.shape[1] > moving:
        internal = basis[:, moving:]
        start = point
        point, status = _least(metric, slice(nv, nx), internal, inequality, start, sets)
        if point is not None and reweigh is not None:  # weights from this tick's own forces
            weighted = metric.copy()  # its force block is diagonal: only the diagonal changes
            weighted[nv:, nv:].flat[:: nx - nv + 1] = reweigh(point[nv:])
            point, status = _least(weighted, slice(nv, nx), internal, inequality, start, sets)
        if point is None:
            return CascadeResult(None, status, weights)
    return CascadeResult(point, '', weights, tuple(sets.found))


def equality_freedom(hard: HardConstraints, nv: int) -> Freedom | None:
    """What the hard equalities leave free (`Freedom`), None if they have no solution."""
    equal = hard.equality
    point, basis = _affine_solutions(hard.rows[equal], hard.lower[equal])
    if point is None:
        return None
    return _motion_first(point, basis, nv)


def _solve_level(
    problem: tuple,
    point: np.ndarray,
    basis: np.ndarray,
    moving: int,
    inequality: Inequalities,
    sets: WorkingSets,
    first: bool = False,
) -> tuple[np.ndarray | None, np.ndarray | None, int, tuple | str]:
    """(x₀, Z, moving, weights) after the level's QP `problem`, else (None, None, 0, why).

    x₀ + Z z, Z's first `moving` columns changing q̈, is what the level leaves to the levels
    below (`Freedom`'s fields); `weights` are its `LevelWeights`' fields. Plain tuples: built
    for every level at every tick. `problem`: `level_problem`'s answer; `first`: x₀, Z are
    the hard equalities' own (`stage_qp.solve_stage`).
    """
    authority, matrices, free = problem[:3]
    warm = next(sets.previous, None)
    if not authority:  # nothing this level can move: no authority, no pins
        sets.found.append(None)
        return point, basis, moving, NO_AUTHORITY
    step, status, active = solve_stage(matrices, inequality, point, basis, warm, first)
    sets.found.append(active)
    if step is None:
        return None, None, 0, status
    size = basis.shape[1]
    fixed = matrices[size + 2 :, :free]  # F, the directions it leaves (`level_problem`)
    if moving == size:  # no force-only columns to keep beside
        kept = basis.dot(fixed)
    else:
        kept = np.concatenate((basis[:, :moving].dot(fixed), basis[:, moving:]), axis=1)
    return point + basis.dot(step), kept, free, problem[3:]


def _least(metric, block: slice, directions, inequality: Inequalities, point, sets):
    """(x, status): x = x₀ + Z z minimising the `block` part of xᵀ H₀ x over z, or (None, why)."""
    warm = next(sets.previous, None)
    if not directions.shape[1]:
        sets.found.append(None)
        return point, ''
    part = directions[block]
    hessian = part.T.dot(metric[block, block]).dot(part)
    factor = lapack.cholesky(hessian)
    if factor is None or not lapack.reciprocal_condition(factor, hessian) > SINGULAR_INERTIA:
        return None, (
            'the inertia is singular in a direction nothing fixes (a massless link that no '
            'contact holds?)'
        )
    gradient = part.T.dot(metric[block, block].dot(point[block]))
    unbounded = -lapack.cholesky_solve(factor, gradient)
    problem = np.concatenate((hessian, gradient[None], unbounded[None]))
    step, status, active = solve_stage(problem, inequality, point, directions, warm)
    sets.found.append(active)
    if step is None:
        return None, status
    return point + directions.dot(step), ''


def _affine_solutions(rows: np.ndarray, values: np.ndarray):
    """(x₀, Z): the least-norm solution of rows x = values and a basis of rows' null space.

    Both from rowsᵀ's rank-revealing QR factorisation (Golub & Van Loan 2013, sec 5.5.6); Z
    is orthonormal. x₀ is None if the equalities have no solution (to rounding).
    """
    nx = rows.shape[1]
    if rows.shape[0] == 0:
        return np.zeros(nx), np.eye(nx)
    orthogonal, triangle, pivots = lapack.pivoted_qr(rows.T)  # rows[p] = Rᵀ Qᵀ
    diagonal = np.abs(triangle.diagonal())
    rank = (
        int(np.add.reduce(diagonal**2 > RANK_TOLERANCE * diagonal[0] ** 2)) if diagonal[0] else 0
    )
    leading = lapack.upper_transposed_solve(triangle[:rank, :rank], values[pivots[:rank]])
    point = orthogonal[:, :rank].dot(leading)
    error = rows.dot(point) - values
    largest = np.maximum.reduce
    if largest(np.abs(error), initial=0.0) > 1e-9 * (1.0 + largest(np.abs(values), initial=0.0)):
        return None, None
    return point, orthogonal[:, rank:]


def _motion_first(point: np.ndarray, basis: np.ndarray, nv: int) -> Freedom:
    """Z's columns turned so that those that move the joints come first (`Freedom`).

    The row space of Z's q̈ rows and its complement, from their transpose's rank-revealing QR
    factorisation. Z's columns have unit norm, so a pivot of its q̈ rows measures the share of
    a direction in the joints: one below √`RANK_TOLERANCE` is none (an absolute test: when the
    part is rounding, its largest pivot is rounding too).
    """
    if basis.shape[0] == nv or not basis.shape[1]:
        return Freedom(point, basis, basis.shape[1])
    orthogonal, triangle, _ = lapack.pivoted_qr(basis[:nv].T)
    rank = int(np.add.reduce(np.abs(triangle.diagonal()) ** 2 > RANK_TOLERANCE))
    return Freedom(point, basis.dot(orthogonal), rank)
