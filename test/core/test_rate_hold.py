"""How much the torque-rate limit holds the command (`rate_hold`), and what it softens."""

import math

import numpy as np
import pytest
from robots import random_state, robot

from wbc_control.control.hierarchy.level_kernel import (
    RATE_SOFTENING,
    STIFFNESS_SPEED,
    WEAK_STIFFNESS,
    weak_stiffness,
)
from wbc_control.control.hierarchy.rate_hold import RATE_HOLD_TIME, RateHold
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.tasks import FramePositionTask, JointPostureTask

#: Flags of a six-joint arm: none held, and only the last joint held (any joint counts).
NONE = np.zeros(6, dtype=bool)
LAST = np.array([False, False, False, False, False, True])


def started(share_time: float = 0.0) -> RateHold:
    hold = RateHold()
    hold.update(NONE, share_time)  # the first tick: a time to measure the next from
    return hold


def test_a_held_tick_moves_the_share_towards_one_by_the_filters_step():
    hold = started(1.0)
    dt = 0.002
    assert hold.update(LAST, 1.0 + dt) == pytest.approx(1.0 - math.exp(-dt / RATE_HOLD_TIME))
    after_one_constant = started(3.0)
    assert after_one_constant.update(LAST, 3.0 + RATE_HOLD_TIME) == pytest.approx(1.0 - 1 / math.e)


def test_ticks_without_a_held_joint_let_it_fall_back_towards_zero():
    hold = started()
    for k in range(1, 101):
        hold.update(LAST, 0.002 * k)
    high = hold.share
    assert hold.update(NONE, 0.202) == pytest.approx(high * math.exp(-0.002 / RATE_HOLD_TIME))
    assert 0.0 < hold.share < high < 1.0


def test_it_holds_without_a_time_at_the_first_tick_and_when_time_stands_still():
    hold = RateHold()
    assert hold.update(LAST, 0.5) == 0.0  # the first tick: no Δt yet
    assert hold.update(LAST, None) == 0.0
    hold.update(LAST, 0.6)
    share = hold.share
    assert share > 0.0
    assert hold.update(NONE, 0.6) == share  # Δt = 0


def test_time_going_back_and_reset_start_it_again_from_zero():
    hold = started(2.0)
    hold.update(LAST, 2.05)
    assert hold.share > 0.0
    assert hold.update(LAST, 1.0) == 0.0  # a simulation reset
    hold.update(LAST, 1.05)
    hold.reset()
    assert hold.share == 0.0
    assert hold.update(LAST, 1.1) == 0.0  # no previous time after a reset


def test_the_share_softens_the_weak_stiffness_by_one_plus_g_s_at_every_speed():
    for speed in (0.0, 0.6 * STIFFNESS_SPEED, STIFFNESS_SPEED, 2.7 * STIFFNESS_SPEED):
        free = weak_stiffness(speed**2)
        assert weak_stiffness(speed**2, 0.0) == free
        for share in (0.013, 0.5, 1.0):
            softened = weak_stiffness(speed**2, share)
            assert softened == pytest.approx(free / (1.0 + RATE_SOFTENING * share))
    assert weak_stiffness(0.0, 1.0) == pytest.approx(WEAK_STIFFNESS / (1.0 + RATE_SOFTENING))


def ur5_controller():
    ur5 = robot('ur5')
    entries = [
        TaskEntry('tool', FramePositionTask(ur5, 'tool0', (0.4, 0.2, 0.5), kp=100.0), 0),
        TaskEntry('posture', JointPostureTask(ur5, [0.1, -1.2, 1.1, -0.9, -1.4, 0.3], kp=25.0), 1),
    ]
    return ur5, PrioritizedController(ur5, entries)


def test_the_controller_feeds_the_share_of_rate_held_ticks_to_the_next_ticks_stiffness(
    weak_stiffness_calls,
):
    """A window narrower than the tick's torque holds it on its edge: s rises, k falls."""
    ur5, controller = ur5_controller()
    state = random_state(ur5, 2, speed=0.2)
    free = controller.compute(state, now_s=0.0).torque
    limits = controller.limiter.effort_limits
    window = (np.maximum(free - 1.0, -limits), np.minimum(free - 0.5, limits))  # below it
    for k in range(1, 6):
        result = controller.compute(state, now_s=0.002 * k, torque_window=window)
        assert result.rate_limited.any()
    step = 1.0 - math.exp(-0.002 / RATE_HOLD_TIME)
    expected = [0.0, 0.0] + [1.0 - (1.0 - step) ** n for n in range(1, 5)]
    shares = [share for _, share in weak_stiffness_calls]
    assert shares == pytest.approx(expected)  # each tick uses the share before it
    controller.restart()
    controller.compute(state, now_s=0.02)
    assert weak_stiffness_calls[-1][1] == 0.0
