"""Frame orientation task with an SO(3) logarithm error.

With R the frame rotation in the world and R_ref the target, the error is the world-frame
rotation vector that takes R onto R_ref, and the Jacobian is the angular block of the
LOCAL_WORLD_ALIGNED frame Jacobian::

    e = log₃(R_ref Rᵀ),   J = J_ang,   J̇v = ω̇ at q̈ = 0
    ẍ* = ω̇_ref + K_d (ω_ref − ω) + K_p e
"""

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from wbc_control.exceptions import InvalidValue
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks.task import (
    PDGains,
    ReferenceSample,
    Task,
    TaskTerms,
    as_axis_vector,
)

QUATERNION_NORM_TOLERANCE = 1e-2
IDENTITY_XYZW = np.array([0.0, 0.0, 0.0, 1.0])


def unit_quaternion(
    quaternion: np.ndarray, tolerance: float = QUATERNION_NORM_TOLERANCE
) -> np.ndarray:
    """The quaternion normalised, if its norm is within `tolerance` of 1.

    Raises:
        InvalidValue: its norm differs from 1 by more than `tolerance`.
    """
    norm = float(np.linalg.norm(quaternion))
    if abs(norm - 1.0) > tolerance:
        raise InvalidValue(
            f'quaternion {np.round(quaternion, 6).tolist()} must have unit norm, '
            f'got norm {norm:.6g}'
        )
    return quaternion / norm


def rotation_from_quaternion(quaternion_xyzw: npt.ArrayLike) -> np.ndarray:
    """Rotation matrix of a quaternion given as x, y, z, w (the ROS order).

    Raises:
        InvalidValue: not finite, or its norm differs from 1 by more than 1 %.
    """
    quaternion = as_axis_vector(quaternion_xyzw, 4, 'quaternion (x, y, z, w)')
    x, y, z, w = unit_quaternion(quaternion)
    return pin.Quaternion(w, x, y, z).toRotationMatrix()


def quaternion_xyzw(rotation: np.ndarray) -> np.ndarray:
    """The quaternion x, y, z, w (the ROS order) of a rotation matrix."""
    return np.array(pin.Quaternion(rotation).coeffs())


@dataclass(frozen=True)
class AngularReference:
    """Orientation, angular velocity and acceleration reference (world axes)."""

    rotation: np.ndarray
    angular_velocity: np.ndarray
    angular_acceleration: np.ndarray

    @classmethod
    def create(
        cls,
        quaternion_xyzw: npt.ArrayLike,
        angular_velocity: npt.ArrayLike | None = None,
        angular_acceleration: npt.ArrayLike | None = None,
    ) -> 'AngularReference':
        """Validate a reference; feed-forward terms default to zero (own copies of the arrays)."""
        zero = np.zeros(3)
        return cls(
            np.array(rotation_from_quaternion(quaternion_xyzw)),
            as_axis_vector(
                zero if angular_velocity is None else angular_velocity, 3, 'angular velocity'
            ).copy(),
            as_axis_vector(
                zero if angular_acceleration is None else angular_acceleration,
                3,
                'angular acceleration',
            ).copy(),
        )

    def read(self, sample: ReferenceSample) -> None:
        """Copy rotation, ω and ω̇ into `sample`."""
        sample.rotation[...] = self.rotation
        sample.velocity[...] = self.angular_velocity
        sample.acceleration[...] = self.angular_acceleration


class FrameOrientationTask(Task):
    """Align a frame's orientation with a target quaternion (x, y, z, w)."""

    TYPE = 'frame_orientation'
    FIELDS = ('frame',)
    MESSAGE = 'pose'
    TRAJECTORY = 'rotation'

    def __init__(
        self,
        robot: RobotModel,
        frame: str,
        target: npt.ArrayLike,
        kp: npt.ArrayLike,
        kd: npt.ArrayLike | None = None,
    ) -> None:
        super().__init__(3, PDGains.create(kp, kd, 3))
        self.frame = frame
        self.frame_id = robot.frame_id(frame)
        self.reference = AngularReference.create(target)

    @classmethod
    def target_size_for(cls, robot: RobotModel) -> int:
        """A quaternion x, y, z, w."""
        return 4

    @classmethod
    def parse_target(cls, robot: RobotModel, target: np.ndarray) -> np.ndarray:
        """A unit quaternion x, y, z, w."""
        target = super().parse_target(robot, target)
        rotation_from_quaternion(target)
        return target

    @classmethod
    def placeholder_target(cls, robot: RobotModel) -> np.ndarray:
        """The identity rotation."""
        return IDENTITY_XYZW.copy()

    def target_from_state(self, state: RobotState) -> np.ndarray:
        """The frame's orientation now."""
        return quaternion_xyzw(state.frame_placement(self.frame_id).rotation)

    def target_from_message(self, robot: RobotModel, message: object) -> np.ndarray:
        """The orientation of a pose message (its position is ignored)."""
        return self.parse_target(robot, np.asarray(message, dtype=float)[3:])

    def set_target(
        self,
        quaternion_xyzw: npt.ArrayLike,
        angular_velocity: npt.ArrayLike | None = None,
        angular_acceleration: npt.ArrayLike | None = None,
    ) -> None:
        """Replace the orientation reference."""
        self.reference = AngularReference.create(
            quaternion_xyzw, angular_velocity, angular_acceleration
        )

    def reference_sample(self) -> ReferenceSample:
        """A rotation, ω and ω̇ (world axes)."""
        return ReferenceSample(0, True, 3)

    def read_reference(self, sample: ReferenceSample) -> None:
        """Rotation, angular velocity and acceleration (world axes)."""
        self.reference.read(sample)

    def write_reference(self, sample: ReferenceSample) -> None:
        """Rotation, angular velocity and acceleration; see `Task.write_reference`."""
        reference = self.reference
        reference.rotation[...] = sample.rotation
        reference.angular_velocity[...] = sample.velocity
        reference.angular_acceleration[...] = sample.acceleration
        self.target_pending = False

    def write_terms(self, state: RobotState, terms: TaskTerms) -> None:
        """Task terms; see the module docstring."""
        jacobian, drift, error, velocity, desired = terms
        reference = self.reference
        oMf, frame_jacobian, frame_drift = state.frame_terms(self.frame_id)
        angular = frame_jacobian[3:]  # (3, nv)
        jacobian[...] = angular
        drift[...] = frame_drift[3:]
        error[...] = pin.log3(reference.rotation.dot(oMf.rotation.T))
        angular.dot(state.v, out=velocity)
        self._gains.write_acceleration(
            desired, reference.angular_acceleration, reference.angular_velocity, velocity, error
        )
