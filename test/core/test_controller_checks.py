"""The controller's /diagnostics checks and tick statistics, decided without ROS."""

import numpy as np
import pinocchio as pin
import pytest
from robots import core_controller, robot, shipped_controller

from wbc_control.config import build_entries, parse_tasks
from wbc_control.control.loop.controller_checks import (
    SLOW_RATE_RATIO,
    InputState,
    Severity,
    clipping_tasks,
    contacts_check,
    inputs_check,
    out_of_reach_tasks,
    slow_torque_rates,
    tasks_check,
    torques_check,
    unheld_postures,
)
from wbc_control.control.loop.tick_statistics import TickStatistics
from wbc_control.control.prioritized_controller import PrioritizedController
from wbc_control.model.example_robots import robots_directory
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

JOINTS = robot('panda').joint_names
NONE = np.zeros(9, dtype=bool)


def result():
    panda = robot('panda')
    tasks = {
        'hand': {'type': 'frame_pose', 'frame': 'panda_hand', 'kp': 10.0},
        'posture': {'type': 'joint_posture', 'kp': 1.0, 'priority': 1},
    }
    controller = PrioritizedController(
        panda, build_entries(panda, parse_tasks(panda, list(tasks), tasks))
    )
    state = RobotState(panda)
    state.update(panda.neutral_configuration() + 0.3, np.zeros(9))
    return controller.compute(state)


def statistics_after_one_tick(**flags) -> TickStatistics:
    statistics = TickStatistics(9, now=0.0)
    saturated = flags.get('saturated', NONE)
    statistics.tick(result(), saturated, flags.get('rate_limited', NONE), 0.002)
    return statistics


def test_tick_statistics_sum_a_period_and_keep_totals():
    statistics = statistics_after_one_tick()
    statistics.reject('joint_states.non_finite')
    statistics.fail('non_finite', 'non-finite torque')
    statistics.command()
    assert statistics.rate_hz(0.5) == 2.0 and statistics.compute_mean_s() == 0.002
    statistics.start_period(1.0)
    assert statistics.ticks_in_period == statistics.failures_in_period == 0
    assert not statistics.rejected_in_period
    assert statistics.rejected['joint_states.non_finite'] == 1
    assert (statistics.non_finite_torques, statistics.commands) == (1, 1)


def test_tasks_check_levels():
    assert tasks_check(TickStatistics(9, 0.0)).severity is Severity.WARN
    ok = tasks_check(statistics_after_one_tick())
    assert ok.severity is Severity.OK and 'well conditioned' in ok.summary
    assert {'hand.error_norm', 'level_0.tasks', 'level_1.damped_directions'} <= set(ok.values)
    singular = statistics_after_one_tick()
    level = singular.result.levels[0]._replace(damped_directions=2)
    singular.result = singular.result._replace(levels=(level,))
    warn = tasks_check(singular)
    assert warn.severity is Severity.WARN and '2 lost or damped direction(s)' in warn.summary
    singular.fail('compute_error', 'controller failed: M is not positive definite')
    assert tasks_check(singular) == (Severity.ERROR, singular.last_error, warn.values)


def test_inputs_check_levels():
    statistics = statistics_after_one_tick()
    fresh = InputState(False, 0.01, 500.0, 'no valid joint state for 0.01 s', 'zero')
    ok = inputs_check(statistics, fresh)
    assert ok.severity is Severity.OK and '500.0 Hz' in ok.summary
    statistics.reject('joint_states.ragged')
    assert inputs_check(statistics, fresh).severity is Severity.WARN
    stale = inputs_check(statistics, fresh._replace(stale=True, state_age=None))
    assert stale.severity is Severity.ERROR and 'zero command' in stale.summary
    assert np.isnan(stale.values['joint_state_age_s'])
    assert stale.values['rejected.joint_states.ragged'] == 1
    floating = inputs_check(statistics, fresh._replace(odom_age=0.02, odom_pairing='stamp'))
    assert (floating.values['odom_age_s'], floating.values['odom_pairing']) == (0.02, 'stamp')


def test_an_inactive_controller_is_ok_and_a_soft_stop_is_named():
    statistics = statistics_after_one_tick()
    fresh = InputState(False, 0.01, 500.0, 'no valid joint state for 0.01 s', 'gravity')
    assert inputs_check(statistics, fresh).values['control'] == 'active'
    stopping = inputs_check(statistics, fresh._replace(control='stopping'))
    assert stopping.severity is Severity.OK
    assert 'soft stop: ramping to the gravity command' in stopping.summary
    # Inactive: neither stale (an ERROR while active) nor waiting for states.
    inactive = inputs_check(statistics, fresh._replace(stale=True, control='inactive'))
    assert inactive.severity is Severity.OK and inactive.summary.startswith('inactive')
    assert inactive.values['control'] == 'inactive'


def test_torques_check_levels():
    ok = torques_check(statistics_after_one_tick(), JOINTS, 'zero')
    assert ok.severity is Severity.OK and ok.values['saturated_joints'] == ''
    saturated = NONE.copy()
    saturated[3] = True
    warn = torques_check(statistics_after_one_tick(saturated=saturated), JOINTS, 'zero')
    assert warn.severity is Severity.WARN and warn.summary == 'limited: panda_joint4'
    failed = statistics_after_one_tick()
    failed.fail('non_finite', 'non-finite torque computed')
    error = torques_check(failed, JOINTS, 'gravity')
    assert error.severity is Severity.ERROR and error.values['non_finite_torques'] == 1
    assert error.values['safe_command'] == 'gravity'


def test_contacts_check_reports_pulling_feet():
    statistics = statistics_after_one_tick()
    assert contacts_check(statistics, 0.7).severity is Severity.OK
    statistics.pulling.add('FL_FOOT')
    warn = contacts_check(statistics, 0.7)
    assert warn.severity is Severity.WARN and 'FL_FOOT pulling' in warn.summary
    assert contacts_check(TickStatistics(12, 0.0), 0.7).severity is Severity.WARN


def ticked_panda_hand(**hand) -> tuple[PrioritizedController, TickStatistics]:
    """A Panda controller with the one task `hand` (kp 10), after one tick at the neutral pose."""
    panda = robot('panda')
    tasks = {'hand': {'frame': 'panda_hand', 'kp': 10.0, **hand}}
    controller = PrioritizedController(
        panda, build_entries(panda, parse_tasks(panda, ['hand'], tasks))
    )
    state = RobotState(panda)
    state.update(panda.neutral_configuration(), np.zeros(9))
    statistics = TickStatistics(9, now=0.0)
    statistics.tick(controller.compute(state), NONE, NONE, 0.001)
    return controller, statistics


def test_tasks_that_clip_their_error_are_named_and_warned():
    controller, statistics = ticked_panda_hand(
        type='frame_position', target=[5.0, 0.0, 0.5], max_error=0.1
    )
    assert clipping_tasks(controller, statistics) == ['hand']
    warn = tasks_check(statistics, ['hand'])
    assert warn.severity is Severity.WARN and 'clipped to max_error: hand' in warn.summary
    assert warn.values['clipping_tasks'] == 'hand'
    controller.task('hand').set_max_error(0.0)
    assert clipping_tasks(controller, statistics) == []


def test_a_warning_while_homing_still_names_the_homing():
    _, statistics = ticked_panda_hand(type='frame_position', target=[5.0, 0.0, 0.5], max_error=0.1)
    homing = tasks_check(statistics, ['hand'], homing=True)
    assert homing.severity is Severity.WARN
    assert homing.summary.startswith('error clipped to max_error: hand; homing: the other tasks')
    assert 'homing' not in tasks_check(statistics, ['hand']).summary


def test_a_target_out_of_reach_is_named_with_the_distance_and_warned():
    """The Panda's hand can be 0.986 m from joint 1 at most (wbc_control.model.reach)."""
    controller, statistics = ticked_panda_hand(
        type='frame_pose', target=[1.5, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0]
    )
    far = out_of_reach_tasks(controller)
    assert far == {'hand': 'hand target 1.51 m from panda_joint1, which reaches 0.986 m at most'}
    warn = tasks_check(statistics, [], far)
    assert (
        warn.severity is Severity.WARN
        and 'target out of reach: hand target 1.51 m' in warn.summary
    )
    assert warn.values['out_of_reach_tasks'] == 'hand'
    controller.task('hand').set_target([0.5, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0])
    assert out_of_reach_tasks(controller) == {}


def test_joints_at_a_limit_bound_and_a_failed_hierarchy_are_reported():
    statistics = statistics_after_one_tick()
    statistics.result = statistics.result._replace(joints_at_limit=('panda_joint4',))
    ok = torques_check(statistics, JOINTS, 'zero')
    assert ok.severity is Severity.OK and 'panda_joint4' in ok.summary
    assert ok.values['joints_at_limit'] == 'panda_joint4'
    failed = 'DAQP exit flag -1; joint limits softened'
    statistics.result = statistics.result._replace(solver=failed)
    warn = torques_check(statistics, JOINTS, 'zero')
    assert warn.severity is Severity.WARN and 'joint limits softened' in warn.summary
    assert warn.values['solver'] == failed


def test_a_torque_rate_limit_under_the_ratio_is_slow_at_it_and_above_it_is_not():
    """Slow: rate < 8 τ̄ per second, named with 2 τ̄ / rate; none (inf) is never slow."""
    names = ('a', 'b', 'c', 'd', 'e')
    effort = np.array([87.0, 12.0, 40.0, 330.0, 5.0])
    rates = np.array(
        [SLOW_RATE_RATIO * 87.0 * (1 - 1e-9), SLOW_RATE_RATIO * 12.0, 1000.0, 300.0, np.inf]
    )
    slow = slow_torque_rates(names, effort, rates)
    assert list(slow) == ['a', 'd']
    assert slow['a'] == pytest.approx(2.0 / SLOW_RATE_RATIO) and slow['d'] == pytest.approx(2.2)
    assert slow_torque_rates(names, effort, np.full(5, np.inf)) == {}


def posture_controller(model: RobotModel, target: np.ndarray | None) -> PrioritizedController:
    tasks = {'posture': {'type': 'joint_posture', 'kp': 25.0}}
    if target is not None:
        tasks['posture']['target'] = target.tolist()
    return core_controller(model, {'task_names': ['posture'], 'tasks': tasks})


def test_a_posture_target_the_effort_limits_cannot_hold_names_its_joints():
    """|g(q)| > τ̄ at the target, g by Pinocchio's RNEA at rest; at |g| itself it holds."""
    panda = robot('panda')
    target = np.array([0.3, -0.9, 0.2, -2.1, 0.4, 1.3, -0.6, 0.01, 0.02])
    controller = posture_controller(panda, target)
    model = panda.model
    gravity = np.abs(pin.rnea(model, model.createData(), panda.configuration(target),
                              np.zeros(9), np.zeros(9)))  # fmt: skip
    assert (gravity[1:4] > 1.0).all() and np.ptp(gravity[:7]) > 10.0  # joint 1 is vertical
    assert unheld_postures(controller, gravity) == {}  # the limit itself holds
    limits = gravity.copy()
    limits[[1, 3]] *= 1.0 - 1e-9  # joints 2 and 4 a hair short
    unheld = unheld_postures(controller, limits)
    assert list(unheld) == ['posture'] and list(unheld['posture']) == [JOINTS[1], JOINTS[3]]
    needed, limit = unheld['posture'][JOINTS[3]]
    assert needed == pytest.approx(gravity[3], rel=1e-12) and limit == limits[3]
    assert unheld_postures(controller, panda.effort_limits) == {}  # its URDF limits hold it


def test_the_pr2_without_its_counterbalance_cannot_hold_its_arms_out():
    """example-robot-data's PR2: 52.1 N m at each shoulder lift, arms level, limit 30."""
    pr2 = RobotModel.from_urdf_path(robots_directory() / 'pr2_description/urdf/pr2.urdf')
    controller = posture_controller(pr2, np.zeros(pr2.n_actuated))
    unheld = unheld_postures(controller, pr2.effort_limits)['posture']
    assert list(unheld) == ['l_shoulder_lift_joint', 'r_shoulder_lift_joint']
    assert unheld['r_shoulder_lift_joint'] == pytest.approx((52.1, 30.0), abs=0.05)


def test_pending_targets_and_floating_bases_are_not_checked():
    assert unheld_postures(posture_controller(robot('panda'), None), np.zeros(9)) == {}
    solo = shipped_controller('solo12')  # its posture target set, its feet in contact
    assert unheld_postures(solo, np.zeros(solo.robot.n_actuated)) == {}
