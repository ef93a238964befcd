"""Homing (`homing_tolerance`): the posture first after a (re)start far from it, then the tasks.

The rule on both sides of the tolerance and of the timeout, the tasks it holds off and gives
back (exactly the stacks without and with them), and the loop that applies it: its log lines,
the targets it lets tasks take, its diagnostics.
"""

import copy

import numpy as np
import pytest
from robots import robot, shipped_parameters

from wbc_control.config import build_entries, parse_controller_settings, parse_tasks
from wbc_control.config.assembly import build_loop
from wbc_control.config.settings import parse_contacts
from wbc_control.control.loop.controller_checks import tasks_check
from wbc_control.control.loop.tick_statistics import TickStatistics
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.control.switching.homing import Homing
from wbc_control.exceptions import InvalidValue
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks import FramePositionTask, JointPostureTask

HOME = np.array([0.1, -0.785, 0.05, -2.356, -0.1, 1.571, 0.785, 0.02, 0.02])
#: Offsets from home that differ per joint, the largest (joint 6, index 5) 1.0.
SPREAD = np.array([0.3, -0.2, 0.45, 0.15, -0.6, 1.0, -0.35, 0.0, 0.0])
ARM = np.arange(7)
TOLERANCE, TIMEOUT = 0.5, 4.0


def panda_state(positions: np.ndarray) -> RobotState:
    panda = robot('panda')
    state = RobotState(panda)
    state.update(panda.configuration(positions), np.zeros(panda.nv))
    return state


def homing(joints=ARM, tolerance=TOLERANCE, timeout=TIMEOUT, postures=None) -> Homing:
    panda = robot('panda')
    postures = postures or [JointPostureTask(panda, HOME, kp=25.0)]
    return Homing(tolerance, timeout, postures, frozenset({'hand'}), joints, panda.joint_names)


def away(largest: float) -> RobotState:
    """The arm `largest` rad from home at joint 6, every other joint less and differently."""
    return panda_state(HOME + SPREAD * largest)


def test_a_joint_just_beyond_the_tolerance_starts_homing_and_one_within_it_does_not():
    at = homing()
    assert at.update(away(TOLERANCE - 1e-9), 0.0) == ''
    assert not at.active
    beyond = homing()
    message = beyond.update(away(TOLERANCE + 1e-9), 0.0)
    assert beyond.active
    assert 'panda_joint6' in message and '0.5' in message


def test_homing_ends_when_every_commanded_joint_is_within_the_tolerance():
    rule = homing()
    rule.update(away(2.0), 0.0)
    assert rule.update(away(TOLERANCE + 1e-9), 1.0) == ''
    assert rule.active
    assert rule.update(away(TOLERANCE - 1e-9), 1.25).startswith('homed in 1.25 s')
    assert not rule.active
    assert rule.update(away(2.0), 1.5) == '', 'homing starts again only after a restart'
    assert not rule.active


def test_homing_gives_up_at_its_timeout_and_not_a_tick_before():
    rule = homing()
    rule.update(away(2.0), 10.0)
    assert rule.update(away(2.0), 10.0 + TIMEOUT - 1e-6) == ''
    assert rule.active
    message = rule.update(away(2.0), 10.0 + TIMEOUT)
    assert message.startswith('homing gave up after 4.00 s with panda_joint6 2')
    assert not rule.active


def test_a_clock_that_went_back_times_the_homing_from_there():
    rule = homing()
    rule.update(away(2.0), 10.0)
    rule.update(away(2.0), 3.0)  # back by 7 s
    assert rule.update(away(2.0), 3.0 + TIMEOUT - 1e-6) == ''
    assert rule.active
    assert rule.update(away(2.0), 3.0 + TIMEOUT).startswith('homing gave up')


def test_a_restart_checks_again_and_a_restart_while_homing_keeps_its_clock():
    rule = homing()
    rule.update(away(0.2), 0.0)
    assert not rule.active
    rule.restart()
    assert rule.update(away(2.0), 1.0).startswith('homing:')
    rule.restart()
    assert rule.update(away(2.0), 2.0) == ''
    assert rule.active
    assert rule.update(away(2.0), 1.0 + TIMEOUT).startswith('homing gave up')


def test_joints_not_commanded_do_not_start_homing():
    fingers_far = HOME.copy()
    fingers_far[7:] = [0.0, 0.04]  # 2 cm each; wrist 1.5 rad away, but not commanded
    fingers_far[6] += 1.5
    assert homing(joints=np.arange(6)).update(panda_state(fingers_far), 0.0) == ''
    assert homing(joints=np.arange(7)).update(panda_state(fingers_far), 0.0) != ''
    fingers_only = HOME.copy()
    fingers_only[7:] = [0.0, 0.04]
    assert homing(tolerance=0.01).update(panda_state(fingers_only), 0.0) == ''


def test_with_two_postures_home_is_where_both_are_near():
    panda = robot('panda')
    other = HOME.copy()
    other[2] += 0.8
    postures = [JointPostureTask(panda, HOME, kp=1.0), JointPostureTask(panda, other, kp=1.0)]
    rule = homing(postures=postures)
    assert 'panda_joint3' in rule.update(panda_state(HOME), 0.0)


@pytest.mark.parametrize(
    ('tolerance', 'timeout', 'named'),
    [(0.0, 1.0, 'homing_tolerance'), (-0.1, 1.0, 'homing_tolerance'),
     (np.nan, 1.0, 'homing_tolerance'), (0.5, 0.0, 'homing_timeout'),
     (0.5, np.inf, 'homing_timeout')],
)  # fmt: skip
def test_a_bad_tolerance_or_timeout_is_named(tolerance, timeout, named):
    with pytest.raises(InvalidValue, match=named):
        homing(tolerance=tolerance, timeout=timeout)


def panda_controller() -> PrioritizedController:
    panda = robot('panda')
    hand = FramePositionTask(panda, 'panda_hand', [0.35, 0.1, 0.55], kp=100.0)
    entries = [
        TaskEntry('hand', hand, 0),
        TaskEntry('posture', JointPostureTask(panda, HOME, kp=25.0), 1),
    ]
    return PrioritizedController(panda, entries, task_transition_time=0.2)


def test_held_off_tasks_leave_exactly_the_stack_without_them_and_come_back_exactly():
    state = away(0.3)
    held, without, plain = panda_controller(), panda_controller(), panda_controller()
    without.set_active('hand', False)
    held.hold_off(frozenset({'hand'}))
    assert held.active('hand'), 'active reports the flag, not the hold'
    for k in range(60):
        held_torque = held.compute(state, None, k * 0.004).torque
        without_torque = without.compute(state, None, k * 0.004).torque
    np.testing.assert_array_equal(held_torque, without_torque)
    held.hold_off(frozenset())
    for k in range(60, 120):
        back = held.compute(state, None, k * 0.004).torque
    np.testing.assert_allclose(back, plain.compute(state, None, 0.0).torque, atol=1e-9)


def test_a_task_switched_off_while_held_off_stays_off_after_the_hold():
    state = away(0.3)
    controller, without = panda_controller(), panda_controller()
    controller.hold_off(frozenset({'hand'}))
    controller.set_active('hand', False)
    controller.hold_off(frozenset())
    without.set_active('hand', False)
    for k in range(60):
        torque = controller.compute(state, None, k * 0.004).torque
        expected = without.compute(state, None, k * 0.004).torque
    np.testing.assert_array_equal(torque, expected)
    with pytest.raises(KeyError, match='hnad'):
        controller.hold_off(frozenset({'hnad'}))


def panda_loop(tolerance: float, hand_target: bool = True):
    panda = robot('panda')
    parameters = copy.deepcopy(shipped_parameters('panda_controller'))
    parameters['homing_tolerance'] = tolerance
    parameters['homing_timeout'] = TIMEOUT
    parameters['tasks']['posture']['target'] = HOME.tolist()
    if not hand_target:
        del parameters['tasks']['hand']['target']
    settings = parse_controller_settings(panda, parameters)
    specs = parse_tasks(panda, parameters['task_names'], parameters['tasks'])
    return build_loop(panda, settings, build_entries(panda, specs), (), 1.0)


def tick(loop, positions: np.ndarray, now_s: float):
    return loop.tick(positions, np.zeros(positions.shape[0]), None, None, now_s, now_s)


def test_the_loop_holds_the_hand_off_while_homing_and_its_target_waits_for_the_end():
    loop = panda_loop(TOLERANCE, hand_target=False)
    far = HOME + 2.0 * SPREAD
    first = tick(loop, far, 0.0)
    assert first.homing.startswith('homing: panda_joint6 is 2 from its posture target')
    assert [name for name, _ in first.held] == [], 'the hand takes no target while homing'
    assert loop.controller.task('hand').target_pending
    assert loop.controller.switching.requested.inactive == {'hand'}
    assert 'homing' in tasks_check(loop.statistics, homing=loop.homing.active).summary
    near = HOME + 0.4 * SPREAD
    done = tick(loop, near, 0.8)
    assert done.homing == 'homed in 0.80 s: the tasks fade in'
    assert [name for name, _ in done.held] == ['hand'], 'the hand holds where homing ended'
    assert loop.controller.switching.requested.inactive == frozenset()
    assert tasks_check(loop.statistics, homing=loop.homing.active).values['homing'] is False


def test_a_loop_started_within_the_tolerance_does_not_home_and_a_stale_period_checks_again():
    loop = panda_loop(TOLERANCE)
    assert tick(loop, HOME + 0.45 * SPREAD, 0.0).homing == ''
    assert loop.controller.switching.requested.inactive == frozenset()
    assert tick(loop, HOME + 2.0 * SPREAD, 0.002).homing == '', 'no restart: no homing'
    assert loop.watchdog(1.0, 1.0), 'stale after the timeout'
    assert tick(loop, HOME + 2.0 * SPREAD, 1.002).homing.startswith('homing:')


def test_no_homing_at_tolerance_zero_and_none_without_a_posture():
    assert panda_loop(0.0).homing is None
    panda = robot('panda')
    parameters = copy.deepcopy(shipped_parameters('panda_controller'))
    parameters['homing_tolerance'] = 0.5
    parameters['task_names'] = ['hand']
    del parameters['tasks']['posture']
    settings = parse_controller_settings(panda, parameters)
    specs = parse_tasks(panda, parameters['task_names'], parameters['tasks'])
    with pytest.raises(InvalidValue, match='homing_tolerance.*joint_posture'):
        build_loop(panda, settings, build_entries(panda, specs), (), 1.0)


def test_the_tasks_check_reports_homing():
    statistics = TickStatistics(9, 0.0)
    assert tasks_check(statistics).values['homing'] is False
    assert tasks_check(statistics, homing=True).values['homing'] is True


def test_homing_is_refused_on_a_floating_base():
    talos = robot('talos')
    parameters = copy.deepcopy(shipped_parameters('talos_controller'))
    parameters['homing_tolerance'] = 0.5
    settings = parse_controller_settings(talos, parameters)
    specs = parse_tasks(talos, parameters['task_names'], parameters['tasks'])
    contacts = parse_contacts(talos, parameters['contacts'], parameters['contact_types'])
    with pytest.raises(InvalidValue, match='homing_tolerance.*floating base'):
        build_loop(talos, settings, build_entries(talos, specs), contacts, 1.0)
