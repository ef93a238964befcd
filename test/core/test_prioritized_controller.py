"""Properties of the prioritized controller (Khatib 1987; Sentis & Khatib 2005; Freitag 2015)."""

from hypothesis import assume, given, settings
from hypothesis import strategies as st
import numpy as np
import pinocchio as pin
import pytest
from robots import random_state, robot

from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.exceptions import InvalidTaskConfig, InvalidValue, ModelError
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks import (
    ComTask,
    FrameOrientationTask,
    FramePoseTask,
    FramePositionTask,
    JointPostureTask,
)

seeds = st.integers(0, 2**31 - 1)
UNLIMITED = np.full(9, np.inf)


def hand_pose(panda, kp=80.0):
    return FramePoseTask(panda, 'panda_hand', [0.45, 0.1, 0.4, 1.0, 0.0, 0.0, 0.0], kp=kp)


def posture(model, kp=20.0):
    return JointPostureTask(model, np.zeros(model.n_actuated), kp=kp)


def controller(model, *entries, **kwargs):
    kwargs.setdefault('effort_limits', np.full(model.n_actuated, np.inf))
    return PrioritizedController(model, list(entries), **kwargs)


def exact(result) -> bool:
    """No level was damped (the regularization is exact away from singularities)."""
    return all(level.damped_directions == 0 for level in result.levels)


@settings(max_examples=40, deadline=None)
@given(seeds)
def test_single_level_achieves_the_desired_task_acceleration(seed):
    panda = robot('panda')
    state = random_state(panda, seed)
    result = controller(panda, TaskEntry('hand', hand_pose(panda))).compute(state)
    assume(exact(result))
    report = result.tasks[0]
    np.testing.assert_allclose(
        report.achieved_acceleration, report.desired_acceleration, rtol=1e-7, atol=1e-7
    )
    # And the torque really produces that acceleration: q̈ = M⁻¹(τ − h).
    acceleration = np.linalg.solve(state.mass_matrix, result.torque - state.nonlinear_effects)
    terms = hand_pose(panda).compute(state)
    np.testing.assert_allclose(
        terms.jacobian @ acceleration + terms.drift, terms.desired_acceleration, atol=1e-6
    )


@settings(max_examples=40, deadline=None)
@given(seeds)
def test_lower_levels_never_change_a_higher_level_task_acceleration(seed):
    panda = robot('panda')
    state = random_state(panda, seed)
    top = TaskEntry('hand', FramePositionTask(panda, 'panda_hand', [0.4, 0, 0.5], kp=60.0), 0)
    middle = TaskEntry('wrist', FrameOrientationTask(panda, 'panda_link7', [0, 0, 0, 1], 30.0), 1)
    bottom = TaskEntry('posture', posture(panda), 2)
    alone = controller(panda, top).compute(state)
    two = controller(panda, top, middle).compute(state)
    three = controller(panda, top, middle, bottom).compute(state)
    assume(exact(alone) and exact(two))
    hand = FramePositionTask(panda, 'panda_hand', [0.4, 0, 0.5], kp=60.0).compute(state)
    for result in (two, three):
        np.testing.assert_allclose(
            hand.jacobian @ result.acceleration, hand.jacobian @ alone.acceleration, atol=1e-8
        )
    wrist = middle.task.compute(state)
    np.testing.assert_allclose(
        wrist.jacobian @ three.acceleration, wrist.jacobian @ two.acceleration, atol=1e-7
    )
    # Equivalently J_i M⁻¹ τ_k = 0 for the torque the bottom level adds.
    added_torque = three.torque - two.torque
    np.testing.assert_allclose(
        hand.jacobian @ state.solve_mass_matrix(added_torque), 0.0, atol=1e-8
    )


@settings(max_examples=30, deadline=None)
@given(seeds)
def test_posture_only_is_computed_torque(seed):
    panda = robot('panda')
    state = random_state(panda, seed)
    kp, kd = 25.0, 7.0
    task = JointPostureTask(panda, np.full(panda.n_actuated, 0.1), kp=kp, kd=kd)
    result = controller(panda, TaskEntry('posture', task)).compute(state)
    error = pin.difference(panda.model, state.q, panda.configuration(np.full(9, 0.1)))
    expected = state.mass_matrix @ (kp * error - kd * state.v) + state.nonlinear_effects
    np.testing.assert_allclose(result.torque, expected, rtol=1e-8, atol=1e-8)


def test_no_tasks_gives_gravity_and_coriolis_compensation():
    panda = robot('panda')
    state = random_state(panda, 1)
    result = controller(panda).compute(state)
    np.testing.assert_allclose(result.torque, state.nonlinear_effects, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seeds)
def test_consistent_inverse_minimises_kinetic_energy_among_right_inverses(seed):
    """Khatib 1987: J̄ = M⁻¹Jᵀ(JM⁻¹Jᵀ)⁻¹ is the M-norm-minimal solution of J q̈ = r."""
    panda = robot('panda')
    state = random_state(panda, seed)
    result = controller(panda, TaskEntry('hand', hand_pose(panda))).compute(state)
    assume(exact(result))
    terms = hand_pose(panda).compute(state)
    jacobian, qdd = terms.jacobian, result.acceleration
    rng = np.random.default_rng(seed)
    null_basis = np.linalg.svd(jacobian)[2][jacobian.shape[0] :]  # (nv − 6, nv)
    energy = qdd @ state.mass_matrix @ qdd
    for _ in range(20):
        other = qdd + null_basis.T @ rng.standard_normal(null_basis.shape[0])
        np.testing.assert_allclose(jacobian @ other, jacobian @ qdd, atol=1e-8)
        assert other @ state.mass_matrix @ other >= energy - 1e-9
    # Any other right inverse J_r (J J_r = I) costs at least as much kinetic energy.
    mass = state.mass_matrix
    consistent = np.linalg.solve(mass, jacobian.T) @ np.linalg.inv(
        jacobian @ np.linalg.solve(mass, jacobian.T)
    )
    for _ in range(20):
        mix = rng.standard_normal((null_basis.shape[0], 6))
        right = np.linalg.pinv(jacobian) + null_basis.T @ mix
        np.testing.assert_allclose(jacobian @ right, np.eye(6), atol=1e-8)
        velocity = rng.standard_normal(6)
        assert (right @ velocity) @ mass @ (right @ velocity) >= (consistent @ velocity) @ mass @ (
            consistent @ velocity
        ) - 1e-9


def test_weights_share_the_residual_of_conflicting_tasks_in_one_level():
    panda = robot('panda')
    state = random_state(panda, 4, speed=0.0)
    near = FramePositionTask(panda, 'panda_hand', [0.5, 0.0, 0.5], kp=100.0)
    far = FramePositionTask(panda, 'panda_hand', [0.3, 0.2, 0.3], kp=100.0)
    ctrl = controller(panda, TaskEntry('near', near, 0, 1.0), TaskEntry('far', far, 0, 1.0))

    def residuals():
        reports = ctrl.compute(state).tasks
        return [np.linalg.norm(r.achieved_acceleration - r.desired_acceleration) for r in reports]

    balanced = residuals()
    ctrl.set_weight('near', 100.0)
    favoured = residuals()
    assert favoured[0] < 0.1 * balanced[0]
    assert favoured[1] > balanced[1]
    with pytest.raises(InvalidValue):
        ctrl.set_weight('near', -1.0)
    assert ctrl.weight('near') == 100.0


def singular_sweep(threshold: float) -> tuple[np.ndarray, list[int]]:
    """UR5 hand pose task while the elbow sweeps through the stretched singularity (elbow = 0)."""
    ur5 = robot('ur5')
    hand = FramePoseTask(ur5, 'tool0', [0.9, 0.3, 0.4, 0.0, 0.0, 0.0, 1.0], kp=100.0)
    ctrl = controller(ur5, TaskEntry('hand', hand), singular_value_threshold=threshold)
    state = RobotState(ur5)
    torques, damped = [], []
    for elbow in np.linspace(-0.4, 0.4, 801):
        state.update(np.array([0.0, -1.2, elbow, 0.3, 1.2, 0.0]), np.zeros(6))
        result = ctrl.compute(state)
        torques.append(result.torque)
        damped.append(result.levels[0].damped_directions)
    return np.array(torques), damped


def test_torques_stay_finite_bounded_and_continuous_through_a_singularity():
    torques, damped = singular_sweep(threshold=0.05)
    assert np.isfinite(torques).all()
    assert max(damped) > 0, 'the sweep must actually cross the singular region'
    peak = np.abs(torques).max()
    assert peak < 2e3
    steps = np.abs(np.diff(torques, axis=0)).max()
    assert steps < 0.05 * peak, f'torque jumps by {steps:.1f} N m between 1 mrad samples'
    # Without the regularisation (ε → 0) the same sweep demands far larger torques.
    undamped, _ = singular_sweep(threshold=1e-12)
    assert np.abs(undamped).max() > 10 * peak


def test_saturation_is_reported_never_silent():
    panda = robot('panda')
    state = random_state(panda, 9)
    ctrl = PrioritizedController(panda, [TaskEntry('hand', hand_pose(panda, kp=1e5))])
    result = ctrl.compute(state)
    limits = panda.effort_limits
    # The hierarchy keeps the torque in range (the task gives way) and reports the joints it
    # holds at their limit; the output stage has nothing left to clip.
    assert result.saturated.any()
    at_limit = np.isclose(np.abs(result.torque), limits, rtol=0.0, atol=1e-9 * limits)
    np.testing.assert_array_equal(result.saturated, at_limit)
    assert (np.abs(result.torque) <= limits * (1 + 1e-12)).all()
    np.testing.assert_allclose(result.torque, result.torque_unlimited, atol=1e-9)
    assert result.levels[0].residual > 0.0


def test_level_reports_task_space_inertia_conditioning():
    panda = robot('panda')
    state = random_state(panda, 13)  # 12 is within 0.2 rad of a singularity
    result = controller(
        panda, TaskEntry('hand', hand_pose(panda), 0), TaskEntry('posture', posture(panda), 1)
    ).compute(state)
    top, bottom = result.levels
    assert top.task_names == ('hand',) and top.rank == 6 and top.condition_number >= 1.0
    assert bottom.rank == panda.nv - 6  # what the hand leaves free


def test_invalid_controller_configuration():
    panda = robot('panda')
    task = ComTask(panda, [0, 0, 0.4], kp=1.0)
    with pytest.raises(InvalidTaskConfig, match='duplicate'):
        PrioritizedController(panda, [TaskEntry('a', task), TaskEntry('a', task)])
    with pytest.raises(InvalidTaskConfig):
        TaskEntry('a', task, priority=-1)
    with pytest.raises(InvalidValue):
        TaskEntry('a', task, weight=0.0)
    with pytest.raises(InvalidValue):
        PrioritizedController(panda, [TaskEntry('a', task)], singular_value_threshold=0.0)
    with pytest.raises(ModelError, match='contact'):
        PrioritizedController(robot('talos'), [])


def test_a_nearly_blocked_posture_row_is_damped_not_amplified():
    """Regression: Jacobi scaling by the projected Φᵢᵢ once asked ~500 N m of this posture.

    What the posture adds is its own null-space torque and the fingers it holds: about 1 N m.
    """
    panda = robot('panda')
    state = RobotState(panda)
    q = [0.0274, -0.8025, 0.0197, -2.377, 0.0008, 1.5492, 0.7963, 0.04, 0.0155]
    state.update(np.array(q), np.zeros(panda.nv))
    ready = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]
    hand = TaskEntry('hand', hand_pose(panda, kp=100.0), 0)
    below = TaskEntry('posture', JointPostureTask(panda, ready, kp=25.0), 1)
    alone = controller(panda, hand).compute(state).torque
    with_posture = controller(panda, hand, below).compute(state).torque
    assert np.abs(with_posture - alone).max() < 2.0
