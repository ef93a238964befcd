"""One controller tick without ROS: the torque, held targets, failures, the watchdog."""

import numpy as np
import numpy.testing as npt
import pinocchio as pin
from robots import robot

from wbc_control.config import build_entries, parse_tasks
from wbc_control.control.command_output import CommandOutput
from wbc_control.control.controller_loop import ControllerLoop
from wbc_control.control.prioritized_controller import PrioritizedController
from wbc_control.control.torque_limits import TorqueLimiter
from wbc_control.exceptions import InvalidValue
from wbc_control.inputs.trajectory_follower import TaskTrajectories, trajectory_tasks
from wbc_control.inputs.trajectory_points import TrajectoryPoints

READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])


def posture_loop(target=READY, stale_command: str = 'zero', compensates: bool = False):
    panda = robot('panda')
    posture = {'type': 'joint_posture', 'kp': 25.0, 'kd': 10.0, 'target': target}
    specs = parse_tasks(panda, ['posture'], {'posture': posture})
    unlimited = np.full(9, np.inf)
    controller = PrioritizedController(panda, build_entries(panda, specs), 1e-3, unlimited)
    output = CommandOutput(TorqueLimiter(panda.effort_limits), compensates)
    return ControllerLoop(controller, output, stale_command, timeout=0.1)


def computed_torque(positions, velocities, target) -> np.ndarray:
    """τ = M (kp e − kd v) + h by Pinocchio's CRBA and RNEA."""
    model = robot('panda').model
    data = model.createData()
    mass = pin.crba(model, data, positions)
    mass = np.triu(mass) + np.triu(mass, 1).T
    h = pin.rnea(model, data, positions, velocities, np.zeros(9))
    return mass @ (25.0 * (target - positions) - 10.0 * velocities) + h


def test_a_tick_sends_the_computed_torque_and_counts_it():
    loop = posture_loop()
    positions, velocities = READY + 0.05, np.full(9, 0.1)
    outcome = loop.tick(positions, velocities, None, None, now_s=1.0)
    npt.assert_allclose(outcome.torque, computed_torque(positions, velocities, READY), atol=1e-9)
    assert (outcome.error, outcome.held, outcome.resumed) == ('', (), False)
    assert loop.statistics.ticks_in_period == 1 and loop.statistics.result is not None


def test_a_robot_that_adds_gravity_is_sent_the_torque_minus_gravity():
    positions, velocities = READY + 0.05, np.full(9, 0.1)
    plain = posture_loop().tick(positions, velocities, None, None, 1.0).torque
    sent = posture_loop(compensates=True).tick(positions, velocities, None, None, 1.0).torque
    model = robot('panda').model
    gravity = pin.computeGeneralizedGravity(model, model.createData(), positions)
    npt.assert_allclose(sent, plain - gravity, atol=1e-9)


def test_a_task_without_target_holds_the_first_state():
    loop = posture_loop(target=None)
    first = READY + 0.01
    outcome = loop.tick(first, np.zeros(9), None, None, 1.0)
    ((name, target),) = outcome.held
    assert name == 'posture'
    npt.assert_allclose(target, first)
    npt.assert_allclose(outcome.torque, loop.state.gravity, atol=1e-9)
    assert loop.tick(READY, np.zeros(9), None, None, 1.1).held == ()


def test_a_trajectory_received_before_the_first_state_is_followed_from_it():
    """Holding the first state is not a set-point: the trajectory waiting for its start goes on."""
    loop = posture_loop(target=None)
    trajectories = TaskTrajectories(robot('panda'), trajectory_tasks(loop.controller.entries))
    goal = READY.copy()
    goal[:7] += 0.1
    names = list(robot('panda').joint_names)
    points = TrajectoryPoints(names, 1.0, [0.0, 1.0], [READY, goal], [[]] * 2, [[]] * 2)
    trajectories.receive('posture', points, now_s=0.9)
    for now_s in (0.95, 2.5):
        trajectories.apply(now_s)
        outcome = loop.tick(READY, np.zeros(9), None, None, now_s)
    npt.assert_allclose(outcome.torque, computed_torque(READY, np.zeros(9), goal), atol=1e-9)


def test_a_failing_controller_sends_the_safe_command_and_counts_why():
    loop = posture_loop(stale_command='gravity')

    def fail(state, dt, now_s):
        raise InvalidValue('the joint-space inertia matrix is not positive definite')

    loop.controller.compute = fail
    outcome = loop.tick(READY, np.zeros(9), None, None, 1.0)
    assert 'positive definite' in outcome.error and outcome.trace == ''
    npt.assert_allclose(outcome.torque, loop.state.gravity, atol=1e-12)
    assert loop.statistics.compute_errors == 1 and loop.statistics.result is None


def test_a_bug_in_the_controller_costs_one_safe_tick_not_the_loop():
    loop = posture_loop(stale_command='gravity')
    compute = loop.controller.compute

    def bug(state, dt, now_s):
        raise ValueError('need at least one array to concatenate')

    loop.controller.compute = bug
    outcome = loop.tick(READY, np.zeros(9), None, None, 1.0)
    assert outcome.error == 'internal error: ValueError: need at least one array to concatenate'
    assert 'Traceback' in outcome.trace and 'in bug' in outcome.trace
    npt.assert_allclose(outcome.torque, loop.state.gravity, atol=1e-12)
    loop.controller.compute = compute
    assert loop.tick(READY, np.zeros(9), None, None, 1.002).error == ''


def test_the_watchdog_fires_after_the_timeout_and_the_next_tick_resumes():
    loop = posture_loop()
    # Before the first state: a wall timeout's grace from the first check, then stale.
    assert not loop.watchdog(0.0, 100.0) and loop.state_age(0.0) is None
    assert loop.watchdog(0.0, 200.0) and loop.stale
    loop.tick(READY, np.zeros(9), None, None, 1.0)
    assert not loop.watchdog(1.05)
    assert loop.watchdog(1.11) and loop.stale
    assert loop.tick(READY, np.zeros(9), None, None, 1.2).resumed
    assert not loop.stale


def ramped_loop(soft_start_time: float = 0.5, stale_command: str = 'gravity') -> ControllerLoop:
    loop = posture_loop(stale_command=stale_command)
    loop.soft_start.duration_s = soft_start_time
    return loop


def test_the_first_command_ramps_from_the_safe_command_to_the_task_torque():
    positions, velocities = READY + 0.05, np.zeros(9)
    task = computed_torque(positions, velocities, READY)
    loop = ramped_loop()
    first = loop.tick(positions, velocities, None, None, 1.0).torque
    npt.assert_allclose(first, loop.state.gravity, atol=1e-9)  # the gravity safe command
    half = loop.tick(positions, velocities, None, None, 1.25).torque
    npt.assert_allclose(half, 0.5 * (loop.state.gravity + task), atol=1e-9)
    npt.assert_allclose(loop.tick(positions, velocities, None, None, 1.5).torque, task, atol=1e-9)


def test_a_stale_period_and_a_restart_ramp_again_from_the_holding_torque():
    positions, velocities = READY + 0.05, np.zeros(9)
    task = computed_torque(positions, velocities, READY)
    loop = ramped_loop(stale_command='zero')  # the ramp still starts from gravity: no fall
    loop.tick(positions, velocities, None, None, 1.0)
    gravity = loop.state.gravity
    npt.assert_allclose(loop.tick(positions, velocities, None, None, 1.6).torque, task, atol=1e-9)
    assert loop.watchdog(1.8)
    npt.assert_allclose(loop.safe_torque(), 0.0)
    resumed = loop.tick(positions, velocities, None, None, 1.9).torque
    npt.assert_allclose(resumed, gravity, atol=1e-9)
    npt.assert_allclose(loop.tick(positions, velocities, None, None, 2.4).torque, task, atol=1e-9)
    loop.restart()
    assert loop.stale and loop.watchdog(2.4) and loop.state_age(2.4) is None
    outcome = loop.tick(positions, velocities, None, None, 0.5)  # the clock went back
    assert outcome.resumed and not loop.stale
    npt.assert_allclose(outcome.torque, gravity, atol=1e-9)


def test_the_watchdog_fires_on_wall_time_when_the_node_clock_stops_or_goes_back():
    loop = posture_loop()
    loop.tick(READY, np.zeros(9), None, None, 5.0, wall_s=100.0)
    assert not loop.watchdog(5.0, 100.05)
    assert not loop.watchdog(5.0, 100.1)  # checked every half timeout, as the node does
    assert loop.watchdog(5.0, 100.15)  # the simulated clock stopped, the wall clock did not
    loop.tick(READY, np.zeros(9), None, None, 5.0, wall_s=100.3)
    assert loop.watchdog(4.0, 100.31)  # the simulated clock went back


def test_a_torque_the_controller_clipped_itself_is_reported_as_saturated():
    # The controller knows the effort limits (to scale its tasks) and clips first: the output
    # stage then sees nothing to clip, yet the joints are saturated and must be reported.
    panda = robot('panda')
    posture = {'type': 'joint_posture', 'kp': 1e4, 'kd': 0.0, 'target': READY}
    specs = parse_tasks(panda, ['posture'], {'posture': posture})
    limits = np.full(9, 5.0)
    controller = PrioritizedController(panda, build_entries(panda, specs), 1e-3, limits)
    loop = ControllerLoop(controller, CommandOutput(TorqueLimiter(limits)), 'zero', timeout=0.1)
    outcome = loop.tick(READY + 0.1, np.zeros(9), None, None, 1.0)
    assert np.abs(outcome.torque).max() == 5.0
    npt.assert_array_equal(loop.statistics.saturated, np.abs(outcome.torque) == 5.0)
