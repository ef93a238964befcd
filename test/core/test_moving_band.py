"""The damping band at speed (`wbc_control.control.hierarchy.moving_band`).

The factor ε is widened by: 1 up to `BAND_SPEED`, |q̇|_max / v_ε above it up to
`WIDEST_FACTOR`; the filter's rise and fall against their closed forms, held without time,
reset; and, through the controller and its loop, a UR5 near its stretched elbow whose hand
level is damped at speed and not slowly, a floating base's speed not counted, and the band
started again after a stale period.
"""

import math

import numpy as np
import pinocchio as pin
import pytest
from robots import core_loop, robot, shipped_controller

from wbc_control.control.hierarchy.moving_band import (
    BAND_FALL_TIME,
    BAND_RISE_TIME,
    BAND_SPEED,
    WIDEST_FACTOR,
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
        (WIDEST_FACTOR * BAND_SPEED, WIDEST_FACTOR),  # the other boundary
        (10.0 * BAND_SPEED, WIDEST_FACTOR),
    ],
)
def test_the_band_widens_in_proportion_to_the_speed_between_its_bounds(speed, factor):
    assert widening(speed) == pytest.approx(factor, rel=1e-12)


def test_the_first_and_untimed_ticks_keep_epsilon():
    band, fast = MovingBand(), 2.5 * BAND_SPEED
    assert band.update(EPSILON, fast, None) == EPSILON
    assert band.update(EPSILON, fast, 4.0) == EPSILON  # no previous time yet
    assert band.update(EPSILON, fast, 4.0) == EPSILON  # time did not advance


def test_the_band_rises_and_falls_with_its_time_constants():
    band, speed, now = MovingBand(), 2.5 * BAND_SPEED, 1.0
    band.update(EPSILON, 0.0, now)
    factor = 1.0
    for _ in range(40):  # rises towards 2.5 with BAND_RISE_TIME, tick by tick
        now += PERIOD
        factor += (2.5 - factor) * (1.0 - math.exp(-PERIOD / BAND_RISE_TIME))
        assert band.update(EPSILON, speed, now) == pytest.approx(EPSILON * factor)
    assert 1.5 < factor < 2.5
    now += 0.3  # one long step, at rest: falls as e^(-0.3 / BAND_FALL_TIME)
    factor *= math.exp(-0.3 / BAND_FALL_TIME)
    assert band.update(EPSILON, 0.0, now) == pytest.approx(EPSILON * factor)
    slower = 1.4 * BAND_SPEED  # never below the target it falls to
    now += 5.0 * BAND_FALL_TIME
    assert band.update(EPSILON, slower, now) == pytest.approx(EPSILON * 1.4)


def test_a_speed_step_moves_the_band_by_a_share_of_the_gap_in_one_tick():
    """An impact steps ‖q̇‖ from 0 to 10 rad/s: one tick widens by 1 − e^(−dt/τ) of the gap."""
    band = MovingBand()
    band.update(EPSILON, 0.0, 0.0)
    widened = band.update(EPSILON, 10.0 * BAND_SPEED, PERIOD)
    share = 1.0 - math.exp(-PERIOD / BAND_RISE_TIME)
    assert widened == pytest.approx(EPSILON * (1.0 + (WIDEST_FACTOR - 1.0) * share))
    assert widened < 1.1 * EPSILON


def widened(band: MovingBand, speed: float, ticks: int, now: float = 0.0) -> float:
    """`ticks` timed updates at `speed` from `now`; the time after them."""
    for _ in range(ticks):
        now += PERIOD
        band.update(EPSILON, speed, now)
    return now


def test_at_rest_the_band_returns_to_epsilon_and_stays():
    band = MovingBand()
    now = widened(band, 2.5 * BAND_SPEED, 500)
    values = []
    for _ in range(1000):  # 2 s at rest: the fall reaches 1 after ln 2.5 s and stops there
        now += PERIOD
        values.append(band.update(EPSILON, 0.0, now))
    assert values[int(0.9 / PERIOD)] > EPSILON  # e^(-0.9) 2.5 > 1: still falling
    assert values[int(0.95 / PERIOD)] == EPSILON  # e^(-0.95) 2.5 < 1: at ε
    assert values[-1] == EPSILON


def test_the_fall_stops_at_a_slower_speeds_target():
    band = MovingBand()
    now = widened(band, 2.5 * BAND_SPEED, 500)
    slower, values = 1.4 * BAND_SPEED, []
    for _ in range(1000):
        now += PERIOD
        values.append(band.update(EPSILON, slower, now))
    assert min(values) == pytest.approx(1.4 * EPSILON, rel=1e-12)
    assert values[-1] == pytest.approx(1.4 * EPSILON, rel=1e-12)


def test_a_reset_or_time_going_back_starts_again_from_epsilon():
    band = MovingBand()
    now = widened(band, 2.5 * BAND_SPEED, 500)
    band.reset()
    assert band.update(EPSILON, 2.5 * BAND_SPEED, now + PERIOD) == EPSILON  # no past time
    now = widened(band, 2.5 * BAND_SPEED, 500, now + PERIOD)
    assert band.update(EPSILON, 2.5 * BAND_SPEED, now - 1.0) == EPSILON  # a simulation reset


def test_a_new_epsilon_takes_effect_at_once():
    band, fast = MovingBand(), 2.0 * BAND_SPEED
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
    band, fast = MovingBand(), 10.0 * BAND_SPEED
    for tick in range(1000):
        wide = band.update(epsilon, fast, tick * PERIOD)
    assert wide == pytest.approx(widest, rel=1e-6)


#: A UR5 whose hand pose level has its smallest singular value between ε and 2 ε.
UR5_NEAR_ELBOW = [0.0, -1.2, -0.3, 0.3, 1.2, 0.0]


def ur5_hand_controller(threshold: float) -> tuple[PrioritizedController, RobotState]:
    """A UR5 at `UR5_NEAR_ELBOW` with a hand pose level over a posture, and its state."""
    ur5 = robot('ur5')
    state = RobotState(ur5)
    state.update(np.array(UR5_NEAR_ELBOW), np.zeros(ur5.nv))
    hand = state.frame_placement(ur5.frame_id('tool0'))
    target = [*(hand.translation + [0.05, -0.02, 0.03]), *pin.Quaternion(hand.rotation).coeffs()]
    entries = [
        TaskEntry('hand', FramePoseTask(ur5, 'tool0', kp=100.0, target=target), 0),
        TaskEntry('posture', JointPostureTask(ur5, kp=25.0, target=UR5_NEAR_ELBOW), 1),
    ]
    return PrioritizedController(ur5, entries, singular_value_threshold=threshold), state


def damped_directions(
    threshold: float, velocity: list[float], timed: bool, switch: bool = False
) -> int:
    """The hand level's damped directions after 0.5 s of ticks at (UR5_NEAR_ELBOW, velocity).

    `switch`: the posture switched off at 0.4 s, so that the last tick blends two stacks.
    """
    controller, state = ur5_hand_controller(threshold)
    state.update(np.array(UR5_NEAR_ELBOW), np.array(velocity))
    for tick in range(250):
        now_s = tick * PERIOD
        if switch and tick == 200:
            controller.set_active('posture', False)
        result = controller.compute(state, now_s=now_s if timed else None)
    if switch:
        assert result.transition.switching, 'the last tick is not a blend'
    return result.levels[0].damped_directions


def test_a_level_between_epsilon_and_the_wider_band_is_damped_at_speed_only():
    fast = [0.9, -1.1, 0.8, 1.0, -0.7, 1.2]  # 2.4 rad/s: the band tends to 2.4 ε
    slow = [0.3, -0.4, 0.2, 0.35, -0.25, 0.4]  # 0.77 rad/s: under BAND_SPEED
    assert damped_directions(EPSILON, fast, timed=False) == 0  # the case this test is about
    assert damped_directions(2.0 * EPSILON, fast, timed=False) > 0
    assert damped_directions(EPSILON, fast, timed=True) > 0
    assert damped_directions(EPSILON, slow, timed=True) == 0
    assert damped_directions(EPSILON, fast, timed=True, switch=True) > 0  # each stack's band


def test_a_floating_base_moving_fast_does_not_widen_the_band():
    """Only the actuated joints' speeds count: a robot carried fast has no faster joints."""
    controller = shipped_controller('solo12')
    model = controller.robot
    q = pin.neutral(model.model)
    v = np.zeros(model.nv)
    v[:6] = [2.5, -1.5, 0.5, 1.2, -2.0, 3.0]  # the base's twist
    state = RobotState(model)
    state.update(q, v)
    for tick in range(100):
        controller.compute(state, now_s=tick * PERIOD)
    assert controller.damping_band == controller.singular_value_threshold
    v[6:] = np.linspace(-2.0, 1.5, model.nv - 6)  # the joints' speeds do
    state.update(q, v)
    for tick in range(100, 200):
        controller.compute(state, now_s=tick * PERIOD)
    assert controller.damping_band > 1.5 * controller.singular_value_threshold


def test_the_loop_starts_the_band_again_after_a_stale_period():
    ur5 = robot('ur5')
    posture = {'type': 'joint_posture', 'kp': 25.0, 'target': UR5_NEAR_ELBOW}
    loop = core_loop(ur5, {'task_names': ['posture'], 'tasks': {'posture': posture}})
    positions, speeds = np.array(UR5_NEAR_ELBOW), np.array([0.9, -1.1, 0.8, 1.0, -0.7, 2.4])
    for tick in range(250):
        loop.tick(positions, speeds, None, None, tick * PERIOD, tick * PERIOD)
    rise = 1.0 - math.exp(-249 * PERIOD / BAND_RISE_TIME)  # 249 timed updates at 2.4 rad/s
    assert loop.controller.damping_band == pytest.approx(EPSILON * (1.0 + 1.4 * rise))
    later = 250 * PERIOD + 1.0
    assert loop.watchdog(later, later)  # stale
    loop.tick(positions, speeds, None, None, later, later)
    assert loop.controller.damping_band == EPSILON  # from ε again, then rising
    loop.tick(positions, speeds, None, None, later + PERIOD, later + PERIOD)
    assert EPSILON < loop.controller.damping_band < 1.1 * EPSILON
