"""`ControllerNode` in process: what DDS cannot provoke (a failing core, saturation, rate limits).

The nodes are built in the test process and never spun; a test calls their callbacks and
reads what they would publish.
"""

import os

from controller_support import (
    COMMON,
    JOINTS,
    POSTURE,
    ZERO,
    in_process_nodes,
    joint_state,
    near_ready,
    node_status,
    set_clock,
    values,
)
from diagnostic_msgs.msg import DiagnosticStatus
import numpy as np
import numpy.testing as npt
from panda_example import core_result
import pinocchio as pin
import pytest
from robots import robot

from wbc_control import cpu_latency
from wbc_control.exceptions import InvalidValue
from wbc_control.model.example_robots import robots_directory
from wbc_control.model.robot_state import RobotState
from wbc_control.ros.controller_node import LOG_THROTTLE_S
from wbc_control.ros.log_throttle import ThrottledLog


@pytest.fixture
def local(probe):
    """ControllerNodes built in this process (`in_process_nodes`)."""
    yield from in_process_nodes()


def test_a_non_finite_torque_from_the_core_is_replaced_by_the_safe_command(local):
    node, published = local({**COMMON, **POSTURE, 'stale_command': 'gravity'})
    compute = node._loop.controller.compute
    node._loop.controller.compute = lambda *args: compute(*args)._replace(
        torque=np.full(9, np.nan)
    )
    positions, velocities = near_ready(14)
    node._on_joint_state(joint_state(JOINTS, positions, velocities))
    panda = robot('panda')
    gravity = pin.computeGeneralizedGravity(
        panda.model, panda.model.createData(), panda.configuration(positions)
    )
    npt.assert_allclose(published[-1], gravity, rtol=1e-12)
    torques = node_status(node, 'torques')
    assert torques.level == DiagnosticStatus.ERROR
    assert values(torques)['non_finite_torques'] == '1'


def test_a_failing_core_sends_the_safe_command_and_reports_why(local):
    node, published = local({**COMMON, **POSTURE})

    def fail(*args):
        raise InvalidValue('the joint-space inertia matrix is not positive definite')

    node._loop.controller.compute = fail
    node._on_joint_state(joint_state(JOINTS, *near_ready(15)))
    npt.assert_array_equal(published[-1], ZERO)
    tasks = node_status(node, 'tasks')
    assert tasks.level == DiagnosticStatus.ERROR and 'positive definite' in tasks.message
    assert values(node_status(node, 'torques'))['compute_errors'] == '1'


def test_a_flood_of_bad_states_and_failed_ticks_is_counted_in_full_and_logged_once_a_second(
    local, capfd
):
    node, published = local({**COMMON, **POSTURE})
    now = [0.0]
    node._throttled = ThrottledLog(node.get_logger(), LOG_THROTTLE_S, clock=lambda: now[0])
    positions, velocities = near_ready(19)
    nan = joint_state(JOINTS, [np.nan, *positions[1:]], velocities)
    # panda_joint7 renamed (the last joint, a mimic finger, would be taken from its master).
    unknown = joint_state([*JOINTS[:6], 'elbow', *JOINTS[7:]], positions, velocities)
    for _ in range(50):
        node._on_joint_state(nan)
        node._on_joint_state(unknown)
    assert published == []
    rejected = node._loop.statistics.rejected
    assert rejected['joint_states.non_finite'] == 50
    assert sum(rejected.values()) == 100, rejected
    printed = capfd.readouterr().err
    assert printed.count('joint_states rejected') == 2, printed  # one line per reason

    def fail(*args):
        raise InvalidValue('the joint-space inertia matrix is not positive definite')

    node._loop.controller.compute = fail
    for _ in range(20):
        node._on_joint_state(joint_state(JOINTS, positions, velocities))
    assert len(published) == 20 and not np.any(published[-1])
    assert values(node_status(node, 'torques'))['compute_errors'] == '20'
    assert capfd.readouterr().err.count('positive definite') == 1
    now[0] += LOG_THROTTLE_S
    node._on_joint_state(nan)
    node._on_joint_state(joint_state(JOINTS, positions, velocities))
    printed = capfd.readouterr().err.splitlines()
    failed = [line for line in printed if 'positive definite' in line]
    assert len(failed) == 1 and '(19 more not logged since the last such line)' in failed[0]
    (line,) = [line for line in printed if 'joint_states rejected' in line]
    assert line.endswith('(49 more not logged since the last such line)')


def test_a_bug_in_the_core_sends_the_safe_command_and_its_traceback_is_logged_once(local, capfd):
    node, published = local({**COMMON, **POSTURE})

    def bug(*args):
        raise ValueError('need at least one array to concatenate')

    node._loop.controller.compute = bug
    for _ in range(20):
        node._on_joint_state(joint_state(JOINTS, *near_ready(20)))
    assert len(published) == 20 and not np.any(published[-1])
    assert values(node_status(node, 'torques'))['compute_errors'] == '20'
    printed = capfd.readouterr().err
    assert printed.count('please report this traceback') == 1, printed
    assert 'Traceback' in printed and 'in bug' in printed


def test_saturation_is_published_at_the_limits_and_reported(local):
    stiff = {'posture': {**POSTURE['tasks']['posture'], 'kp': 1e4, 'kd': 0.0}}
    node, published = local({**COMMON, **POSTURE, 'tasks': stiff, 'effort_limits': 5.0})
    node._on_joint_state(joint_state(JOINTS, *near_ready(16, speed=0.0)))
    assert np.abs(published[-1]).max() == 5.0
    torques = node_status(node, 'torques')
    assert torques.level == DiagnosticStatus.WARN
    saturated = values(torques)['saturated_joints'].split(',')
    assert saturated and set(saturated) <= set(JOINTS)
    assert all(name in torques.message for name in saturated)


def test_the_torque_rate_limit_bounds_the_change_between_commands(local):
    node, published = local({**COMMON, **POSTURE, 'torque_rate_limit': 10.0}, clock_s=100.0)
    node._on_joint_state(joint_state(JOINTS, *near_ready(17)))
    set_clock(node, 100.01)
    node._on_joint_state(joint_state(JOINTS, *near_ready(18)))
    assert np.abs(published[1] - published[0]).max() == pytest.approx(10.0 * 0.01, rel=1e-9)
    assert values(node_status(node, 'torques'))['rate_limited_joints']


def test_a_task_without_target_holds_the_first_joint_state(local):
    posture = {k: v for k, v in POSTURE['tasks']['posture'].items() if k != 'target'}
    node, published = local({**COMMON, **POSTURE, 'tasks': {'posture': posture}})
    first, _ = near_ready(19)
    node._on_joint_state(joint_state(JOINTS, first, ZERO))
    panda = robot('panda')
    gravity = pin.computeGeneralizedGravity(
        panda.model, panda.model.createData(), panda.configuration(first)
    )
    npt.assert_allclose(published[-1], gravity, atol=1e-9)
    second, _ = near_ready(20)
    node._on_joint_state(joint_state(JOINTS, second, ZERO))
    parameters = {**COMMON, **POSTURE}
    parameters['tasks'] = {'posture': {**posture, 'target': first}}
    npt.assert_allclose(published[-1], core_result(parameters, second, ZERO).torque, atol=1e-9)


def stretched_panda() -> np.ndarray:
    """The Panda with its elbow (joint 4) where the hand's 6-D Jacobian is closest to singular."""
    panda = robot('panda')
    state, frame = RobotState(panda), panda.frame_id('panda_hand')
    q = np.array([0.0, 0.0, 0.0, -1.0, 0.0, 1.5, 0.7, 0.02, 0.02])

    def smallest(q4: float) -> float:
        q[3] = q4
        state.update(panda.configuration(q), np.zeros(9))
        singular = np.linalg.svd(state.frame_jacobian(frame), compute_uv=False)
        return singular[-1] / singular[0]

    grid = np.linspace(-1.0, -0.1, 9001)
    q[3] = grid[int(np.argmin([smallest(x) for x in grid]))]
    return q


def test_a_stretched_arm_is_reported_singular_naming_the_level_and_lost_directions(local):
    hand = {'type': 'frame_pose', 'frame': 'panda_hand', 'kp': 100.0}
    node, published = local({**COMMON, 'task_names': ['hand'], 'tasks': {'hand': hand}})
    stretched = stretched_panda()
    node._on_joint_state(joint_state(JOINTS, stretched, ZERO))  # holds the hand there
    node._loop.controller.task('hand').assign_target([0.6, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0])
    node._on_joint_state(joint_state(JOINTS, stretched, ZERO))
    assert np.isfinite(published[-1]).all()
    tasks = node_status(node, 'tasks')
    assert tasks.level == DiagnosticStatus.WARN, tasks.message
    assert 'level 0 (hand) singular' in tasks.message and 'direction(s)' in tasks.message
    assert int(values(tasks)['level_0.damped_directions']) >= 1


def test_a_urdf_with_equal_limits_is_controlled_away_from_them_and_named(local, capfd):
    """The SolidWorks exporter's lower = upper = 0 (example-robot-data's double pendulum)."""
    urdf = robots_directory() / 'double_pendulum_description/urdf/double_pendulum.urdf'
    posture = {'type': 'joint_posture', 'kp': 25.0, 'target': [0.3, -0.2]}
    parameters = {'urdf_path': str(urdf), 'task_names': ['posture'], 'tasks': {'posture': posture}}
    node, published = local(parameters)
    printed = capfd.readouterr().err
    assert 'joint1, joint2 equal lower and upper position limits' in printed, printed
    node._on_joint_state(joint_state(['joint1', 'joint2'], [0.5, -2.0], [0.0, 0.0]))
    assert len(published) == 1 and np.isfinite(published[0]).all()
    assert not sum(node._loop.statistics.rejected.values())
    assert not node._loop.statistics.result.joints_at_limit


def test_a_joint_state_without_the_mimic_finger_is_completed_from_its_master(local):
    """The Panda's second finger mimics the first; a gripper driver may publish only the first."""
    node, published = local({**COMMON, **POSTURE})
    positions, velocities = near_ready(21)
    node._on_joint_state(joint_state(JOINTS[:8], positions[:8], velocities[:8]))
    assert len(published) == 1
    assert not sum(node._loop.statistics.rejected.values())
    positions[8], velocities[8] = positions[7], velocities[7]
    other, sent = local({**COMMON, **POSTURE})
    other._on_joint_state(joint_state(JOINTS, positions, velocities))
    npt.assert_allclose(published[0], sent[0], rtol=0.0, atol=1e-12)


def test_a_target_out_of_reach_is_named_at_start_up_and_on_diagnostics(local, capfd):
    hand = {'type': 'frame_position', 'frame': 'panda_hand', 'kp': 10.0, 'target': [1.5, 0.0, 0.5]}
    node, _ = local({**COMMON, 'task_names': ['hand'], 'tasks': {'hand': hand}})
    printed = capfd.readouterr().err
    assert (
        'target out of reach, the task cannot be met (the arm stops at the edge of its ' in printed
    )
    assert 'reaching towards it): hand target 1.51 m' in printed
    node._on_joint_state(joint_state(JOINTS, *near_ready(22)))
    tasks = node_status(node, 'tasks')
    assert tasks.level == DiagnosticStatus.WARN and 'target out of reach' in tasks.message
    assert values(tasks)['out_of_reach_tasks'] == 'hand'


def test_a_torque_rate_limit_slow_for_the_effort_limits_is_named_at_start_up(local, capfd):
    """300 N m/s is slow for the Panda's 87 N m joints and 100 N fingers, not its wrists.

    0.58 s across the 87 N m range, 0.67 s across the fingers', and the 12 N m wrists fast
    enough; the shipped 1000 N m/s is slow for none.
    """
    local({**COMMON, **POSTURE, 'torque_rate_limit': 300.0})
    printed = capfd.readouterr().err
    assert 'torque_rate_limit is slow for the effort limits: panda_joint1 0.58 s, ' in printed
    fingers = 'panda_finger_joint1 0.67 s, panda_finger_joint2 0.67 s across the effort range'
    assert f'panda_joint4 0.58 s, {fingers}' in printed
    assert 'across the effort range (under 8 times the effort limit a second)' in printed
    assert 'panda_joint5' not in printed
    local({**COMMON, **POSTURE, 'torque_rate_limit': 1000.0})
    assert 'torque_rate_limit is slow' not in capfd.readouterr().err


def test_a_posture_target_the_effort_limits_cannot_hold_is_named_at_start_up(local, capfd):
    """example-robot-data's PR2 (no counterbalance) with its arms level; the Panda holds."""
    pr2 = robots_directory() / 'pr2_description/urdf/pr2.urdf'
    posture = {'type': 'joint_posture', 'kp': 25.0, 'target': [0.0] * 30}
    local({**COMMON, 'urdf_path': str(pr2), 'task_names': ['rest'], 'tasks': {'rest': posture}})
    printed = capfd.readouterr().err
    assert (
        'the effort limits cannot hold the rest target still against gravity: '
        'l_shoulder_lift_joint 52.1 N m (limit 30), r_shoulder_lift_joint 52.1 N m (limit 30);'
    ) in printed
    local({**COMMON, **POSTURE})
    assert 'cannot hold' not in capfd.readouterr().err


@pytest.mark.skipif(
    not (cpu_latency.DEVICE.exists() and os.access(cpu_latency.DEVICE, os.W_OK)),
    reason=f'{cpu_latency.DEVICE} is not writable by this user',
)
def test_cpu_dma_latency_is_held_while_the_node_lives(local, capfd):
    before = cpu_latency.current_latency_us()
    node, _ = local({**COMMON, **POSTURE, 'cpu_dma_latency': 0})
    assert 'cpu_dma_latency: the CPUs wake within 0 µs' in capfd.readouterr().err
    assert cpu_latency.current_latency_us() == 0
    node.destroy_node()
    assert cpu_latency.current_latency_us() == before


def test_a_cpu_dma_latency_the_node_cannot_hold_is_a_warning_not_a_failure(
    local, capfd, monkeypatch, tmp_path
):
    monkeypatch.setattr(cpu_latency, 'DEVICE', tmp_path)  # a directory: not writable as a file
    node, published = local({**COMMON, **POSTURE, 'cpu_dma_latency': 0})
    printed = capfd.readouterr().err
    assert f'cpu_dma_latency: cannot open {tmp_path} for writing' in printed, printed
    assert 'the CPUs keep their idle states' in printed
    node._on_joint_state(joint_state(JOINTS, *near_ready(22)))
    assert len(published) == 1


def test_no_cpu_latency_is_requested_by_default(local, capfd):
    local({**COMMON, **POSTURE})
    assert 'cpu_dma_latency' not in capfd.readouterr().err
