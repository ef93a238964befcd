import numpy as np
import pytest
from robots import MIXED_JOINTS_URDF

from wbc_control.inputs.joint_states import JointStateDecoder, JointStateRejected
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
