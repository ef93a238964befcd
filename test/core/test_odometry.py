"""Odometry validation and the two rules that pair it with joint states."""

import numpy as np
import numpy.testing as npt
import pytest

from wbc_control.exceptions import InvalidValue
from wbc_control.inputs.joint_states import JointSample
from wbc_control.inputs.odometry import (
    BaseSample,
    OdometryDecoder,
    OdometryRejected,
    StatePairing,
)

POSE = [0.1, -0.2, 0.3, 0.0, 0.0, np.sin(0.2), np.cos(0.2)]
TWIST = [0.1, 0.0, 0.0, 0.0, 0.0, 0.5]


def joints(stamp_s: float) -> JointSample:
    return JointSample(np.zeros(2), np.zeros(2), stamp_s)


def base(stamp_s: float) -> BaseSample:
    return BaseSample(np.array(POSE), np.zeros(6), stamp_s)


def test_a_valid_sample_is_kept_and_its_quaternion_normalised():
    decoder = OdometryDecoder('odom', 'base_link')
    slightly_long = [*POSE[:3], *(np.array(POSE[3:]) * 1.0005)]
    sample = decoder.decode('odom', 'base_link', slightly_long, TWIST, 1.0)
    npt.assert_allclose(sample.pose, POSE, atol=1e-12)
    npt.assert_array_equal(sample.twist, TWIST)
    assert decoder.decode('', '', POSE, TWIST, 2.0).stamp_s == 2.0


@pytest.mark.parametrize(
    'frames, pose, twist, stamp, reason',
    [
        (('map', 'base_link'), POSE, TWIST, 2.0, 'frame'),
        (('odom', 'imu_link'), POSE, TWIST, 2.0, 'child_frame'),
        (('odom', 'base_link'), [np.nan, *POSE[1:]], TWIST, 2.0, 'non_finite'),
        (('odom', 'base_link'), POSE, [np.inf, *TWIST[1:]], 2.0, 'non_finite'),
        (('odom', 'base_link'), [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], TWIST, 2.0, 'quaternion'),
        (('odom', 'base_link'), [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.01], TWIST, 2.0, 'quaternion'),
        (('odom', 'base_link'), POSE, TWIST, 1.0, 'out_of_order'),
    ],
)
def test_unusable_samples_are_rejected_with_a_reason(frames, pose, twist, stamp, reason):
    decoder = OdometryDecoder('odom', 'base_link')
    decoder.decode('odom', 'base_link', POSE, TWIST, 1.0)
    with pytest.raises(OdometryRejected) as rejected:
        decoder.decode(*frames, pose, twist, stamp)
    assert rejected.value.reason == reason


def test_latest_ticks_every_joint_state_with_the_newest_fresh_odometry():
    pairing = StatePairing('latest', timeout_s=0.1)
    assert pairing.add_joints(joints(1.0), now_s=10.0) is None  # no odometry yet
    assert pairing.add_base(base(0.5), now_s=10.0) is None  # odometry alone never ticks
    first = pairing.add_joints(joints(1.1), now_s=10.05)
    second = pairing.add_joints(joints(1.2), now_s=10.1)
    assert first.base.stamp_s == second.base.stamp_s == 0.5
    assert (first.joints.stamp_s, second.joints.stamp_s) == (1.1, 1.2)
    assert pairing.add_joints(joints(1.3), now_s=10.11) is None  # odometry 0.11 s old
    assert pairing.base_age(10.11) == pytest.approx(0.11)


@pytest.mark.parametrize('joints_first', [True, False])
def test_stamp_ticks_once_per_stamp_whichever_message_comes_second(joints_first):
    pairing = StatePairing('stamp', timeout_s=0.1)
    ticks = []
    for stamp in (0.0, 0.004, 0.008):
        steps = [
            lambda s=stamp: pairing.add_joints(joints(s), now_s=s),
            lambda s=stamp: pairing.add_base(base(s), now_s=s),
        ]
        results = [step() for step in (steps if joints_first else steps[::-1])]
        assert results[0] is None
        ticks.append(results[1])
        # The same stamp re-sent (a simulator's re-send) does not tick again.
        assert pairing.add_joints(joints(stamp), now_s=stamp) is None
        assert pairing.add_base(base(stamp), now_s=stamp) is None
    assert [(t.joints.stamp_s, t.base.stamp_s) for t in ticks] == [
        (s, s) for s in (0, 0.004, 0.008)
    ]


def test_after_the_watchdog_expired_a_re_sent_stamp_ticks_again():
    """wbc_sim holding its first state re-sends it (stamp 0) until a command answers it.

    If that command was lost, only a second tick on the re-send breaks the wait on both sides.
    """
    pairing = StatePairing('stamp', timeout_s=0.1)
    pairing.add_joints(joints(0.0), now_s=0.0)
    assert pairing.add_base(base(0.0), now_s=0.0) is not None
    assert pairing.add_joints(joints(0.0), now_s=0.1) is None
    assert pairing.add_base(base(0.0), now_s=0.1) is None
    pairing.stale()
    # The odometry of that stamp is at hand: the re-sent joint state ticks with it, once.
    assert pairing.add_joints(joints(0.0), now_s=0.2).joints.stamp_s == 0.0
    assert pairing.add_base(base(0.0), now_s=0.2) is None
    assert pairing.add_joints(joints(0.0), now_s=0.3) is None


def test_stamp_waits_for_the_matching_odometry():
    pairing = StatePairing('stamp', timeout_s=0.1)
    pairing.add_base(base(1.0), now_s=0.0)
    assert pairing.add_joints(joints(2.0), now_s=0.0) is None
    assert pairing.add_base(base(1.5), now_s=0.0) is None
    assert pairing.add_base(base(2.0), now_s=0.0).joints.stamp_s == 2.0


def test_an_unknown_pairing_is_refused():
    with pytest.raises(InvalidValue, match='latest, stamp'):
        StatePairing('nearest', 0.1)
