"""Every task type keeps the Task interface's promises (the contract the config and node use).

For each type: the number of gains and target values it declares for a robot is what an
instance takes and gives; a target taken from the current state holds the task there (zero
error); and the small validators behind targets (unit quaternions, target sets, posture
messages) accept what they document and reject the rest.
"""

import dataclasses

import numpy as np
import pytest
from robots import random_state, robot

from wbc_control.control.contact.contacts import Contact
from wbc_control.exceptions import InvalidShape, InvalidTaskConfig, InvalidValue
from wbc_control.tasks import (
    ComTask,
    FrameOrientationTask,
    FramePoseTask,
    FramePositionTask,
    JointPostureTask,
)
from wbc_control.tasks.frame_orientation import QUATERNION_NORM_TOLERANCE, unit_quaternion
from wbc_control.tasks.frame_position import TargetSet, target_set
from wbc_control.tasks.joint_posture import (
    POSITION_LIMIT_TOLERANCE,
    check_posture_limits,
    merge_posture_target,
)
from wbc_control.tasks.task import PDGains, as_slice, parse_frame


def panda_tasks(panda):
    return [
        ComTask(panda, [0.0, 0.0, 0.4], kp=10.0),
        FramePositionTask(panda, 'panda_hand', [0.4, 0.0, 0.5], kp=10.0),
        FrameOrientationTask(panda, 'panda_hand', [1.0, 0.0, 0.0, 0.0], kp=10.0),
        FramePoseTask(panda, 'panda_hand', [0.4, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0], kp=10.0),
        JointPostureTask(panda, np.zeros(panda.n_actuated), kp=10.0),
    ]


@pytest.mark.parametrize('index', range(5))
def test_declared_sizes_are_what_an_instance_takes_and_gives(index):
    panda = robot('panda')
    state = random_state(panda, index)
    task = panda_tasks(panda)[index]
    assert not task.target_pending  # built with a target: nothing to take from a state
    per_axis = {ComTask: 3, FramePositionTask: 3, FrameOrientationTask: 3, FramePoseTask: 6}
    expected = per_axis.get(type(task), panda.n_actuated)  # a posture: one gain per joint
    assert type(task).gains_size_for(panda) == task.gains_size == expected
    task.set_gains(np.arange(1.0, task.gains_size + 1.0))  # the declared count is accepted
    target = task.target_from_state(state)
    assert target.shape == (type(task).target_size_for(panda),)
    task.set_target(target)
    np.testing.assert_allclose(task.compute(state).error, 0.0, atol=1e-9)


def test_unit_quaternion_normalises_within_the_tolerance_and_rejects_beyond():
    quaternion = np.array([0.1, -0.2, 0.3, 0.9])
    for norm in (1.0 - 0.5 * QUATERNION_NORM_TOLERANCE, 1.0 + 0.5 * QUATERNION_NORM_TOLERANCE):
        scaled = quaternion / np.linalg.norm(quaternion) * norm
        unit = unit_quaternion(scaled)
        assert np.linalg.norm(unit) == pytest.approx(1.0, abs=1e-15)
        np.testing.assert_allclose(unit, scaled / norm, atol=1e-15)
    with pytest.raises(InvalidValue):
        unit_quaternion(quaternion / np.linalg.norm(quaternion) * 1.1)


def test_an_unset_constraint_is_a_point_target():
    assert target_set(None) is TargetSet.POINT
    assert target_set('') is TargetSet.POINT
    assert target_set('line') is TargetSet.LINE
    with pytest.raises(Exception, match='constraint'):
        target_set('circle')


def test_posture_targets_from_messages_need_one_position_per_name():
    panda = robot('panda')
    current = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
    names = list(panda.joint_names[:2])
    merged = merge_posture_target(panda, current, names, [0.1, -0.2])
    np.testing.assert_allclose(merged[:2], [0.1, -0.2])
    np.testing.assert_allclose(merged[2:], current[2:])
    with pytest.raises(InvalidShape):
        merge_posture_target(panda, current, names, [0.1])


TASK_TYPES = [ComTask, FramePositionTask, FrameOrientationTask, FramePoseTask, JointPostureTask]


@pytest.mark.parametrize('task_type', TASK_TYPES, ids=lambda t: t.__name__)
def test_placeholder_targets_have_the_declared_size_and_rotations_are_unit(task_type):
    """A task built before its first state holds a stand-in of the declared shape.

    A rotation stand-in is a valid (unit) quaternion: the identity.
    """
    panda = robot('panda')
    placeholder = task_type.placeholder_target(panda)
    assert placeholder.shape == (task_type.target_size_for(panda),)
    if task_type in (FrameOrientationTask, FramePoseTask):
        np.testing.assert_array_equal(placeholder[-4:], [0.0, 0.0, 0.0, 1.0])
        np.testing.assert_array_equal(task_type.parse_target(panda, placeholder), placeholder)


def test_as_slice_only_for_contiguous_ascending_indices():
    assert as_slice(np.array([3, 4, 5])) == slice(3, 6)
    for indices in (np.array([0, 2, 3]), np.array([5, 4]), np.array([], dtype=int)):
        result = as_slice(indices)
        assert isinstance(result, np.ndarray)
        np.testing.assert_array_equal(np.arange(10)[result], np.arange(10)[indices])


def test_posture_targets_from_messages_reject_duplicate_names():
    panda = robot('panda')
    current = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
    name = panda.joint_names[0]
    with pytest.raises(InvalidShape, match='duplicate'):
        merge_posture_target(panda, current, [name, name], [0.1, 0.2])


def test_a_frame_task_needs_a_frame():
    panda = robot('panda')
    for value in (None, ''):
        with pytest.raises(InvalidTaskConfig, match='needs a frame'):
            parse_frame(panda, 'frame_position', value)
    assert parse_frame(panda, 'frame_position', 'panda_hand') == 'panda_hand'


def test_a_posture_message_must_name_a_joint_of_the_model():
    panda = robot('panda')
    current = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
    with pytest.raises(InvalidShape, match='no joint'):
        merge_posture_target(panda, current, ['conveyor'], [0.1])


def test_gains_references_and_contacts_cannot_be_changed_in_place():
    """Readers never see half an update: gains, references and contact rows are immutable."""
    panda = robot('panda')
    task = FramePositionTask(panda, 'panda_hand', [0.4, 0.0, 0.5], kp=[1.0, 2.0, 3.0])
    for array in (task.gains.kp, task.gains.kd, robot_contact_rows()):
        with pytest.raises(ValueError):
            array[0] = 5.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.reference.position = np.zeros(3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.gains.kp = np.zeros(3)
    orientation = FrameOrientationTask(panda, 'panda_hand', [1.0, 0.0, 0.0, 0.0], kp=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        orientation.reference.rotation = np.eye(3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Contact.create(robot('talos'), 'left_sole_link').frame = 'x'


def robot_contact_rows() -> np.ndarray:
    return Contact.create(robot('talos'), 'left_sole_link', 'point').rows


def test_each_field_of_a_frame_position_task_is_parsed_by_its_own_rule():
    panda = robot('panda')
    values = {'frame': 'panda_hand', 'constraint': 'line', 'axis': [0.0, 0.0, 2.0]}
    assert FramePositionTask.parse_field(panda, 'frame', values) == 'panda_hand'
    assert FramePositionTask.parse_field(panda, 'constraint', values) == 'line'
    np.testing.assert_allclose(FramePositionTask.parse_field(panda, 'axis', values), [0, 0, 2])
    point = {'frame': 'panda_hand', 'constraint': None, 'axis': None}
    assert FramePositionTask.parse_field(panda, 'constraint', point) == 'point'
    assert FramePositionTask.parse_field(panda, 'axis', point) is None
    with pytest.raises(InvalidTaskConfig, match='needs an axis'):
        FramePositionTask.parse_field(panda, 'constraint', {**values, 'axis': None})
    with pytest.raises(InvalidTaskConfig, match='takes no'):
        FramePositionTask.parse_field(panda, 'weight_of_the_moon', values)


def test_the_com_task_is_the_pd_law_at_speed():
    """ẍ* = ẍ_ref + K_d (ẋ_ref − ẋ_com) + K_p (x_ref − x_com), ẋ_com = J_com v."""
    panda = robot('panda')
    state = random_state(panda, 5, speed=1.5)
    task = ComTask(panda, [0.1, 0.0, 0.4], kp=[4.0, 9.0, 16.0], kd=[1.0, 2.0, 3.0])
    task.set_target([0.1, 0.0, 0.4], velocity=[0.3, -0.2, 0.1], acceleration=[0.0, 1.0, 0.0])
    terms = task.compute(state)
    com_velocity = state.com_jacobian @ state.v
    assert np.linalg.norm(com_velocity) > 0.05
    expected = (
        np.array([0.0, 1.0, 0.0])
        + np.array([1.0, 2.0, 3.0]) * (np.array([0.3, -0.2, 0.1]) - com_velocity)
        + np.array([4.0, 9.0, 16.0]) * (np.array([0.1, 0.0, 0.4]) - state.com)
    )
    np.testing.assert_allclose(terms.desired_acceleration, expected, atol=1e-10)


def test_the_posture_jacobian_is_read_only():
    panda = robot('panda')
    terms = JointPostureTask(panda, np.zeros(panda.n_actuated), kp=1.0).compute(
        random_state(panda, 0)
    )
    with pytest.raises(ValueError):
        terms.jacobian[0, 0] = 2.0


def test_pose_feed_forward_takes_six_values():
    panda = robot('panda')
    task = FramePoseTask(panda, 'panda_hand', [0.4, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0], kp=10.0)
    task.set_target([0.4, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0], np.full(6, 0.1), np.full(6, 0.2))
    with pytest.raises(InvalidShape):
        task.set_target([0.4, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0], np.full(7, 0.1))


def test_posture_targets_at_the_limits_are_accepted_within_the_tolerance():
    panda = robot('panda')
    lower, upper = panda.position_limits
    check_posture_limits(panda, lower.copy())
    check_posture_limits(panda, upper.copy())
    check_posture_limits(panda, lower - 0.5 * POSITION_LIMIT_TOLERANCE)
    check_posture_limits(panda, upper + 0.5 * POSITION_LIMIT_TOLERANCE)
    with pytest.raises(InvalidValue):
        check_posture_limits(panda, lower - 2.0 * POSITION_LIMIT_TOLERANCE)
    with pytest.raises(InvalidValue):
        check_posture_limits(panda, upper + 2.0 * POSITION_LIMIT_TOLERANCE)


def test_kd_defaults_to_critical_damping_and_says_so():
    assert PDGains.create(4.0, None, 3).critically_damped
    assert not PDGains.create(4.0, 1.0, 3).critically_damped
