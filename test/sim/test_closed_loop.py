"""Closed loop over real DDS: wbc_sim (MuJoCo, lock-step) + wbc_controller on Panda.

Lock-step makes the runs deterministic on a slow machine: the simulator advances one control
period per command, so wall-clock speed never changes the result.
"""

import numpy as np
from panda_loop import (
    HAND,
    PROBE_DEPTH,
    READY,
    START_TIMEOUT_S,
    PandaLoop,
    posture_task,
    ready_hand,
)
import pinocchio as pin
import pytest
from ros_support import NodeProcess, RosProbe
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from wbc_control.model.example_robots import example_robot_urdf


@pytest.fixture
def probe():
    probe = RosProbe('closed_loop_probe')
    yield probe
    probe.close()


def test_panda_reaches_a_target_20_cm_away_and_holds_it(probe):
    target = ready_hand().translation + np.array([0.0, 0.2, 0.0])
    tasks = {
        'hand': {
            'type': 'frame_position',
            'frame': HAND,
            'priority': 0,
            'kp': 100.0,
            'target': target.tolist(),
        },
        # A posture that disagrees with the reach: it may only act in the null space.
        'posture': posture_task(),
    }
    with PandaLoop(probe, tasks) as loop:
        loop.run_until(2.5)
    errors = np.linalg.norm(loop.positions_between(2.0, 2.5) - target, axis=1)
    assert errors.max() < 5e-3, f'hand error after 2 s: {errors.max() * 1e3:.2f} mm'
    # The posture task still worked in the null space: the elbow stayed near its target.
    final_posture = loop.postures[-1]
    assert abs(final_posture[3] - READY[3]) < 0.5


def test_panda_reaches_an_orientation_target(probe):
    start = ready_hand()
    turn = pin.utils.rpyToMatrix(0.0, 0.0, np.radians(30.0))
    target_rotation = turn @ start.rotation
    quaternion = pin.Quaternion(target_rotation).coeffs().tolist()  # x, y, z, w
    tasks = {
        'hand_position': {
            'type': 'frame_position',
            'frame': HAND,
            'priority': 0,
            'kp': 100.0,
            'target': start.translation.tolist(),
        },
        'hand_orientation': {
            'type': 'frame_orientation',
            'frame': HAND,
            'priority': 0,
            'kp': 100.0,
            'target': quaternion,
        },
        'posture': posture_task(),
    }
    with PandaLoop(probe, tasks) as loop:
        loop.run_until(2.0)
    final = loop.placements[-1]
    angle = np.linalg.norm(pin.log3(target_rotation @ final.rotation.T))
    assert np.degrees(angle) < 1.0
    assert np.linalg.norm(final.translation - start.translation) < 5e-3


def test_line_target_keeps_the_hand_on_the_line_while_it_moves_along(probe):
    start = ready_hand().translation
    axis = np.array([1.0, 0.0, 0.0])
    # The line (priority 0) holds y and z; a lower-priority point target drags the hand along x.
    tasks = {
        'on_line': {
            'type': 'frame_position',
            'frame': HAND,
            'priority': 0,
            'kp': 100.0,
            'constraint': 'line',
            'axis': axis.tolist(),
            'target': start.tolist(),
        },
        'along': {
            'type': 'frame_position',
            'frame': HAND,
            'priority': 1,
            'kp': 25.0,
            'target': (start + np.array([0.12, 0.1, -0.1])).tolist(),
        },
        'posture': posture_task(priority=2),
    }
    with PandaLoop(probe, tasks) as loop:
        loop.run_until(2.5)
    path = loop.positions_between(0.0, 2.5)
    off_line = np.linalg.norm(np.cross(path - start, axis), axis=1)
    assert off_line.max() < 5e-3, f'left the line by {off_line.max() * 1e3:.2f} mm'
    assert path[-1, 0] - start[0] > 0.1, 'the hand should have moved along the line'


def test_a_missing_controller_leaves_the_lockstep_sim_waiting(probe):
    """Lock-step never advances without commands: no torque is ever invented.

    Waits on messages, not on the clock: without a command the simulator re-sends its
    current state every `lockstep_resend_period` s, and three sends in a row must all be the
    state at t = 0.
    """
    urdf = str(example_robot_urdf('panda')[0])
    states = probe.subscribe(JointState, 'joint_states', PROBE_DEPTH)
    parameters = {
        'urdf_path': urdf,
        'lockstep': True,
        'real_time_factor': 0.0,  # as fast as the controller answers
        'initial_positions': READY,
        'lockstep_resend_period': 0.3,
    }
    with NodeProcess('wbc_sim', parameters) as sim:
        publisher = probe.publisher(Float64MultiArray, 'effort_controller/commands')
        heard = probe.spin_until(lambda: len(states) >= 3, START_TIMEOUT_S)
        assert heard, f'waited {START_TIMEOUT_S:.0f} s for three joint states:\n{sim.output()}'
        del publisher
    assert {s.header.stamp.sec + s.header.stamp.nanosec for s in states} == {0}
