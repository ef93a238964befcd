"""Feed-forward in every task law: ẍ* = ẍ_ref + K_d (ẋ_ref − ẋ) + K_p e (Khatib 1987, eq 26).

The references are written the way a trajectory writes them each tick
(:meth:`Task.write_reference`, into preallocated arrays); the expected values are computed here
from the state's kinematics, not from the tasks.
"""

import numpy as np
import pinocchio as pin
import pytest
from robots import random_state, robot

from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.tasks.com import ComTask
from wbc_control.tasks.frame_orientation import FrameOrientationTask, quaternion_xyzw
from wbc_control.tasks.frame_pose import FramePoseTask
from wbc_control.tasks.frame_position import FramePositionTask
from wbc_control.tasks.joint_posture import JointPostureTask
from wbc_control.tasks.task import Task

HAND = 'panda_hand'
KP, KD = np.array([30.0, 40.0, 50.0]), np.array([3.0, 5.0, 7.0])
AXIS = np.array([1.0, -2.0, 0.5])


def every_task(panda) -> dict[str, Task]:
    """One task of every type (and every target set), away from the random state."""
    hand_pose = [0.4, 0.1, 0.5, 1.0, 0.0, 0.0, 0.0]
    posture = np.clip(np.full(panda.n_actuated, 0.3), *panda.position_limits)
    return {
        'point': FramePositionTask(panda, HAND, hand_pose[:3], KP, KD),
        'line': FramePositionTask(panda, HAND, hand_pose[:3], KP, KD, 'line', AXIS),
        'plane': FramePositionTask(panda, HAND, hand_pose[:3], KP, KD, 'plane', AXIS),
        'orientation': FrameOrientationTask(panda, HAND, hand_pose[3:], KP, KD),
        'pose': FramePoseTask(panda, HAND, hand_pose, np.tile(KP, 2), np.tile(KD, 2)),
        'com': ComTask(panda, [0.1, 0.0, 0.4], KP, KD),
        'posture': JointPostureTask(panda, posture, 20.0, 3.0),
    }


@pytest.mark.parametrize('name', list(every_task(robot('panda'))))
def test_a_written_reference_with_zero_rates_reproduces_the_set_point_law_exactly(name):
    panda = robot('panda')
    state = random_state(panda, 3, speed=1.5)
    task = every_task(panda)[name]
    before = task.compute(state)
    sample = task.reference_sample()
    task.read_reference(sample)
    assert not sample.velocity.any() and not sample.acceleration.any()
    task.write_reference(sample)
    after = task.compute(state)
    for field in before._fields:
        np.testing.assert_array_equal(getattr(after, field), getattr(before, field), field)


def test_zero_references_reproduce_the_controller_torque_exactly():
    panda = robot('panda')
    state = random_state(panda, 4)

    def torque(rewrite: bool) -> np.ndarray:
        tasks = every_task(panda)
        entries = [TaskEntry('pose', tasks['pose'], 0), TaskEntry('posture', tasks['posture'], 1)]
        if rewrite:
            for entry in entries:
                sample = entry.task.reference_sample()
                entry.task.read_reference(sample)
                entry.task.write_reference(sample)
        return PrioritizedController(panda, entries).compute(state).torque

    np.testing.assert_array_equal(torque(True), torque(False))


def on_trajectory_sample(task: Task, state, frame_id: int, acceleration: np.ndarray):
    """A sample equal to where the task is now and how fast it moves, with ẍ_ref given."""
    sample = task.reference_sample()
    placement = state.frame_placement(frame_id)
    twist = state.frame_jacobian(frame_id) @ state.v  # (linear, angular), world axes
    if sample.rotation is not None:
        sample.rotation[:] = placement.rotation
    if sample.position.size == 3:
        sample.position[:] = placement.translation
    rates = sample.velocity.size
    sample.velocity[:] = twist[3:] if sample.rotation is not None and rates == 3 else twist[:rates]
    sample.acceleration[:] = acceleration
    return sample


@pytest.mark.parametrize('name', ['point', 'orientation', 'pose'])
def test_on_the_trajectory_the_command_is_the_reference_acceleration(name):
    """On x_ref(t) at ẋ_ref(t): e = 0 and ẋ_ref − ẋ = 0, so ẍ* = ẍ_ref, whatever the gains."""
    panda = robot('panda')
    state = random_state(panda, 8, speed=2.0)
    task = every_task(panda)[name]
    acceleration = np.array([0.7, -1.1, 2.3, 4.0, -0.5, 1.5])[: task.dim]
    sample = on_trajectory_sample(task, state, task.frame_id, acceleration)
    if name != 'point':
        # The angular velocity is far from zero: the feed-forward carries it on SO(3).
        assert np.linalg.norm(state.frame_jacobian(task.frame_id)[3:] @ state.v) > 0.5
    task.write_reference(sample)
    terms = task.compute(state)
    np.testing.assert_allclose(terms.error, 0.0, atol=1e-12)
    np.testing.assert_allclose(terms.desired_acceleration, acceleration, atol=1e-9)


def test_on_a_com_or_posture_trajectory_the_command_is_the_reference_acceleration():
    panda = robot('panda')
    state = random_state(panda, 9, speed=2.0)
    tasks = every_task(panda)
    com, posture = tasks['com'], tasks['posture']
    sample = com.reference_sample()
    sample.position[:] = state.com
    sample.velocity[:] = state.com_jacobian @ state.v
    sample.acceleration[:] = [0.2, -0.3, 0.4]
    com.write_reference(sample)
    np.testing.assert_allclose(com.compute(state).desired_acceleration, sample.acceleration)
    sample = posture.reference_sample()
    sample.position[:] = panda.joint_positions(state.q)
    sample.velocity[:] = state.v[panda.indices.v]
    sample.acceleration[:] = np.linspace(-1.0, 1.0, posture.dim)
    posture.write_reference(sample)
    terms = posture.compute(state)
    np.testing.assert_allclose(terms.desired_acceleration, sample.acceleration, atol=1e-9)


def test_orientation_feed_forward_off_the_trajectory_is_the_so3_pd_law():
    """ẍ* = ω̇_ref + K_d (ω_ref − ω) + K_p log₃(R_ref Rᵀ) with a turning reference."""
    panda = robot('panda')
    state = random_state(panda, 11, speed=1.5)
    task = every_task(panda)['orientation']
    rotation = state.frame_placement(task.frame_id).rotation
    sample = task.reference_sample()
    sample.rotation[:] = pin.exp3(np.array([0.2, -0.1, 0.3])) @ rotation
    sample.velocity[:] = [1.0, -2.0, 0.5]
    sample.acceleration[:] = [3.0, 0.0, -1.0]
    task.write_reference(sample)
    omega = state.frame_jacobian(task.frame_id)[3:] @ state.v
    expected = sample.acceleration + KD * (sample.velocity - omega) + KP * [0.2, -0.1, 0.3]
    np.testing.assert_allclose(task.compute(state).desired_acceleration, expected, atol=1e-9)


def test_line_and_plane_feed_forward_acts_only_along_the_constrained_directions():
    panda = robot('panda')
    state = random_state(panda, 12)
    for name in ('line', 'plane'):
        task = every_task(panda)[name]
        before = task.compute(state).desired_acceleration
        free = AXIS if name == 'line' else np.cross(AXIS, [0.0, 0.0, 1.0])
        sample = task.reference_sample()
        task.read_reference(sample)
        sample.position += 0.3 * free
        sample.velocity[:] = 2.0 * free
        sample.acceleration[:] = -5.0 * free
        task.write_reference(sample)
        np.testing.assert_allclose(task.compute(state).desired_acceleration, before, atol=1e-9)


def test_writing_a_reference_allocates_nothing_the_task_keeps():
    """The task's reference arrays stay the same objects: the sample is copied into them."""
    panda = robot('panda')
    for task in every_task(panda).values():
        sample = task.reference_sample()
        task.read_reference(sample)
        held = task.reference_sample()
        task.read_reference(held)
        sample.velocity += 0.25
        task.write_reference(sample)
        sample.velocity += 1.0  # the task copied, it does not alias the sample
        check = task.reference_sample()
        task.read_reference(check)
        np.testing.assert_allclose(check.velocity, held.velocity + 0.25)


def test_a_set_point_is_not_aliased_with_the_caller_array():
    panda = robot('panda')
    target = np.array([0.4, 0.0, 0.5])
    task = FramePositionTask(panda, HAND, target, 10.0)
    sample = task.reference_sample()
    task.read_reference(sample)
    sample.position[:] = [0.0, 0.0, 1.0]
    task.write_reference(sample)
    np.testing.assert_array_equal(target, [0.4, 0.0, 0.5])
    quaternion = quaternion_xyzw(np.eye(3))
    orientation = FrameOrientationTask(panda, HAND, quaternion, 10.0)
    np.testing.assert_array_equal(orientation.reference.rotation, np.eye(3))
