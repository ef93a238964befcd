"""Integral action: z ← clamp(z + K_i e Δt), added to ẍ*, frozen, bounded and reset by rule."""

import numpy as np
import numpy.testing as npt
import pinocchio as pin
import pytest
from robots import robot

from wbc_control.config import build_entries, parse_controller_settings, parse_tasks
from wbc_control.config.assembly import build_loop
from wbc_control.config.live import apply_live_update, plan_live_update
from wbc_control.config.tasks import task_specs
from wbc_control.exceptions import WbcError
from wbc_control.tasks.integral import DEFAULT_MAX_INTEGRAL, IntegralAction

READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
OFF = READY + np.array([0.03, -0.02, 0.05, 0.04, -0.06, 0.02, 0.07, 0.0, 0.0])
KP, KD = 25.0, 10.0
KI = np.array([3.0, 5.0, 7.0, 11.0, 13.0, 17.0, 19.0, 23.0, 29.0])
DT = 0.004
ZERO = np.zeros(9)


def test_the_term_adds_ki_e_dt_holds_when_frozen_and_is_clamped_per_row():
    integral = IntegralAction(3)
    integral.set_gains(np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.5, 0.07]))
    error = np.array([0.4, -0.3, 0.2])
    integral.integrate(error, 0.1, frozen=False)
    npt.assert_allclose(integral.term, [0.04, -0.06, 0.06], rtol=1e-15)
    integral.integrate(error, 0.1, frozen=True)
    npt.assert_allclose(integral.term, [0.04, -0.06, 0.06], rtol=1e-15)
    integral.integrate(error, 0.1, frozen=False)  # the third row reaches 0.12: clamped
    npt.assert_allclose(integral.term, [0.08, -0.12, 0.07], rtol=1e-15)
    integral.integrate(-error, 0.1, frozen=False)  # off the bound at once: no windup held
    npt.assert_allclose(integral.term, [0.04, -0.06, 0.01], rtol=1e-12)


def test_a_new_ki_keeps_the_term_and_ki_zero_resets_it():
    integral = IntegralAction(2)
    integral.set_gains(np.array([2.0, 2.0]), np.full(2, 1.0))
    integral.integrate(np.array([0.5, -0.25]), 0.2, frozen=False)
    integral.set_gains(np.array([4.0, 4.0]), np.full(2, 1.0))
    npt.assert_allclose(integral.term, [0.2, -0.1])  # bumpless
    integral.set_gains(np.array([4.0, 4.0]), np.full(2, 0.15))
    npt.assert_allclose(integral.term, [0.15, -0.1])  # a lower bound clamps at once
    integral.set_gains(np.zeros(2), np.full(2, 1.0))
    npt.assert_array_equal(integral.term, [0.0, 0.0])
    assert not integral.enabled


def posture_loop(soft_start_time: float = 0.0, effort_limit: float | None = None, **posture):
    panda = robot('panda')
    parameters = {'soft_start_time': soft_start_time, 'joint_limits': False}
    if effort_limit is not None:
        parameters['effort_limits'] = effort_limit
    settings = parse_controller_settings(panda, parameters)
    task = {'type': 'joint_posture', 'kp': KP, 'kd': KD, 'target': READY.tolist(), **posture}
    specs = parse_tasks(panda, ['posture'], {'posture': task})
    return build_loop(panda, settings, build_entries(panda, specs), (), 1.0), settings


def computed_torque(positions, acceleration) -> np.ndarray:
    model = robot('panda').model
    data = model.createData()
    mass = pin.crba(model, data, positions)
    mass = np.triu(mass) + np.triu(mass, 1).T
    return mass @ acceleration + pin.rnea(model, data, positions, ZERO, ZERO)


def test_each_tick_adds_the_last_ticks_error_to_the_law():
    """τ = M (K_p e + z) + g at rest, z = Σ K_i e Δt over the ticks before (none at the first)."""
    loop, _ = posture_loop(ki=KI.tolist())
    error = READY - OFF
    for tick in range(4):
        torque = loop.tick(OFF, ZERO, None, None, 1.0 + tick * DT).torque
        z = max(tick - 1, 0) * KI * error * DT
        npt.assert_allclose(torque, computed_torque(OFF, KP * error + z), atol=1e-9)
    (report,) = loop.controller.compute(loop.state, None, 1.0 + 4 * DT).tasks
    npt.assert_allclose(report.desired_acceleration, KP * error + 3 * KI * error * DT)


def test_without_ki_the_law_is_the_pd_law():
    loop, _ = posture_loop()
    for tick in range(3):
        torque = loop.tick(OFF, ZERO, None, None, tick * DT).torque
    npt.assert_allclose(torque, computed_torque(OFF, KP * (READY - OFF)), atol=1e-9)
    assert not loop.controller.integrating


def term(loop) -> np.ndarray:
    return loop.controller.task('posture').integral.term.copy()


def test_the_soft_start_freezes_the_term_until_it_is_over():
    loop, _ = posture_loop(soft_start_time=0.1, ki=10.0)
    for tick in range(25):  # the ramp: 0.1 s = 25 ticks
        loop.tick(OFF, ZERO, None, None, tick * DT)
    npt.assert_array_equal(term(loop), ZERO)
    loop.tick(OFF, ZERO, None, None, 30 * DT)  # over: the error over the 6 ticks' time since
    npt.assert_allclose(term(loop), 10.0 * (READY - OFF) * 6 * DT)


def test_a_soft_stop_freezes_the_term():
    loop, _ = posture_loop(ki=10.0)
    for tick in range(3):
        loop.tick(OFF, ZERO, None, None, tick * DT)
    held = term(loop)
    assert loop.deactivate()  # the soft stop over soft_stop_time
    for tick in range(3, 6):
        loop.tick(OFF, ZERO, None, None, tick * DT)
    npt.assert_array_equal(term(loop), held)


def test_a_saturated_torque_freezes_the_term():
    loop, _ = posture_loop(effort_limit=1.0, ki=10.0)  # far below g(q): saturated
    for tick in range(5):
        outcome = loop.tick(OFF, ZERO, None, None, tick * DT)
    assert loop.statistics.saturated.any() and outcome.error == ''
    npt.assert_array_equal(term(loop), ZERO)


def hand_and_posture_loop():
    """The hand (frame position) and the posture, with the joint-limit level on."""
    panda = robot('panda')
    settings = parse_controller_settings(panda, {'soft_start_time': 0.0})
    tasks = {
        'hand': {'type': 'frame_position', 'frame': 'panda_hand', 'kp': 100.0, 'ki': 50.0},
        'posture': {'type': 'joint_posture', 'priority': 1, 'kp': KP, 'ki': 10.0},
    }
    specs = parse_tasks(panda, list(tasks), tasks)
    return build_loop(panda, settings, build_entries(panda, specs), (), 1.0)


def test_a_joint_held_at_its_limit_freezes_the_tasks_that_move_it_only():
    """A finger at its limit: the posture (which moves it) holds, the hand integrates."""
    loop = hand_and_posture_loop()
    at_limit = OFF.copy()
    at_limit[7] = 0.0  # panda_finger_joint1 at its lower limit, pushed further by the posture
    posture_target = READY.copy()
    posture_target[7] = -0.01
    loop.tick(at_limit, ZERO, None, None, 0.0)  # the hand takes its target from this state
    loop.controller.task('hand').assign_target(
        loop.controller.task('hand').target_from_state(loop.state) + [0.01, -0.02, 0.03]
    )
    loop.controller.task('posture').set_target(posture_target)
    for tick in range(1, 4):
        outcome = loop.tick(at_limit, ZERO, None, None, tick * DT)
    assert outcome.error == ''
    assert 'panda_finger_joint1' in loop.controller.compute(loop.state, None, 1.0).joints_at_limit
    npt.assert_array_equal(term(loop), ZERO)
    hand = loop.controller.task('hand').integral.term
    npt.assert_allclose(hand, 3 * 50.0 * np.array([0.01, -0.02, 0.03]) * DT, rtol=1e-6)


def test_a_new_target_and_switching_the_task_off_reset_the_term():
    loop, settings = posture_loop(ki=10.0)
    controller = loop.controller
    for tick in range(3):
        loop.tick(OFF, ZERO, None, None, tick * DT)
    assert np.abs(term(loop)).max() > 0.0
    update = plan_live_update(
        robot('panda'), controller, settings, {'tasks.posture.target': OFF.tolist()}
    )
    apply_live_update(controller, update)
    npt.assert_array_equal(term(loop), ZERO)
    controller.task('posture').set_target(READY)  # not a set-point: a trajectory's sample
    for tick in range(3, 6):
        loop.tick(OFF, ZERO, None, None, tick * DT)
    kept = term(loop)
    assert np.abs(kept).max() > 0.0
    update = plan_live_update(
        robot('panda'), controller, settings, {'tasks.posture.active': False}
    )
    apply_live_update(controller, update)
    npt.assert_array_equal(term(loop), ZERO)


def test_a_task_fading_in_or_out_holds_its_term():
    panda = robot('panda')
    settings = parse_controller_settings(panda, {'soft_start_time': 0.0, 'joint_limits': False})
    tasks = {
        'hand': {'type': 'frame_position', 'frame': 'panda_hand', 'kp': 100.0, 'ki': 50.0},
        'posture': {'type': 'joint_posture', 'priority': 1, 'kp': KP},
    }
    specs = parse_tasks(panda, list(tasks), tasks)
    loop = build_loop(panda, settings, build_entries(panda, specs), (), 1.0)
    loop.tick(OFF, ZERO, None, None, 0.0)
    hand = loop.controller.task('hand')
    hand.assign_target(hand.target_from_state(loop.state) + [0.01, 0.0, 0.0])
    loop.controller.set_active('posture', False)  # a switch of 0.3 s
    for tick in range(1, 10):
        loop.tick(OFF, ZERO, None, None, tick * DT)
    npt.assert_array_equal(hand.integral.term, np.zeros(3))


def test_ki_and_max_integral_are_validated_at_start_and_live_and_read_back():
    panda = robot('panda')
    hand = {'type': 'frame_position', 'frame': 'panda_hand', 'kp': 100.0}
    for field, value, words in [
        ('ki', -1.0, 'tasks.hand.ki: must be >= 0'),
        ('ki', [1.0, 2.0], 'tasks.hand.ki: ki needs a scalar or 3 values'),
        ('max_integral', 0.0, 'tasks.hand.max_integral'),
        ('max_integral', [1.0, float('nan'), 1.0], 'tasks.hand.max_integral'),
    ]:
        with pytest.raises(WbcError, match=words):
            parse_tasks(panda, ['hand'], {'hand': {**hand, field: value}})
    (spec,) = parse_tasks(panda, ['hand'], {'hand': {**hand, 'ki': [1.0, 2.0, 3.0]}})
    settings = parse_controller_settings(panda, {})
    loop = build_loop(panda, settings, build_entries(panda, [spec]), (), 1.0)
    controller = loop.controller
    read = task_specs(controller)['hand']
    npt.assert_array_equal(read.ki, [1.0, 2.0, 3.0])
    npt.assert_array_equal(read.max_integral, np.full(3, DEFAULT_MAX_INTEGRAL))
    update = plan_live_update(panda, controller, settings, {'tasks.hand.max_integral': 0.5})
    apply_live_update(controller, update)
    npt.assert_array_equal(task_specs(controller)['hand'].ki, [1.0, 2.0, 3.0])  # kept
    npt.assert_array_equal(controller.task('hand').integral.bound, np.full(3, 0.5))
    with pytest.raises(WbcError, match='tasks.hand.ki'):
        plan_live_update(panda, controller, settings, {'tasks.hand.ki': -2.0})


def test_a_plane_target_takes_the_per_axis_gains_along_its_normal():
    """Row gain Σ p_i² k_i: a normal between x and y takes the mean of their gains."""
    panda = robot('panda')
    plane = {
        'type': 'frame_position',
        'frame': 'panda_hand',
        'kp': 100.0,
        'constraint': 'plane',
        'axis': [1.0, 1.0, 0.0],
        'ki': [2.0, 4.0, 8.0],
        'max_integral': [1.0, 3.0, 100.0],
    }
    (spec,) = parse_tasks(panda, ['plane'], {'plane': plane})
    (entry,) = build_entries(panda, [spec])
    npt.assert_allclose(entry.task.integral.ki, [3.0])
    npt.assert_allclose(entry.task.integral.bound, [2.0])
