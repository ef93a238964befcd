"""Closed loop over real DDS: wbc_sim (MuJoCo, lock-step) + wbc_controller on Panda.

Lock-step makes the runs deterministic on a slow machine: the simulator advances one control
period per command, so wall-clock speed never changes the result.
"""

import numpy as np
import pinocchio as pin
import pytest
from robots import robot
from ros_support import NodeProcess, RosProbe
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_model import JointStateMapping
from wbc_control.model.robot_state import RobotState

READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]
ARM = [f'panda_joint{i}' for i in range(1, 8)]
CONTROL_PERIOD_S = 0.004
HAND = 'panda_hand_tcp'
DOWN_XYZW = [1.0, 0.0, 0.0, 0.0]
#: Deep enough that a probe starved of CPU queues the states instead of dropping them.
PROBE_DEPTH = 10_000
#: Wall-clock upper bounds only; the loops wait on simulated time.
START_TIMEOUT_S = 120.0


class PandaLoop:
    """Sim + controller processes and a probe that records the hand along sim time."""

    def __init__(self, probe: RosProbe, tasks: dict) -> None:
        urdf = str(example_robot_urdf('panda')[0])
        self.sim = NodeProcess(
            'wbc_sim',
            {
                'urdf_path': urdf,
                'lockstep': True,
                'real_time_factor': 0.0,  # as fast as the controller answers
                # The first state waits for this probe and the controller: sent before the
                # controller listens, it is answered by the controller's start-up safe command.
                'lockstep_subscribers': 2,
                'control_period': CONTROL_PERIOD_S,
                'initial_positions': READY,
                'command_joints': ARM,
            },
        )
        # Sim time: the controller's stale-input watchdog must follow the lock-stepped clock.
        controller = {
            'urdf_path': urdf,
            'command_joints': ARM,
            'task_names': list(tasks),
            'use_sim_time': True,
            # The arm starts at rest where the tasks hold it: tracking is measured from the
            # first tick, not through a soft start's blend with the holding torque.
            'soft_start_time': 0.0,
            # The watchdog also runs on the wall clock (max(timeout, 1 s) under sim time): in a
            # loop stalled that long on a loaded machine its safe commands, republished every
            # 50 ms, would each step the lock-stepped arm with zero torque.
            'joint_state_timeout': 10.0,
        }
        controller['tasks'] = tasks
        self.controller = NodeProcess('wbc_controller', controller)
        self.probe = probe
        self.panda = robot('panda')
        self.state = RobotState(self.panda)
        self.mapping = JointStateMapping(self.panda)
        self.frame = self.panda.frame_id(HAND)
        self.times: list[float] = []
        self.placements: list[pin.SE3] = []
        self.postures: list[np.ndarray] = []
        self.subscription = probe.node.create_subscription(
            JointState, 'joint_states', self._on_state, PROBE_DEPTH
        )

    def _on_state(self, message: JointState) -> None:
        index, _ = self.mapping.message_indices(message.name)  # the simulator sends every joint
        positions = np.asarray(message.position)[index]
        self.state.update(self.panda.configuration(positions), np.zeros(self.panda.nv))
        self.times.append(message.header.stamp.sec + 1e-9 * message.header.stamp.nanosec)
        self.placements.append(self.state.frame_placement(self.frame).copy())
        self.postures.append(positions)

    def __enter__(self) -> 'PandaLoop':
        self.sim.__enter__()
        # The loop starts as soon as the controller connects, and runs fast: make sure this
        # probe already hears the simulator, or it would miss the beginning of the run.
        heard = self.probe.spin_until(
            lambda: self.subscription.get_publisher_count() > 0, START_TIMEOUT_S
        )
        assert heard, f'waited {START_TIMEOUT_S:.0f} s for wbc_sim:\n{self.sim.output()}'
        self.controller.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.controller.stop()
        self.sim.stop()

    def run_until(self, sim_time_s: float, wall_timeout_s: float = 300.0) -> None:
        """Spin until the simulator reached `sim_time_s` (the wall clock is only a bound)."""
        done = self.probe.spin_until(
            lambda: bool(self.times) and self.times[-1] >= sim_time_s, wall_timeout_s
        )
        reached = self.times[-1] if self.times else None
        assert done, (
            f'waited {wall_timeout_s:.0f} s of wall time for sim time {sim_time_s} s; '
            f'the last state heard was stamped {reached}\n'
            f'{self.sim.output()[-2000:]}\n{self.controller.output()[-2000:]}'
        )

    def positions_between(self, start_s: float, end_s: float) -> np.ndarray:
        """Hand positions recorded between two sim times, `(k, 3)`."""
        times = np.asarray(self.times)
        keep = (times >= start_s) & (times <= end_s)
        return np.array([p.translation for p, k in zip(self.placements, keep) if k])


def ready_hand() -> pin.SE3:
    panda = robot('panda')
    state = RobotState(panda)
    state.update(panda.configuration(READY), np.zeros(panda.nv))
    return state.frame_placement(panda.frame_id(HAND)).copy()


def posture_task(priority: int = 1) -> dict:
    return {'type': 'joint_posture', 'priority': priority, 'kp': 16.0, 'target': READY}


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
