"""Task error clipping (crisp_controllers' error_clip): K_p acts on the error clipped per group."""

import numpy as np
import numpy.testing as npt
import pytest
from robots import robot

from wbc_control.config import build_entries, parse_tasks
from wbc_control.control.prioritized_controller import PrioritizedController
from wbc_control.exceptions import InvalidValue
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks.frame_pose import FramePoseTask
from wbc_control.tasks.joint_posture import JointPostureTask
from wbc_control.tasks.task import PDGains

READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])


@pytest.mark.parametrize('error', [[3.0, -4.0, 12.0], [0.0, 0.0, -7.0], [1e6, 1.0, 0.0]])
def test_a_large_error_keeps_its_direction_with_the_bounded_magnitude(error):
    gains = PDGains.create(10.0, None, 3, max_error=0.05)
    error = np.array(error)
    clipped = gains.clipped(error)
    npt.assert_allclose(np.linalg.norm(clipped), 0.05, rtol=1e-12)
    npt.assert_allclose(clipped / 0.05, error / np.linalg.norm(error), atol=1e-12)
    assert gains.clips(error)
    npt.assert_allclose(gains.acceleration(np.zeros(3), np.zeros(3), error), 10.0 * clipped)


def test_an_error_inside_the_bound_or_no_bound_is_untouched():
    error = np.array([0.01, -0.02, 0.03])
    for gains in (PDGains.create(10.0, None, 3, 0.05), PDGains.create(10.0, None, 3)):
        assert not gains.clips(error)
        npt.assert_array_equal(gains.clipped(error), error)
        npt.assert_array_equal(gains.acceleration(np.zeros(3), np.zeros(3), error), 10.0 * error)


def test_pose_position_and_orientation_and_each_posture_joint_are_clipped_apart():
    panda = robot('panda')
    pose = FramePoseTask(panda, 'panda_hand', [0.4, 0.1, 0.5, 1.0, 0.0, 0.0, 0.0], kp=40.0)
    pose.set_max_error(0.1)
    clipped = pose.gains.clipped(np.array([10.0, 0.0, 0.0, 0.0, 0.05, 0.0]))
    npt.assert_allclose(clipped, [0.1, 0.0, 0.0, 0.0, 0.05, 0.0])
    posture = JointPostureTask(panda, READY, kp=25.0)
    posture.set_max_error(0.2)
    error = np.array([1.0, -0.1, 0.0, -3.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    npt.assert_allclose(posture.gains.clipped(error), [0.2, -0.1, 0, -0.2, 0, 0, 0, 0, 0])
    posture.set_gains(50.0)  # a new kp keeps the bound
    assert posture.gains.max_error == 0.2


@pytest.mark.parametrize('factor', [1.01, 1.5, 3.0])
def test_each_group_just_beyond_the_bound_is_scaled_to_it_and_the_input_is_kept(factor):
    gains = PDGains.create(40.0, None, 6, max_error=0.1, groups=(3, 3))
    directions = np.array([0.6, 0.0, -0.8, 0.0, 1.0, 0.0])
    error = factor * 0.1 * directions
    original = error.copy()
    clipped = gains.clipped(error)
    npt.assert_allclose(clipped, 0.1 * directions, rtol=1e-12)
    assert gains.clips(error)
    npt.assert_array_equal(error, original)
    inside = np.array([0.06, 0.0, -0.08, 0.0, 0.099, 0.0])  # each group's norm just below
    assert not gains.clips(inside)
    npt.assert_array_equal(gains.clipped(inside), inside)


@pytest.mark.parametrize('value', [-0.1, np.inf, np.nan, 'far'])
def test_a_bad_max_error_is_refused(value):
    with pytest.raises(InvalidValue, match='max_error'):
        PDGains.create(1.0, None, 3).with_max_error(value)


def test_a_target_10_m_away_gives_the_torque_of_one_max_error_away():
    """Same direction, 0.05 m bound: the far target and the near one ask the same torque."""
    panda = robot('panda')
    state = RobotState(panda)
    state.update(panda.configuration(READY), np.zeros(9))
    hand = state.frame_placement(panda.frame_id('panda_hand')).translation
    direction = np.array([0.6, 0.0, 0.8])

    def torque(target: np.ndarray, max_error: float) -> np.ndarray:
        task = {'type': 'frame_position', 'frame': 'panda_hand', 'kp': 100.0, 'target': target}
        specs = parse_tasks(panda, ['hand'], {'hand': task})
        entries = build_entries(panda, specs)
        entries[0].task.set_max_error(max_error)
        controller = PrioritizedController(panda, entries, 1e-3, np.full(9, np.inf))
        return controller.compute(state, None).torque

    far = torque(hand + 10.0 * direction, 0.05)
    near = torque(hand + 0.05 * direction, 0.0)
    npt.assert_allclose(far, near, rtol=1e-9, atol=1e-9)
    unclipped = torque(hand + 10.0 * direction, 0.0)
    assert np.abs(unclipped).max() > 20.0 * np.abs(far - state.gravity[:9]).max()


def test_max_error_is_a_task_parameter_validated_at_start_and_live():
    from wbc_control.config import parse_controller_settings
    from wbc_control.config.live import apply_live_update, plan_live_update
    from wbc_control.exceptions import WbcError

    panda = robot('panda')
    hand = {'type': 'frame_position', 'frame': 'panda_hand', 'kp': 100.0, 'max_error': 0.05}
    with pytest.raises(WbcError, match=r'tasks\.hand\.max_error'):
        parse_tasks(panda, ['hand'], {'hand': {**hand, 'max_error': -1.0}})
    (spec,) = parse_tasks(panda, ['hand'], {'hand': hand})
    controller = PrioritizedController(panda, build_entries(panda, [spec]), 1e-3, np.ones(9))
    assert controller.task('hand').gains.max_error == 0.05
    settings = parse_controller_settings(panda, {})
    update = plan_live_update(panda, controller, settings, {'tasks.hand.max_error': 0.2})
    apply_live_update(controller, update)
    assert controller.task('hand').gains.max_error == 0.2
    update = plan_live_update(panda, controller, settings, {'tasks.hand.kp': 50.0})
    apply_live_update(controller, update)
    assert controller.task('hand').gains.max_error == 0.2


@pytest.mark.parametrize('max_error', [0.0, 0.05, 1e3])
@pytest.mark.parametrize('grouping', ['one group', 'rows', 'groups of three'])
def test_the_law_written_in_place_is_the_law_to_the_bit(max_error, grouping):
    """`write_acceleration` (compiled) equals `acceleration`, bit for bit, with every plan.

    Per-axis gains, a read-only reference and views with strides, as the tasks pass them;
    errors clipped (e_max 0.05: the rows scaled by 1e-3 are within it, the others beyond) and
    within the bound (1e3), the error a group or groups.
    """
    rng = np.random.default_rng(5)
    for size in (3, 6, 33) if grouping == 'groups of three' else (1, 3, 6, 32):
        groups = {'one group': (), 'rows': (1,) * size, 'groups of three': (3,) * (size // 3)}
        gains = PDGains.create(
            rng.uniform(1, 100, size), rng.uniform(0, 20, size), size, groups=groups[grouping]
        )
        gains = gains.with_max_error(max_error)
        feed_forward, reference, velocity = (rng.standard_normal(size) for _ in range(3))
        feed_forward.flags.writeable = False
        error = rng.standard_normal(2 * size)[::2]  # a strided view
        error[np.arange(size) % 6 >= 3] *= 1e-3  # every other three rows within e_max
        desired = np.full(3 * size, np.nan)
        gains.write_acceleration(desired[1::3], feed_forward, reference, velocity, error)
        expected = gains.acceleration(feed_forward, reference - velocity, error)
        npt.assert_array_equal(desired[1::3], expected)
        assert np.isnan(desired[0::3]).all() and np.isnan(desired[2::3]).all()
        # The clipped law is the one checked, where e_max is below the errors.
        assert gains.clips(error) == (max_error == 0.05)


def test_gains_clip_nothing_unless_told_and_zero_gains_are_valid():
    """No `max_error` given: no clipping, however large the error; kp = kd = 0 is a valid law."""
    huge = np.array([1e6, -1e6, 3.0])
    for gains in (PDGains.create(0.0, 0.0, 3), PDGains(np.zeros(3), np.zeros(3))):
        assert gains.max_error == 0.0 and not gains.critically_damped
        assert not gains.clips(huge)
        desired = np.empty(3)
        gains.write_acceleration(desired, np.ones(3), np.ones(3), np.zeros(3), huge)
        npt.assert_array_equal(desired, np.ones(3))  # ẍ* = ẍ_ref alone
    kp = PDGains.create(2.0, 1.0, 3)
    npt.assert_array_equal(kp.acceleration(np.zeros(3), np.zeros(3), huge), 2.0 * huge)
