"""A Panda closed loop over real DDS: wbc_sim (MuJoCo, lock-step) + wbc_controller + a probe.

Lock-step makes the runs deterministic on a slow machine: the simulator advances one control
period per command, so wall-clock speed never changes the result. The probe records every
state the simulator publishes along simulated time, with the torque applied over the step
that led to it (the `effort` field: the command that answered the state before).
"""

import numpy as np
import pinocchio as pin
from rcl_interfaces.msg import Parameter as ParameterMessage
from rcl_interfaces.srv import SetParametersAtomically
from rclpy.parameter import Parameter
from robots import robot
from ros_support import NodeProcess, RosProbe
from sensor_msgs.msg import JointState

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

    def __init__(
        self,
        probe: RosProbe,
        tasks: dict,
        controller_parameters: dict | None = None,
        sim_parameters: dict | None = None,
        urdf: str | None = None,
    ) -> None:
        """`controller_parameters` and `sim_parameters` change the nodes' below; `urdf` a path."""
        urdf = urdf or str(example_robot_urdf('panda')[0])
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
                **(sim_parameters or {}),
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
        self.controller = NodeProcess('wbc_controller', controller | (controller_parameters or {}))
        self.probe = probe
        self.panda = robot('panda')
        self.state = RobotState(self.panda)
        self.mapping = JointStateMapping(self.panda)
        self.frame = self.panda.frame_id(HAND)
        self.times: list[float] = []
        self.placements: list[pin.SE3] = []
        self.postures: list[np.ndarray] = []
        self.efforts: list[np.ndarray] = []  # the torque applied up to each state
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
        self.efforts.append(np.asarray(message.effort)[index])

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

    def set_controller_parameters(self, values: dict, timeout_s: float = 30.0) -> None:
        """Set `values` on the controller in one atomic request (the wall clock only bounds it)."""
        client = self.probe.node.create_client(
            SetParametersAtomically, '/wbc_controller/set_parameters_atomically'
        )
        ready = self.probe.spin_until(client.service_is_ready, timeout_s)
        assert ready, f'no parameter service in {timeout_s} s\n{self.controller.output()}'
        parameters: list[ParameterMessage] = [
            Parameter(name, value=value).to_parameter_msg() for name, value in values.items()
        ]
        request = SetParametersAtomically.Request(parameters=parameters)
        response = self.probe.request(lambda: client.call_async(request), timeout_s)
        assert response is not None, f'no answer to the parameter set in {timeout_s} s'
        assert response.result.successful, response.result.reason

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
