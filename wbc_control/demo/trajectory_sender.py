"""The demo's circle as one `MultiDOFJointTrajectory`, sent once the controller listens."""

from collections.abc import Callable

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
#: Copies of the trajectory sent, TRAJECTORY_RESEND_S of sim time apart (see TrajectorySender).
TRAJECTORY_COPIES, TRAJECTORY_RESEND_S = 5, 0.1

#: Position, velocity and acceleration (each 3-vector) of the motion at a sim time (s).
Motion = Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]]


class TrajectorySender:
    """Sends a task's whole motion as one trajectory, then identical copies of it.

    Points every TRAJECTORY_STEP_S from the send time (stamped with the sim time) to `end_s`,
    with velocities and accelerations (the controller interpolates them as quintic Hermite
    splines). The same message goes again every TRAJECTORY_RESEND_S for TRAJECTORY_COPIES
    copies: a publisher can see the subscription matched before the subscriber has matched it,
    and a volatile first message is then lost (the hand stood still in 1 run of about 20);
    an identical copy replaces the trajectory by itself.
    """

    def __init__(self, node: Node, task: str, motion: Motion, end_s: float) -> None:
        self._publisher = node.create_publisher(
            MultiDOFJointTrajectory, f'/wbc_controller/{task}/trajectory', TRAJECTORY_QOS
        )
        self._task, self._motion = task, motion
        self.end_s = end_s
        #: Sim time (s) the first copy went out (None: not yet).
        self.sent_s: float | None = None
        self._message: MultiDOFJointTrajectory | None = None
        self._copies = 0

    def on_state(self, sim_time: float) -> None:
        """Send (or re-send) as due at `sim_time`, the stamp of the latest state."""
        if self.sent_s is not None:
            if self._copies < TRAJECTORY_COPIES:
                if sim_time >= self.sent_s + self._copies * TRAJECTORY_RESEND_S:
                    self._publisher.publish(self._message)
                    self._copies += 1
            return
        # A zero stamp means "start on receipt", which would shift the whole motion by the
        # time the message takes to arrive: wait for the first state stamped after zero.
        if self._publisher.get_subscription_count() == 0 or sim_time <= 0.0:
            return
        self._message = self._trajectory(sim_time)
        self._publisher.publish(self._message)
        self.sent_s, self._copies = sim_time, 1

    def _trajectory(self, start: float) -> MultiDOFJointTrajectory:
        message = MultiDOFJointTrajectory()
        message.joint_names = [self._task]
        steps = int(np.ceil((self.end_s - start) / TRAJECTORY_STEP_S)) + 1
        for step in range(max(steps, 1)):
            offset = step * TRAJECTORY_STEP_S
            message.points.append(trajectory_point(offset, *self._motion(start + offset)))
        message.header.stamp = time_message(start)
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
