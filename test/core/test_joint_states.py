import numpy as np
import pytest
from robots import MIXED_JOINTS_URDF

from wbc_control.config.schema import load_schema
from wbc_control.inputs.joint_states import (
    DEFAULT_VELOCITY_FACTOR,
    JointStateDecoder,
    JointStateRejected,
)
from wbc_control.model.example_robots import robots_directory
from wbc_control.model.robot_model import RobotModel

NAMES = ['slider', 'extra', 'shoulder', 'wrist']


@pytest.fixture
def decoder():
    return JointStateDecoder(RobotModel.from_urdf_string(MIXED_JOINTS_URDF))


def test_reorders_by_name_and_ignores_extra_joints(decoder):
    sample = decoder.decode(NAMES, [0.05, 9.0, 0.1, 3.0], [0.5, np.nan, 1.0, 3.0], 1.0)
    np.testing.assert_array_equal(sample.positions, [0.1, 3.0, 0.05])
    np.testing.assert_array_equal(sample.velocities, [1.0, 3.0, 0.5])


@pytest.mark.parametrize(
    ('positions', 'velocities', 'reason'),
    [
        ([0.0, 0.0, 0.0], [0.0] * 4, 'ragged'),
        ([0.0] * 4, [], 'ragged'),
        ([np.nan, 0.0, 0.0, 0.0], [0.0] * 4, 'non_finite'),
        ([0.0] * 4, [0.0, 0.0, np.inf, 0.0], 'non_finite'),
    ],
)
def test_unusable_samples_are_rejected_with_a_reason(decoder, positions, velocities, reason):
    with pytest.raises(JointStateRejected) as error:
        decoder.decode(NAMES, positions, velocities, 1.0)
    assert error.value.reason == reason


def test_missing_joints_are_named(decoder):
    with pytest.raises(JointStateRejected, match='wrist') as error:
        decoder.decode(['shoulder', 'slider'], [0.0, 0.0], [0.0, 0.0], 1.0)
    assert error.value.reason == 'joints'


def test_old_and_repeated_stamps_are_dropped_unstamped_pass(decoder):
    zeros = [0.0] * 4
    decoder.decode(NAMES, zeros, zeros, 2.0)
    for stamp in (2.0, 1.5):
        with pytest.raises(JointStateRejected) as error:
            decoder.decode(NAMES, zeros, zeros, stamp)
        assert error.value.reason == 'out_of_order'
    decoder.decode(NAMES, zeros, zeros, 0.0)
    decoder.decode(NAMES, zeros, zeros, 2.5)
    decoder.reset()
    decoder.decode(NAMES, zeros, zeros, 1.0)


@pytest.fixture
def timed():
    robot = RobotModel.from_urdf_string(MIXED_JOINTS_URDF)
    return JointStateDecoder(robot, timeout_s=0.1, future_tolerance_s=0.01)


def test_time_rules_apply_to_joint_states(timed):
    zeros = [0.0] * 4
    with pytest.raises(JointStateRejected) as error:
        timed.decode(NAMES, zeros, zeros, 5.0 - 3600.0, now_s=5.0)
    assert error.value.reason == 'stale'
    timed.decode(NAMES, zeros, zeros, 5.0, now_s=5.0)
    with pytest.raises(JointStateRejected) as error:
        timed.decode(NAMES, zeros, zeros, 5.0 + 86_400.0, now_s=5.001)
    assert error.value.reason == 'future'
    assert not timed.decode(NAMES, zeros, zeros, 5.002, now_s=5.002).restarted
    assert timed.decode(NAMES, zeros, zeros, 0.002, now_s=0.002).restarted


@pytest.mark.parametrize(
    ('index', 'position', 'velocity', 'reason'),
    [
        (2, 2.2, 0.0, 'position_limit'),  # shoulder: limit 2, margin 0.1
        (0, 0.25, 0.0, 'position_limit'),  # slider: limit 0.1 m
        (2, 0.0, 2.0 * DEFAULT_VELOCITY_FACTOR + 0.1, 'velocity_limit'),  # shoulder: 2 rad/s
        (3, 0.0, 1e150, 'velocity_limit'),  # wrist (continuous): 3 rad/s
    ],
)
def test_implausible_samples_are_rejected(decoder, index, position, velocity, reason):
    positions, velocities = [0.0] * 4, [0.0] * 4
    positions[index], velocities[index] = position, velocity
    with pytest.raises(JointStateRejected, match=NAMES[index]) as error:
        decoder.decode(NAMES, positions, velocities, 1.0)
    assert error.value.reason == reason


def test_within_the_margin_and_continuous_joints_pass(decoder):
    # shoulder 0.05 beyond its limit (margin 0.1), wrist 50 rad (continuous: no limit).
    speeds = [0.0, 0.0, 2.0 * DEFAULT_VELOCITY_FACTOR - 0.1, -3.0 * DEFAULT_VELOCITY_FACTOR + 0.1]
    decoder.decode(NAMES, [0.1, 0.0, 2.05, 50.0], speeds, 1.0)


def test_the_default_velocity_factor_is_the_schemas_and_a_given_one_applies():
    assert DEFAULT_VELOCITY_FACTOR == load_schema('wbc_controller')['velocity_factor'].default
    strict = JointStateDecoder(RobotModel.from_urdf_string(MIXED_JOINTS_URDF), velocity_factor=2)
    with pytest.raises(JointStateRejected, match='shoulder'):
        strict.decode(NAMES, [0.0] * 4, [0.0, 0.0, 4.1, 0.0], 1.0)
    strict.decode(NAMES, [0.0] * 4, [0.0, 0.0, 3.9, 0.0], 1.0)


def test_a_joint_whose_urdf_limits_are_equal_is_not_checked_against_them():
    """The double pendulum's URDF writes lower = upper = 0 for no limits (RobotModel)."""
    path = robots_directory() / 'double_pendulum_description/urdf/double_pendulum.urdf'
    decoder = JointStateDecoder(RobotModel.from_urdf_path(path))
    sample = decoder.decode(['joint1', 'joint2'], [0.5, -2.0], [0.1, 3.0], 1.0, 1.0)
    np.testing.assert_array_equal(sample.positions, [0.5, -2.0])
