"""The `wbc_controller` console script over real DDS: torques, bad inputs, live tuning, safety.

Each node runs as a subprocess started from its console script; the test process talks to it
through an rclpy probe node. Nodes that several tests share are module-scoped.
"""

from collections.abc import Callable
from pathlib import Path
import re
import signal
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
import numpy as np
import numpy.testing as npt
from panda_example import core_result, example_parameters
import pinocchio as pin
import pytest
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.parameter import Parameter, parameter_value_to_python
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from robots import robot
from ros_support import NodeProcess, RosProbe
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from wbc_control.config import (
    build_entries,
    parse_contacts,
    parse_controller_settings,
    parse_tasks,
)
from wbc_control.control.contacts import holding_torque
from wbc_control.control.prioritized_controller import ControllerResult, PrioritizedController
from wbc_control.exceptions import InvalidValue
from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_state import RobotState
from wbc_control.ros.controller_node import ControllerNode
from wbc_control.ros.controller_status import diagnostic_status

CONFIG = Path(__file__).resolve().parents[2] / 'config' / 'panda_controller.yaml'
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


# Helpers ------------------------------------------------------------------------------------


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
        future = client.call_async(request)
        assert self.probe.spin_until(future.done, SERVICE_TIMEOUT_S), (
            f'parameter service did not answer within {SERVICE_TIMEOUT_S} s'
        )
        return future.result()

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


FAILING_STARTS = {
    'no-model': ({'urdf_path': ''}, ['robot_description', 'urdf_path']),
    'unknown-frame': (
        {'tasks': {'posture': {'type': 'frame_pose', 'frame': 'gripper', 'kp': 1.0}}},
        ['tasks.posture.frame', "'gripper'", 'panda_hand'],
    ),
    'unknown-joint': (
        {'command_joints': ['panda_joint1', 'wrist']},
        ['command_joints', "'wrist'"],
    ),
    'floating-base-without-contacts': (
        {'urdf_path': str(example_robot_urdf('solo12')[0]), 'floating_base': True},
        ['floating_base: true needs contacts', 'contacts: ['],
    ),
    'contact-frame': ({'contacts': ['panda_hand', 'foot']}, ['contacts:', "'foot'"]),
    'contact-type': (
        {'contacts': ['panda_hand'], 'contact_types': ['edge']},
        ['contact_types:', "panda_hand: 'edge'", 'surface, point'],
    ),
    'field-typo': (
        {'tasks': {'posture': {'type': 'joint_posture', 'kP': 1.0}}},
        ['tasks.posture.kP', 'unknown field'],
    ),
    'setting-typo': (
        {'stale_comand': 'gravity'},
        ["unknown parameter 'stale_comand'; did you mean 'stale_command'?"],
    ),
    'timeout-typo': (
        {'joint_state_timout': 0.02},
        ["unknown parameter 'joint_state_timout'; did you mean 'joint_state_timeout'?"],
    ),
    'unlisted-task': (
        {'tasks': {**POSTURE['tasks'], 'elbow': {'type': 'joint_posture', 'kp': 1.0}}},
        ["unknown parameter 'tasks.elbow.", 'task_names'],
    ),
    'command-line-typo': (
        {},
        ["unknown parameter 'stale_comand'; did you mean 'stale_command'?"],
        ['-p', 'stale_comand:=gravity'],
    ),
}


@pytest.fixture(scope='module')
def probe():
    probe = RosProbe('controller_node_test')
    yield probe
    probe.close()


@pytest.fixture(scope='module')
def nodes(probe):
    """Every process of this module, started together so that their start-ups overlap."""
    started = {
        'posture': Controller(
            probe,
            '/posture',
            'posture_controller',
            {**COMMON, **POSTURE, 'joint_state_timeout': POSTURE_TIMEOUT_S},
        ),
        # The shipped Panda example (hand pose over posture), commanding all nine joints.
        'example': Controller(
            probe,
            '/',
            'wbc_controller',
            COMMON,
            [
                '--params-file',
                str(CONFIG),
                '-p',
                f'command_joints:=[{", ".join(JOINTS)}]',
                # exact torques: no soft start, no rate limit between test states
                '-p',
                'soft_start_time:=0.0',
                '-p',
                'torque_rate_limit:=0.0',
                '-p',
                'joint_limits:=false',
            ],
        ),
        'stale': Controller(
            probe,
            '/stale',
            'stale_controller',
            {**COMMON, **POSTURE, 'joint_state_timeout': STALE_TIMEOUT_S},
        ),
        'SIGINT': Controller(probe, '/sigint', 'sigint_controller', {**COMMON, **POSTURE}),
        'SIGTERM': Controller(probe, '/sigterm', 'sigterm_controller', {**COMMON, **POSTURE}),
        'gravity': Controller(
            probe,
            '/gravity',
            'gravity_controller',
            {**COMMON, **POSTURE, **COMPENSATED},
        ),
    }
    for key, (parameters, _, *extra_args) in FAILING_STARTS.items():
        parameters = {**COMMON, **POSTURE, **parameters}
        process = NodeProcess('wbc_controller', parameters, None, *extra_args)
        started[key] = process.__enter__()
    yield started
    for node in started.values():
        node.stop()


@pytest.fixture(scope='module')
def posture(nodes):
    """A posture-only controller (computed torque) on all nine joints."""
    return nodes['posture'].wait_ready()


@pytest.fixture(scope='module')
def example(nodes):
    """The shipped Panda example (hand pose over posture), commanding all nine joints."""
    return nodes['example'].wait_ready()


# Torques ------------------------------------------------------------------------------------


def test_posture_only_torque_is_the_core_result_and_computed_torque(posture):
    positions, velocities = near_ready(1)
    command = posture.torque_for(joint_state(JOINTS, positions, velocities))
    expected = core_result({**COMMON, **POSTURE}, positions, velocities)
    assert not expected.saturated.any()
    npt.assert_allclose(command, expected.torque, rtol=1e-9, atol=1e-9)
    # Independent: τ = M (kp e − kd v) + h with Pinocchio's CRBA and RNEA.
    model = robot('panda').model
    data = model.createData()
    q = robot('panda').configuration(positions)
    mass = pin.crba(model, data, q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    h = pin.rnea(model, data, q, velocities, np.zeros(9))
    npt.assert_allclose(command, mass @ (25.0 * (READY - positions) - 10.0 * velocities) + h)


def test_top_task_acceleration_is_achieved_exactly(example):
    positions, velocities = near_ready(3, spread=0.03, speed=0.05)
    command = example.torque_for(joint_state(JOINTS, positions, velocities))
    parameters = {**example_parameters(), **COMMON, 'command_joints': JOINTS}
    parameters['torque_rate_limit'] = 0.0
    expected = core_result(parameters, positions, velocities)
    assert not expected.saturated.any()
    npt.assert_allclose(command, expected.torque, rtol=1e-9, atol=1e-9)
    # Independent: q̈ = M⁻¹(τ − h) by ABA, then J q̈ + J̇v = ẍ* for the hand pose.
    model = robot('panda').model
    data = model.createData()
    q = robot('panda').configuration(positions)
    acceleration = pin.aba(model, data, q, velocities, command)
    hand = model.getFrameId('panda_hand')
    world = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    jacobian = pin.computeFrameJacobian(model, data, q, hand, world)
    pin.forwardKinematics(model, data, q, velocities, np.zeros(9))
    pin.updateFramePlacements(model, data)
    drift = pin.getFrameClassicalAcceleration(model, data, hand, world).vector
    oMhand = data.oMf[hand]
    target = example_parameters()['tasks']['hand']['target']
    x, y, z, w = target[3:]
    error = np.concatenate(
        [
            np.array(target[:3]) - oMhand.translation,
            pin.log3(pin.Quaternion(w, x, y, z).toRotationMatrix() @ oMhand.rotation.T),
        ]
    )
    kp = np.array(example_parameters()['tasks']['hand']['kp'])
    desired = kp * error - 2.0 * np.sqrt(kp) * (jacobian @ velocities)
    npt.assert_allclose(jacobian @ acceleration + drift, desired, atol=1e-6)


def test_joint_order_and_extra_joints_do_not_matter(posture):
    positions, velocities = near_ready(3)
    reference = posture.torque_for(joint_state(JOINTS, positions, velocities))
    order = np.random.default_rng(0).permutation(9)
    names = [JOINTS[i] for i in order] + ['conveyor_joint']
    shuffled = joint_state(names, [*positions[order], 1.0], [*velocities[order], 0.5])
    npt.assert_allclose(posture.torque_for(shuffled), reference, rtol=1e-12, atol=1e-12)


def counters(controller: Controller) -> dict[str, int]:
    """The node's counters now: rejected inputs by reason, non-finite torques, compute errors."""
    statuses = controller.diagnostics(lambda s: {'inputs', 'torques'} <= set(s))
    inputs, torques = values(statuses['inputs']), values(statuses['torques'])
    counted = {key: int(value) for key, value in inputs.items() if key.startswith('rejected.')}
    for key in ('non_finite_torques', 'compute_errors'):
        counted[key] = int(torques[key])
    return counted


def wait_rejected(controller: Controller, reasons: tuple[str, ...], at_least: int) -> None:
    """Until the node has counted `at_least` joint states rejected for one of `reasons`."""

    def counted(statuses: dict) -> bool:
        inputs = values(statuses['inputs']) if 'inputs' in statuses else {}
        keys = [f'rejected.joint_states.{reason}' for reason in reasons]
        return sum(int(inputs.get(key, 0)) for key in keys) >= at_least

    controller.diagnostics(counted)


def rejected(counted: dict[str, int], reasons: tuple[str, ...]) -> int:
    return sum(counted.get(f'rejected.joint_states.{reason}', 0) for reason in reasons)


def assert_nothing_answered(caused: list[np.ndarray], controller: Controller) -> None:
    """No command but the safe one (zero: the watchdog's, had the node gone stale meanwhile)."""
    answers = [command for command in caused if not np.array_equal(command, ZERO)]
    assert answers == [], f'a rejected state was answered:\n{controller.process.output()}'


@pytest.mark.parametrize(
    'reason, make',
    [
        ('joints', lambda q, v: joint_state(JOINTS[1:], q[1:], v[1:])),
        ('non_finite', lambda q, v: joint_state(JOINTS, [np.nan, *q[1:]], v)),
        ('non_finite', lambda q, v: joint_state(JOINTS, q, [*v[:8], np.inf])),
        ('ragged', lambda q, v: joint_state(JOINTS, q[:8], v)),
        ('ragged', lambda q, v: joint_state(JOINTS, q, [])),
    ],
    ids=['missing-joint', 'nan-position', 'inf-velocity', 'ragged-positions', 'no-velocities'],
)
def test_bad_joint_states_never_reach_the_output(posture, reason, make):
    positions, velocities = near_ready(4)
    posture.torque_for(joint_state(JOINTS, positions, velocities))
    before = counters(posture)
    posture.commands.clear()
    bad = make(positions, velocities)
    for _ in range(3):
        posture.publish(bad)
    wait_rejected(posture, (reason,), rejected(before, (reason,)) + 1)
    # A good state after the bad ones: once it is answered, the bad ones were handled.
    marker = near_ready(22)
    expected = core_result({**COMMON, **POSTURE}, *marker).torque
    caused = posture.commands_before_answer(joint_state(JOINTS, *marker), equal_to(expected))
    assert_nothing_answered(caused, posture)
    after = counters(posture)
    for key in ('non_finite_torques', 'compute_errors'):
        assert after[key] == before[key], f'{key}: {before[key]} -> {after[key]}'
    assert posture.process.alive()


def test_old_stamps_are_dropped(posture):
    early, late = near_ready(5), near_ready(6)
    dropped = ('out_of_order',)
    # Stamps are judged against the node's clock: POSTURE_TIMEOUT_S bounds this test's length.
    now_s = time.time()
    posture.torque_for(joint_state(JOINTS, *late, stamp=stamp_of(now_s)))
    before = rejected(counters(posture), dropped)
    posture.commands.clear()
    # One at a time (the node keeps only the newest state), each until the node counted it.
    for count, (state, stamp_s) in enumerate(((early, now_s - 1.0), (late, now_s)), 1):
        posture.publish(joint_state(JOINTS, *state, stamp=stamp_of(stamp_s)))
        wait_rejected(posture, dropped, before + count)
    marker = near_ready(22)
    expected = core_result({**COMMON, **POSTURE}, *marker).torque
    caused = posture.commands_before_answer(
        lambda: joint_state(JOINTS, *marker, stamp=stamp_of(time.time())), equal_to(expected)
    )
    assert_nothing_answered(caused, posture)
    expected = core_result({**COMMON, **POSTURE}, *early).torque
    newer = joint_state(JOINTS, *early, stamp=stamp_of(time.time()))
    npt.assert_allclose(posture.torque_for(newer), expected, rtol=1e-9, atol=1e-9)
    assert posture.process.alive()


# Live parameters and targets ----------------------------------------------------------------


def test_a_live_gain_change_changes_the_torque(posture):
    state = joint_state(JOINTS, *near_ready(7))
    before = posture.torque_for(state)
    assert posture.set_parameters(tasks__posture__kp=[40.0] * 9)[0].successful
    after = posture.command_after(state, changed_from(before))
    parameters = {**COMMON, **POSTURE}
    parameters['tasks'] = {'posture': {**POSTURE['tasks']['posture'], 'kp': [40.0] * 9}}
    npt.assert_allclose(after, core_result(parameters, *near_ready(7)).torque, atol=1e-9)
    assert posture.set_parameters(tasks__posture__kp=25.0)[0].successful


@pytest.mark.parametrize(
    'name, value, words',
    [
        ('tasks.posture.kp', -1.0, ['tasks.posture.kp', 'non-negative']),
        ('tasks.posture.kp', float('nan'), ['tasks.posture.kp', 'non-finite']),
        ('tasks.posture.kd', [1.0, 2.0], ['tasks.posture.kd', '9 values']),
        ('tasks.posture.target', [0.0] * 9, ['panda_joint4']),
        ('tasks.posture.weight', 0.0, ['tasks.posture.weight']),
        ('tasks.posture.kp', 'stiff', ['tasks.posture.kp', 'number']),
        ('singular_value_threshold', 2.0, ['singular_value_threshold']),
        ('stale_command', 'hold', ['stale_command', 'zero, gravity']),
        ('tasks.posture.priority', 3, ['read-only']),
        ('joint_state_timeout', 1.0, ['read-only']),
        ('tasks.elbow.kp', 1.0, ["unknown parameter 'tasks.elbow.kp'"]),
        ('stale_comand', 'gravity', ["unknown parameter 'stale_comand'", "'stale_command'?"]),
    ],
)
def test_invalid_live_changes_are_rejected_and_the_old_value_kept(posture, name, value, words):
    old = posture.get_parameter(name)
    (result,) = posture.set_parameters(**{name.replace('.', '__'): value})
    assert not result.successful
    for word in words:
        assert word in result.reason
    assert posture.get_parameter(name) == old
    state = joint_state(JOINTS, *near_ready(8))
    expected = core_result({**COMMON, **POSTURE}, *near_ready(8)).torque
    npt.assert_allclose(posture.torque_for(state), expected, rtol=1e-9, atol=1e-9)


def test_a_live_set_of_an_unknown_parameter_is_refused_naming_it_and_logged(posture, probe):
    (result,) = posture.set_parameters(tasks__elbow__kp=1.0)
    assert not result.successful
    assert result.reason == "unknown parameter 'tasks.elbow.kp'; did you mean 'tasks.posture.kp'?"
    logged = f'parameter change rejected: {result.reason}'
    assert probe.spin_until(lambda: logged in posture.process.output(), 10.0), (
        posture.process.output()
    )


def test_a_posture_target_topic_changes_the_torque(posture, probe):
    publisher = probe.publisher(JointState, posture.topic_prefix + 'posture/target')
    assert probe.spin_until(lambda: publisher.get_subscription_count() > 0)
    state = joint_state(JOINTS, *near_ready(9))
    before = posture.torque_for(state)
    target = READY.copy()
    target[[0, 2]] = [0.3, -0.2]
    publisher.publish(joint_state(['panda_joint3', 'panda_joint1'], [-0.2, 0.3], []))
    after = posture.command_after(state, changed_from(before))
    parameters = {**COMMON, **POSTURE}
    parameters['tasks'] = {'posture': {**POSTURE['tasks']['posture'], 'target': target}}
    npt.assert_allclose(after, core_result(parameters, *near_ready(9)).torque, atol=1e-9)
    publisher.publish(joint_state(JOINTS, READY, []))
    posture.command_after(state, lambda command: np.allclose(command, before, atol=1e-9))


def pose(frame_id: str, xyz, xyzw) -> PoseStamped:
    msg = PoseStamped()
    msg.header.frame_id = frame_id
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = xyz
    orientation = msg.pose.orientation
    orientation.x, orientation.y, orientation.z, orientation.w = xyzw
    return msg


def test_a_pose_target_changes_the_torque_and_a_wrong_frame_is_rejected(example, probe):
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
    publisher = probe.publisher(PoseStamped, '/wbc_controller/hand/target', qos)
    assert probe.spin_until(lambda: publisher.get_subscription_count() > 0)
    positions, velocities = near_ready(10, spread=0.05)
    state = joint_state(JOINTS, positions, velocities)
    before = example.torque_for(state)
    publisher.publish(pose('panda_hand', [0.32, 0.02, 0.58], [1.0, 0.0, 0.0, 0.0]))
    inputs = example.diagnostics(lambda s: 'rejected.targets.frame' in values(s['inputs']))
    assert values(inputs['inputs'])['rejected.targets.frame'] == '1'
    npt.assert_allclose(example.torque_for(state), before, rtol=1e-12)

    publisher.publish(pose('panda_link0', [0.32, 0.02, 0.58], [1.0, 0.0, 0.0, 0.0]))
    after = example.command_after(state, changed_from(before))
    parameters = {**example_parameters(), **COMMON, 'command_joints': JOINTS}
    parameters['torque_rate_limit'] = 0.0
    parameters['tasks']['hand']['target'] = [0.32, 0.02, 0.58, 1.0, 0.0, 0.0, 0.0]
    npt.assert_allclose(after, core_result(parameters, positions, velocities).torque, atol=1e-9)


def test_diagnostics_report_tasks_inputs_and_torques(example):
    example.torque_for(joint_state(JOINTS, *near_ready(11, spread=0.05)))
    statuses = example.diagnostics(lambda s: {'tasks', 'inputs', 'torques'} <= set(s))
    tasks, inputs, torques = statuses['tasks'], statuses['inputs'], statuses['torques']
    assert {status.hardware_id for status in statuses.values()} == {'panda'}
    keys = set(values(tasks))
    assert {'hand.error_norm', 'posture.error_norm', 'level_0.tasks', 'level_1.tasks'} <= keys
    for level in (0, 1):
        assert {f'level_{level}.condition_number', f'level_{level}.damped_directions'} <= keys
    assert float(values(tasks)['level_0.condition_number']) >= 1.0
    assert {'stale', 'joint_state_age_s', 'joint_state_rate_hz'} <= set(values(inputs))
    assert {
        'saturated_joints',
        'non_finite_torques',
        'compute_time_ms.last',
        'compute_time_ms.mean',
        'compute_time_ms.max',
    } <= set(values(torques))
    assert torques.message


# Stale input --------------------------------------------------------------------------------


def watchdog_ages(output: str) -> list[float]:
    """The state ages the watchdog logged when it switched to the safe command (s)."""
    return [float(age) for age in re.findall(r'no valid joint state for ([0-9.]+) s', output)]


def wait_safe_command(controller: Controller, safe: np.ndarray, after: np.ndarray) -> None:
    """Until the watchdog's safe command arrives after the last command equal to `after`."""

    def arrived() -> bool:
        sent = [command for _, command in controller.commands]
        last = max(i for i, c in enumerate(sent) if np.allclose(c, after, rtol=1e-9, atol=1e-9))
        return any(np.allclose(c, safe, atol=1e-9) for c in sent[last + 1 :])

    assert controller.probe.spin_until(arrived, ANSWER_TIMEOUT_S), (
        f'no safe command within {ANSWER_TIMEOUT_S} s of the last joint state'
    )


def test_a_silent_publisher_gets_the_safe_command_not_the_last_torque(nodes, probe):
    controller = nodes['stale'].wait_ready()
    positions, velocities = near_ready(12)
    task_torque = controller.torque_for(joint_state(JOINTS, positions, velocities))
    wait_safe_command(controller, ZERO, after=task_torque)
    inputs = controller.diagnostics(lambda s: values(s['inputs'])['stale'] == 'True')
    assert inputs['inputs'].level == DiagnosticStatus.ERROR
    assert float(values(inputs['inputs'])['joint_state_age_s']) > STALE_TIMEOUT_S
    # Since the task torque: only it (re-sent states) and then only the safe command.
    sent = [command for _, command in controller.commands]
    last_task = max(i for i, c in enumerate(sent) if np.allclose(c, task_torque, rtol=1e-9))
    assert all(np.allclose(c, task_torque, rtol=1e-9) or np.array_equal(c, ZERO) for c in sent)
    assert all(np.array_equal(c, ZERO) for c in sent[last_task + 1 :])
    # Not before the timeout: the node logs how old the state was when it switched.
    assert probe.spin_until(lambda: watchdog_ages(controller.process.output()), 10.0)
    ages = watchdog_ages(controller.process.output())
    assert min(ages) >= STALE_TIMEOUT_S - 1e-3, ages  # printed to 1 ms

    assert controller.set_parameters(stale_command='gravity')[0].successful
    panda = robot('panda')
    gravity = pin.computeGeneralizedGravity(
        panda.model, panda.model.createData(), panda.configuration(positions)
    )
    wait_safe_command(controller, gravity, after=ZERO)
    npt.assert_allclose(controller.commands[-1][1], gravity, rtol=1e-9, atol=1e-9)

    resumed = controller.command_after(
        joint_state(JOINTS, positions, velocities), lambda c: not np.allclose(c, gravity)
    )
    npt.assert_allclose(resumed, task_torque, rtol=1e-9)


# A robot that compensates gravity itself -----------------------------------------------------


def test_a_robot_that_compensates_gravity_is_sent_tau_minus_gravity(nodes, probe):
    controller = nodes['gravity'].wait_ready()
    positions, velocities = near_ready(21, speed=0.05)
    command = controller.torque_for(joint_state(JOINTS, positions, velocities))
    expected = core_result({**COMMON, **POSTURE}, positions, velocities)
    assert not expected.saturated.any()
    panda = robot('panda')
    gravity = pin.computeGeneralizedGravity(
        panda.model, panda.model.createData(), panda.configuration(positions)
    )
    npt.assert_allclose(command, expected.torque - gravity, rtol=1e-9, atol=1e-9)
    # Stale: the gravity safe command is what holds the arm, minus what the robot adds: zero.
    wait_safe_command(controller, ZERO, after=command)
    npt.assert_allclose(controller.commands[-1][1], ZERO, atol=1e-9)


# Start-up and shutdown ----------------------------------------------------------------------


@pytest.mark.parametrize('key', FAILING_STARTS)
def test_bad_configurations_exit_non_zero_naming_the_problem(nodes, key):
    code = nodes[key].wait(START_TIMEOUT_S)
    output = nodes[key].output()
    assert code != 0, output
    for word in FAILING_STARTS[key][1]:
        assert word in output, output
    assert 'Traceback' not in output
    if 'unknown parameter' in FAILING_STARTS[key][1][0]:
        assert output.count('unknown parameter') == 1, output  # one line


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_ctrl_c_and_sigterm_exit_cleanly(nodes, sig):
    controller = nodes[sig.name].wait_ready()
    controller.torque_for(joint_state(JOINTS, *near_ready(13)))
    code = controller.stop(sig)
    output = controller.process.output()
    assert code == 0, output
    assert 'Traceback' not in output and 'Error' not in output, output


# In-process checks of what DDS cannot provoke: a core that fails, saturation, rate limits ---


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


@pytest.fixture
def local(probe):
    """Build ControllerNodes in this process (never spun); their commands are recorded.

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


# Floating base: odometry pairing and contact health (in process) ----------------------------

SOLO_URDF = str(example_robot_urdf('solo12')[0])
FEET = ['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT']
STAND = {'HAA': 0.1, 'HFE': 0.8, 'KFE': -1.6}
BASE_POSE = [0.01, -0.02, 0.22, 0.0, 0.0, np.sin(0.05), np.cos(0.05)]
BASE_TWIST = [0.05, -0.02, 0.01, 0.1, -0.05, 0.2]


def solo_stand() -> np.ndarray:
    """Solo12's standing posture (example-robot-data's SRDF), in model order."""
    positions = []
    for name in robot('solo12').joint_names:
        leg, joint = name.split('_')
        sign = -1.0 if (joint == 'HAA' and leg[1] == 'R') else 1.0
        sign *= -1.0 if (joint != 'HAA' and leg[0] == 'H') else 1.0
        positions.append(sign * STAND[joint])
    return np.array(positions)


def solo_parameters(**overrides) -> dict:
    parameters = {
        'urdf_path': SOLO_URDF,
        'floating_base': True,
        'contacts': FEET,
        'contact_types': ['point'] * 4,
        'odom_pairing': 'stamp',
        'joint_state_timeout': 1.0,  # stamps are judged against the node's clock
        'soft_start_time': 0.0,
        'joint_limits': False,
        'task_names': ['base', 'posture'],
        'tasks': {
            'base': {
                'type': 'frame_pose',
                'frame': 'base_link',
                'kp': 100.0,
                'target': [0.0, 0.0, 0.22, 0.0, 0.0, 0.0, 1.0],
            },
            'posture': {
                'type': 'joint_posture',
                'priority': 1,
                'kp': 10.0,
                'target': solo_stand().tolist(),
            },
        },
    }
    parameters.update(overrides)
    return parameters


def solo_joint_state(stamp_s: float, seed: int = 0) -> JointState:
    rng = np.random.default_rng(seed)
    positions = solo_stand() + 0.05 * rng.uniform(-1.0, 1.0, 12)
    names = list(robot('solo12').joint_names)
    return joint_state(names, positions, 0.1 * rng.standard_normal(12), stamp_of(stamp_s))


def stamp_of(seconds: float) -> tuple[int, int]:
    return int(seconds), round((seconds % 1.0) * 1e9)


def odometry(stamp_s: float, pose=BASE_POSE, frame: str = 'odom') -> Odometry:
    msg = Odometry()
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp_of(stamp_s)
    msg.header.frame_id, msg.child_frame_id = frame, 'base_link'
    position, orientation = msg.pose.pose.position, msg.pose.pose.orientation
    position.x, position.y, position.z = (float(x) for x in pose[:3])
    orientation.x, orientation.y, orientation.z, orientation.w = (float(x) for x in pose[3:])
    linear, angular = msg.twist.twist.linear, msg.twist.twist.angular
    linear.x, linear.y, linear.z = BASE_TWIST[:3]
    angular.x, angular.y, angular.z = BASE_TWIST[3:]
    return msg


def solo_core_result(parameters: dict, msg: JointState) -> ControllerResult:
    """What the core computes for Solo12 at `msg` and BASE_POSE / BASE_TWIST."""
    solo = robot('solo12')
    settings = parse_controller_settings(solo, parameters)
    specs = parse_tasks(solo, parameters['task_names'], parameters['tasks'])
    contacts = parse_contacts(solo, parameters['contacts'], parameters['contact_types'])
    controller = PrioritizedController(
        solo,
        build_entries(solo, specs),
        settings.singular_value_threshold,
        settings.effort_limits,
        contacts=contacts,
    )
    state = RobotState(solo)
    index = solo.joint_index(msg.name)
    q = solo.configuration(np.asarray(msg.position)[index], BASE_POSE)
    state.update(q, solo.velocity(np.asarray(msg.velocity)[index], BASE_TWIST))
    return controller.compute(state)


def test_stamp_pairing_ticks_once_with_the_odometry_of_the_same_stamp(local):
    parameters = solo_parameters()
    node, published = local(parameters, clock_s=100.0)
    first = solo_joint_state(100.0, seed=1)
    node._on_joint_state(first)
    node._on_odom(odometry(99.5))
    assert published == []  # neither stamp has both halves
    node._on_odom(odometry(100.0))
    assert len(published) == 1
    result = solo_core_result(parameters, first)
    npt.assert_allclose(published[0], result.torque, rtol=1e-9, atol=1e-9)
    set_clock(node, 100.01)
    node._on_odom(odometry(100.01))  # odometry first, then its joint state
    node._on_joint_state(solo_joint_state(100.01, seed=2))
    assert len(published) == 2
    contacts = values(node_status(node, 'contacts'))
    assert float(contacts['FL_FOOT.normal_force_n']) > 0.0
    assert contacts['constraint_method'] in ('schur', 'block_lu')
    assert float(contacts['base_wrench_residual']) < 1e-6


def test_latest_pairing_needs_fresh_odometry(local):
    parameters = solo_parameters(odom_pairing='latest', joint_state_timeout=0.05)
    node, published = local(parameters, clock_s=100.0)
    node._on_joint_state(solo_joint_state(100.0))
    assert published == []  # no odometry yet
    node._on_odom(odometry(100.0))
    for seconds in (100.01, 100.02):
        set_clock(node, seconds)
        node._on_joint_state(solo_joint_state(seconds))
    assert len(published) == 2
    set_clock(node, 100.1)
    node._on_joint_state(solo_joint_state(100.1))
    assert len(published) == 2  # odometry too old: the watchdog's safe command takes over
    node._on_watchdog()
    npt.assert_array_equal(published[-1], np.zeros(12))
    inputs = node_status(node, 'inputs')
    assert inputs.level == DiagnosticStatus.ERROR and 'odom' in inputs.message
    assert float(values(inputs)['odom_age_s']) == pytest.approx(0.1, abs=1e-9)


def test_bad_odometry_is_rejected_and_counted(local):
    node, published = local(solo_parameters(), clock_s=100.0)
    node._on_joint_state(solo_joint_state(100.0))
    node._on_odom(odometry(100.0, pose=[0.0, 0.0, 0.2, 0.0, 0.0, 0.0, 0.5]))
    node._on_odom(odometry(100.0, pose=[np.nan, 0.0, 0.2, 0.0, 0.0, 0.0, 1.0]))
    node._on_odom(odometry(100.0, frame='map'))
    assert published == []
    inputs = values(node_status(node, 'inputs'))
    assert inputs['rejected.odom.quaternion'] == inputs['rejected.odom.non_finite'] == '1'
    assert inputs['rejected.odom.frame'] == '1'


def test_contacts_warn_when_outside_the_friction_cone_or_pulling(local):
    node, _ = local(solo_parameters(), clock_s=100.0)
    node._on_joint_state(solo_joint_state(100.0))
    node._on_odom(odometry(100.0))
    assert node_status(node, 'contacts').level == DiagnosticStatus.OK
    (changed,) = node.set_parameters([Parameter('friction_coefficient', value=1e-6)])
    assert changed.successful
    node._loop.statistics.start_period(time.monotonic())
    set_clock(node, 100.01)
    node._on_joint_state(solo_joint_state(100.01))
    node._on_odom(odometry(100.01))
    status = node_status(node, 'contacts')
    assert status.level == DiagnosticStatus.WARN
    assert 'outside the friction cone' in status.message
    assert values(status)['friction_coefficient'] == '1e-06'
    # A base target 1 m underground asks for more than free fall: the feet would have to pull.
    sink = [0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 1.0]
    assert node.set_parameters([Parameter('tasks.base.target', value=sink)])[0].successful
    set_clock(node, 100.02)
    node._on_joint_state(solo_joint_state(100.02))
    node._on_odom(odometry(100.02))
    status = node_status(node, 'contacts')
    assert 'pulling' in status.message
    assert 'True' in {v for k, v in values(status).items() if k.endswith('.pulling')}


def test_the_gravity_safe_command_of_a_floating_base_is_balanced_by_the_contacts(local):
    # A timeout that no pause of this test reaches (the watchdog also runs on the wall clock).
    parameters = solo_parameters(stale_command='gravity', joint_state_timeout=600.0)
    node, published = local(parameters, clock_s=100.0)
    node._on_joint_state(solo_joint_state(100.0))
    node._on_odom(odometry(100.0))
    node._on_watchdog()  # never stale here: nothing published
    assert len(published) == 1
    loop = node._loop
    expected = holding_torque(loop.state, loop.controller.contacts)
    npt.assert_allclose(loop.safe_torque(), expected, rtol=1e-12)
    assert not np.allclose(expected, loop.state.gravity[6:])


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
