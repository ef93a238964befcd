"""Every task's Jacobian, drift, error and desired acceleration, checked independently."""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pinocchio as pin
import pytest
from robots import MIXED_JOINTS_URDF, random_state, robot

from wbc_control.exceptions import FrameNotFound, InvalidShape, InvalidTaskConfig, InvalidValue
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks import (
    ComTask,
    FrameOrientationTask,
    FramePoseTask,
    FramePositionTask,
    JointPostureTask,
)

STEP = 1e-6
IDENTITY_XYZW = [0.0, 0.0, 0.0, 1.0]
seeds = st.integers(0, 2**31 - 1)


def shifted(state: RobotState, step: float) -> RobotState:
    other = RobotState(state.robot)
    other.update(pin.integrate(state.model, state.q, step * state.v), state.v)
    return other


def rate(state: RobotState, quantity) -> np.ndarray:
    """d/dt quantity along q̇ = v, q̈ = 0, by central differences."""
    return (quantity(shifted(state, STEP)) - quantity(shifted(state, -STEP))) / (2 * STEP)


def panda_tasks(panda):
    return [
        FramePositionTask(panda, 'panda_hand', [0.4, 0.1, 0.5], kp=50.0),
        FramePositionTask(
            panda, 'panda_hand', [0.4, 0.1, 0.5], 50.0, constraint='line', axis=[1, 1, 0]
        ),
        FramePositionTask(
            panda, 'panda_hand', [0.4, 0.1, 0.5], 50.0, constraint='plane', axis=[0, 0, 2]
        ),
        FrameOrientationTask(panda, 'panda_hand', [1.0, 0.0, 0.0, 0.0], kp=30.0),
        FramePoseTask(panda, 'panda_hand', [0.4, 0.1, 0.5, 1.0, 0.0, 0.0, 0.0], kp=40.0),
        ComTask(panda, [0.0, 0.0, 0.4], kp=10.0),
        JointPostureTask(panda, np.zeros(panda.n_actuated), kp=5.0),
    ]


@settings(max_examples=15, deadline=None)
@given(seeds)
def test_jacobian_and_drift_are_derivatives_of_task_velocity(seed):
    panda = robot('panda')
    state = random_state(panda, seed)
    for task in panda_tasks(panda):
        terms = task.compute(state)
        assert terms.jacobian.shape == (task.dim, panda.nv)
        np.testing.assert_allclose(terms.velocity, terms.jacobian @ state.v, atol=1e-12)
        drift = rate(state, lambda s, t=task: t.compute(s).jacobian @ s.v)
        np.testing.assert_allclose(terms.drift, drift, atol=2e-5, err_msg=type(task).__name__)


@settings(max_examples=15, deadline=None)
@given(seeds)
def test_position_errors_decrease_at_the_jacobian_rate(seed):
    panda = robot('panda')
    state = random_state(panda, seed)
    for task in panda_tasks(panda):
        if isinstance(task, (FrameOrientationTask, FramePoseTask)):
            continue
        terms = task.compute(state)
        error_rate = rate(state, lambda s, t=task: t.compute(s).error)
        np.testing.assert_allclose(error_rate, -terms.jacobian @ state.v, atol=1e-6)


def test_orientation_jacobian_is_the_world_angular_velocity():
    panda = robot('panda')
    state = random_state(panda, 5)
    task = FrameOrientationTask(panda, 'panda_link7', IDENTITY_XYZW, kp=1.0)
    after, before = shifted(state, STEP), shifted(state, -STEP)
    frame = task.frame_id
    omega = pin.log3(
        after.frame_placement(frame).rotation @ before.frame_placement(frame).rotation.T
    ) / (2 * STEP)
    np.testing.assert_allclose(task.compute(state).jacobian @ state.v, omega, atol=1e-6)


def test_orientation_error_is_the_world_rotation_vector_to_the_target():
    panda = robot('panda')
    state = random_state(panda, 6)
    task = FrameOrientationTask(panda, 'panda_hand', IDENTITY_XYZW, kp=1.0)
    rotation = state.frame_placement(task.frame_id).rotation
    error = task.compute(state).error
    # Rotating the current orientation by exp(e) in the world lands on the target.
    np.testing.assert_allclose(pin.exp3(error) @ rotation, np.eye(3), atol=1e-9)


def test_desired_acceleration_is_the_pd_law_with_feed_forward():
    panda = robot('panda')
    state = random_state(panda, 7)
    task = FramePositionTask(panda, 'panda_hand', [0.3, 0.0, 0.6], kp=[10, 20, 30], kd=[1, 2, 3])
    task.set_target([0.3, 0.0, 0.6], velocity=[0.1, 0.0, 0.0], acceleration=[0.0, 0.0, 1.0])
    terms = task.compute(state)
    position = state.frame_placement(task.frame_id).translation
    expected = (
        np.array([0.0, 0.0, 1.0])
        + np.array([1, 2, 3]) * (np.array([0.1, 0.0, 0.0]) - terms.velocity)
        + np.array([10, 20, 30]) * (np.array([0.3, 0.0, 0.6]) - position)
    )
    np.testing.assert_allclose(terms.desired_acceleration, expected, atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(seeds, st.floats(-2.0, 2.0))
def test_line_and_plane_targets_leave_free_directions_uncontrolled(seed, slide):
    """Moving the target along a line (or in a plane) changes nothing (Freitag 2015)."""
    panda = robot('panda')
    state = random_state(panda, seed)
    axis = np.array([1.0, -2.0, 0.5])
    for constraint, free in (('line', axis), ('plane', np.cross(axis, [0.0, 0.0, 1.0]))):
        task = FramePositionTask(
            panda, 'panda_hand', [0.4, 0.0, 0.5], 25.0, constraint=constraint, axis=axis
        )
        assert task.dim == (2 if constraint == 'line' else 1)
        np.testing.assert_allclose(task.selection @ task.selection.T, np.eye(task.dim), atol=1e-12)
        before = task.compute(state)
        task.set_target(np.array([0.4, 0.0, 0.5]) + slide * free)
        after = task.compute(state)
        np.testing.assert_allclose(after.error, before.error, atol=1e-9)
        np.testing.assert_allclose(
            after.desired_acceleration, before.desired_acceleration, atol=1e-8
        )
    line = FramePositionTask(panda, 'panda_hand', [0, 0, 0], 1.0, constraint='line', axis=axis)
    np.testing.assert_allclose(line.selection @ axis, 0.0, atol=1e-12)


def test_pose_task_stacks_position_and_orientation():
    panda = robot('panda')
    state = random_state(panda, 8)
    quaternion = [0.0, np.sin(0.3), 0.0, np.cos(0.3)]
    pose = FramePoseTask(panda, 'panda_hand', [0.4, 0.1, 0.5, *quaternion], kp=[1, 2, 3, 4, 5, 6])
    position = FramePositionTask(panda, 'panda_hand', [0.4, 0.1, 0.5], kp=[1, 2, 3])
    orientation = FrameOrientationTask(panda, 'panda_hand', quaternion, kp=[4, 5, 6])
    stacked = pose.compute(state)
    for field, top, bottom in zip(stacked, position.compute(state), orientation.compute(state)):
        np.testing.assert_allclose(field, np.concatenate([top, bottom]), atol=1e-12)


def test_posture_error_takes_the_short_way_round_continuous_joints():
    model = RobotModel.from_urdf_string(MIXED_JOINTS_URDF)
    state = RobotState(model)
    state.update(model.configuration([0.0, -np.pi + 0.1, 0.0]), np.zeros(3))
    task = JointPostureTask(model, [0.5, np.pi - 0.1, 0.02], kp=1.0)
    np.testing.assert_allclose(task.compute(state).error, [0.5, -0.2, 0.02], atol=1e-12)


def test_posture_task_selects_actuated_joints_of_a_floating_base_robot():
    talos = robot('talos')
    state = random_state(talos, 2)
    task = JointPostureTask(talos, np.zeros(talos.n_actuated), kp=1.0)
    terms = task.compute(state)
    np.testing.assert_array_equal(terms.jacobian[:, :6], 0.0)
    np.testing.assert_allclose(terms.error, -talos.joint_positions(state.q), atol=1e-12)


@pytest.mark.parametrize('name', ['panda', 'talos'])
def test_the_posture_jacobian_is_the_selection_of_its_columns(name):
    """J A Jᵀ = A[cols, cols] and J x = x[cols]: a caller may skip the dense products."""
    model = robot(name)
    task = JointPostureTask(model, model.joint_positions(model.neutral_configuration()), 1.0)
    jacobian, columns = task.compute(random_state(model, 0)).jacobian, task.jacobian_columns
    matrix = np.random.default_rng(0).standard_normal((model.nv, model.nv))
    np.testing.assert_array_equal(jacobian @ matrix @ jacobian.T, matrix[columns][:, columns])
    np.testing.assert_array_equal(jacobian @ matrix[:, 0], matrix[columns, 0])
    assert FramePoseTask.jacobian_columns is None


def test_gains_are_validated_and_kd_defaults_to_critical_damping():
    panda = robot('panda')
    task = ComTask(panda, [0, 0, 0.5], kp=[4.0, 9.0, 16.0])
    np.testing.assert_allclose(task.gains.kd, [4.0, 6.0, 8.0])
    for kp, kd in (([-1.0, 1, 1], None), (1.0, [np.nan, 1, 1]), ([1, 2], None)):
        with pytest.raises((InvalidValue, InvalidShape)):
            task.set_gains(kp, kd)
    np.testing.assert_allclose(task.gains.kp, [4.0, 9.0, 16.0])


def test_bad_task_configuration_raises_typed_errors():
    panda = robot('panda')
    with pytest.raises(FrameNotFound):
        FramePoseTask(panda, 'gripper', [0, 0, 0, 0, 0, 0, 1], kp=1.0)
    with pytest.raises(InvalidTaskConfig, match='point, line, plane'):
        FramePositionTask(panda, 'panda_hand', [0, 0, 0], 1.0, constraint='circle')
    with pytest.raises(InvalidTaskConfig, match='axis'):
        FramePositionTask(panda, 'panda_hand', [0, 0, 0], 1.0, constraint='line')
    with pytest.raises(InvalidValue, match='non-zero'):
        FramePositionTask(panda, 'panda_hand', [0, 0, 0], 1.0, constraint='plane', axis=[0, 0, 0])
    with pytest.raises(InvalidValue, match='unit norm'):
        FrameOrientationTask(panda, 'panda_hand', [0, 0, 0, 0], kp=1.0)


def test_rejected_target_keeps_the_previous_reference():
    panda = robot('panda')
    task = FramePoseTask(panda, 'panda_hand', [0.4, 0.1, 0.5, 0, 0, 0, 1], kp=1.0)
    kept = task.references
    with pytest.raises(InvalidValue):
        task.set_target([0.1, 0.1, 0.1, 0.0, 0.0, 0.0, 3.0])
    assert task.references is kept
