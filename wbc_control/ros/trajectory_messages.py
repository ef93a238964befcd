"""trajectory_msgs -> :class:`~wbc_control.inputs.trajectory_points.TrajectoryPoints`.

`~/<task>/trajectory` carries trajectory_msgs/JointTrajectory for a joint posture task and
trajectory_msgs/MultiDOFJointTrajectory for the frame and COM tasks. Fields read:
header.stamp (the start; zero: on receipt), joint_names, and per point time_from_start and
positions, velocities, accelerations (JointTrajectory) or transforms, velocities, accelerations
(MultiDOFJointTrajectory: x, y, z, qx, qy, qz, qw and twists vx, vy, vz, wx, wy, wz). A point's
empty velocities or accelerations mean "take them from the interpolation". Effort and
header.frame_id of a joint trajectory are not read; sizes are checked by the core.
"""

from geometry_msgs.msg import Transform, Twist
from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory

from wbc_control.inputs.trajectory_points import TrajectoryPoints
from wbc_control.ros.messages import stamp_seconds

#: Message class of each :attr:`Task.TRAJECTORY` kind.
TRAJECTORY_MESSAGES = {
    'joint': JointTrajectory,
    'linear': MultiDOFJointTrajectory,
    'rotation': MultiDOFJointTrajectory,
    'pose': MultiDOFJointTrajectory,
}


def duration_seconds(duration) -> float:
    """A builtin_interfaces/Duration in seconds."""
    return duration.sec + 1e-9 * duration.nanosec


def transform_values(transforms: list[Transform]) -> list[float]:
    """x, y, z, qx, qy, qz, qw of each transform, concatenated."""
    values = []
    for transform in transforms:
        t, q = transform.translation, transform.rotation
        values += [t.x, t.y, t.z, q.x, q.y, q.z, q.w]
    return values


def twist_values(twists: list[Twist]) -> list[float]:
    """vx, vy, vz, wx, wy, wz of each twist, concatenated."""
    values = []
    for twist in twists:
        v, w = twist.linear, twist.angular
        values += [v.x, v.y, v.z, w.x, w.y, w.z]
    return values


def decode_trajectory(msg: JointTrajectory | MultiDOFJointTrajectory) -> TrajectoryPoints:
    """The points of a trajectory message, not yet validated."""
    points = msg.points
    times = [duration_seconds(point.time_from_start) for point in points]
    if isinstance(msg, JointTrajectory):
        values = [list(point.positions) for point in points]
        velocities = [list(point.velocities) for point in points]
        accelerations = [list(point.accelerations) for point in points]
    else:
        values = [transform_values(point.transforms) for point in points]
        velocities = [twist_values(point.velocities) for point in points]
        accelerations = [twist_values(point.accelerations) for point in points]
    return TrajectoryPoints(
        list(msg.joint_names),
        stamp_seconds(msg.header),
        times,
        values,
        velocities,
        accelerations,
    )
