"""`wbc_demo --robot solo12_lift | talos_lift`: lift a foot in closed loop (MuJoCo, real DDS).

Each demo runs wbc_sim in lock-step and wbc_controller as processes; the demo's monitor
streams the COM and foot references and sets `contacts` live. The figures are measured from
joint_states + odom with Pinocchio (wbc_control.demo.legged_report); the pass criteria: no
fall (base height within 2 cm of where it started, tilt under 3 degrees), the lifted foot
within 5 mm of its path from its release on, every loaded contact's force inside the friction
cone and none pulling, the commands inside the effort limits.
"""

import json
import subprocess

import numpy as np
import pytest
from ros_support import executable

from wbc_control.demo.command_gate import CommandGate
from wbc_control.demo.legged import Move, lead_target, min_jerk, path
from wbc_control.demo.legged_report import LeggedRecord, summarize_legged, write_legged_report
from wbc_control.demo.scenarios import LEGGED_SCENARIOS
from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_model import RobotModel

#: Wall-clock upper bound for one demo: two processes up on a loaded 2-core machine (up to
#: 2 minutes each), then 7-8 s of lock-stepped simulated time (Talos: about 10 ms of wall
#: time per 4 ms tick, two stacks per tick during a contact switch).
DEMO_TIMEOUT_S = 900.0


def run_demo(name: str, output) -> dict:
    command = [executable('wbc_demo'), '--robot', name, '--headless', '--output', str(output)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=DEMO_TIMEOUT_S)
    except subprocess.TimeoutExpired as error:
        raise AssertionError(
            f'waited {DEMO_TIMEOUT_S:.0f} s for wbc_demo --robot {name} to finish:\n{error.stdout}'
        ) from error
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (output / 'demo.png').stat().st_size > 10_000
    summary = json.loads((output / 'summary.json').read_text())
    print(f'\n{name}: {json.dumps(summary)}')
    return summary


@pytest.mark.parametrize('name', sorted(LEGGED_SCENARIOS))
def test_the_robot_lifts_a_foot_5_cm_for_2_s_and_puts_it_down(name, tmp_path):
    scenario = LEGGED_SCENARIOS[name]()
    summary = run_demo(name, tmp_path)
    assert summary['sim_time_s'] >= scenario.duration_s - 1e-6
    assert len(summary['switch_times_s']) == 2  # released, then closed again
    assert summary['base_height_excursion_mm'] < 20.0
    assert summary['tilt_max_deg'] < 3.0
    assert summary['foot_lift_max_mm'] == pytest.approx(50.0, abs=5.0)
    assert summary['foot_error_max_mm'] < 5.0
    assert summary['outside_friction_cone_samples'] == 0
    assert summary['pulling_samples'] == 0
    assert summary['torque_limit_ratio_max'] <= 1.0


# The script, without ROS -----------------------------------------------------------------


def test_min_jerk_moves_start_and_end_at_rest():
    assert min_jerk(0.0) == (0.0, 0.0, 0.0) and min_jerk(1.0) == (1.0, 0.0, 0.0)
    moves = (Move(1.0, 0.5, (0.0, 0.0, 0.05)), Move(3.5, 0.5, (0.0, 0.0, -0.05)))
    for t, height in ((0.0, 0.0), (1.25, 0.025), (2.0, 0.05), (5.0, 0.0)):
        position, velocity, _ = path(moves, t)
        assert position[2] == pytest.approx(height)
    assert path(moves, 1.25)[1][2] == pytest.approx(0.05 * 1.875 / 0.5)  # peak speed
    # Numerical derivatives of the position agree with the velocity and acceleration.
    step = 1e-6
    for t in (1.1, 1.3, 3.7):
        ahead, behind = path(moves, t + step), path(moves, t - step)
        np.testing.assert_allclose(
            (ahead[0] - behind[0]) / (2 * step), path(moves, t)[1], atol=1e-6
        )
        np.testing.assert_allclose(
            (ahead[1] - behind[1]) / (2 * step), path(moves, t)[2], atol=1e-4
        )


def test_the_lead_target_gives_the_pd_law_the_feed_forward_command():
    moves = (Move(0.0, 1.0, (0.1, -0.05, 0.02)),)
    kp, kd, start = 400.0, 40.0, np.array([0.1, 0.2, 0.3])
    x, xd = np.array([0.12, 0.18, 0.31]), np.array([0.05, 0.0, -0.1])
    for t in (0.2, 0.5, 0.9):
        position, velocity, acceleration = path(moves, t)
        feed_forward = acceleration + kd * (velocity - xd) + kp * (start + position - x)
        pd = kp * (lead_target(start, moves, t, kp, kd) - x) - kd * xd
        np.testing.assert_allclose(pd, feed_forward, atol=1e-9)


def test_the_scripts_release_the_foot_they_lift():
    for make in LEGGED_SCENARIOS.values():
        scenario = make()
        assert scenario.lifted_foot == scenario.foot_frame
        (release, _), (close, _) = scenario.contacts
        lift, lower = scenario.foot_moves
        assert release + 0.3 < lift.start_s and lower.start_s + lower.duration_s < close
        assert lower.start_s - (lift.start_s + lift.duration_s) == pytest.approx(2.0)
        assert scenario.released(lift.start_s) and not scenario.released(close)


def test_the_gate_passes_one_command_per_handled_state():
    gate = CommandGate()
    gate.command('gravity')  # the controller's watchdog, before any state
    assert gate.take() is None
    gate.state_handled()
    gate.command('tick 0')  # the newest wins
    assert gate.take() == 'tick 0'
    gate.command('late')
    assert gate.take() is None  # one command per state: the simulator cannot run ahead
    gate.state_handled()
    assert gate.take() == 'late'
    assert (gate.states_handled, gate.commands_passed, gate.commands_repeated) == (2, 2, 0)


def test_a_resent_state_resends_a_lost_command_and_nothing_else():
    gate = CommandGate()
    gate.state_handled()
    assert gate.state_resent() is None  # nothing passed yet: the controller's answer will go
    gate.command('tick 0')
    assert gate.take() == 'tick 0'
    assert gate.state_resent() == 'tick 0'  # passed, yet the simulator asks again: lost
    assert gate.commands_repeated == 1
    gate.state_handled()
    assert gate.state_resent() is None  # the new state's command is still to come
    assert gate.take() is None


def test_a_run_that_ended_before_the_weight_shift_has_a_short_summary(tmp_path):
    scenario = LEGGED_SCENARIOS['talos_lift']()
    robot = RobotModel.from_urdf_path(*example_robot_urdf(scenario.robot))
    record = LeggedRecord()
    record.times, record.configurations = [0.0], [robot.neutral_configuration()]
    record.velocities = [np.zeros(robot.nv)]
    summary = summarize_legged(scenario, robot, record)
    assert summary == {'samples': 1, 'sim_time_s': 0.0}
    write_legged_report(scenario, robot, record, summary, tmp_path)
    assert json.loads((tmp_path / 'summary.json').read_text()) == summary
    assert not (tmp_path / 'demo.png').exists()
