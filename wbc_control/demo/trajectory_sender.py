"""The demo's circle as one `MultiDOFJointTrajectory`, sent once the controller listens."""

from collections.abc import Callable
import time

from builtin_interfaces.msg import Duration
from builtin_interfaces.msg import Time as TimeMessage
from geometry_msgs.msg import Transform, Twist
import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from trajectory_msgs.msg import MultiDOFJointTrajectory, MultiDOFJointTrajectoryPoint

#: Spacing of a trajectory's points (s) and the QoS of its topic.
TRAJECTORY_STEP_S = 0.02
TRAJECTORY_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
#: Least copies of the trajectory sent, and their spacing (wall-clock s): see TrajectorySender.
TRAJECTORY_COPIES, TRAJECTORY_RESEND_S = 5, 0.1
#: The trajectory's header stamp: 1 ns, the simulation's start (a zero stamp would mean "start
#: on receipt").
START_STAMP_S = 1e-9

#: Position, velocity and acceleration (each 3-vector) of the motion at a sim time (s).
Motion = Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]]


class TrajectorySender:
    """Sends a task's whole motion, from sim time 0, as one trajectory before the loop runs.

    Points every TRAJECTORY_STEP_S from 0 to `end_s`, with velocities and accelerations (the
    controller interpolates them as quintic Hermite splines). A lock-stepped simulator runs as
    soon as the controller hears it, faster than real time: a trajectory sent once the loop ran
    arrived up to 2 s of sim time late on a loaded machine (the hand stood still meanwhile).
    So it goes to the controller before the simulator starts, and again every
    TRAJECTORY_RESEND_S of wall time until the simulator is heard (TRAJECTORY_COPIES at least):
    a publisher can see the subscription matched before the subscriber has matched it, and a
    volatile message is then lost; an identical copy replaces the trajectory by itself.
    """

    def __init__(self, node: Node, task: str, motion: Motion, end_s: float) -> None:
        self._publisher = node.create_publisher(
            MultiDOFJointTrajectory, f'/wbc_controller/{task}/trajectory', TRAJECTORY_QOS
        )
        self._task, self._motion = task, motion
        self.end_s = end_s
        self._message: MultiDOFJointTrajectory | None = None
        self.copies, self._last_wall = 0, -np.inf

    def listening(self) -> bool:
        """Whether the controller's trajectory subscription is matched (on this side)."""
        return self._publisher.get_subscription_count() > 0

    def send_due(self) -> None:
        """Send the trajectory if TRAJECTORY_RESEND_S passed since the last copy."""
        now = time.monotonic()
        if now - self._last_wall < TRAJECTORY_RESEND_S:
            return
        if self._message is None:
            self._message = self._trajectory()
        self._publisher.publish(self._message)
        self.copies, self._last_wall = self.copies + 1, now

    def _trajectory(self) -> MultiDOFJointTrajectory:
        message = MultiDOFJointTrajectory()
        message.joint_names = [self._task]
        steps = int(np.ceil(self.end_s / TRAJECTORY_STEP_S)) + 1
        for step in range(max(steps, 1)):
            offset = step * TRAJECTORY_STEP_S
            message.points.append(trajectory_point(offset, *self._motion(offset)))
        message.header.stamp = time_message(START_STAMP_S)
        return message


def trajectory_point(offset_s: float, position, velocity, acceleration):
    """A MultiDOFJointTrajectoryPoint `offset_s` after the start (identity rotation)."""
    transform = Transform()
    transform.translation.x, transform.translation.y, transform.translation.z = (
        float(v) for v in position
    )
    twist, accel = Twist(), Twist()
    twist.linear.x, twist.linear.y, twist.linear.z = (float(v) for v in velocity)
    accel.linear.x, accel.linear.y, accel.linear.z = (float(v) for v in acceleration)
    return MultiDOFJointTrajectoryPoint(
        transforms=[transform],
        velocities=[twist],
        accelerations=[accel],
        time_from_start=Duration(**_seconds_nanoseconds(offset_s)),
    )


def time_message(seconds: float) -> TimeMessage:
    """builtin_interfaces/Time for `seconds`."""
    return TimeMessage(**_seconds_nanoseconds(seconds))


def _seconds_nanoseconds(seconds: float) -> dict[str, int]:
    whole = int(seconds)
    return {'sec': whole, 'nanosec': int(round((seconds - whole) * 1e9))}
