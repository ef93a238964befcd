"""The compiled level kernel against the numpy reference of the task-inertia law.

`regularized_task_inertia` and `projected_terms` (task_inertia.py) are the readable reference;
the controller's hot path runs only `level_kernel.level_step`. Both must give the same Λ, Λ_N,
counts, q̈ and torques on real robots, near singularities and on rows without authority.
"""

from functools import cache

from numba.core import config
import numpy as np
import pytest
from robots import random_state, robot, shipped_controller

from wbc_control.control.contacts import contact_dynamics
from wbc_control.control.held_joints import hold
from wbc_control.control.joint_limits import JointLimits
from wbc_control.control.level_kernel import BLOCKING, EXACT, KEEP, level_step
from wbc_control.control.symmetric_eigen import symmetric_eigen
from wbc_control.control.task_inertia import projected_terms, regularized_task_inertia
from wbc_control.control.task_inertia_kernel import LAW, task_inertia
from wbc_control.model.robot_state import RobotState

TOLERANCE = 1e-9
ROBOTS = ('panda', 'talos', 'solo12')


@cache
def controller(name: str):
    """The shipped controller of `name`, joint limits off: the plain recursion."""
    shipped = shipped_controller(name)
    shipped.joint_limits = None
    return shipped


def close(actual: np.ndarray, expected: np.ndarray, tolerance: float = TOLERANCE) -> bool:
    """Equal to `tolerance` relative to the largest entry of `expected`."""
    scale = max(float(np.abs(expected).max(initial=0.0)), 1e-300)
    return float(np.abs(actual - expected).max(initial=0.0)) <= tolerance * scale


def damping_noise_floor(size: int, threshold: float) -> float:
    """How far two eigen-solvers' Λ may differ, relative to its largest entry.

    A direction with σ < ε = threshold · σ_max gets the gain σ / ε² (task_inertia.py, step 3),
    and two backward-stable solvers agree on σ only to about size · eps · σ_max, so a damped
    direction whose σ is that small (just above the structurally null limit, where the gain
    becomes 0) differs by about size · eps / threshold² times the largest gain 1/σ_min of the
    healthy ones: 2e-9 for a 9-row level at threshold 1e-3 (seen: 2.1e-9 between the compiled
    solver and LAPACK at the Panda's elbow singularity, on a CPU with AVX-512, when null
    directions still had that gain). Ten times that, and never below TOLERANCE.
    """
    return max(TOLERANCE, 10.0 * size * np.finfo(float).eps / threshold**2)


def states(name: str):
    """Random states of `name`, and for the Panda its wrist and elbow singularities."""
    model = robot(name)
    found = [random_state(model, seed) for seed in range(6)]
    if name == 'panda':
        for wrist, elbow in ((0.0, -1.5), (1e-5, -1.5), (1.2, -0.07), (0.0, -0.0698)):
            state = RobotState(model)
            q = np.array([0.1, 0.3, -0.2, elbow, 0.4, wrist, 0.7, 0.02, 0.02])
            state.update(q, np.linspace(-0.5, 0.5, model.nv))
            found.append(state)
    return found


def level_inputs(name: str, state: RobotState):
    """(M⁻¹ or M†, q̈ start, [(J, t, √w), ...]) of `name`'s shipped stack at `state`."""
    control = controller(name)
    if control.contacts:
        inverse_inertia, _, _, start = contact_dynamics(state, control.contacts)
    else:
        inverse_inertia, start = state.inverse_mass_matrix, np.zeros(state.model.nv)
    levels = []
    for level, sqrt_weights in zip(control.levels, control._sqrt_weights):
        jacobian, _, target = level.stack([entry.task.compute(state) for entry in level.entries])
        levels.append((jacobian.copy(), target.copy(), sqrt_weights))
    return inverse_inertia, start, levels


def reference_recursion(inverse_inertia, start, levels, threshold, null_after_last=False):
    """q̈, each level's `TaskInertia` and N by the numpy reference (the module docstring).

    N is the null space after every level but the last (None for a single level), or after the
    last as well with `null_after_last`, each level taking M⁻¹Jpᵀ Λ_N Jp.
    """
    acceleration, null_space, inertias = start.copy(), None, []
    last = len(levels) - 1
    for index, (jacobian, target, sqrt_weights) in enumerate(levels):
        projected, inverse_jt, mobility = projected_terms(
            jacobian, null_space, inverse_inertia.dot
        )
        update = index < last or null_after_last
        inertia = regularized_task_inertia(
            projected.dot(inverse_jt), sqrt_weights, threshold, mobility, projected, update
        )
        acceleration += inverse_jt.dot(inertia.inertia).dot(target - jacobian.dot(acceleration))
        if update:
            used = inverse_jt.dot(inertia.blocking).dot(projected)
            null_space = np.eye(len(start)) - used if null_space is None else null_space - used
        inertias.append(inertia)
    return acceleration, inertias, null_space


def test_symmetric_eigen_decomposes_like_lapack():
    rng = np.random.default_rng(0)
    for size in (1, 2, 3, 6, 9, 17, 32, 40):
        matrix = rng.standard_normal((size, size))
        matrix += matrix.T
        matrix[:, 0] = matrix[0, :] = 0.0  # a zero eigenvalue
        values, vectors = np.empty(size), np.empty((size, size))
        symmetric_eigen(matrix.copy(), values, vectors)
        scale = np.abs(matrix).max()
        np.testing.assert_allclose(values, np.linalg.eigvalsh(matrix), atol=1e-13 * scale)
        np.testing.assert_allclose(vectors @ vectors.T, np.eye(size), atol=1e-13)
        np.testing.assert_allclose((vectors.T * values) @ vectors, matrix, atol=1e-13 * scale)


@pytest.mark.parametrize('name', ROBOTS)
def test_task_inertia_equals_the_reference_on_every_level(name):
    """Λ, Λ_N and the counts of every level, projected levels included, on real robots."""
    threshold = controller(name).singular_value_threshold
    seen_damped = False
    for state in states(name):
        inverse_inertia, _, levels = level_inputs(name, state)
        null_space = None
        for jacobian, _, sqrt_weights in levels:
            projected, inverse_jt, mobility = projected_terms(
                jacobian, null_space, inverse_inertia.dot
            )
            phi = projected.dot(inverse_jt)
            for kinematic in (False, True):
                expected = regularized_task_inertia(
                    phi, sqrt_weights, threshold, mobility, projected if kinematic else None
                )
                inertia, blocking = np.empty_like(phi), np.empty_like(phi)
                given = phi.diagonal().copy() if mobility is None else mobility
                condition, rank, damped = task_inertia(
                    phi, sqrt_weights, given, projected, kinematic, True, threshold, LAW,
                    inertia, blocking,
                )  # fmt: skip
                floor = damping_noise_floor(len(phi), threshold)
                assert close(inertia, expected.inertia, floor)
                assert close(blocking, expected.blocking, floor)
                assert (rank, damped) == (expected.rank, expected.damped)
                assert condition == pytest.approx(expected.condition_number, rel=1e-6)
                seen_damped |= expected.damped > 0
            used = inverse_jt.dot(expected.blocking).dot(projected)
            null_space = np.eye(len(used)) - used if null_space is None else null_space - used
    if name == 'panda':
        assert seen_damped, 'no Panda sample reached a damped band'


def test_rows_without_authority_are_dropped_like_the_reference():
    """A zero row, and a row the level above already takes (projected Φᵢᵢ ≈ 0)."""
    state = states('panda')[0]
    inverse_inertia, _, ((hand, _, _), *_) = level_inputs('panda', state)
    jacobian = np.vstack([hand, np.zeros((1, hand.shape[1]))])
    phi = jacobian @ inverse_inertia @ jacobian.T
    null_space = np.eye(hand.shape[1]) - inverse_inertia @ hand.T @ np.linalg.solve(
        hand @ inverse_inertia @ hand.T, hand
    )
    for rows, above in ((jacobian, None), (np.vstack([hand[:2], hand[:1] + 1e-3]), null_space)):
        projected, inverse_jt, mobility = projected_terms(rows, above, inverse_inertia.dot)
        phi = projected.dot(inverse_jt)
        weights = np.linspace(1.0, 2.0, len(rows))
        expected = regularized_task_inertia(phi, weights, 1e-3, mobility, projected)
        inertia, blocking = np.empty_like(phi), np.empty_like(phi)
        given = phi.diagonal().copy() if mobility is None else mobility
        counts = task_inertia(
            phi, weights, given, projected, True, True, 1e-3, LAW, inertia, blocking
        )[1:]
        assert close(inertia, expected.inertia) and close(blocking, expected.blocking)
        assert counts == (expected.rank, expected.damped)
    empty = np.empty((2, 2)), np.empty((2, 2))
    counts = task_inertia(np.zeros((2, 2)), np.ones(2), np.zeros(2), np.zeros((2, 9)), True,
                          True, 1e-3, LAW, *empty)  # fmt: skip
    assert counts == (np.inf, 0.0, 0.0) and not empty[0].any() and not empty[1].any()


def kernel_inertia(phi, sqrt_weights, threshold, mobility, jacobian, need_blocking=True):
    """(Λ, Λ_N, (condition, rank, damped)) by the kernel; `jacobian` None: no kinematic term."""
    inertia, blocking = np.empty_like(phi), np.empty_like(phi)
    kinematic = jacobian is not None
    rows = jacobian if kinematic else np.zeros((len(phi), 1))
    stats = task_inertia(
        phi, sqrt_weights, mobility, rows, kinematic, need_blocking, threshold, LAW, inertia,
        blocking,
    )  # fmt: skip
    return inertia, blocking, stats


def test_task_inertia_is_free_of_the_units_of_phi():
    """Λ(cΦ) = Λ(Φ)/c for c from 1e-14 to 1e14; the no-authority floor is relative.

    Φ = J Jᵀ (M⁻¹ = I) with row 2 scaled by 1e-7 and row 3 by 10^-5.5: their mobilities are
    1e-14 and 1e-11 of the largest, one under the floor of 1e-12 (dropped: Λ's row and
    column zero), one above it (kept, and as well conditioned as the others once each row is
    scaled by 1/√μ). The kept rows' Λ is D (D Φ D)⁻¹ D with D = diag(1/√Φᵢᵢ). The floor is
    relative (no unit of Φ is assumed), so the same holds when Φ is in any unit.
    """
    rng = np.random.default_rng(4)
    jacobian = rng.standard_normal((4, 7))
    jacobian[2] *= 1e-7
    jacobian[3] *= 10**-5.5
    phi = jacobian @ jacobian.T
    kept = [0, 1, 3]
    scale = 1.0 / np.sqrt(phi.diagonal()[kept])
    expected = np.zeros((4, 4))
    expected[np.ix_(kept, kept)] = np.linalg.inv(phi[np.ix_(kept, kept)] * np.outer(scale, scale))
    expected[np.ix_(kept, kept)] *= np.outer(scale, scale)
    for c in (1e-14, 1e-6, 1.0, 1e6, 1e14):
        inertia, blocking, (_, rank, damped) = kernel_inertia(
            c * phi, np.ones(4), 1e-3, c * phi.diagonal().copy(), None
        )
        assert close(c * inertia, expected), c
        assert close(c * blocking, expected), c
        assert (rank, damped) == (3.0, 0.0), c
        reference = regularized_task_inertia(c * phi, np.ones(4), 1e-3, c * phi.diagonal())
        assert close(inertia, reference.inertia), c


def test_a_projected_row_keeps_what_authority_it_has_left():
    """Rows the level above nearly takes: 10^-10.5 of μ left is kept, 10^-13.5 is not.

    With the row h taken above (N = I − hᵀh/‖h‖², M⁻¹ = I), the rows h + η u (u ⊥ h) keep
    Φᵢᵢ = η²‖u‖² of their μᵢ ≈ ‖h‖²; the authority limit is 1e-12 of μᵢ. The kept row's
    scaled eigenvalue (~1e-10.5) is under the structurally-null limit, so it counts in
    neither rank nor damped, but it is in Λ with its damped gain σ/ε², as in the reference.
    """
    rng = np.random.default_rng(6)
    h = rng.standard_normal(7)
    null_space = np.eye(7) - np.outer(h, h) / h.dot(h)
    u = null_space @ rng.standard_normal(7)
    u *= np.linalg.norm(h) / np.linalg.norm(u)
    jacobian = np.vstack([rng.standard_normal(7), h + 10**-5.25 * u, h + 10**-6.75 * u])
    projected = jacobian @ null_space
    phi = projected @ projected.T
    mobility = np.einsum('ij,ij->i', jacobian, jacobian)
    assert phi[1, 1] / mobility[1] == pytest.approx(10**-10.5, rel=1e-3)
    inertia, blocking, stats = kernel_inertia(phi, np.ones(3), 1e-3, mobility, None)
    expected = regularized_task_inertia(phi, np.ones(3), 1e-3, mobility)
    assert close(inertia, expected.inertia) and close(blocking, expected.blocking)
    assert stats[1:] == (expected.rank, expected.damped) == (1, 0)
    assert inertia[1, 1] > 0.0 and not inertia[2].any() and not blocking[2].any()


def test_nearly_dependent_rows_in_every_band_and_at_any_weight_scale():
    """A third row δ away from the first: its scaled eigenvalue ~δ² sweeps every band.

    δ = 1e-1 .. 1e-6 puts it above ε, between the Λ_N band (1e-2 ε) and ε, below that band
    and near the structurally null limit; with and without the kinematic measure, Λ, Λ_N,
    counts and condition number equal the numpy reference. Multiplying every √w by c leaves
    them unchanged (Φₛ and its eigenvalues scale by c², the gains by 1/c²): the bands are
    relative to the largest scaled eigenvalue, not to the unit of the weights. c is a power
    of two, so the scaling itself rounds nothing (Λ_N near a dependent row amplifies any
    rounding by up to 1/(1e-2 ε)).

    Two eigensolvers agree on an eigenvalue σ to about n·ε_mach·σ_max (both are backward
    stable: Wilkinson & Reinsch 1971), so a gain proportional to σ (the damped band) agrees
    only to n·ε_mach·σ_max/σ relative: the tolerance grows to that where σ is small.
    """
    rng = np.random.default_rng(9)
    factor = rng.standard_normal((7, 7))
    inverse_inertia = factor @ factor.T + 0.1 * np.eye(7)
    base = rng.standard_normal((2, 7))
    seen_blocking_band = False
    for delta in (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6):
        jacobian = np.vstack([base, base[0] + delta * rng.standard_normal(7)])
        phi = jacobian @ inverse_inertia @ jacobian.T
        mobility = phi.diagonal().copy()
        sigma = np.linalg.eigvalsh(phi / np.sqrt(np.outer(mobility, mobility)))
        smallest = sigma[sigma > 1e-9 * sigma[-1]].min() / sigma[-1]
        tolerance = max(TOLERANCE, 3 * 16 * np.finfo(float).eps / smallest)
        for rows in (None, jacobian):
            unit = kernel_inertia(phi, np.array([1.0, 2.0, 0.5]), 1e-3, mobility, rows)
            for c in (2.0**-14, 1.0, 2.0**14):
                weights = c * np.array([1.0, 2.0, 0.5])
                inertia, blocking, stats = kernel_inertia(phi, weights, 1e-3, mobility, rows)
                expected = regularized_task_inertia(phi, weights, 1e-3, None, rows)
                assert close(inertia, expected.inertia, tolerance), (delta, c)
                assert close(blocking, expected.blocking, tolerance), (delta, c)
                assert stats[1:] == (expected.rank, expected.damped), (delta, c)
                assert stats[0] == pytest.approx(expected.condition_number, rel=1e-6)
                assert close(inertia, unit[0], tolerance), (delta, c)
                assert close(blocking, unit[1], tolerance), (delta, c)
                assert stats == pytest.approx(unit[2], rel=1e-6), (delta, c)
            seen_blocking_band |= not close(unit[1], unit[0])
    assert seen_blocking_band, 'no case reached the narrower band of Λ_N'


@pytest.mark.parametrize('name', ROBOTS)
def test_level_steps_give_the_reference_acceleration_and_null_space(name):
    threshold = controller(name).singular_value_threshold
    for state in states(name):
        inverse_inertia, start, levels = level_inputs(name, state)
        expected, inertias, _ = reference_recursion(inverse_inertia, start, levels, threshold)
        acceleration, null_space = start.copy(), np.full((len(start),) * 2, np.nan)
        stats = np.empty((len(levels), 3))
        for index, (jacobian, target, sqrt_weights) in enumerate(levels):
            update = BLOCKING if index < len(levels) - 1 else KEEP
            level_step(
                jacobian, target, sqrt_weights, inverse_inertia, null_space, index == 0,
                threshold, 1.0, True, update, LAW, acceleration, stats[index],
            )  # fmt: skip
        assert close(acceleration, expected)
        assert stats[:, 1:].tolist() == [[i.rank, i.damped] for i in inertias]


@pytest.mark.parametrize(
    'rows',
    [
        [[0, 0, 1, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1, 0]],  # a selection
        [[0, 0, 1, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 1]],  # two ones in a row: a dense product
        [[0, 0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0]],  # a zero row
        [[0, 0, -1, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0]],  # −1: not a selection
    ],
)
def test_a_selection_level_gives_the_reference_acceleration_and_null_space(rows):
    """A level whose rows are rows of the identity (a posture, held joints) is taken by index.

    As the top level and below a dense one: q̈ and N as the numpy reference computes them by
    products, and the same for the rows that are not a selection (the dense products).
    """
    rng = np.random.default_rng(len(rows) + int(np.sum(rows)))
    root = rng.standard_normal((7, 7))
    inverse_inertia = np.linalg.inv(root @ root.T + 7 * np.eye(7))
    top = (rng.standard_normal((2, 7)), rng.standard_normal(2), np.ones(2))
    level = (np.array(rows, dtype=float), rng.standard_normal(len(rows)), np.ones(len(rows)))
    for levels in ([level], [top, level]):
        expected, _, expected_null_space = reference_recursion(
            inverse_inertia, np.zeros(7), levels, 1e-3, null_after_last=True
        )
        acceleration, null_space = np.zeros(7), np.full((7, 7), np.nan)
        stats = np.empty((len(levels), 3))
        for index, (jacobian, target, weights) in enumerate(levels):
            level_step(
                jacobian, target, weights, inverse_inertia, null_space, index == 0, 1e-3, 1.0,
                True, BLOCKING, LAW, acceleration, stats[index],
            )  # fmt: skip
        assert close(acceleration, expected)
        assert close(null_space, expected_null_space)


@pytest.mark.parametrize('name', ROBOTS)
def test_controller_torques_equal_the_reference_recursion(name):
    control = controller(name)
    for state in states(name):
        inverse_inertia, start, levels = level_inputs(name, state)
        threshold = control.singular_value_threshold
        expected, inertias, _ = reference_recursion(inverse_inertia, start, levels, threshold)
        constraint = contact_dynamics(state, control.contacts)[1] if control.contacts else None
        expected_torque = control._torque(state, expected, constraint)[0]
        result = control.compute(state)
        assert close(result.acceleration, expected)
        assert close(result.torque_unlimited, expected_torque)
        reports = [(level.rank, level.damped_directions) for level in result.levels]
        generic = control._generic_ranks
        assert reports == [
            (i.rank, max(rank - i.rank, i.damped)) for i, rank in zip(inertias, generic)
        ]
        conditions = [level.condition_number for level in result.levels]
        assert conditions == pytest.approx([i.condition_number for i in inertias], rel=1e-6)


def reference_hold(inverse_inertia, acceleration, null_space, rows, target, threshold):
    """The joint-limit level by the numpy reference: q̈ moved in place, J̄ Jp returned."""
    projected, inverse_jt, mobility = projected_terms(rows, null_space, inverse_inertia.dot)
    phi = projected.dot(inverse_jt)
    inertia = regularized_task_inertia(phi, np.ones(len(rows)), threshold, mobility).inertia
    consistent_inverse = inverse_jt.dot(inertia)
    acceleration += consistent_inverse.dot(target - rows.dot(acceleration))
    return consistent_inverse.dot(projected)


def test_held_joints_update_acceleration_and_null_space_like_the_reference():
    """Joint-limit rows as the first level and below another (`hold`, EXACT null update)."""
    model = robot('panda')
    limits = JointLimits(model)
    for state in states('panda'):
        inverse_inertia, start, ((hand, target, _), *_) = level_inputs('panda', state)
        active = np.zeros(model.n_actuated, dtype=bool)
        active[[1, 3, 5]] = True
        saturated = limits._with(None, active, np.linspace(-2.0, 2.0, model.n_actuated))
        # As the first level: N = I above it.
        expected_acceleration = start.copy()
        used = reference_hold(
            inverse_inertia, expected_acceleration, None, saturated.jacobian,
            saturated.target, 1e-3,
        )  # fmt: skip
        acceleration, null_space = start.copy(), np.full((model.nv, model.nv), np.nan)
        assert hold(inverse_inertia, acceleration, null_space, True, saturated, 1e-3) is False
        assert close(acceleration, expected_acceleration)
        assert close(null_space, np.eye(model.nv) - used)
        # Below the hand: N from the hand's level, then the rows held within it.
        level_step(
            hand, target, np.ones(len(hand)), inverse_inertia, null_space, True, 1e-3, 1.0,
            False, EXACT, LAW, acceleration, np.empty(3),
        )  # fmt: skip
        reference_null = np.eye(model.nv) - reference_hold(
            inverse_inertia, expected_acceleration, None, hand, target, 1e-3
        )
        expected_null = reference_null - reference_hold(
            inverse_inertia, expected_acceleration, reference_null, saturated.jacobian,
            saturated.target, 1e-3,
        )  # fmt: skip
        hold(inverse_inertia, acceleration, null_space, False, saturated, 1e-3)
        assert close(acceleration, expected_acceleration)
        assert close(null_space, expected_null)


def frozen(array: np.ndarray) -> np.ndarray:
    """A read-only copy of `array`."""
    copy = np.array(array)
    copy.flags.writeable = False
    return copy


def test_read_only_inputs_give_the_same_level():
    """Frozen J, target, √w, M⁻¹ (and Φ, μ): accepted, and the same q̈, N and Λ."""
    state = states('panda')[0]
    inverse_inertia, start, levels = level_inputs('panda', state)
    (hand, hand_target, hand_weights), (jacobian, target, sqrt_weights) = levels[:2]
    results = []
    for wrap in (np.array, frozen):
        acceleration, null_space = start.copy(), np.empty((len(start), len(start)))
        for rows, goal, weights, first in (
            (hand, hand_target, hand_weights, True),
            (jacobian, target, sqrt_weights, False),
        ):
            level_step(
                wrap(rows), wrap(goal), wrap(weights), wrap(inverse_inertia), null_space, first,
                1e-3, 1.0, True, BLOCKING, LAW, acceleration, np.empty(3),
            )  # fmt: skip
        phi = hand @ inverse_inertia @ hand.T
        mobility = phi.diagonal().copy()
        inertia = kernel_inertia(wrap(phi), wrap(hand_weights), 1e-3, wrap(mobility), wrap(hand))
        results.append((acceleration, null_space, *inertia[:2]))
    for writable, read_only in zip(*results):
        np.testing.assert_array_equal(read_only, writable)


@pytest.mark.skipif(config.DISABLE_JIT, reason='NUMBA_DISABLE_JIT=1: nothing is compiled')
def test_kernel_arguments_of_another_type_are_refused_not_compiled():
    with pytest.raises(TypeError):
        symmetric_eigen(np.eye(3, dtype=np.float32), np.empty(3), np.empty((3, 3)))
