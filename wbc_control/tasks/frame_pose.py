"""Frame pose task: position (point target) and orientation stacked, 6 rows.

Rows 0–2 are the frame position task with a point target, rows 3–5 the orientation task,
matching Pinocchio's (linear, angular) ordering of LOCAL_WORLD_ALIGNED Jacobians::

    J = J_frame,   J̇v = (p̈, ω̇) at q̈ = 0,   e = (p_ref − p, log₃(R_ref Rᵀ))
    ẍ* = ẍ_ref + K_d (ẋ_ref − J v) + K_p e

Gains take 6 values (x, y, z, rx, ry, rz) or a scalar.
"""

from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from wbc_control.model.reach import frame_reach
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks.frame_orientation import (
    IDENTITY_XYZW,
    AngularReference,
    quaternion_xyzw,
    rotation_from_quaternion,
)
from wbc_control.tasks.frame_position import LinearReference
from wbc_control.tasks.task import (
    PDGains,
    ReferenceSample,
    Task,
    TaskTerms,
    as_axis_vector,
)


class PoseReference(NamedTuple):
    """A validated pose reference; twist and acceleration stacked (linear, angular)."""

    linear: LinearReference
    angular: AngularReference
    twist: np.ndarray  # (6,) ẋ_ref
    acceleration: np.ndarray  # (6,) ẍ_ref


class FramePoseTask(Task):
    """Drive a frame to a target pose: x, y, z and a quaternion x, y, z, w."""

    TYPE = 'frame_pose'
    FIELDS = ('frame',)
    MESSAGE = 'pose'
    TRAJECTORY = 'pose'

    def __init__(
        self,
        robot: RobotModel,
        frame: str,
        target: npt.ArrayLike,
        kp: npt.ArrayLike,
        kd: npt.ArrayLike | None = None,
    ) -> None:
        super().__init__(6, PDGains.create(kp, kd, 6, groups=(3, 3)))
        self.frame = frame
        self.frame_id = robot.frame_id(frame)
        self.reach = frame_reach(robot, self.frame_id)
        self.set_target(target)

    @classmethod
    def gains_size_for(cls, robot: RobotModel) -> int:
        """x, y, z, rx, ry, rz."""
        return 6

    @classmethod
    def target_size_for(cls, robot: RobotModel) -> int:
        """x, y, z and a quaternion x, y, z, w."""
        return 7

    @classmethod
    def parse_target(cls, robot: RobotModel, target: np.ndarray) -> np.ndarray:
        """A position and a unit quaternion."""
        target = super().parse_target(robot, target)
        rotation_from_quaternion(target[3:])
        return target

    @classmethod
    def placeholder_target(cls, robot: RobotModel) -> np.ndarray:
        """The world origin, identity rotation."""
        return np.concatenate([np.zeros(3), IDENTITY_XYZW])

    def target_from_state(self, state: RobotState) -> np.ndarray:
        """The frame's pose now."""
        oMf = state.frame_placement(self.frame_id)
        return np.concatenate([oMf.translation, quaternion_xyzw(oMf.rotation)])

    def set_target(
        self,
        pose: npt.ArrayLike,
        twist: npt.ArrayLike | None = None,
        acceleration: npt.ArrayLike | None = None,
    ) -> None:
        """Replace the reference: pose = xyz + quaternion xyzw; twist / acceleration: 6 values.

        Both parts are validated before either is stored.
        """
        pose = as_axis_vector(pose, 7, 'target pose (x, y, z, qx, qy, qz, qw)')
        twist = np.zeros(6) if twist is None else as_axis_vector(twist, 6, 'target twist')
        acceleration = (
            np.zeros(6)
            if acceleration is None
            else as_axis_vector(acceleration, 6, 'target acceleration')
        )
        linear = LinearReference.create(pose[:3], twist[:3], acceleration[:3])
        angular = AngularReference.create(pose[3:], twist[3:], acceleration[3:])
        twist, acceleration = np.empty(6), np.empty(6)
        # The stacked vectors the law reads are the parts' arrays, so that a trajectory
        # writes each value once.
        twist[:3], twist[3:] = linear.velocity, angular.angular_velocity
        acceleration[:3], acceleration[3:] = linear.acceleration, angular.angular_acceleration
        linear = LinearReference(linear.position, twist[:3], acceleration[:3])
        angular = AngularReference(angular.rotation, twist[3:], acceleration[3:])
        self.references = PoseReference(linear, angular, twist, acceleration)

    def target_point(self) -> np.ndarray:
        """The target position."""
        return self.references.linear.position

    def reference_sample(self) -> ReferenceSample:
        """A position, a rotation, and the twist and its derivative stacked (linear, angular)."""
        return ReferenceSample(3, True, 6)

    def read_reference(self, sample: ReferenceSample) -> None:
        """Position, rotation, twist and acceleration (world axes; linear then angular)."""
        references = self.references
        sample.position[...] = references.linear.position
        sample.rotation[...] = references.angular.rotation
        sample.velocity[...] = references.twist
        sample.acceleration[...] = references.acceleration

    def write_reference(self, sample: ReferenceSample) -> None:
        """Position, rotation, twist and acceleration; see `Task.write_reference`."""
        references = self.references
        references.linear.position[...] = sample.position
        references.angular.rotation[...] = sample.rotation
        references.twist[...] = sample.velocity
        references.acceleration[...] = sample.acceleration
        self.target_pending = False

    def prepare_terms(self, terms: TaskTerms) -> tuple[TaskTerms, np.ndarray, np.ndarray]:
        """The terms and their error's position and orientation rows."""
        return terms, terms.error[:3], terms.error[3:]

    def write_terms(
        self, state: RobotState, buffers: tuple[TaskTerms, np.ndarray, np.ndarray]
    ) -> None:
        """Stacked position and orientation terms; see the module docstring."""
        (jacobian, drift, error, velocity, desired), position_error, orientation_error = buffers
        reference = self.references
        oMf, frame_jacobian, frame_drift = state.frame_terms(self.frame_id)
        jacobian[...] = frame_jacobian  # (6, nv)
        drift[...] = frame_drift
        np.subtract(reference.linear.position, oMf.translation, out=position_error)
        orientation_error[...] = pin.log3(reference.angular.rotation.dot(oMf.rotation.T))
        frame_jacobian.dot(state.v, out=velocity)
        self._gains.write_acceleration(
            desired, reference.acceleration, reference.twist, velocity, error
        )
