"""`~/<task>/trajectory` on the `wbc_controller` console script over real DDS.

A Panda controller (hand pose over a joint posture) runs as a subprocess; the probe publishes
one fixed joint state again and again and trajectories on the two tasks' topics, and reads the
commands and /diagnostics. The node's clock is the system clock (no simulated time).
"""

from collections.abc import Callable
import importlib
from pathlib import Path
import re
import time

from builtin_interfaces.msg import Duration
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, Transform, Twist
import numpy as np
import numpy.testing as npt
from panda_example import core_result
import pytest
from rclpy.duration import Duration as RclpyDuration
from rclpy.qos import QoSProfile, ReliabilityPolicy
from robots import robot
from ros_support import NodeProcess, RosProbe
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import (
    JointTrajectory,
    JointTrajectoryPoint,
    MultiDOFJointTrajectory,
    MultiDOFJointTrajectoryPoint,
)
import yaml

from wbc_control.config import parse_controller_settings
from wbc_control.model.example_robots import example_robot_urdf

READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
JOINTS = list(robot('panda').joint_names)
HAND = [0.307, 0.0, 0.59]
DOWN = [1.0, 0.0, 0.0, 0.0]
PARAMETERS = {
    'urdf_path': str(example_robot_urdf('panda')[0]),
    'diagnostics_rate': 20.0,
    'soft_start_time': 0.0,
    'joint_limits': False,
    'joint_state_timeout': 60.0,
    'task_names': ['hand', 'posture'],
    'tasks': {
        'hand': {
            'type': 'frame_pose',
            'frame': 'panda_hand',
            'priority': 0,
            'kp': 100.0,
            'target': [*HAND, *DOWN],
        },
        'posture': {'type': 'joint_posture', 'priority': 1, 'kp': 25.0, 'target': READY.tolist()},
    },
}
NAMESPACE = '/trajectory_input'
RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
# Upper bounds of waits for the node (wall clock; generous for a loaded machine).
START_TIMEOUT_S = 120.0
ANSWER_TIMEOUT_S = 30.0


class Rig:
    """The controller process and the probe's endpoints for it."""

    def __init__(self, probe: RosProbe) -> None:
        self.probe = probe
        # In a namespace of its own: other tests' nodes may share the DDS domain.
        self.process = NodeProcess(
            'wbc_controller',
            PARAMETERS,
            f'{NAMESPACE}/wbc_controller',
            ['-r', f'__ns:={NAMESPACE}'],
        ).__enter__()
        self.commands: list[np.ndarray] = []
        self.inputs: dict[str, str] = {}
        node = probe.node
        node.create_subscription(
            Float64MultiArray,
            f'{NAMESPACE}/effort_controller/commands',
            lambda msg: self.commands.append(np.array(msg.data)),
            100,
        )
        node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 10)
        self.states = probe.publisher(JointState, f'{NAMESPACE}/joint_states')
        prefix = f'{NAMESPACE}/wbc_controller/'
        self.hand = probe.publisher(MultiDOFJointTrajectory, prefix + 'hand/trajectory', RELIABLE)
        self.posture = probe.publisher(JointTrajectory, prefix + 'posture/trajectory', RELIABLE)
        self.hand_target = probe.publisher(PoseStamped, prefix + 'hand/target', RELIABLE)
        self.state = JointState(name=JOINTS, position=READY.tolist(), velocity=[0.0] * 9)
        publishers = (self.states, self.hand, self.posture, self.hand_target)
        up = probe.spin_until(
            lambda: (
                all(p.get_subscription_count() > 0 for p in publishers) and self.tick() is not None
            ),
            START_TIMEOUT_S,
        )
        assert up, f'controller did not come up:\n{self.process.output()}'

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name == 'wbc_controller: inputs':
                self.inputs = {item.key: item.value for item in status.values}

    def tick(self) -> np.ndarray | None:
        """Publish the joint state once; the command that answers it (None: none in 1 s)."""
        count = len(self.commands)
        self.state.header.stamp = self.now().to_msg()
        self.states.publish(self.state)
        if self.probe.spin_until(lambda: len(self.commands) > count, 1.0):
            return self.commands[-1]
        return None

    def tick_until(self, accept: Callable[[np.ndarray], bool], what: str) -> np.ndarray:
        """Tick until a command that `accept`s comes; fails naming `what` after the timeout."""
        deadline, last = time.monotonic() + ANSWER_TIMEOUT_S, None
        while time.monotonic() < deadline:
            command = self.tick()
            if command is not None and accept(command):
                return command
            last = command if command is not None else last
        raise AssertionError(
            f'waited {ANSWER_TIMEOUT_S} s for {what}; last command {last}:\n'
            f'{self.process.output()}'
        )

    def rejected(self, reason: str) -> int:
        """How many trajectories the node reported rejected for `reason`."""
        return int(self.inputs.get(f'rejected.trajectories.{reason}', 0))

    def now(self):
        """The probe's clock (the system clock, as the node's)."""
        return self.probe.node.get_clock().now()


@pytest.fixture(scope='module')
def rig():
    probe = RosProbe('trajectory_input_test')
    rig = Rig(probe)
    yield rig
    rig.process.stop()
    probe.close()


def duration(seconds: float) -> Duration:
    return Duration(sec=int(seconds), nanosec=int(round((seconds % 1.0) * 1e9)))


def hand_trajectory(points, stamp=None, names=('hand',), frame_id='') -> MultiDOFJointTrajectory:
    """points: (time_from_start, xyz, xyzw, twist or None)."""
    msg = MultiDOFJointTrajectory()
    msg.header.frame_id = frame_id
    if stamp is not None:
        msg.header.stamp = stamp.to_msg()
    msg.joint_names = list(names)
    for seconds, xyz, xyzw, twist in points:
        transform = Transform()
        transform.translation.x, transform.translation.y, transform.translation.z = xyz
        q = transform.rotation
        q.x, q.y, q.z, q.w = xyzw
        point = MultiDOFJointTrajectoryPoint(
            transforms=[transform], time_from_start=duration(seconds)
        )
        if twist is not None:
            velocity = Twist()
            velocity.linear.x, velocity.linear.y, velocity.linear.z = twist[:3]
            velocity.angular.x, velocity.angular.y, velocity.angular.z = twist[3:]
            point.velocities = [velocity]
        msg.points.append(point)
    return msg


def pose_target(xyz) -> PoseStamped:
    msg = PoseStamped()
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = xyz
    q = msg.pose.orientation
    q.x, q.y, q.z, q.w = DOWN
    return msg


def core_command(hand_xyz, posture=READY) -> np.ndarray:
    """The torque the core computes at the probe's state for these set-points."""
    panda = robot('panda')
    parameters = {
        **PARAMETERS,
        'tasks': {name: dict(t) for name, t in PARAMETERS['tasks'].items()},
    }
    parameters['tasks']['hand']['target'] = [*hand_xyz, *DOWN]
    parameters['tasks']['posture']['target'] = list(posture)
    command_index = parse_controller_settings(panda, parameters).command_index
    return core_result(parameters, np.array(READY), np.zeros(9)).torque[command_index]


def near(expected: np.ndarray) -> Callable[[np.ndarray], bool]:
    return lambda command: np.allclose(command, expected, rtol=1e-9, atol=1e-9)


def hold(rig: Rig, xyz) -> np.ndarray:
    """Set the hand's set-point (which ends any trajectory) and wait for its torque."""
    expected = core_command(xyz)
    rig.hand_target.publish(pose_target(xyz))
    return rig.tick_until(near(expected), f'the torque of the hand set-point {xyz}')


def test_a_multi_dof_trajectory_is_followed_and_its_last_point_held(rig):
    start = hold(rig, HAND)
    goal = [HAND[0], HAND[1] + 0.1, HAND[2]]
    goal_command = core_command(goal)
    # Zero stamp: it starts on receipt, from the reference in force, and lasts 1.5 s.
    rig.hand.publish(hand_trajectory([(1.5, goal, DOWN, None)]))
    seen = [rig.tick_until(lambda c: not near(start)(c), 'the hand to start moving')]
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    while not near(goal_command)(seen[-1]):
        assert time.monotonic() < deadline, 'the trajectory never reached its last point'
        command = rig.tick()
        if command is not None:
            seen.append(command)
    distinct = {tuple(np.round(c, 6)) for c in seen}
    assert len(distinct) > 5, 'the command did not change as the reference moved'
    npt.assert_allclose(rig.tick_until(lambda c: True, 'a command'), goal_command, atol=1e-9)


def test_a_joint_trajectory_is_followed_to_its_last_point(rig):
    before = hold(rig, HAND)
    goal = READY.copy()
    goal[0] = 0.3
    msg = JointTrajectory(joint_names=list(reversed(JOINTS)))
    point = JointTrajectoryPoint(positions=list(goal[::-1]), time_from_start=duration(0.8))
    msg.points = [point]
    rig.posture.publish(msg)
    rig.tick_until(lambda c: not near(before)(c), 'the posture to start moving')
    rig.tick_until(near(core_command(HAND, goal)), 'the posture at its last point')
    back = JointTrajectory(joint_names=JOINTS)
    back.points = [JointTrajectoryPoint(positions=list(READY), time_from_start=duration(0.0))]
    rig.posture.publish(back)
    rig.tick_until(near(before), 'the posture back at READY')


BAD = {
    'non_finite': hand_trajectory([(0.5, [np.nan, 0.0, 0.5], DOWN, None)]),
    'size': hand_trajectory([(0.5, HAND, DOWN, None)]),
    'quaternion': hand_trajectory([(0.5, HAND, [0.0, 0.0, 0.0, 0.5], None)]),
    'times': hand_trajectory([(0.5, HAND, DOWN, None), (0.5, HAND, DOWN, None)]),
    'names': hand_trajectory([(0.5, HAND, DOWN, None)], names=('elbow',)),
    'frame': hand_trajectory([(0.5, HAND, DOWN, None)], frame_id='panda_hand'),
}
BAD['size'].points[0].velocities = [Twist(), Twist()]


@pytest.mark.parametrize('reason', list(BAD))
def test_a_bad_trajectory_is_rejected_counted_logged_and_the_reference_kept(rig, reason):
    before = hold(rig, HAND)
    counted = rig.rejected(reason)
    rig.hand.publish(BAD[reason])
    assert rig.probe.spin_until(
        lambda: rig.tick() is not None and rig.rejected(reason) > counted, ANSWER_TIMEOUT_S
    ), f'no rejected.trajectories.{reason} counted: {rig.inputs}\n{rig.process.output()}'
    npt.assert_allclose(rig.tick_until(lambda c: True, 'a command'), before, atol=1e-9)
    # The log is throttled (one line a second per reason): publish until it shows.
    line = f'~/hand/trajectory rejected: {reason}'

    def logged() -> bool:
        rig.hand.publish(BAD[reason])
        return rig.probe.spin_until(lambda: line in rig.process.output(), 0.5)

    assert rig.probe.spin_until(logged, ANSWER_TIMEOUT_S), rig.process.output()
    npt.assert_allclose(rig.tick_until(lambda c: True, 'a command'), before, atol=1e-9)


def test_a_replacement_takes_over_from_its_start_time(rig):
    hold(rig, HAND)
    far = [HAND[0], HAND[1] - 0.1, HAND[2]]
    close = [HAND[0], HAND[1], HAND[2] - 0.05]
    # A slow move that would take 100 s, replaced from 0.3 s on by a short one to `close`.
    rig.hand.publish(hand_trajectory([(100.0, far, DOWN, None)]))
    start = rig.now() + RclpyDuration(nanoseconds=300_000_000)
    rig.hand.publish(hand_trajectory([(0.5, close, DOWN, None)], stamp=start))
    rig.tick_until(near(core_command(close)), 'the replacement at its last point')


# The `ros2 topic pub` examples of docs/controller.md -------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / 'docs' / 'controller.md'
PUB_LINE = re.compile(r'^ros2 topic pub --once (\S+) (trajectory_msgs/msg/\w+) "(.*)"$', re.M)


def message_class(name: str):
    """The class of a ROS type name such as 'geometry_msgs/Transform'."""
    package, _, kind = name.replace('/msg/', '/').partition('/')
    return getattr(importlib.import_module(f'{package}.msg'), kind)


def fill(message, values: dict):
    """Set `values` (parsed YAML) field by field, as `ros2 topic pub` does; strict on names."""
    types = message.get_fields_and_field_types()
    for key, value in values.items():
        assert key in types, f'{type(message).__name__} has no field {key!r}'
        if isinstance(value, dict):
            fill(getattr(message, key), value)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            element = message_class(types[key].removeprefix('sequence<').removesuffix('>'))
            setattr(message, key, [fill(element(), item) for item in value])
        else:
            setattr(message, key, value)
    return message


def documented_examples() -> dict[str, object]:
    """{topic: message} of the trajectory examples in docs/controller.md."""
    examples = {}
    for topic, kind, text in PUB_LINE.findall(DOCS.read_text()):
        examples[topic] = fill(message_class(kind)(), yaml.safe_load(text))
    return examples


def test_the_documented_examples_are_followed_by_a_running_controller(rig):
    examples = documented_examples()
    assert sorted(examples) == [
        '/wbc_controller/hand/trajectory',
        '/wbc_controller/posture/trajectory',
    ]
    hand, posture = (examples[f'/wbc_controller/{n}/trajectory'] for n in ('hand', 'posture'))
    assert isinstance(hand, MultiDOFJointTrajectory) and isinstance(posture, JointTrajectory)
    hold(rig, HAND)
    counted = {key: value for key, value in rig.inputs.items() if 'trajectories' in key}
    rig.hand.publish(hand)
    end = hand.points[-1].transforms[0].translation
    goal = [end.x, end.y, end.z]
    rig.tick_until(near(core_command(goal)), 'the documented hand trajectory to its end')
    rig.posture.publish(posture)
    positions = np.array(posture.points[-1].positions)
    rig.tick_until(near(core_command(goal, positions)), 'the documented posture trajectory')
    assert {k: v for k, v in rig.inputs.items() if 'trajectories' in k} == counted
    back = JointTrajectory(joint_names=JOINTS)
    back.points = [JointTrajectoryPoint(positions=list(READY), time_from_start=duration(0.0))]
    rig.posture.publish(back)
    hold(rig, HAND)
