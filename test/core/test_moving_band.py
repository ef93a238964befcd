"""The damping band at speed (`wbc_control.control.hierarchy.moving_band`).

The factor ε is widened by: 1 up to `BAND_SPEED`, ‖q̇‖ / v_ε above it up to `WIDEST_BAND`;
the filter's rise and fall against their closed forms, held without time; and, through the
controller, a UR5 near its stretched elbow whose hand level is damped at speed and not slowly.
"""

import math

import numpy as np
import pinocchio as pin
import pytest
from robots import robot

from wbc_control.control.hierarchy.moving_band import (
    BAND_FALL_TIME,
    BAND_RISE_TIME,
    BAND_SPEED,
    WIDEST_BAND,
    WIDEST_THRESHOLD,
    MovingBand,
    widening,
)
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks import FramePoseTask, JointPostureTask

EPSILON = 0.03
PERIOD = 0.002


@pytest.mark.parametrize(
    ('speed', 'factor'),
    [
        (0.0, 1.0),
        (0.5 * BAND_SPEED, 1.0),
        (BAND_SPEED, 1.0),  # the boundary: not yet wider
        (1.01 * BAND_SPEED, 1.01),
        (2.0 * BAND_SPEED, 2.0),
        (WIDEST_BAND * BAND_SPEED, WIDEST_BAND),  # the other boundary
        (10.0 * BAND_SPEED, WIDEST_BAND),
    ],
)
def test_the_band_widens_in_proportion_to_the_speed_between_its_bounds(speed, factor):
    assert widening(speed * speed) == pytest.approx(factor, rel=1e-12)


def test_the_first_and_untimed_ticks_keep_epsilon():
    band = MovingBand()
    fast = (2.5 * BAND_SPEED) ** 2
    assert band.update(EPSILON, fast, None) == EPSILON
    assert band.update(EPSILON, fast, 4.0) == EPSILON  # no previous time yet
    assert band.update(EPSILON, fast, 4.0) == EPSILON  # time did not advance
    assert band.update(EPSILON, fast, 3.9) == EPSILON  # nor when it went back


def test_the_band_rises_and_falls_with_its_time_constants():
    band, speed, now = MovingBand(), 2.5 * BAND_SPEED, 1.0
    band.update(EPSILON, 0.0, now)
    factor = 1.0
    for _ in range(40):  # rises towards 2.5 with BAND_RISE_TIME, tick by tick
        now += PERIOD
        factor += (2.5 - factor) * (1.0 - math.exp(-PERIOD / BAND_RISE_TIME))
        assert band.update(EPSILON, speed * speed, now) == pytest.approx(EPSILON * factor)
    assert 1.5 < factor < 2.5
    now += 0.3  # one long step, at rest: falls as e^(-0.3 / BAND_FALL_TIME)
    factor *= math.exp(-0.3 / BAND_FALL_TIME)
    assert band.update(EPSILON, 0.0, now) == pytest.approx(EPSILON * factor)
    slower = 1.4 * BAND_SPEED  # never below the target it falls to
    now += 5.0 * BAND_FALL_TIME
    assert band.update(EPSILON, slower * slower, now) == pytest.approx(EPSILON * 1.4)


def test_a_speed_step_moves_the_band_by_a_share_of_the_gap_in_one_tick():
    """An impact steps ‖q̇‖ from 0 to 10 rad/s: one tick widens by 1 − e^(−dt/τ) of the gap."""
    band = MovingBand()
    band.update(EPSILON, 0.0, 0.0)
    widened = band.update(EPSILON, 100.0, PERIOD)
    share = 1.0 - math.exp(-PERIOD / BAND_RISE_TIME)
    assert widened == pytest.approx(EPSILON * (1.0 + (WIDEST_BAND - 1.0) * share))
    assert widened < 1.1 * EPSILON


def test_a_new_epsilon_takes_effect_at_once():
    band, fast = MovingBand(), (2.0 * BAND_SPEED) ** 2
    for tick in range(1000):
        wide = band.update(EPSILON, fast, tick * PERIOD)
    assert wide == pytest.approx(2.0 * EPSILON, rel=1e-6)
    assert band.update(0.01, fast, 1000 * PERIOD) == pytest.approx(0.02, rel=1e-6)


@pytest.mark.parametrize(
    ('epsilon', 'widest'),
    [
        (0.09, 0.27),  # 3 ε: under the cap
        (0.11, WIDEST_THRESHOLD),  # 3 ε past it: capped
        (WIDEST_THRESHOLD, WIDEST_THRESHOLD),  # at the cap: ε
        (0.5, 0.5),  # ε wider than the cap: ε, never narrower
    ],
)
def test_speed_never_widens_the_band_past_its_cap(epsilon, widest):
    band, fast = MovingBand(), (10.0 * BAND_SPEED) ** 2
    for tick in range(1000):
        wide = band.update(epsilon, fast, tick * PERIOD)
    assert wide == pytest.approx(widest, rel=1e-6)


#: A UR5 whose hand pose level has its smallest singular value between ε and 2 ε.
UR5_NEAR_ELBOW = [0.0, -1.2, -0.3, 0.3, 1.2, 0.0]


def damped_directions(threshold: float, velocity: list[float], timed: bool) -> int:
    """The hand level's damped directions after 0.5 s of ticks at (UR5_NEAR_ELBOW, velocity)."""
    ur5 = robot('ur5')
    state = RobotState(ur5)
    state.update(np.array(UR5_NEAR_ELBOW), np.zeros(ur5.nv))
    hand = state.frame_placement(ur5.frame_id('tool0'))
    target = [*(hand.translation + [0.05, -0.02, 0.03]), *pin.Quaternion(hand.rotation).coeffs()]
    entries = [
        TaskEntry('hand', FramePoseTask(ur5, 'tool0', kp=100.0, target=target), 0),
        TaskEntry('posture', JointPostureTask(ur5, kp=25.0, target=UR5_NEAR_ELBOW), 1),
    ]
    controller = PrioritizedController(ur5, entries, singular_value_threshold=threshold)
    state.update(np.array(UR5_NEAR_ELBOW), np.array(velocity))
    for tick in range(250):
        result = controller.compute(state, now_s=tick * PERIOD if timed else None)
    return result.levels[0].damped_directions


def test_a_level_between_epsilon_and_the_wider_band_is_damped_at_speed_only():
    fast = [0.9, -1.1, 0.8, 1.0, -0.7, 1.2]  # 2.4 rad/s: the band tends to 2.4 ε
    slow = [0.3, -0.4, 0.2, 0.35, -0.25, 0.4]  # 0.77 rad/s: under BAND_SPEED
    assert damped_directions(EPSILON, fast, timed=False) == 0  # the case this test is about
    assert damped_directions(2.0 * EPSILON, fast, timed=False) > 0
    assert damped_directions(EPSILON, fast, timed=True) > 0
    assert damped_directions(EPSILON, slow, timed=True) == 0
