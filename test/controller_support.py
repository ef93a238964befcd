"""Helpers of the `wbc_controller` node tests: a controller process over DDS, in-process nodes.

Used by test_controller_node.py (processes over DDS), test_controller_in_process.py and
test_floating_base_node.py (ControllerNodes built in the test process, never spun).
"""

from collections.abc import Callable
from pathlib import Path
import signal
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
import numpy as np
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.parameter import Parameter, parameter_value_to_python
from rclpy.time import Time
from robots import robot
from ros_support import NodeProcess, RosProbe
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.ros.controller_node import ControllerNode
from wbc_control.ros.controller_status import diagnostic_status

CONFIG = Path(__file__).resolve().parents[1] / 'config' / 'panda_controller.yaml'
URDF = str(example_robot_urdf('panda')[0])
READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
JOINTS = list(robot('panda').joint_names)
POSTURE = {
    'task_names': ['posture'],
    'tasks': {
        'posture': {'type': 'joint_posture', 'kp': 25.0, 'kd': 10.0, 'target': READY.tolist()}
    },
}
# No soft start and no joint-limit level: the tests compare the first commands with the core's
# task torque (the fingers of near_ready states sit at their limits). test_safety runs them.
COMMON = {
    'urdf_path': URDF,
    'diagnostics_rate': 20.0,
    'soft_start_time': 0.0,
    'joint_limits': False,
}
ZERO = np.zeros(len(JOINTS))
# Upper bounds of waits for the node (wall clock; generous for a loaded machine). The module
# starts 17 processes at once: at a load average of 30 on 2 cores that took over 120 s.
START_TIMEOUT_S = 600.0
ANSWER_TIMEOUT_S = 30.0
SERVICE_TIMEOUT_S = 30.0
DIAGNOSTICS_TIMEOUT_S = 30.0
# The posture controller's joint_state_timeout (s): stamps up to this old are judged by their
# order, and its watchdog stays quiet while a test waits on it.
POSTURE_TIMEOUT_S = 60.0
# The stale controller's joint_state_timeout (s).
STALE_TIMEOUT_S = 0.2
# A joint state, or a function that makes a fresh one at every (re-)publication.
StateSource = JointState | Callable[[], JointState]
# A driver that adds gravity itself (e.g. Franka); the watchdog fires after 0.2 s.
COMPENSATED = {
    'robot_compensates_gravity': True,
    'stale_command': 'gravity',
    'joint_state_timeout': 0.2,
}


def near_ready(
    seed: int, spread: float = 0.1, speed: float = 0.2
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    positions = READY + spread * rng.uniform(-1.0, 1.0, 9)
    positions[7:] = np.clip(positions[7:], 0.0, 0.04)
    return positions, speed * rng.standard_normal(9)


def joint_state(
    names: list[str], positions, velocities, stamp: tuple[int, int] = (0, 0)
) -> JointState:
    msg = JointState()
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp
    msg.name = list(names)
    msg.position = [float(x) for x in positions]
    msg.velocity = [float(x) for x in velocities]
    return msg


def stamp_of(seconds: float) -> tuple[int, int]:
    """(sec, nanosec) of a stamp `seconds` after zero."""
    return int(seconds), round((seconds % 1.0) * 1e9)


def equal_to(expected: np.ndarray) -> Callable[[np.ndarray], bool]:
    """Accepts the command `expected` (within round-off)."""
    return lambda command: np.allclose(command, expected, rtol=1e-9, atol=1e-9)


def changed_from(before: np.ndarray) -> Callable[[np.ndarray], bool]:
    """Accepts a task torque (not the zero safe command) that differs from `before`."""
    return lambda command: np.abs(command).max() > 1e-9 and not np.allclose(command, before)


class Controller:
    """A running controller process and the probe's endpoints for it."""

    def __init__(
        self,
        probe: RosProbe,
        namespace: str,
        node_name: str,
        parameters: dict,
        extra_args: list[str] | None = None,
    ) -> None:
        full_name = f'{namespace}/{node_name}'.replace('//', '/')
        args = ['-r', f'__ns:={namespace}', '-r', f'__node:={node_name}', *(extra_args or [])]
        self.process = NodeProcess('wbc_controller', parameters, full_name, args).__enter__()
        self.name, self.probe = node_name, probe
        prefix = namespace.rstrip('/')
        self.commands: list[tuple[float, np.ndarray]] = []
        probe.node.create_subscription(
            Float64MultiArray,
            f'{prefix}/effort_controller/commands',
            lambda msg: self.commands.append((time.monotonic(), np.array(msg.data))),
            10,
        )
        self.joint_states = probe.publisher(JointState, f'{prefix}/joint_states')
        self.topic_prefix = f'{full_name}/'
        self.set_client = probe.node.create_client(SetParameters, f'{full_name}/set_parameters')
        self.get_client = probe.node.create_client(GetParameters, f'{full_name}/get_parameters')
        self._ready = False

    def wait_ready(self) -> 'Controller':
        """Block until the node is up: subscribed, serving parameters, publishing."""
        self._ready = self._ready or self.probe.spin_until(
            lambda: (
                self.joint_states.get_subscription_count() > 0
                and self.set_client.service_is_ready()
                and self.commands
            ),
            timeout=START_TIMEOUT_S,
        )
        assert self._ready, f'controller did not come up:\n{self.process.output()}'
        return self

    def publish(self, msg: JointState) -> None:
        """Publish one joint state."""
        self.joint_states.publish(msg)

    def command_after(self, msg: StateSource, accept: Callable[[np.ndarray], bool]) -> np.ndarray:
        """Publish `msg` (again every 0.5 s) until a command that `accept`s arrives."""
        self.commands.clear()
        return self.commands[self._answer(msg, accept)][1]

    def commands_before_answer(
        self, msg: StateSource, accept: Callable[[np.ndarray], bool]
    ) -> list[np.ndarray]:
        """Publish `msg` until a command that `accept`s arrives; the commands that came before.

        The node handles one publisher's states in order and the probe hears its commands in
        order, so once the answer to `msg` is here, whatever earlier states caused is here too.
        """
        return [command for _, command in self.commands[: self._answer(msg, accept)]]

    def _answer(self, msg: StateSource, accept: Callable[[np.ndarray], bool]) -> int:
        """Publish `msg` every 0.5 s until a command that `accept`s arrives; its index.

        `msg` is a message, or a function that makes a fresh one for every publication.
        """
        make = msg if callable(msg) else lambda: msg
        start = len(self.commands)

        def answered() -> int | None:
            found = (i for i in range(start, len(self.commands)) if accept(self.commands[i][1]))
            return next(found, None)

        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while time.monotonic() < deadline:
            self.publish(make())
            if self.probe.spin_until(lambda: answered() is not None, 0.5):
                return answered()
        raise AssertionError(
            f'no matching command within {ANSWER_TIMEOUT_S} s of publishing a joint state; '
            f'node output:\n{self.process.output()}'
        )

    def torque_for(self, msg: JointState) -> np.ndarray:
        """The task torque (not the zero safe command) that answers `msg`."""
        return self.command_after(msg, lambda command: np.abs(command).max() > 1e-9)

    def commands_within(self, seconds: float) -> list[np.ndarray]:
        """The commands that arrive in the next `seconds`."""
        self.commands.clear()
        self.probe.spin_for(seconds)
        return [command for _, command in self.commands]

    def set_parameters(self, **values) -> list:
        """SetParameters on the node's service (`a__b` stands for `a.b`); the results."""
        parameters = [
            Parameter(name.replace('__', '.'), value=value).to_parameter_msg()
            for name, value in values.items()
        ]
        return self._call(self.set_client, SetParameters.Request(parameters=parameters)).results

    def get_parameter(self, name: str):
        """A parameter's current value, from the node's GetParameters service."""
        response = self._call(self.get_client, GetParameters.Request(names=[name]))
        return parameter_value_to_python(response.values[0])

    def _call(self, client, request):
        """The response (parameter get and set requests are safe to repeat: `RosProbe.request`)."""
        response = self.probe.request(lambda: client.call_async(request), SERVICE_TIMEOUT_S)
        assert response is not None, f'no parameter service answer in {SERVICE_TIMEOUT_S} s'
        return response

    def diagnostics(
        self, condition: Callable[[dict], bool], timeout: float = DIAGNOSTICS_TIMEOUT_S
    ) -> dict:
        """The latest statuses of this node ({check: status}) once `condition` holds."""
        latest: dict = {}

        def record(msg: DiagnosticArray) -> None:
            for status in msg.status:
                node, _, check = status.name.partition(': ')
                if node == self.name:
                    latest[check] = status

        subscription = self.probe.node.create_subscription(
            DiagnosticArray, '/diagnostics', record, 10
        )
        try:
            met = self.probe.spin_until(lambda: bool(latest) and condition(latest), timeout)
        finally:
            self.probe.node.destroy_subscription(subscription)
        assert met, f'diagnostics condition not met within {timeout} s; last: {latest}'
        return latest

    def stop(self, sig: int = signal.SIGINT) -> int:
        """Signal the process and return its exit code."""
        return self.process.stop(sig)


def values(status) -> dict[str, str]:
    return {item.key: item.value for item in status.values}


def node_status(node: ControllerNode, check: str) -> DiagnosticStatus:
    """The status `check` an in-process node would publish now."""
    return diagnostic_status(node.get_name(), 'panda', check, node._checks()[check])


def flattened(parameters: dict, prefix: str = '') -> dict:
    flat = {}
    for key, value in parameters.items():
        if isinstance(value, dict):
            flat |= flattened(value, f'{prefix}{key}.')
        else:
            flat[f'{prefix}{key}'] = value.tolist() if isinstance(value, np.ndarray) else value
    return flat


def set_clock(node: ControllerNode, seconds: float) -> None:
    """Set the simulated clock of an in-process node built with `clock_s`."""
    node.get_clock().set_ros_time_override(Time(nanoseconds=round(seconds * 1e9)))


def in_process_nodes():
    """Yields a builder of ControllerNodes in this process (never spun), recording their commands.

    Needs rclpy initialised (a RosProbe); the nodes are destroyed when the generator closes.

    With `clock_s`, the node runs on simulated time, starting there; `set_clock` moves it (the
    node is never spun, so no /clock message reaches it).
    """
    built = []

    def build(
        parameters: dict, clock_s: float | None = None
    ) -> tuple[ControllerNode, list[np.ndarray]]:
        if clock_s is not None:
            parameters = {**parameters, 'use_sim_time': True}
        overrides = [Parameter(k, value=v) for k, v in flattened(parameters).items()]
        node = ControllerNode(namespace='/in_process', parameter_overrides=overrides)
        if clock_s is not None:
            set_clock(node, clock_s)
        published: list[np.ndarray] = []
        node._publisher.publish = lambda msg: published.append(np.array(msg.data))
        built.append(node)
        return node, published

    yield build
    for node in built:
        node.destroy_node()
