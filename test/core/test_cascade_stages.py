"""The cascade's compiled parts against plain numpy, and its warm start.

`level_kernel.level_problem` against `oracles.level_problem` (numpy's SVDs and `lstsq`);
`stage_kernel.stage_problem`'s rules on both sides of each boundary (a step that meets a row to
the tolerance, a bound the start point meets to `carried`, a row at the `degenerate` ratio, a
row no direction moves); `stage_qp.solve_stage` against quadprog on the same problem written
the textbook way (Goldfarb & Idnani 1983); the working sets a stage reports bind, and DAQP
started from them needs no further step; DAQP's proof of infeasibility ends a first stage.
"""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
from oracles import level_problem as oracle
import pytest
import quadprog
from robots import random_state, robot

from wbc_control.control.constraints.joint_limits import JointLimits
from wbc_control.control.contact.contacts import Contact
from wbc_control.control.hierarchy import cascade, stack_problem, stage_qp, stage_rows
from wbc_control.control.hierarchy.level_kernel import (
    CLAMP_LIMIT,
    DAMPING_SPEED,
    REFERENCE_DAMPING,
    STIFFNESS_SPEED,
    WEAK_STIFFNESS,
    level_problem,
    reference_damping,
    weak_stiffness,
)
from wbc_control.control.hierarchy.stage_kernel import (
    HARD_SHARE,
    MEETS_ALL,
    NEEDS_QP,
    STUCK,
    stage_problem,
    working_set,
)
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.tasks import ComTask, FramePositionTask, JointPostureTask

PRIMAL, CARRIED, DEGENERATE, SOFT = 1e-8, 1e-5, stage_qp.DEGENERATE, 1e4


def freedom(rng, nv: int, forces: int, moving: int, still: int):
    """An orthonormal Z (nv + forces, moving + still): `still` columns have no q̈ part."""
    nx = nv + forces
    still_part = np.zeros((nx, still))
    if still:
        still_part[nv:] = np.linalg.qr(rng.standard_normal((forces, still)))[0]
    mixed = rng.standard_normal((nx, moving))
    mixed -= still_part.dot(still_part.T.dot(mixed))
    return np.hstack([np.linalg.qr(mixed)[0], still_part])


def level_case(seed: int, forces: int, weak: bool):
    rng = np.random.default_rng(seed)
    nv, m = 7 + seed % 3, 3 + seed % 4
    moving, still = nv - 1 - seed % 2, min(forces, 3)
    basis = freedom(rng, nv, forces, moving, still)
    rows = rng.standard_normal((m, nv)) * np.linspace(0.5, 2.0, nv)
    if weak:  # one of the level's directions nearly lost in the freedom left
        left, values, right_t = np.linalg.svd(rows.dot(basis[:nv, :moving]), full_matrices=False)
        values[-1] = 1e-3 * values[0]
        rows = (left * values).dot(right_t).dot(np.linalg.pinv(basis[:nv, :moving]))
    point = rng.standard_normal(nv + forces)
    return (
        rows, rng.standard_normal(m), min(m, moving), point, basis, moving,
        rng.standard_normal(nv),
    )  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    forces=st.sampled_from([0, 6]),
    weak=st.booleans(),
    rank_drop=st.integers(0, 1),
    stiffness=st.sampled_from([1.0, 1e4]),  # the demand sets the damping, or the band does
    room=st.sampled_from([np.inf, 1.0]),  # no joint bounds, or bounds that clamp some steps
    past=st.booleans(),  # x₀ past some bounds (no room at all some ways) or inside the box
)
def test_a_levels_problem_is_the_plain_numpy_one(
    seed, forces, weak, rank_drop, stiffness, room, past
):
    rows, target, rank, point, basis, moving, reference = level_case(seed, forces, weak)
    rank -= rank_drop
    band, tie_break = 0.03, 1e-3
    rng = np.random.default_rng(seed + 1)
    nv = rows.shape[1]
    box = (
        point[:nv] - room * rng.uniform(0.1, 2.0, nv),
        point[:nv] + room * rng.uniform(0.1, 2.0, nv),
    )
    if past and np.isfinite(room):  # every other joint's box moved wholly above x₀
        shift = np.where(np.arange(nv) % 2 == 0, 2.5 * room, 0.0)
        box = (box[0] + shift, box[1] + shift)
    authority, problem, free, *report = level_problem(
        rows, target, rank, point, basis, moving, reference, band, forces == 0, tie_break,
        stiffness, *box,
    )  # fmt: skip
    expected = oracle.level_problem(
        rows, target, rank, point, basis, moving, reference, band, tie_break, stiffness, box
    )
    assert authority == (expected is not None)
    if expected is None:
        return
    size = problem.shape[1]
    hessian, gradient, step = problem[:size], problem[size], problem[size + 1]
    fixed = problem[size + 2 :, :free]
    assert fixed.shape[0] == moving
    scale = np.abs(expected.hessian).max()
    np.testing.assert_allclose(hessian, expected.hessian, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(
        gradient, expected.gradient, rtol=0, atol=1e-10 * np.abs(expected.gradient).max()
    )
    # The QP's minimiser; where the level moves all it can (its generic rank), the least-norm
    # least-squares step too: the tie-break then acts only where the design does not.
    minimiser = -np.linalg.solve(expected.hessian, expected.gradient)
    np.testing.assert_allclose(step, minimiser, rtol=1e-7, atol=1e-9)
    if not rank_drop:
        np.testing.assert_allclose(step, expected.step, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fixed.dot(fixed.T), expected.fixed_projector, atol=1e-10)
    assert report[:2] == list(expected.report[:2])
    np.testing.assert_allclose(report[2:], expected.report[2:], rtol=1e-8)
    if weak and not rank_drop:  # the nearly lost direction is found weak
        assert report[1] >= 1


def test_a_level_that_can_move_nothing_has_no_authority():
    rows, target, rank, point, basis, moving, reference = level_case(3, 0, False)
    for zero_rows, rank_now in ((np.zeros_like(rows), rank), (rows, 0)):
        authority, *_ = level_problem(
            zero_rows, target, rank_now, point, basis, moving, reference, 0.03, True, 1e-3, 1e4,
            np.full(rows.shape[1], -np.inf), np.full(rows.shape[1], np.inf),
        )  # fmt: skip
        assert not authority


#: A level of three joints whose singular values are 2, 0.5 and 0.02 (ε s_max = 0.06: the last
#: direction is weak); its demand along that direction is the third target entry.
LARGEST, WEAKEST, EDGE = 2.0, 0.02, 0.03 * 2.0
SHAPE = 1.0 - (WEAKEST / EDGE) ** 2  # Chiaverini's profile at s = 0.02


UNBOUNDED = (np.full(3, -np.inf), np.full(3, np.inf))


def weak_push(demand: float, stiffness: float, reference: float = 0.0):
    """(λ² / s_max², the step along the weak direction) at `demand`."""
    target = np.array([0.3, -0.2, demand])
    _, problem, _, _, weak, _, regularisation = level_problem(
        np.diag([LARGEST, 0.5, WEAKEST]), target, 3, np.zeros(3), np.eye(3), 3,
        np.array([0.0, 0.0, reference]), 0.03, True, 1e-3, stiffness, *UNBOUNDED,
    )  # fmt: skip
    assert weak == 1
    return regularisation, problem[4, 2]  # its row size + 1: the closed-form step


@pytest.mark.parametrize('stiffness', [100.0, 400.0])
def test_a_weak_directions_damping_grows_with_its_demand_past_the_stiffness_bound(stiffness):
    """λ² = (1 − (s / ε s_max)²) max((ε s_max)², s_max |c| / k): both sides of the bound."""
    boundary = EDGE**2 * stiffness / LARGEST  # |c| where s_max |c| / k = (ε s_max)²
    for demand in (-0.5 * boundary, 0.99 * boundary, boundary, 1.01 * boundary, -3.0 * boundary):
        regularisation, step = weak_push(demand, stiffness)
        damping = SHAPE * max(EDGE**2, LARGEST * abs(demand) / stiffness)
        assert regularisation == pytest.approx(damping / LARGEST**2, rel=1e-12)
        assert step == pytest.approx(WEAKEST * demand / (WEAKEST**2 + damping), rel=1e-9)


def test_past_the_bound_a_larger_demand_no_longer_pushes_harder():
    """The push s c / (s² + λ²) tends to s k / (s_max (1 − (s / ε s_max)²)), whatever c."""
    stiffness = 100.0
    limit = WEAKEST * stiffness / (LARGEST * SHAPE)
    pushes = [weak_push(demand, stiffness)[1] for demand in (1.0, 10.0, 100.0, -100.0)]
    assert pushes[0] < pushes[1] < pushes[2] < limit
    assert pushes[2] == pytest.approx(limit, rel=1e-3)
    assert pushes[3] == pytest.approx(-pushes[2], rel=1e-12)
    # Under the bound the push is the plain band's, proportional to the demand.
    small = [weak_push(demand, stiffness)[1] for demand in (0.01, 0.02)]
    assert small[1] == pytest.approx(2.0 * small[0], rel=1e-12)
    # The damping pulls towards the reference motion, which weighs more as the demand grows.
    _, towards = weak_push(100.0, stiffness, reference=-50.0)
    assert towards < pushes[2]


def weak_plane_step(turn: float, demand: float = 5.0) -> np.ndarray:
    """The closed-form step of a level whose two weak directions share s = 0.02 (to 1e-7).

    Its rows are Pᵀ diag(2, s, s (1 + 1e-7)), P a rotation by `turn` in the plane of the weak
    rows, and its target (0.3, `demand`, 0): the same problem as diag(2, s, s) with the target
    P (0.3, demand, 0), so its solution turns with P; the split of 1e-7 makes the SVD's
    directions turn with P too, and the demand falls on them in the shares cos and sin.
    """
    turned = np.eye(3)
    turned[1:, 1:] = [[np.cos(turn), -np.sin(turn)], [np.sin(turn), np.cos(turn)]]
    rows = turned.T.dot(np.diag([LARGEST, WEAKEST, WEAKEST * (1.0 + 1e-7)]))
    _, problem, _, _, weak, _, _ = level_problem(
        rows, np.array([0.3, demand, 0.0]), 3, np.zeros(3), np.eye(3), 3, np.zeros(3), 0.03,
        True, 1e-3, 100.0, *UNBOUNDED,
    )  # fmt: skip
    assert weak == 2
    return turned, problem[4]  # its row size + 1: the closed-form step


@pytest.mark.parametrize('turn', [0.3, 0.9, -2.0])
def test_two_equally_weak_directions_are_damped_alike_whichever_basis_the_svd_picks(turn):
    """The stiffness bound takes the demand over the weak directions, not along each one.

    Along each, max(ε² s², s_max |cᵢ| / k) made the damping depend on how the SVD split the
    demand between directions of (nearly) equal singular values, a basis that turns quickly
    with the configuration there: a UR10 reaching out of reach with a pose task stepped its
    command by 50 N m. With the demand's norm over the band the step turns with the problem.
    """
    _, straight = weak_plane_step(0.0)
    turned, step = weak_plane_step(turn)
    assert step == pytest.approx(turned.dot(straight), rel=1e-5, abs=1e-9)


def middle_step(demand: float, lowest, highest, point):
    """(λ² / s_max², the step) along the middle direction of a level of 2, 0.5, 0.3 (none weak)."""
    target = np.array([0.3, demand, -0.001])
    _, problem, _, _, _, _, regularisation = level_problem(
        np.diag([LARGEST, 0.5, 0.3]), target, 3, point, np.eye(3), 3, np.zeros(3), 0.03,
        True, 1e-3, 1e4, lowest, highest,
    )  # fmt: skip
    return regularisation, problem[4, 1]  # its row size + 1: the closed-form step


def test_a_step_that_would_leave_the_joint_box_is_damped_to_its_edge():
    """Buss & Kim 2005's clamp, towards no motion: μ² = s |c| / h − s² where |c| / s > h."""
    point = np.array([0.1, 0.3, -0.2])
    lowest, highest = np.array([-5.0, -1.2, -5.0]), np.array([5.0, 2.5, 5.0])
    for side, room in ((1.0, 2.5 - 0.3), (-1.0, 1.2 + 0.3)):  # the room left from x₀
        for factor in (0.5, 0.99, 1.01, 4.0):
            demand = side * factor * 0.5 * room  # the residual along e₂ is demand − 0.5 · 0.3
            regularisation, step = middle_step(demand + 0.5 * 0.3, lowest, highest, point)
            if factor < 1.0:  # inside: untouched, the plain least-squares step
                assert step == pytest.approx(side * factor * room, rel=1e-9)
            else:  # outside: exactly at the box's edge
                assert step == pytest.approx(side * room, rel=1e-9)
            assert regularisation == 0.0  # the report is the band's: no direction is weak


def test_a_direction_with_an_unbounded_side_is_never_clamped():
    point = np.zeros(3)
    lowest, highest = np.array([-5.0, -1.0, -5.0]), np.array([5.0, np.inf, 5.0])
    _, step = middle_step(100.0, lowest, highest, point)
    assert step == pytest.approx(200.0, rel=1e-9)  # c / s, however large
    _, step = middle_step(-10.0, lowest, highest, point)
    assert step == pytest.approx(-1.0, rel=1e-9)  # the bounded side clamps


def clamped_step(residual: float, room: float) -> float:
    """The middle direction's step (s = 0.5 of s_max = LARGEST) with `room` left above x₀."""
    point = np.array([0.1, 0.3, -0.2])
    lowest, highest = np.array([-5.0, -1.2, -5.0]), np.array([5.0, 0.3 + room, 5.0])
    return middle_step(residual + 0.5 * 0.3, lowest, highest, point)[1]


def test_the_clamp_weight_stops_at_its_limit_and_holds_it_where_the_room_has_closed():
    """μ² = min(s |c| / h − s², L s_max²), and L s_max² where h ≤ 0: no jump as h closes."""
    capped = 0.5 / (0.25 + CLAMP_LIMIT * LARGEST**2)  # the step per unit of residual
    # Below the limit the step ends at the box's edge; the weight reaches it at
    # |c| = (L s_max² + s²) h / s: on either side of that residual, then far beyond it.
    room = 0.2
    turn = (CLAMP_LIMIT * LARGEST**2 + 0.25) * room / 0.5
    assert clamped_step(0.999 * turn, room) == pytest.approx(room, rel=1e-9)
    assert clamped_step(1.001 * turn, room) == pytest.approx(1.001 * turn * capped, rel=1e-9)
    assert clamped_step(1.001 * turn, room) > room  # the bound itself clips the rest
    assert clamped_step(40.0, room) == pytest.approx(40.0 * capped, rel=1e-9)
    # As the room closes, and once it has closed or x₀ is past the bound, the same step.
    steps = [clamped_step(3.0, room) for room in (1e-3, 1e-9, 0.0, -0.1)]
    np.testing.assert_allclose(steps, 3.0 * capped, rtol=1e-9)
    # A residual away from the closed side meets the room on the other: not clamped.
    assert clamped_step(-0.2, 0.0) == pytest.approx(-0.4, rel=1e-9)


def stage_case(seed: int = 0):
    """Three constraint rows over nx = 5 in a 3-dimensional freedom, bounds on both sides."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.standard_normal((5, 3)))[0]
    rows = rng.standard_normal((3, 5)) * [[1.0], [2.0], [0.5]]
    point = rng.standard_normal(5)
    step = np.array([0.3, -0.2, 0.5])
    values = rows.dot(point + basis.dot(step))
    lower = values - np.array([0.1, 0.2, 0.3])
    upper = values + np.array([0.4, 0.5, 0.6])
    return rows, lower, upper, point, basis, step


def call(rows, lower, upper, point, basis, step, soft=None, hessian=None, warm=None):
    size = basis.shape[1]
    warm = np.zeros(0, dtype=np.int8) if warm is None else warm
    soft = np.zeros(rows.shape[0], dtype=bool) if soft is None else soft
    hessian = np.diag(np.arange(1.0, size + 1.0)) if hessian is None else hessian
    norms = np.linalg.norm(rows, axis=1)
    return split(stage_problem(
        stacked(hessian, np.linspace(-1.0, 1.0, size), step), rows, lower, upper, soft,
        np.zeros(rows.shape[0], dtype=bool), norms, point, basis, warm, PRIMAL, CARRIED,
        np.full(rows.shape[0], DEGENERATE), SOFT,
    ))  # fmt: skip


def split(answer):
    """`stage_problem`'s answer split: (verdict, H and gᵀ, rows, bounds, hard, sense, warmed)."""
    verdict, qp, bounds, sense_hard, warmed = answer
    total, handed = qp.shape[1], bounds.shape[1]
    rows, hard, sense = qp[total + 1 :], sense_hard[handed:], sense_hard[:handed]
    return verdict, qp[: total + 1], rows, bounds, hard, sense, warmed


def stacked(hessian, gradient, step):
    """A stage's H, g and closed-form step z* as `stage_problem` reads them: H, gᵀ, z*ᵀ."""
    return np.vstack([hessian, gradient, step])


def test_a_step_that_meets_every_row_to_the_tolerance_needs_no_qp():
    rows, lower, upper, point, basis, step = stage_case()
    offset, moved = rows.dot(point), rows.dot(basis.dot(step))
    tolerance = PRIMAL * (1.0 + np.abs(moved))  # relative to the step's own change
    at_edge = upper.copy()
    at_edge[1] = offset[1] + moved[1] - 0.99 * tolerance[1]
    assert call(rows, lower, at_edge, point, basis, step)[0] == MEETS_ALL
    at_edge[1] = offset[1] + moved[1] - 1.01 * tolerance[1]
    assert call(rows, lower, at_edge, point, basis, step)[0] == NEEDS_QP
    below = lower.copy()
    below[2] = offset[2] + moved[2] + 0.99 * tolerance[2]
    assert call(rows, below, upper, point, basis, step)[0] == MEETS_ALL
    below[2] = offset[2] + moved[2] + 1.01 * tolerance[2]  # now on the lower side
    assert call(rows, below, upper, point, basis, step)[0] == NEEDS_QP


def violated(rows, lower, upper, point, basis, step):
    """The case with row 0's upper bound just below the step, so that the QP is needed."""
    upper = upper.copy()
    upper[0] = rows[0].dot(point + basis.dot(step)) - 0.05
    return rows, lower, upper, point, basis, step


def test_the_rows_go_scaled_with_the_bounds_the_start_point_meets_widened_to_it():
    rows, lower, upper, point, basis, step = violated(*stage_case())
    offset = rows.dot(point)
    carried = CARRIED * (1.0 + np.abs(offset))
    lower = lower.copy()
    lower[1] = offset[1] + 0.5 * carried[1]  # met to `carried`: widened to the start point
    lower[2] = offset[2] + 2.0 * carried[2]  # beyond it: kept
    verdict, _, out, (low, high), hard, *_ = call(rows, lower, upper, point, basis, step)
    assert verdict == NEEDS_QP
    assert hard.tolist() == [0, 1, 2]
    norms = np.linalg.norm(rows.dot(basis), axis=1)
    np.testing.assert_allclose(out, rows.dot(basis) / norms[:, None], atol=1e-14)
    assert low[1] == 0.0
    assert low[2] == pytest.approx((lower[2] - offset[2]) / norms[2], rel=1e-12)
    np.testing.assert_allclose(high, (upper - offset) / norms, rtol=1e-12)


@pytest.mark.parametrize(
    ('warm', 'sense'),
    [(None, [0, 0, 0]), ([0, 0, 0], [0, 0, 0]), ([-1, 0, 1], [3, 0, 0])],
)
def test_daqps_first_working_set_is_the_last_ticks_sides_of_the_hard_rows_only(warm, sense):
    """Row 2 is soft (it goes last, free): only hard rows start bound (3 low, 1 high)."""
    rows, lower, upper, point, basis, step = violated(*stage_case())
    soft = np.array([False, False, True])
    warm = None if warm is None else np.array(warm, dtype=np.int8)
    verdict, *_, hard, found, warmed = call(
        rows, lower, upper, point, basis, step, soft, warm=warm
    )
    assert verdict == NEEDS_QP and hard.tolist() == [0, 1]
    assert found.dtype == np.intc and found.tolist() == sense
    assert warmed == any(sense)
    upper_side = np.array([1, -1, -1], dtype=np.int8)  # row 0 at its upper bound, row 1 lower
    *_, found, warmed = call(rows, lower, upper, point, basis, step, soft, warm=upper_side)
    assert found.tolist() == [1, 3, 0] and warmed


def test_the_working_set_is_the_sign_of_each_hard_rows_multiplier_and_free_elsewhere():
    """Rows 3, 0, 4 handed over in that order; 1, 2 not (soft or dropped); slack rows after."""
    hard = np.array([3, 0, 4], dtype=np.intc)
    multipliers = np.array([-2.5, 0.0, 1e-300, 7.0, -1.0])  # the last two: soft rows
    assert working_set(6, hard, multipliers).tolist() == [0, 0, 0, -1, 1, 0]
    assert working_set(2, np.zeros(0, dtype=np.intc), np.zeros(0)).tolist() == [0, 0]


def with_ratio(rows: np.ndarray, basis: np.ndarray, row: int, ratio: float) -> np.ndarray:
    """`rows` with row `row` turned so that ‖c Z‖ / ‖c‖ = `ratio` (Z = `basis`)."""
    inside = basis.dot(basis.T.dot(rows[row]))
    outside = rows[row] - inside
    along = ratio * np.linalg.norm(outside) / np.sqrt(1.0 - ratio**2)
    rows = rows.copy()
    rows[row] = outside + along * inside / np.linalg.norm(inside)
    return rows


@pytest.mark.parametrize(
    ('factor', 'soft'),
    [
        (0.5, True),
        (HARD_SHARE * (1 - 1e-6), True),
        (HARD_SHARE * (1 + 1e-6), False),
        (1.01, False),
    ],
)
def test_a_row_the_stage_can_hardly_move_is_soft_below_the_degenerate_ratio(factor, soft):
    rows, lower, upper, point, basis, step = violated(*stage_case())
    # Row 2 made mostly orthogonal to the freedom: ‖c Z‖ / ‖c‖ = factor · DEGENERATE.
    rows = with_ratio(rows, basis, 2, factor * DEGENERATE)
    values = rows[2].dot(point + basis.dot(step))
    lower, upper = lower.copy(), upper.copy()
    lower[2], upper[2] = values - 1.0, values + 1.0
    verdict, qp, out, (low, high), hard, *_ = call(rows, lower, upper, point, basis, step)
    curvature, gradient = qp[:-1], qp[-1]
    assert verdict == NEEDS_QP
    assert (2 not in hard) == soft
    assert out.shape == ((3, 4) if soft else (3, 3))
    assert curvature.shape[0] == out.shape[1] == gradient.shape[0]
    if soft:  # both sides in one row, with the slack, which costs w (r / (1 − r))² ‖c Z‖²
        assert out[2, 3] == 1.0
        assert np.isfinite([low[2], high[2]]).all() and low[2] < high[2]
        norm = np.linalg.norm(rows[2].dot(basis))
        share = (factor / (1.0 - factor)) ** 2
        weight = SOFT * np.trace(np.diag([1.0, 2.0, 3.0])) / 3 * share * norm**2
        assert curvature[3, 3] == pytest.approx(weight, rel=1e-6)


def test_a_soft_row_goes_once_and_twice_where_its_bounds_cross():
    """A soft row is one row, lower ≤ c z + s ≤ upper; two where its bounds cross.

    Where lower > upper no s meets both sides: c z + s ≥ lower, and c z − s ≤ upper after
    every other row, so that the slack splits the gap.
    """
    rows, lower, upper, point, basis, step = violated(*stage_case())
    values = rows.dot(point + basis.dot(step))
    lower, upper = lower.copy(), upper.copy()
    lower[2], upper[2] = values[2] + 0.5, values[2] - 0.5  # crossed
    soft = np.array([False, True, True])
    verdict, qp, out, (low, high), hard, *_ = call(rows, lower, upper, point, basis, step, soft)
    assert verdict == NEEDS_QP and hard.tolist() == [0]
    assert out.shape == (4, 5)  # row 0; row 1; row 2's lower side; row 2's upper side
    assert out[1:, 3:].tolist() == [[1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]
    np.testing.assert_array_equal(out[2, :3], out[3, :3])
    assert np.isfinite([low[1], high[1], low[2], high[3]]).all()
    assert np.isinf(high[2]) and np.isinf(low[3]) and low[2] > high[3]
    problem = stacked(np.diag([1.0, 2.0, 3.0]), np.linspace(-1.0, 1.0, 3), step)
    inequality = stage_qp.inequalities(rows, lower, upper, soft)
    z, status, _ = stage_qp.solve_stage(problem, inequality, point, basis)
    middle = 0.5 * (lower[2] + upper[2])  # the crossed row's slacks split the gap
    assert status == '' and rows[2].dot(point + basis.dot(z)) == pytest.approx(middle, abs=1e-3)


@pytest.mark.parametrize('joint', [True, False])
def test_a_joint_bound_is_soft_below_a_larger_ratio_than_other_rows(joint):
    """At a ratio of 0.05: a joint bound's row is soft (`JOINT_DEGENERATE`), another hard."""
    rows, lower, upper, point, basis, step = violated(*stage_case())
    rows = with_ratio(rows, basis, 2, 0.5 * (DEGENERATE + stage_qp.JOINT_DEGENERATE))
    values = rows[2].dot(point + basis.dot(step))
    lower, upper = lower.copy(), upper.copy()
    lower[2], upper[2] = values - 1.0, values + 1.0
    thresholds = stage_qp.degenerate_ratios(np.array([False, False, joint]))
    no_soft = np.zeros(3, dtype=bool)
    inequality = stage_qp.inequalities(rows, lower, upper, no_soft, None, thresholds)
    expected = [DEGENERATE, DEGENERATE, stage_qp.JOINT_DEGENERATE if joint else DEGENERATE]
    assert inequality.degenerate.tolist() == expected
    verdict, _, out, _, hard, _, _ = split(stage_problem(
        stacked(np.diag([1.0, 2.0, 3.0]), np.array([0.3, -0.1, 0.2]), step), rows, lower,
        upper, np.zeros(3, dtype=bool), inequality.yielding, inequality.norms, point, basis,
        np.zeros(0, np.int8), PRIMAL, CARRIED, inequality.degenerate, SOFT,
    ))  # fmt: skip
    assert verdict == NEEDS_QP
    assert hard.tolist() == ([0, 1] if joint else [0, 1, 2])
    assert out.shape == ((3, 4) if joint else (3, 3))  # a soft row goes once, with its slack


def test_a_controllers_joint_bound_rows_carry_the_joint_ratio_its_other_rows_the_plain_one():
    panda = robot('panda')
    limits = JointLimits(panda, panda.effort_limits)
    entries = [
        TaskEntry('hand', FramePositionTask(panda, 'panda_hand', (0.5, 0.1, 0.4), kp=50.0), 0)
    ]
    controller = PrioritizedController(panda, entries, joint_limits=limits)
    state = random_state(panda, 3)
    controller.compute(state)
    window = (-panda.effort_limits, panda.effort_limits)
    hard = controller._problem.hard_constraints(state, None, limits.bounds(state), window)[0]
    joint_rows = np.count_nonzero(hard.rows, axis=1) == 1  # a bound on one q̈ coordinate
    assert joint_rows.sum() == panda.n_actuated and (~joint_rows).sum() == panda.n_actuated
    np.testing.assert_array_equal(
        hard.degenerate, np.where(joint_rows, stage_qp.JOINT_DEGENERATE, stage_qp.DEGENERATE)
    )


def test_the_bound_rows_of_joints_with_holding_walls_carry_the_plain_ratio():
    """A joint whose effort limit cannot hold the arm everywhere: its bound is physical."""
    arm = robot('talos_left_arm')
    limits = JointLimits(arm, arm.effort_limits)
    walled = limits.walled
    assert walled.any() and not walled.all()
    entries = [TaskEntry('posture', JointPostureTask(arm, np.zeros(arm.n_actuated), kp=25.0), 0)]
    controller = PrioritizedController(arm, entries, joint_limits=limits)
    state = random_state(arm, 4)
    controller.compute(state)
    window = (-arm.effort_limits, arm.effort_limits)
    hard = controller._problem.hard_constraints(state, None, limits.bounds(state), window)[0]
    columns = np.flatnonzero(np.count_nonzero(hard.rows, axis=1) == 1)
    joints = np.argmax(np.abs(hard.rows[columns]), axis=1)  # each bound's q̈ coordinate
    expected = np.where(walled[joints], stage_qp.DEGENERATE, stage_qp.JOINT_DEGENERATE)
    np.testing.assert_array_equal(hard.degenerate[columns], expected)


@pytest.mark.parametrize('joint', [True, False])
def test_a_row_turns_hard_at_the_degenerate_ratio_without_moving_the_stages_solution(joint):
    """The solution is continuous in a row's ratio: soft below, hard from `HARD_SHARE` on.

    The stage wants z far past the bound of a unit row that its start point meets; the row
    holds it with a slack whose weight grows without bound towards the ratio where it turns
    hard (a joint bound's or another row's). A weight that stopped at a finite value there
    (w ‖c Z‖²) let the solution jump by most of the way to the unbounded one.
    """
    rows, lower, upper, point, basis, step = violated(*stage_case())
    threshold = stage_qp.JOINT_DEGENERATE if joint else DEGENERATE
    hessian = np.diag([1.0, 2.0, 3.0])
    gradient = -hessian.dot(np.array([4.0, -3.0, 5.0]))  # wants z = (4, -3, 5)
    unbounded = -np.linalg.solve(hessian, gradient)
    shares = np.unique(
        np.concatenate(
            [
                np.geomspace(1e-3, 0.3, 1000),
                np.linspace(0.3, 0.99, 2000),
                1.0 - np.geomspace(0.01, 1e-5, 500),
                [1.0, 1.01],
            ]
        )
    )
    steps, past = [], []
    for share in shares:
        turned = with_ratio(rows, basis, 0, share * threshold)
        turned[0] /= np.linalg.norm(turned[0])
        low, high = np.full(3, -np.inf), np.full(3, np.inf)
        high[0] = turned[0].dot(point)  # the start point on the row's bound
        thresholds = stage_qp.degenerate_ratios(np.array([joint, False, False]))
        no_soft = np.zeros(3, dtype=bool)
        inequality = stage_qp.inequalities(turned, low, high, no_soft, None, thresholds)
        z, status, _ = stage_qp.solve_stage(
            stacked(hessian, gradient, unbounded), inequality, point, basis
        )
        assert status == '', status
        steps.append(z)
        past.append(turned[0].dot(basis.dot(z)))
    past = np.array(past)
    assert (past[shares < HARD_SHARE] > 0.0).all() and (past[shares > HARD_SHARE] <= 1e-12).all()
    jumps = np.linalg.norm(np.diff(steps, axis=0), axis=1)
    travel = np.linalg.norm(steps[0] - steps[-1])
    assert travel > 1.0  # soft, the row let the solution go most of the way
    assert jumps.max() < 0.02 * travel, f'the solution jumped by {jumps.max():.3f} of {travel:.3f}'


def test_a_row_too_small_to_move_anything_is_infeasible_only_where_its_bounds_exclude_the_start():
    """A row below 1e-12 of the largest in the freedom moves nothing.

    It is not soft where what it has lies in the freedom (ratio 1), so bounds that exclude the
    start are a conflict, and bounds that admit it bind nothing (the row is dropped).
    """
    rows, lower, upper, point, basis, step = violated(*stage_case())
    rows = rows.copy()
    rows[1] = 1e-14 * basis.dot(basis.T.dot(rows[1]))
    offset = rows[1].dot(point)
    for low, expected in ((offset - 1.0, NEEDS_QP), (offset + 1.0, STUCK)):
        lower = lower.copy()
        lower[1], upper[1] = low, offset + 2.0
        verdict, *_, hard, _, _ = call(rows, lower, upper, point, basis, step)
        assert verdict == expected
        assert expected == STUCK or 1 not in hard
    soft = np.array([False, True, False])  # a soft one gives way instead
    assert call(rows, lower, upper, point, basis, step, soft)[0] == NEEDS_QP
    outside = rows.copy()  # nothing of it in the freedom: soft by its ratio, never a conflict
    outside[1] = rows[1] - basis.dot(basis.T.dot(rows[1])) + [1.0, -2.0, 0.5, 0.0, 1.5]
    outside[1] -= basis.dot(basis.T.dot(outside[1]))
    lower[1] = outside[1].dot(point) + 1.0
    assert call(outside, lower, upper, point, basis, step)[0] == NEEDS_QP


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_a_stage_is_quadprogs_solution_of_the_textbook_problem(seed):
    rng = np.random.default_rng(seed)
    nx, size = 9, 6
    basis = np.linalg.qr(rng.standard_normal((nx, size)))[0]
    point = rng.standard_normal(nx)
    rows = rng.standard_normal((8, nx))
    lower = rows.dot(point) - rng.uniform(0.1, 0.5, 8)
    upper = rows.dot(point) + rng.uniform(0.1, 0.5, 8)
    lower[3], upper[5] = -np.inf, np.inf
    factor = rng.standard_normal((size, size))
    hessian = factor.dot(factor.T) + np.diag(np.linspace(0.5, 1.0, size))
    gradient = 5.0 * rng.standard_normal(size)
    unbounded = -np.linalg.solve(hessian, gradient)
    inequality = stage_qp.inequalities(rows, lower, upper, np.zeros(8, dtype=bool))
    z, status, active = stage_qp.solve_stage(
        stacked(hessian, gradient, unbounded), inequality, point, basis
    )
    matrix, offset = rows.dot(basis), rows.dot(point)
    below, above = np.isfinite(lower), np.isfinite(upper)
    expected = quadprog.solve_qp(
        hessian,
        -gradient,
        np.vstack([matrix[below], -matrix[above]]).T,
        np.concatenate([(lower - offset)[below], -(upper - offset)[above]]),
    )[0]
    assert status == ''
    np.testing.assert_allclose(z, expected, atol=1e-8)
    values = matrix.dot(z) + offset
    assert active.any()  # the unconstrained step leaves the box
    np.testing.assert_allclose(values[active > 0], upper[active > 0], atol=1e-8)
    np.testing.assert_allclose(values[active < 0], lower[active < 0], atol=1e-8)
    inside = active == 0
    assert (values[inside] > lower[inside] + 1e-9).all()
    assert (values[inside] < upper[inside] - 1e-9).all()


def talos_controller():
    talos = robot('talos')
    hand = FramePositionTask(talos, 'gripper_left_base_link', (0.5, 0.4, 1.2), kp=80.0)
    posture = JointPostureTask(talos, np.linspace(-0.3, 0.3, talos.n_actuated), kp=30.0)
    entries = [
        TaskEntry('com', ComTask(talos, (0.02, -0.01, 0.85), kp=400.0), 0),
        TaskEntry('hand', hand, 1),
        TaskEntry('posture', posture, 2),
    ]
    contacts = [
        Contact.create(talos, f'{side}_sole_link', 'surface') for side in ('left', 'right')
    ]
    return talos, PrioritizedController(
        talos, entries, contacts=contacts, effort_limits=0.3 * talos.effort_limits
    )


@pytest.mark.parametrize('seed', [0, 1])
def test_a_warm_started_tick_is_the_cold_one_and_daqp_needs_no_step_from_the_true_set(
    seed, monkeypatch
):
    """Tight effort limits make rows bind; the tick is solved cold, then warm from its sets."""
    talos, warm = talos_controller()
    _, cold = talos_controller()
    state = random_state(talos, seed, speed=0.3)
    first = warm.compute(state)
    assert any(found is not None and found.any() for found in warm._problem.working_sets)
    iterations = []
    solve = stage_qp.daqp.solve

    def counted(*arguments, **settings):
        result = solve(*arguments, **settings)
        iterations.append((bool(np.any(arguments[5])), result[2], result[3]['iterations']))
        return result

    monkeypatch.setattr(stage_qp.daqp, 'solve', counted)
    again = warm.compute(state)  # the same state: the sets of the last tick are the answer
    np.testing.assert_allclose(again.torque, first.torque, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(again.torque, cold.compute(state).torque, rtol=1e-9, atol=1e-9)
    # DAQP's flag 1: an exact optimum (4: one found after cycling, whatever the start). A stage
    # whose optimum is a degenerate vertex (more rows at a bound than freedoms) has several
    # optimal sets, and rounding decides whether DAQP keeps the one it starts from: most stages
    # need no step, and all of them together at most half of what the cold solves need (seed
    # 0: one stage of five leaves its start, 70 iterations; together 74 against 222 cold).
    started = [count for was_warm, flag, count in iterations if was_warm and flag == 1]
    afresh = [count for was_warm, flag, count in iterations if not was_warm and flag == 1]
    assert len(started) >= 3 and sorted(started)[len(started) // 2] <= 1
    assert sum(started) <= 0.5 * sum(afresh), (started, afresh)


def test_the_working_sets_are_kept_per_stage_and_only_over_the_same_rows():
    previous = (np.array([1, 0, -1], dtype=np.int8), None, np.array([0, 1], dtype=np.int8))
    sets = cascade.WorkingSets(previous)
    assert next(sets.previous, None).tolist() == [1, 0, -1]
    assert next(sets.previous, None) is None  # the previous tick solved no QP at this stage
    assert next(sets.previous, None).tolist() == [0, 1]
    assert next(sets.previous, None) is None  # beyond the stages of the previous tick
    # A stage over 3 rows starts cold from a set over 2 (the rows of another layout).
    rows, lower, upper, point, basis, step = violated(*stage_case())
    soft = np.zeros(3, dtype=bool)
    *_, found, warmed = call(rows, lower, upper, point, basis, step, soft, warm=previous[2])
    assert not warmed and not found.any()
    *_, found, warmed = call(rows, lower, upper, point, basis, step, soft, warm=previous[0])
    assert warmed and found.any()


@pytest.mark.parametrize(('fraction', 'authority'), [(1e-13, False), (1e-10, True)])
def test_a_level_whose_rows_the_freedom_leaves_only_rounding_of_has_no_authority(
    fraction, authority
):
    """Rows orthogonal to the freedom but for `fraction` of their norm (NO_AUTHORITY: 1e-12)."""
    rows, target, rank, point, basis, moving, reference = level_case(3, 0, False)
    joints = basis[:, :moving]
    outside = rows - rows.dot(joints).dot(joints.T)
    inside = np.random.default_rng(4).standard_normal(moving).dot(joints.T)
    scale = fraction * np.linalg.norm(outside) / np.linalg.norm(inside)
    found, problem, free, *_ = level_problem(
        outside + scale * inside, target, rank, point, basis, moving, reference, 0.03, True,
        1e-3, 1e4, np.full(rows.shape[1], -np.inf), np.full(rows.shape[1], np.inf),
    )  # fmt: skip
    assert found == authority
    # With authority it sets its generic directions (the lost ones too), else pins nothing.
    fixed = problem[basis.shape[1] + 2 :, :free]
    assert fixed.shape == ((moving, moving - rank) if authority else (0, 0))


def cascade_over_x1(fixed_by_equality: bool) -> np.ndarray:
    """The solution of ℝ³ where x₀ = 0.5 (an equality or a first level), then x₁ = 1 (a level).

    The inequality x₀ + 10⁻³ x₁ ≤ 0.5 + 2·10⁻⁴ (x₁ ≤ 0.2 once x₀ = 0.5) has 10⁻³ of its norm
    in what x₀ = 0.5 leaves free, below `DEGENERATE`.
    """
    row = np.array([1.0, 1e-3, 0.0])
    rows = np.vstack([[1.0, 0.0, 0.0], row]) if fixed_by_equality else row[None]
    value = 0.5 + 2e-4
    hard = cascade.HardConstraints(
        rows,
        np.array([0.5, -np.inf]) if fixed_by_equality else np.array([-np.inf]),
        np.array([0.5, value]) if fixed_by_equality else np.array([value]),
        np.array([True, False]) if fixed_by_equality else np.array([False]),
    )
    levels = [cascade.LevelRows(np.array([[0.0, 1.0, 0.0]]), np.array([1.0]), 1)]
    if not fixed_by_equality:
        levels.insert(0, cascade.LevelRows(np.array([[1.0, 0.0, 0.0]]), np.array([0.5]), 1))
    metric = np.diag([1.0, 2.0, 3.0])
    result = cascade.solve_cascade(levels, hard, metric, np.zeros(3), 0.03)
    assert result.status == ''
    return result.solution


def test_a_row_the_equalities_take_most_of_stays_hard_one_the_levels_above_do_is_soft():
    """The degenerate ratio is measured in the equalities' freedom: they hold exactly."""
    held = cascade_over_x1(fixed_by_equality=True)
    assert held[0] == pytest.approx(0.5, abs=1e-12)
    assert held[1] == pytest.approx(0.2, abs=1e-9)  # the row holds: hard
    given = cascade_over_x1(fixed_by_equality=False)
    assert given[0] == pytest.approx(0.5, abs=1e-9)
    assert 0.2 + 1e-3 < given[1] < 1.0  # soft: the level's x₁ = 1 pulls it past its bound


def test_without_joint_rows_every_tick_shares_one_read_only_unbounded_box():
    lowest, highest = stage_rows.unbounded_box(9)
    assert stage_rows.unbounded_box(9)[0] is lowest, 'built once per size, not per tick'
    assert np.isneginf(lowest).all() and np.isposinf(highest).all() and lowest.shape == (9,)
    assert stage_rows.unbounded_box(6)[1].shape == (6,)
    with pytest.raises(ValueError, match='read-only'):
        highest[2] = 1.0


def conflicting_stage():
    """A stage over ℝ⁴ whose hard rows conflict: r·x ≥ 1, (r + e)·x ≤ −1 and e·x ≥ 0."""
    row = np.array([0.7, -1.3, 0.4, 2.1])
    other = np.array([0.2, 0.5, -0.9, 0.3])
    rows = np.vstack([row, row + other, other])
    lower = np.array([1.0, -np.inf, 0.0])
    upper = np.array([np.inf, -1.0, np.inf])
    hessian = np.diag([1.0, 2.0, 1.5, 0.5])
    gradient = np.array([0.3, -0.2, 0.1, 0.4])
    unbounded = -np.linalg.solve(hessian, gradient)
    inequality = stage_qp.inequalities(rows, lower, upper, np.zeros(3, dtype=bool))
    return stacked(hessian, gradient, unbounded), inequality, np.zeros(4), np.eye(4)


@pytest.mark.parametrize('first', [True, False])
def test_daqps_proof_of_infeasibility_ends_a_first_stage_later_ones_try_quadprog(
    first, monkeypatch
):
    """Over the equalities' own freedom no stage above left x₀ on a bound: one DAQP call."""
    calls = []
    solve, fallback = stage_qp.daqp.solve, stage_qp._quadprog

    def counted_daqp(*arguments, **settings):
        result = solve(*arguments, **settings)
        calls.append(('daqp', result[2]))
        return result

    def counted_quadprog(*arguments):
        calls.append(('quadprog', None))
        return fallback(*arguments)

    monkeypatch.setattr(stage_qp.daqp, 'solve', counted_daqp)
    monkeypatch.setattr(stage_qp, '_quadprog', counted_quadprog)
    z, status, active = stage_qp.solve_stage(*conflicting_stage(), first=first)
    assert z is None and active is None
    if first:
        assert calls == [('daqp', stage_qp.DAQP_INFEASIBLE)]
        assert 'no common solution' in status
    else:  # the retries at the looser tolerance, then quadprog, which finds none either
        assert calls[-1] == ('quadprog', None) and len(calls) == 3
        assert status.startswith('quadprog')


def test_only_the_stages_over_the_equalities_own_freedom_are_first(monkeypatch):
    """A level with no authority leaves the freedom as it was; one that pins rows does not."""
    seen = []
    solve = cascade.solve_stage

    def recorded(*arguments):
        seen.append(arguments[-1])
        return solve(*arguments)

    monkeypatch.setattr(cascade, 'solve_stage', recorded)
    rows = np.array([[1.0, 0.5, -0.3], [0.2, -1.0, 0.8]])
    hard = cascade.HardConstraints(
        rows, np.array([-0.2, -np.inf]), np.array([np.inf, 0.1]), np.zeros(2, dtype=bool)
    )
    levels = [
        cascade.LevelRows(np.zeros((1, 3)), np.array([1.0]), 1),  # no authority
        cascade.LevelRows(np.array([[0.3, 1.0, 0.0]]), np.array([2.0]), 1),
        cascade.LevelRows(np.array([[0.0, 0.4, 1.0]]), np.array([-1.5]), 1),
    ]
    result = cascade.solve_cascade(levels, hard, np.diag([1.0, 2.0, 3.0]), np.zeros(3), 0.03)
    assert result.status == ''
    # the second level's stage, the third's, then the least energy's (no `first` argument)
    assert seen[:2] == [True, False] and len(seen) == 3


@pytest.mark.parametrize('equality', [False, True])
def test_the_joint_rows_yield_below_the_first_level_with_authority(monkeypatch, equality):
    """The joint rows yield in the stages after the first level with authority, none in it.

    Yielding: soft where the point sits on them (`stage_rows.stage_inequalities`); the other
    inequalities never.
    """
    seen, build = [], stage_qp.stage_problem

    def recorded(*arguments):
        seen.append(arguments[5].tolist())  # `yielding`, as the stage's kernel gets it
        return build(*arguments)

    monkeypatch.setattr(stage_qp, 'stage_problem', recorded)
    rows = np.array([[1.0, 0.5, -0.3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # a torque row, q̈₀, q̈₁
    lower, upper = np.array([-9.0, -2.0, -1.5]), np.array([8.0, 1.2, 3.0])
    joint, equal = np.array([False, True, True]), np.zeros(3, dtype=bool)
    if equality:  # and x₂ = 0 between the joint rows, eliminated: rows 0, 1 and 3 of 4
        rows = np.vstack([rows[:2], [0.0, 0.0, 1.0], rows[2:]])
        lower, upper = np.insert(lower, 2, 0.0), np.insert(upper, 2, 0.0)
        joint, equal = np.insert(joint, 2, False), np.insert(equal, 2, True)
    hard = cascade.HardConstraints(rows, lower, upper, equal, joint=joint)
    levels = [
        cascade.LevelRows(np.zeros((1, 3)), np.array([1.0]), 1),  # no authority: no stage
        cascade.LevelRows(np.array([[0.3, 1.0, 0.0]]), np.array([2.0]), 1),
        cascade.LevelRows(np.array([[0.0, 0.4, 1.0]]), np.array([-1.5]), 1),
    ]
    result = cascade.solve_cascade(levels, hard, np.diag([1.0, 2.0, 3.0]), np.zeros(3), 0.03)
    assert result.status == ''
    # level 2 (first), level 3, then the least energy where x₂ is not fixed
    assert seen == [[False] * 3] + [[False, True, True]] * (1 if equality else 2)


@pytest.mark.parametrize(('asked', 'yields'), [(10.0, True), (1.0, False)])
def test_a_lower_level_passes_a_joint_bound_by_little_only_where_the_point_is_on_it(asked, yields):
    """q̈₁ + q̈₂ = `asked` first, then q̈₁ = 5 past its bound 1.2.

    Asked 10, the first level puts q̈₁ on its bound (1.2, q̈₂ 8.8): the second passes it by
    10⁻⁵ to 10⁻³ of the 3.8 it asks beyond (4·10⁻⁴), along q̈₁ − q̈₂ (the first's q̈₁ + q̈₂
    kept). Asked 1, the point is inside (0.5, 0.5): the bound is hard for the second level,
    which stops on it.
    """
    hard = cascade.HardConstraints(
        np.array([[0.0, 1.0, 0.0]]), np.array([-1.5]), np.array([1.2]), np.zeros(1, dtype=bool),
        joint=np.ones(1, dtype=bool),
    )  # fmt: skip
    levels = [
        cascade.LevelRows(np.array([[0.0, 1.0, 1.0]]), np.array([asked]), 1),
        cascade.LevelRows(np.array([[0.0, 1.0, 0.0]]), np.array([5.0]), 1),
    ]
    metric = np.diag([1.0, 2.0, 3.0])
    first = cascade.solve_cascade(levels[:1], hard, metric, np.zeros(3), 0.03).solution
    result = cascade.solve_cascade(levels, hard, metric, np.zeros(3), 0.03)
    solution = result.solution
    assert result.status == '' and abs(solution[1:].sum() - first[1:].sum()) < 1e-9
    if yields:
        assert 1.2 + 1e-5 * 3.8 < solution[1] < 1.2 + 1e-3 * 3.8, solution  # it does pass
    else:
        assert abs(solution[1] - 1.2) < 1e-9, solution


@pytest.mark.parametrize('equality', [False, True])
def test_a_cascade_with_rows_made_soft_reuses_the_failed_ones_level_problems(
    monkeypatch, equality
):
    """A retry over the same rows reuses the failed cascade's norms and leading problems.

    Same levels, freedom and box: the inequalities' norms and the leading levels' problems are
    the failed cascade's; only which rows are soft is the new cascade's own.
    """
    rows = np.array([[1.0, 0.3, -0.2], [1.1, 1.3, 0.3], [0.1, 1.0, 0.5]])  # r, r + e, e
    lower, upper = np.array([1.0, -np.inf, 0.0]), np.array([np.inf, -1.0, np.inf])
    equal = np.zeros(3, dtype=bool)
    if equality:  # and x₂ = 0, eliminated: the inequalities are rows 0 to 2 of 4
        rows, equal = np.vstack([rows, [0.0, 0.0, 1.0]]), np.append(equal, True)
        lower, upper = np.append(lower, 0.0), np.append(upper, 0.0)
    hard = cascade.HardConstraints(rows, lower, upper, equal)
    levels = [
        cascade.LevelRows(np.array([[0.3, 1.0, 0.0]]), np.array([2.0]), 1),
        cascade.LevelRows(np.array([[0.0, 0.4, 1.0]]), np.array([-1.5]), 1),
    ]
    metric, reference = np.diag([1.0, 2.0, 3.0]), np.array([0.2, -0.1, 0.3])
    failed = cascade.solve_cascade(levels, hard, metric, reference, 0.03)
    assert failed.solution is None and len(failed.leading) == 2
    assert not failed.leading[0].soft.any()
    calls = []
    build, norms = cascade.level_problem, stage_rows.inequalities

    def counted(*arguments):
        calls.append(arguments[0].shape)
        return build(*arguments)

    def measured(*arguments):
        calls.append('norms')
        return norms(*arguments)

    monkeypatch.setattr(cascade, 'level_problem', counted)
    monkeypatch.setattr(stage_rows, 'inequalities', measured)
    soft = hard._replace(soft=np.array([False, True, False, False][: rows.shape[0]]))
    fresh = cascade.solve_cascade(levels, soft, metric, reference, 0.03)
    built = len(calls)
    freedom = cascade.equality_freedom(hard, 3)
    reused = cascade.solve_cascade(
        levels, soft, metric, reference, 0.03, freedom=freedom, leading=failed.leading
    )
    assert fresh.status == reused.status == ''
    assert built == 3 and calls[built:] == [(1, 3)]  # the second level only, no norms
    np.testing.assert_array_equal(reused.solution, fresh.solution)


def test_the_weak_stiffness_falls_as_one_over_the_joint_speed_above_v0():
    """The stiffness is k below and at v₀, k v₀ / ‖q̇‖ above: its push changes at most at k v₀."""
    for speed in (0.0, 0.5 * STIFFNESS_SPEED, STIFFNESS_SPEED):
        assert weak_stiffness(speed**2) == WEAK_STIFFNESS
    for speed in (1.001 * STIFFNESS_SPEED, 2.0 * STIFFNESS_SPEED, 3.7 * STIFFNESS_SPEED):
        assert weak_stiffness(speed**2) == pytest.approx(WEAK_STIFFNESS * STIFFNESS_SPEED / speed)
        assert weak_stiffness(speed**2) * speed == pytest.approx(WEAK_STIFFNESS * STIFFNESS_SPEED)


def test_the_reference_damping_fades_in_proportion_below_its_speed():
    """K ‖q̇‖ / v_K below v_K (0 at rest), K at and above it, continuous across it."""
    assert reference_damping(0.0) == 0.0
    for share in (0.013, 0.5, 0.999):
        speed = share * DAMPING_SPEED
        assert reference_damping(speed**2) == pytest.approx(REFERENCE_DAMPING * share)
    for share in (1.0, 1.001, 2.0, 40.0):
        assert reference_damping((share * DAMPING_SPEED) ** 2) == REFERENCE_DAMPING
    below = reference_damping((DAMPING_SPEED * (1.0 - 1e-9)) ** 2)
    assert below == pytest.approx(REFERENCE_DAMPING, rel=1e-8)


@pytest.mark.parametrize('speed', [0.02, 0.3, 1.7])
def test_the_stack_damps_its_reference_by_the_actuated_joints_speed(speed, monkeypatch):
    """q̈_ref = q̈_posture − K v, K faded by ‖q̇‖ over the actuated joints (0.12 rad/s: by 0.4)."""
    talos, controller = talos_controller()
    state = random_state(talos, 4, speed=speed)
    references = []
    solve = stack_problem.solve_cascade

    def recorded(levels, hard, metric, reference, *rest):
        references.append(reference.copy())
        return solve(levels, hard, metric, reference, *rest)

    monkeypatch.setattr(stack_problem, 'solve_cascade', recorded)
    controller.compute(state)
    joints = state.v[talos.indices.v]
    damping = REFERENCE_DAMPING * min(1.0, np.linalg.norm(joints) / DAMPING_SPEED)
    posture = controller.entries[-1].task.compute(state).desired_acceleration
    expected = -damping * state.v
    expected[talos.indices.v] += posture
    np.testing.assert_allclose(references[0], expected, rtol=1e-12, atol=1e-12)


def test_the_stack_takes_the_weak_stiffness_from_its_actuated_joints_speed(
    weak_stiffness_calls,
):
    """‖q̇‖ over the actuated joints only: a floating base's twist does not soften it."""
    talos, controller = talos_controller()
    state = random_state(talos, 3, speed=0.3)
    controller.compute(state)
    joints = state.v[talos.indices.v]
    seen = [squared_speed for squared_speed, _ in weak_stiffness_calls]
    assert seen == [pytest.approx(joints.dot(joints), rel=1e-12)]
    assert joints.dot(joints) < state.v.dot(state.v)  # the base moves too
