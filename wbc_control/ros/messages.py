"""Messages <-> numpy arrays: stamps, targets, odometry, joint states, the command.

A task class names the kind of message its target topic carries (`Task.MESSAGE`); this module
maps each kind to its message class and decodes it into what the task reads: 'point'
(geometry_msgs/PointStamped) -> x, y, z; 'pose' (geometry_msgs/PoseStamped) -> x, y, z and a
quaternion x, y, z, w; 'joint_state' (sensor_msgs/JointState) -> (names, positions).
"""

import array
from typing import NamedTuple

from geometry_msgs.msg import PointStamped, Pose, PoseStamped
from nav_msgs.msg import Odometry
import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header

#: Message class of each target kind.
TARGET_MESSAGES = {'point': PointStamped, 'pose': PoseStamped, 'joint_state': JointState}


def stamp_seconds(header: Header) -> float:
    """The header's stamp in seconds."""
    return header.stamp.sec + 1e-9 * header.stamp.nanosec


def pose_values(pose: Pose) -> list[float]:
    """A geometry_msgs/Pose as x, y, z, qx, qy, qz, qw."""
    position, orientation = pose.position, pose.orientation
    return [
        position.x,
        position.y,
        position.z,
        orientation.x,
        orientation.y,
        orientation.z,
        orientation.w,
    ]


def decode_target(kind: str, msg: PointStamped | PoseStamped | JointState) -> object:
    """What a target message of `kind` carries, as the task classes read it."""
    if kind == 'joint_state':
        return list(msg.name), list(msg.position)
    if kind == 'point':
        return np.array([msg.point.x, msg.point.y, msg.point.z])
    return np.array(pose_values(msg.pose))


class OdometryArrays(NamedTuple):
    """An odometry message as arrays: base pose in the world, twist in the base frame."""

    frame_id: str
    child_frame_id: str
    pose: list[float]  # x, y, z, qx, qy, qz, qw
    twist: list[float]  # vx, vy, vz, wx, wy, wz
    stamp: float


def odometry_arrays(msg: Odometry) -> OdometryArrays:
    """The fields of an odometry message the controller reads."""
    linear, angular = msg.twist.twist.linear, msg.twist.twist.angular
    return OdometryArrays(
        msg.header.frame_id,
        msg.child_frame_id,
        pose_values(msg.pose.pose),
        [linear.x, linear.y, linear.z, angular.x, angular.y, angular.z],
        stamp_seconds(msg.header),
    )


def fill_command(msg: Float64MultiArray, torque: np.ndarray) -> Float64MultiArray:
    """Write `torque` into a reused command message (an array copy, no per-element Python)."""
    data = array.array('d')
    data.frombytes(np.ascontiguousarray(torque, dtype=float).tobytes())
    msg.data = data
    return msg


def fill_odometry(msg: Odometry, pose: np.ndarray, twist: np.ndarray, stamp) -> Odometry:
    """Write a base pose (xyz, quaternion xyzw) and twist (linear, angular) and the stamp."""
    msg.header.stamp = stamp
    position, orientation = msg.pose.pose.position, msg.pose.pose.orientation
    position.x, position.y, position.z = pose[:3].tolist()
    orientation.x, orientation.y, orientation.z, orientation.w = pose[3:].tolist()
    linear, angular = msg.twist.twist.linear, msg.twist.twist.angular
    linear.x, linear.y, linear.z = twist[:3].tolist()
    angular.x, angular.y, angular.z = twist[3:].tolist()
    return msg
