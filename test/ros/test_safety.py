"""Safety of the real `wbc_controller` over DDS: time faults, implausible states, far targets.

Also the soft start, and a simulated clock that stops or jumps back.

Two processes, started together: the shipped Panda configuration (soft start, torque rate limit,
hand error clipping as shipped) on real time, and a posture controller on simulated time whose
/clock the test publishes.
"""

from collections.abc import Callable
from pathlib import Path
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
import numpy as np
import pinocchio as pin
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy
from robots import robot
from ros_support import NodeProcess, RosProbe
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from wbc_control.model.example_robots import example_robot_urdf

CONFIG = Path(__file__).resolve().parents[2] / 'config' / 'panda_controller.yaml'
URDF = str(example_robot_urdf('panda')[0])
READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
JOINTS = list(robot('panda').joint_names)
EFFORT = np.array([87.0] * 4 + [12.0] * 3)
# Upper bound of a wait for a running node (wall clock; generous for a loaded machine).
WAIT_S = 30.0
# Commands in a row that must agree before the torque counts as settled (ramp and rate limit over).
SETTLED_COUNT = 5
# Safe commands in a row (the watchdog's, one per check period) that make a stale period.
STALE_COUNT = 3
POSTURE = {
    'task_names': ['posture'],
    'tasks': {'posture': {'type': 'joint_posture', 'kp': 25.0, 'target': READY.tolist()}},
}


def joint_state(stamp_s: float = 0.0, positions=READY + 0.05, velocities=None) -> JointState:
    msg = JointState()
    msg.header.stamp.sec = int(stamp_s)
    msg.header.stamp.nanosec = round((stamp_s % 1.0) * 1e9)
    msg.name = JOINTS
    msg.position = [float(x) for x in positions]
    msg.velocity = [float(x) for x in (np.zeros(9) if velocities is None else velocities)]
    return msg


class Controller:
    """A wbc_controller process in a namespace and the probe's endpoints for it."""

    def __init__(
        self,
        probe: RosProbe,
        namespace: str,
        parameters: dict,
        args: list[str],
        node: str = 'wbc_controller',
    ):
        self.probe, self.node, self.name = probe, node, f'{namespace}/{node}'
        ros_args = ['-r', f'__ns:={namespace}', '-r', f'__node:={node}', *args]
        self.process = NodeProcess('wbc_controller', parameters, self.name, ros_args).__enter__()
        self.commands: list[tuple[float, np.ndarray]] = []
        probe.node.create_subscription(
            Float64MultiArray,
            f'{namespace}/effort_controller/commands',
            lambda msg: self.commands.append((time.monotonic(), np.array(msg.data))),
            100,
        )
        self.states = probe.publisher(JointState, f'{namespace}/joint_states')
        self.statuses: dict[str, dict[str, str]] = {}
        probe.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_status, 50)

    def _on_status(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            node, _, check = status.name.partition(': ')
            # Both processes run the Panda: their statuses differ by node name only.
            if node == self.node and status.hardware_id == 'panda':
                values = {item.key: item.value for item in status.values}
                values['message'] = status.message
                self.statuses[check] = values

    def wait_ready(self) -> 'Controller':
        """Block until the node subscribes and publishes."""
        ready = self.probe.spin_until(
            lambda: self.states.get_subscription_count() > 0 and self.commands, timeout=120.0
        )
        assert ready, f'{self.name} did not come up:\n{self.process.output()}'
        return self

    def go_stale(self) -> None:
        """Stop the states until the last STALE_COUNT commands are all the safe command.

        One safe command is not enough: on a loaded machine a state still queued in the node
        when its watchdog first fired ticks right after it (the executor takes timers first),
        and the stale period a test wants begins only after that tick.
        """
        self.commands.clear()

        def stale() -> bool:
            last = self.commands[-STALE_COUNT:]
            return len(last) == STALE_COUNT and not any(task_torque(c) for _, c in last)

        assert self.probe.spin_until(stale, WAIT_S), (
            f'no safe command after the joint states stopped:\n{self.process.output()}'
        )

    def answer(
        self, make: Callable[[], JointState], accept: Callable[[np.ndarray], bool], timeout=WAIT_S
    ) -> tuple[float, np.ndarray]:
        """Publish `make()` every 50 ms until an accepted command arrives: (wall time, it)."""
        self.commands.clear()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.states.publish(make())
            if self.probe.spin_until(lambda: any(accept(c) for _, c in self.commands), 0.05):
                return next((t, c) for t, c in self.commands if accept(c))
        raise AssertionError(f'no accepted command in {timeout} s:\n{self.process.output()}')

    def settle(self, make: Callable[[], JointState] = joint_state) -> np.ndarray:
        """Publish `make()` every 20 ms until the last SETTLED_COUNT commands agree; that torque.

        The commands since the call stay in `commands` (the soft start and rate limit on the
        way there).
        """
        self.commands.clear()

        def settled() -> bool:
            last = [command for _, command in self.commands[-SETTLED_COUNT:]]
            return len(last) == SETTLED_COUNT and all(
                task_torque(c) and np.allclose(c, last[-1], rtol=0.0, atol=1e-9) for c in last
            )

        deadline = time.monotonic() + WAIT_S
        while not settled():
            assert time.monotonic() < deadline, (
                f'the command did not settle within {WAIT_S} s:\n{self.process.output()}'
            )
            self.states.publish(make())
            self.probe.spin_until(settled, 0.02)
        return self.commands[-1][1]


def task_torque(command: np.ndarray) -> bool:
    return np.abs(command).max() > 1e-6


def blend(command: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[float, float]:
    """(α, distance / |end - start|) of `command` from the segment start + α (end - start)."""
    span = end - start
    alpha = float((command - start) @ span / (span @ span))
    distance = np.abs(command - (start + alpha * span)).max() / np.abs(span).max()
    return alpha, float(distance)


@pytest.fixture(scope='module')
def controllers(probe):
    started = {
        'panda': Controller(
            probe, '/shipped', {'urdf_path': URDF}, ['--params-file', str(CONFIG)]
        ),
        'sim': Controller(
            probe,
            '/simtime',
            {
                'urdf_path': URDF,
                'use_sim_time': True,
                'soft_start_time': 0.0,
                'joint_state_timeout': 0.1,
                **POSTURE,
            },
            # A private clock: a simulator of another test on this DDS domain publishes /clock.
            ['-r', '/clock:=/simtime/clock'],
            node='simtime_controller',
        ),
    }
    yield started
    for controller in started.values():
        controller.process.stop()


def test_soft_start_then_a_future_stamp_and_implausible_states_lock_nothing_out(controllers):
    panda = controllers['panda'].wait_ready()
    # Soft start: from the first state on, the command ramps from the holding torque g(q) to
    # the task torque T: on the way, commands lie on the segment between them. (The very first
    # commands rise from the zero safe command to g(q) at the 1000 N m/s rate limit.) A state
    # stream that pauses past joint_state_timeout (0.1 s) starts a new ramp, so a ramp this
    # process slept through is simply tried again.
    model = robot('panda').model
    gravity = pin.computeGeneralizedGravity(model, model.createData(), READY + 0.05)[:7]
    deadline = time.monotonic() + WAIT_S
    while True:
        task = panda.settle()
        ramp = [blend(c, gravity, task) for _, c in panda.commands if task_torque(c)]
        if any(0.05 < alpha < 0.95 and off < 1e-3 for alpha, off in ramp):
            break
        assert time.monotonic() < deadline, f'no command between g(q) and the task torque: {ramp}'
        panda.probe.spin_for(0.3)  # longer than joint_state_timeout: the next state ramps again
    assert all(alpha < 1.0 + 1e-6 for alpha, _ in ramp), ramp  # no overshoot past the task torque

    # One state a day in the future is rejected and does not lock control out.
    panda.states.publish(joint_state(time.time() + 86400.0))
    panda.probe.spin_until(lambda: 'future' in str(panda.statuses.get('inputs', {})), WAIT_S)
    assert int(panda.statuses['inputs'].get('rejected.joint_states.future', 0)) >= 1
    panda.answer(lambda: joint_state(time.time()), task_torque)

    # 1e150 rad/s and q1 = 50 rad (limit 2.9) never reach the output, and are counted.
    fast = joint_state(velocities=np.full(9, 1e150))
    far = joint_state(positions=np.r_[50.0, READY[1:]])
    for msg, reason in ((fast, 'velocity_limit'), (far, 'position_limit')):
        key = f'rejected.joint_states.{reason}'

        def counted(key=key) -> bool:
            return key in panda.statuses.get('inputs', {})

        deadline = time.monotonic() + WAIT_S
        while not counted() and time.monotonic() < deadline:
            panda.states.publish(msg)  # the node keeps only the newest state: one at a time
            panda.probe.spin_until(counted, 0.6)
        assert counted(), panda.statuses.get('inputs')
    assert all(np.abs(c).max() < 1e3 for _, c in panda.commands)
    assert panda.process.alive()


def test_a_target_10_m_away_is_clipped_not_saturated(controllers, probe):
    panda = controllers['panda'].wait_ready()
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
    target = probe.publisher(PoseStamped, '/shipped/wbc_controller/hand/target', qos)
    assert probe.spin_until(lambda: target.get_subscription_count() > 0, WAIT_S)
    msg = PoseStamped()
    msg.pose.position.x, msg.pose.position.z = 10.3, 0.59
    msg.pose.orientation.x, msg.pose.orientation.w = 1.0, 0.0
    target.publish(msg)

    def clipping() -> bool:
        return panda.statuses.get('tasks', {}).get('clipping_tasks') == 'hand'

    # The node has the far target once it reports the hand clipped (it ticks on states).
    panda.answer(joint_state, lambda _: clipping())
    command = panda.settle()  # past the soft start and the rate limit
    assert (np.abs(command) < 0.9 * EFFORT).all(), command
    assert probe.spin_until(clipping, WAIT_S), panda.statuses.get('tasks')
    assert panda.statuses['torques']['saturated_joints'] == ''


def test_sim_clock_that_stops_or_jumps_back_still_gets_safe_commands_and_resumes(controllers):
    sim = controllers['sim'].wait_ready()
    clock = sim.probe.publisher(Clock, '/simtime/clock')
    assert sim.probe.spin_until(lambda: clock.get_subscription_count() > 0, WAIT_S)
    now = Clock()

    def at(seconds: float) -> None:
        now.clock.sec, now.clock.nanosec = int(seconds), round((seconds % 1.0) * 1e9)
        clock.publish(now)
        sim.probe.spin_for(0.05)

    def state_at(seconds: float) -> JointState:
        """A state stamped `seconds`, after /clock again (the node reads it best effort)."""
        clock.publish(now)
        return joint_state(seconds)

    at(100.0)
    sim.answer(lambda: state_at(100.0), task_torque)
    # The clock stops and the states stop: the wall-clock watchdog sends the zero command.
    sim.go_stale()
    # The simulator restarts: its clock and its stamps start again near zero.
    at(0.5)
    sim.commands.clear()
    assert sim.probe.spin_until(
        lambda: any(not task_torque(c) for _, c in sim.commands), WAIT_S
    ), sim.process.output()
    # Control resumes on the restarted stamps (answer fails after WAIT_S if locked out).
    sim.answer(lambda: state_at(0.5), task_torque)
    assert 'jumped' in sim.process.output()


def test_a_joint_past_its_limit_wall_is_held_and_reported(controllers):
    panda = controllers['panda'].wait_ready()
    # panda_joint4's upper limit is -0.0698 rad; the wall stands 0.05 rad inside it.
    beyond = np.r_[READY[:3], -0.09, READY[4:]]
    panda.answer(lambda: joint_state(positions=beyond), task_torque)

    def reported() -> bool:
        return 'panda_joint4' in panda.statuses.get('torques', {}).get('joints_at_limit', '')

    deadline = time.monotonic() + WAIT_S
    while not reported() and time.monotonic() < deadline:
        panda.states.publish(joint_state(positions=beyond))
        panda.probe.spin_until(reported, 0.05)
    assert reported(), panda.statuses.get('torques')


def test_a_restart_far_from_the_posture_homes_first_and_says_so(controllers):
    """The shipped homing_tolerance (0.5 rad) through the node: /diagnostics shows homing.

    The joint states stop until the watchdog sends the safe command (a stale period), resume
    with the arm 0.6-1.0 rad from its posture at four joints: homing; back at the posture:
    homing over.
    """
    panda = controllers['panda'].wait_ready()
    panda.answer(joint_state, task_torque)
    panda.go_stale()
    far = READY + np.array([0.6, -0.7, 0.0, 0.8, -1.0, 0.0, 0.0, 0.0, 0.0])

    def homing(expected: str) -> Callable[[], bool]:
        return lambda: panda.statuses.get('tasks', {}).get('homing') == expected

    for positions, expected in ((far, 'True'), (READY, 'False')):
        deadline = time.monotonic() + WAIT_S
        while not homing(expected)() and time.monotonic() < deadline:
            panda.states.publish(joint_state(positions=positions))
            panda.probe.spin_until(homing(expected), 0.05)
        assert homing(expected)(), f'{panda.statuses.get("tasks")}\n{panda.process.output()}'
    assert 'homing' not in panda.statuses['tasks']['message']
