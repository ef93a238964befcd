"""Frame pose task: position (point target) and orientation stacked, 6 rows.

Rows 0–2 are the frame position task with a point target, rows 3–5 the orientation task,
matching Pinocchio's (linear, angular) ordering of LOCAL_WORLD_ALIGNED Jacobians. Gains take
6 values (x, y, z, rx, ry, rz) or a scalar.
"""

import numpy as np
import numpy.typing as npt

from wbc_control.robot_model import RobotModel
from wbc_control.robot_state import RobotState
from wbc_control.tasks.frame_orientation import AngularReference, orientation_terms
from wbc_control.tasks.frame_position import LinearReference, position_terms
from wbc_control.tasks.task import PDGains, Task, TaskTerms, as_axis_vector

_IDENTITY = np.eye(3)


class FramePoseTask(Task):
    """Drive a frame to a target pose (position + orientation)."""

    def __init__(
        self,
        robot: RobotModel,
        frame: str,
        target: npt.ArrayLike,
        kp: npt.ArrayLike,
        kd: npt.ArrayLike | None = None,
    ) -> None:
        super().__init__(6, PDGains.create(kp, kd, 6))
        self.frame = frame
        self.frame_id = robot.frame_id(frame)
        self.set_target(target)

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
        self.references = (linear, angular)

    def compute(self, state: RobotState) -> TaskTerms:
        """Stacked position and orientation terms."""
        linear, angular = self.references
        gains = self.gains
        position = position_terms(
            state, self.frame_id, _IDENTITY, linear, PDGains(gains.kp[:3], gains.kd[:3])
        )
        orientation = orientation_terms(
            state, self.frame_id, angular, PDGains(gains.kp[3:], gains.kd[3:])
        )
        return TaskTerms(*(np.concatenate(pair) for pair in zip(position, orientation)))
