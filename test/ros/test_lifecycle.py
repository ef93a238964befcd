"""`wbc_controller` as a managed node over real DDS, driven by the lifecycle_msgs services.

Each node runs with `autostart: false` on simulated time whose /clock the test publishes (a
private topic). The test steps the clock by DT and publishes one joint state stamped there; with
`future_stamp_tolerance` tiny, a state ticks only once its /clock has arrived, so every command
is computed at a known node time and the rate limit's dt between two commands is known exactly.
Commands reach the probe in the order they were published (one reliable writer), so a command
that answers a state published after an inactive period proves that nothing was published
during it.
"""

from pathlib import Path

from controller_support import JOINTS, POSTURE, READY, URDF, joint_state, stamp_of
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
import numpy as np
import numpy.testing as npt
import pinocchio as pin
import pytest
from rcl_interfaces.srv import SetParameters
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from robots import robot
from ros_support import NodeProcess, RosProbe
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

#: Simulated time between two states (s).
DT = 0.01
SOFT_START_S = 0.2
SOFT_STOP_S = 0.3
#: Torque rate limits (N m/s), one per joint, all different; the first and third bind.
RATE = np.array([8.0, 30.0, 10.0, 25.0, 20.0, 15.0, 12.0, 2.0, 1.5])
#: Where the arm is held, off READY by a different amount on every joint (rad).
OFFSET = np.array([0.12, -0.1, 0.08, -0.07, 0.11, -0.09, 0.05, 0.0, 0.0])
MANAGED = {
    'urdf_path': URDF,
    'autostart': False,
    'use_sim_time': True,
    'joint_limits': False,
    'soft_start_time': SOFT_START_S,
    'soft_stop_time': SOFT_STOP_S,
    'stale_command': 'gravity',
    'torque_rate_limit': RATE.tolist(),
    # No watchdog while the test steps (its wall-clock limit is this too, under sim time).
    'joint_state_timeout': 30.0,
    # A state stamped ahead of the node's clock waits for its /clock: exact tick times.
    'future_stamp_tolerance': 1e-6,
    'diagnostics_rate': 10.0,
    **POSTURE,
}
# Upper bounds of waits (wall clock, for a loaded machine): the module starts 5 processes.
START_TIMEOUT_S = 300.0
ANSWER_TIMEOUT_S = 30.0
SERVICE_TIMEOUT_S = 30.0
DESCRIPTION_TOPIC = '/managed_topic/robot_description'
#: States to wait for a command that must come (a soft start or stop is 20 to 30 of them).
MAX_STEPS = 400


def state_at(t: float) -> tuple[np.ndarray, np.ndarray]:
    """An arm moving slowly about READY + OFFSET, every joint at its own phase."""
    phase = np.arange(9) * 0.7
    positions = READY + OFFSET + 0.03 * np.sin(2.0 * t + phase)
    positions[7:] = 0.02
    velocities = 0.06 * np.cos(2.0 * t + phase)
    velocities[7:] = 0.0
    return positions, velocities


def gravity_at(t: float) -> np.ndarray:
    """g(q) at the state of time `t`, by Pinocchio: the gravity safe command."""
    model = robot('panda').model
    return pin.computeGeneralizedGravity(model, model.createData(), state_at(t)[0])


def task_torque_at(t: float) -> np.ndarray:
    """τ = M (kp e − kd v) + h of the posture task (kp 25, kd 10) at the state of time `t`."""
    model = robot('panda').model
    data = model.createData()
    positions, velocities = state_at(t)
    mass = pin.crba(model, data, positions)
    mass = np.triu(mass) + np.triu(mass, 1).T
    h = pin.rnea(model, data, positions, velocities, np.zeros(9))
    return mass @ (25.0 * (READY - positions) - 10.0 * velocities) + h


def rate_ratios(sent: list[tuple[float, np.ndarray]]) -> np.ndarray:
    """|Δτ| / (rate dt) of consecutive (node time, command) pairs: <= 1 within the limit."""
    times = np.array([t for t, _ in sent])
    commands = np.array([c for _, c in sent])
    return np.abs(np.diff(commands, axis=0)) / (RATE * np.diff(times)[:, None])


class Managed:
    """A wbc_controller process in `namespace` with autostart false, and the probe's endpoints."""

    def __init__(
        self,
        probe: RosProbe,
        namespace: str,
        parameters: dict,
        environment: dict[str, str] | None = None,
    ) -> None:
        self.probe, self.name = probe, f'{namespace}/wbc_controller'
        args = ['-r', f'__ns:={namespace}', '-r', f'/clock:={namespace}/clock']
        self.process = NodeProcess(
            'wbc_controller', parameters, self.name, args, environment=environment
        ).__enter__()
        self.command_topic = f'{namespace}/effort_controller/commands'
        self.commands: list[np.ndarray] = []
        probe.node.create_subscription(
            Float64MultiArray,
            self.command_topic,
            lambda msg: self.commands.append(np.array(msg.data)),
            1000,
        )
        self.states = probe.publisher(JointState, f'{namespace}/joint_states')
        self.clock = probe.publisher(Clock, f'{namespace}/clock')
        self.change_client = probe.node.create_client(ChangeState, f'{self.name}/change_state')
        self.get_client = probe.node.create_client(GetState, f'{self.name}/get_state')
        self.set_client = probe.node.create_client(SetParameters, f'{self.name}/set_parameters')
        self.statuses: dict[str, DiagnosticStatus] = {}
        probe.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_status, 50)
        self.now_s = 100.0

    def _on_status(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            node, _, check = status.name.partition(': ')
            if node == 'wbc_controller' and status.hardware_id == 'panda':
                self.statuses[check] = status

    def wait_up(self) -> 'Managed':
        """Until the lifecycle services answer and the node listens to its /clock."""
        up = self.probe.spin_until(
            lambda: (
                self.change_client.service_is_ready()
                and self.get_client.service_is_ready()
                and self.clock.get_subscription_count() > 0
            ),
            START_TIMEOUT_S,
        )
        assert up, f'{self.name} did not come up:\n{self.process.output()}'
        return self

    def state(self) -> str:
        """The node's lifecycle state, from GetState."""
        response = self.probe.request(
            lambda: self.get_client.call_async(GetState.Request()), SERVICE_TIMEOUT_S
        )
        assert response is not None, f'no GetState answer:\n{self.process.output()}'
        return response.current_state.label

    def transition(self, label: str) -> bool:
        """ChangeState by label ('configure', 'activate', ...); whether it succeeded."""
        request = ChangeState.Request(transition=Transition(label=label))
        future = self.change_client.call_async(request)
        answered = self.probe.spin_until(future.done, SERVICE_TIMEOUT_S)
        assert answered, f'no ChangeState answer to {label}:\n{self.process.output()}'
        return future.result().success

    def set_parameter(self, name: str, value: object):
        """SetParameters on the node: the result."""
        request = SetParameters.Request(
            parameters=[Parameter(name, value=value).to_parameter_msg()]
        )
        response = self.probe.request(
            lambda: self.set_client.call_async(request), SERVICE_TIMEOUT_S
        )
        assert response is not None, 'no SetParameters answer'
        return response.results[0]

    def step(self, answered: bool = True) -> np.ndarray | None:
        """Advance the clock by DT, publish the state there; with `answered`, its command.

        The state goes out again (after its /clock) every 0.2 s until the command comes: the
        node rejects a state whose /clock it has not heard yet, and answers a stamp once. A
        state that must go unanswered is unstamped (stamp 0), which the stamp rules always
        admit: only the node's being inactive can leave it unanswered.
        """
        self.now_s = round(self.now_s + DT, 6)
        stamp = stamp_of(self.now_s)
        message = joint_state(JOINTS, *state_at(self.now_s), stamp if answered else (0, 0))
        clock = Clock()
        clock.clock.sec, clock.clock.nanosec = stamp
        count = len(self.commands)
        for _ in range(int(ANSWER_TIMEOUT_S / 0.2)):
            self.clock.publish(clock)
            self.states.publish(message)
            if not answered:
                return None
            if self.probe.spin_until(lambda: len(self.commands) > count, 0.2):
                assert len(self.commands) == count + 1, 'two commands answered one state'
                return self.commands[-1]
        raise AssertionError(f'no command for the state at {self.now_s}:\n{self.process.output()}')

    def run_until(self, done, limit: int = MAX_STEPS) -> list[tuple[float, np.ndarray]]:
        """Step until `done(time, command)`; every (node time, command) on the way."""
        sent = []
        for _ in range(limit):
            command = self.step()
            sent.append((self.now_s, command))
            if done(self.now_s, command):
                return sent
        raise AssertionError(f'not done after {limit} states; last {sent[-1]}')


def settled_on_task(t: float, command: np.ndarray) -> bool:
    return np.allclose(command, task_torque_at(t), rtol=0.0, atol=1e-9)


def at_safe_command(t: float, command: np.ndarray) -> bool:
    return np.allclose(command, gravity_at(t), rtol=0.0, atol=1e-9)


@pytest.fixture(scope='module')
def nodes(probe):
    """Every process of this module, started together so that their start-ups overlap."""
    started = {
        'activate': Managed(probe, '/managed_activate', MANAGED),
        'deactivate': Managed(probe, '/managed_deactivate', MANAGED),
        # Entities created and destroyed while spinning, on both executors.
        'cleanup-events': Managed(
            probe, '/managed_cleanup_events', MANAGED, {'WBC_EXECUTOR': 'events'}
        ),
        'cleanup-single': Managed(
            probe, '/managed_cleanup_single', MANAGED, {'WBC_EXECUTOR': 'single'}
        ),
        'refused': Managed(probe, '/managed_refused', {**MANAGED, 'soft_stop_time': -0.2}),
        'description-topic': Managed(
            probe,
            '/managed_topic',
            {**MANAGED, 'urdf_path': '', 'robot_description_topic': DESCRIPTION_TOPIC},
        ),
    }
    yield started
    for node in started.values():
        node.process.stop()


def test_unconfigured_and_inactive_send_nothing_and_activation_ramps_within_the_rate_limit(
    nodes, probe
):
    node = nodes['activate'].wait_up()
    assert node.state() == 'unconfigured'
    # Nothing exists yet: no command publisher, no joint state subscriber, no parameters.
    assert probe.node.count_publishers(node.command_topic) == 0
    assert node.states.get_subscription_count() == 0
    refused = node.set_parameter('stale_command', 'zero')
    assert not refused.successful and 'unconfigured' in refused.reason
    for _ in range(5):
        node.step(answered=False)

    assert node.transition('configure') and node.state() == 'inactive'
    assert probe.spin_until(lambda: probe.node.count_publishers(node.command_topic) == 1, 30.0)
    assert probe.spin_until(lambda: node.states.get_subscription_count() == 1, 30.0)
    for _ in range(5):
        node.step(answered=False)

    assert node.transition('activate') and node.state() == 'active'
    before = len(node.commands)
    sent = node.run_until(settled_on_task)
    # The first command ever answers the first state after the activation: none came before.
    assert before == 0 and len(node.commands) == len(sent)
    npt.assert_allclose(sent[0][1], gravity_at(sent[0][0]), atol=1e-9)  # soft start: α = 0
    ratios = rate_ratios(sent)
    assert ratios.max() <= 1.0 + 1e-9, ratios.max(axis=0)
    assert np.isclose(ratios, 1.0).any()  # the rate limit held the ramp back: it was tested
    assert sent[-1][0] - sent[0][0] >= SOFT_START_S - 1e-9


def test_deactivate_ramps_to_the_safe_command_then_silence_and_reactivation_works(nodes, probe):
    node = nodes['deactivate'].wait_up()
    assert node.transition('configure') and node.transition('activate')
    before = node.run_until(settled_on_task)
    assert node.transition('deactivate') and node.state() == 'inactive'
    stop = node.run_until(at_safe_command)
    ratios = rate_ratios(before[-1:] + stop)
    assert ratios.max() <= 1.0 + 1e-9, ratios.max(axis=0)
    # The ramp lasts soft_stop_time at least: only its last command is the safe command.
    assert stop[-1][0] - stop[0][0] >= SOFT_STOP_S - 1e-9
    assert not any(at_safe_command(t, c) for t, c in stop[:-1])

    # Silence: states go unanswered; the next command answers a state sent after activation.
    count = len(node.commands)
    for _ in range(10):
        node.step(answered=False)
    assert node.transition('activate') and node.state() == 'active'
    again = node.run_until(settled_on_task)
    assert len(node.commands) == count + len(again)
    npt.assert_allclose(again[0][1], gravity_at(again[0][0]), atol=1e-9)  # soft start again
    assert rate_ratios(again).max() <= 1.0 + 1e-9


@pytest.mark.parametrize('key', ['cleanup-events', 'cleanup-single'])
def test_cleanup_then_configure_again_and_shutdown_sends_the_safe_command(nodes, probe, key):
    node = nodes[key].wait_up()
    assert node.transition('configure') and node.transition('activate')
    node.run_until(settled_on_task)
    assert node.transition('deactivate')
    node.run_until(at_safe_command)
    assert probe.spin_until(
        lambda: (
            'inputs' in node.statuses and node.statuses['inputs'].message.startswith('inactive')
        ),
        30.0,
    ), node.statuses
    assert node.statuses['inputs'].level == DiagnosticStatus.OK

    assert node.transition('cleanup') and node.state() == 'unconfigured'
    assert probe.spin_until(lambda: probe.node.count_publishers(node.command_topic) == 0, 30.0)
    assert probe.spin_until(lambda: node.states.get_subscription_count() == 0, 30.0)
    assert node.transition('configure'), node.process.output()
    assert node.transition('activate')
    node.run_until(settled_on_task)

    # Shutdown from active: the safe command at the last state, then the node is finalized.
    count = len(node.commands)
    assert node.transition('shutdown')
    assert probe.spin_until(lambda: len(node.commands) == count + 1, 30.0)
    npt.assert_allclose(node.commands[-1], gravity_at(node.now_s), atol=1e-9)
    assert node.state() == 'finalized'
    assert node.process.alive() and node.process.stop() == 0


def test_an_invalid_parameter_is_refused_at_configure_naming_it(nodes):
    node = nodes['refused'].wait_up()
    for _ in range(2):  # refused again: the node stays up and unconfigured
        assert not node.transition('configure')
        assert node.state() == 'unconfigured'
    output = node.process.output()
    assert output.count('configure failed: soft_stop_time') == 2, output
    assert 'Traceback' not in output
    assert node.process.alive()


def test_configure_reads_the_urdf_from_robot_description_topic(nodes, probe):
    """Configure, a service callback, waits for the URDF without leaving its executor."""
    node = nodes['description-topic'].wait_up()
    latched = QoSProfile(
        depth=1,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )
    publisher = probe.publisher(String, DESCRIPTION_TOPIC, latched)
    publisher.publish(String(data=Path(URDF).read_text()))
    assert node.transition('configure'), node.process.output()
    assert node.transition('activate')
    node.run_until(settled_on_task)  # the node still spins: states tick, commands go out
