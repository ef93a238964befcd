"""One controller tick without ROS: the torque, held targets, failures, the watchdog."""

import numpy as np
import numpy.testing as npt
import pinocchio as pin
import pytest
from robots import robot

from wbc_control.config import build_entries, parse_tasks
from wbc_control.control.constraints.torque_limits import TorqueLimiter
from wbc_control.control.loop.command_output import CommandOutput
from wbc_control.control.loop.controller_loop import ControllerLoop
from wbc_control.control.prioritized_controller import PrioritizedController
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

    def fail(*arguments):
        raise InvalidValue('the joint-space inertia matrix is not positive definite')

    loop.controller.compute = fail
    outcome = loop.tick(READY, np.zeros(9), None, None, 1.0)
    assert 'positive definite' in outcome.error and outcome.trace == ''
    npt.assert_allclose(outcome.torque, loop.state.gravity, atol=1e-12)
    assert loop.statistics.compute_errors == 1 and loop.statistics.result is None


def test_a_bug_in_the_controller_costs_one_safe_tick_not_the_loop():
    loop = posture_loop(stale_command='gravity')
    compute = loop.controller.compute

    def bug(*arguments):
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
    assert np.abs(outcome.torque).max() == pytest.approx(5.0, abs=1e-9)
    at_limit = np.isclose(np.abs(outcome.torque), 5.0, rtol=0.0, atol=1e-8)
    assert at_limit.any()
    npt.assert_array_equal(loop.statistics.saturated, at_limit)


# A managed controller: activate, deactivate (soft stop) -------------------------------------

#: Torque rate limits (N m/s), one per joint, all different.
RATE = np.array([8.0, 30.0, 10.0, 25.0, 20.0, 15.0, 12.0, 2.0, 1.5])
DT = 0.004


def managed_loop(stale_command: str = 'gravity', rate=RATE, soft_stop_time: float = 0.3):
    """A posture loop built inactive, with per-joint rate limits, soft start and soft stop."""
    loop = posture_loop(stale_command=stale_command)
    output = CommandOutput(TorqueLimiter(robot('panda').effort_limits, rate))
    return ControllerLoop(
        loop.controller,
        output,
        stale_command,
        timeout=0.1,
        soft_start_time=0.2,
        soft_stop_time=soft_stop_time,
        active=False,
    )


#: Where the arm is held, off READY by a different amount on every joint (rad; fingers at rest).
OFFSET = np.array([0.12, -0.1, 0.08, -0.07, 0.11, -0.09, 0.05, 0.0, 0.0])


def state_at(t: float) -> tuple[np.ndarray, np.ndarray]:
    """An arm moving slowly about READY + OFFSET, every joint at its own phase."""
    phase = np.arange(9) * 0.7
    positions = READY + OFFSET + 0.03 * np.sin(2.0 * t + phase)
    positions[7:] = 0.02
    velocities = 0.06 * np.cos(2.0 * t + phase)
    velocities[7:] = 0.0
    return positions, velocities


def run(loop: ControllerLoop, start_s: float, ticks: int) -> list[tuple[float, np.ndarray]]:
    """`ticks` ticks DT apart from `start_s` while the loop commands: (time, command) each."""
    sent = []
    for k in range(ticks):
        now_s = start_s + k * DT
        if not loop.commanding:
            break
        outcome = loop.tick(*state_at(now_s), None, None, now_s, wall_s=now_s)
        loop.sent(now_s)
        sent.append((now_s, outcome.torque))
        if outcome.stopped:
            break
    return sent


def gravity_at(t: float) -> np.ndarray:
    model = robot('panda').model
    return pin.computeGeneralizedGravity(model, model.createData(), state_at(t)[0])


def steps_within_rate(sent: list[tuple[float, np.ndarray]], rate: np.ndarray) -> np.ndarray:
    """|Δτ| / (rate dt) of consecutive commands, `(k, 9)`: all <= 1 within the rate limit."""
    times = np.array([t for t, _ in sent])
    commands = np.array([c for _, c in sent])
    return np.abs(np.diff(commands, axis=0)) / (rate * np.diff(times)[:, None])


def test_an_inactive_loop_ticks_nothing_until_activated_then_ramps_from_the_holding_torque():
    loop = managed_loop()
    assert not loop.commanding
    assert not loop.watchdog(5.0, 5.0) and not loop.watchdog(50.0, 50.0) and not loop.stale
    loop.activate()
    assert loop.commanding and not loop.watchdog(50.0, 50.0)  # the start's grace
    sent = run(loop, 50.05, 300)
    npt.assert_allclose(sent[0][1], gravity_at(50.05), atol=1e-9)  # α = 0: the holding torque
    ratios = steps_within_rate(sent, RATE)
    assert ratios.max() <= 1.0 + 1e-9
    assert np.isclose(ratios, 1.0).any()  # the rate limit held the ramp back somewhere
    end_s = sent[-1][0]
    npt.assert_allclose(sent[-1][1], computed_torque(*state_at(end_s), READY), atol=1e-9)


def test_deactivate_ramps_to_the_safe_command_within_the_rate_limit_then_sends_nothing():
    loop = managed_loop()
    loop.activate()
    ramp_up = run(loop, 1.0, 400)
    assert loop.deactivate() and loop.commanding
    stop_s = ramp_up[-1][0] + DT
    stop = run(loop, stop_s, 1000)
    sent = ramp_up[-1:] + stop
    assert steps_within_rate(sent, RATE).max() <= 1.0 + 1e-9
    last_s, last = stop[-1]
    npt.assert_allclose(last, gravity_at(last_s), atol=1e-9)  # the safe command at that state
    assert last_s >= stop_s + 0.3 - 1e-9  # not before soft_stop_time
    for now_s, command in stop:
        if now_s < stop_s + 0.3 - 1e-9:
            assert not np.allclose(command, gravity_at(now_s), atol=1e-3), now_s
    assert not loop.commanding
    assert not loop.watchdog(last_s + 10.0, last_s + 10.0)  # nothing more, not even safe


@pytest.mark.parametrize('stale_command', ['zero', 'gravity'])
def test_without_a_rate_limit_the_soft_stop_is_the_blend_over_soft_stop_time(stale_command):
    loop = managed_loop(stale_command, rate=np.full(9, np.inf))
    loop.activate()
    ramp_up = run(loop, 1.0, 200)
    loop.deactivate()
    stop_s = ramp_up[-1][0] + DT
    stop = run(loop, stop_s, 1000)
    assert stop[-1][0] == pytest.approx(stop_s + 0.3)  # the first tick with β = 0
    for now_s, command in stop:
        beta = max(1.0 - (now_s - stop_s) / 0.3, 0.0)
        safe = gravity_at(now_s) if stale_command == 'gravity' else np.zeros(9)
        task = computed_torque(*state_at(now_s), READY)
        npt.assert_allclose(command, safe + beta * (task - safe), atol=1e-9)


def test_a_rate_limit_slower_than_the_soft_stop_holds_it_until_the_safe_command():
    slow = RATE / 10.0
    loop = managed_loop('zero', rate=slow, soft_stop_time=0.05)
    loop.activate()
    ramp_up = run(loop, 1.0, 2000)
    last_task = ramp_up[-1][1]
    loop.deactivate()
    stop = run(loop, ramp_up[-1][0] + DT, 5000)
    assert steps_within_rate(ramp_up[-1:] + stop, slow).max() <= 1.0 + 1e-9
    npt.assert_array_equal(stop[-1][1], np.zeros(9))
    # As long as the slowest joint needs at its rate, not the 0.05 s asked.
    needed_s = np.max(np.abs(last_task) / slow)
    assert stop[-1][0] - ramp_up[-1][0] >= needed_s - 1e-9


def test_deactivating_without_a_state_or_while_stale_is_inactive_at_once():
    loop = managed_loop()
    loop.activate()
    assert not loop.deactivate() and not loop.commanding  # activated, no state yet
    loop.activate()
    run(loop, 1.0, 10)
    assert loop.watchdog(1.5, 1.5)  # stale: the safe command went out
    assert not loop.deactivate() and not loop.commanding


def test_the_watchdog_ends_a_soft_stop_with_the_safe_command():
    loop = managed_loop()
    loop.activate()
    sent = run(loop, 1.0, 10)
    assert loop.deactivate()
    now_s = sent[-1][0]
    assert not loop.watchdog(now_s + 0.05, now_s + 0.05) and loop.commanding
    assert loop.watchdog(now_s + 0.2, now_s + 0.2)  # the node sends the safe command once
    assert not loop.commanding and not loop.watchdog(now_s + 0.3, now_s + 0.3)


def test_a_reactivated_loop_starts_over_from_the_next_state():
    loop = managed_loop()
    loop.activate()
    first = run(loop, 1.0, 100)
    loop.deactivate()
    run(loop, first[-1][0] + DT, 1000)
    loop.restart()  # a clock jump while inactive changes nothing
    assert not loop.commanding and not loop.stale
    loop.activate()
    # As at start-up: no old state counts; the safe command waits for the start's grace and is
    # then zero (no state), whatever stale_command says.
    assert loop.state_age(9.0) is None and not loop.watchdog(9.0, 9.0)
    assert loop.watchdog(9.0, 9.2)
    npt.assert_array_equal(loop.safe_torque(), np.zeros(9))
    again = run(loop, 9.3, 300)
    npt.assert_allclose(again[0][1], gravity_at(9.3), atol=1e-9)
    npt.assert_allclose(again[-1][1], computed_torque(*state_at(again[-1][0]), READY), atol=1e-9)
