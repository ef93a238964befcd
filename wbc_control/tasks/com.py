"""Centre-of-mass task.

With c the centre of mass in the world::

    J = J_com,   J̇v = c̈ at q̈ = 0,   e = c_ref − c
    ẍ* = c̈_ref + K_d (ċ_ref − ċ) + K_p e
"""

import numpy as np
import numpy.typing as npt

from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks.frame_position import LinearReference, LinearTarget
from wbc_control.tasks.task import PDGains, Task, TaskTerms


class ComTask(LinearTarget, Task):
    """Drive the centre of mass to a target position in the world frame."""

    TYPE = 'com'

    def __init__(
        self,
        robot: RobotModel,
        target: npt.ArrayLike,
        kp: npt.ArrayLike,
        kd: npt.ArrayLike | None = None,
    ) -> None:
        super().__init__(3, PDGains.create(kp, kd, 3))
        self.reference = LinearReference.create(target)

    def target_from_state(self, state: RobotState) -> np.ndarray:
        """The centre of mass now."""
        return np.array(state.com)

    def write_terms(self, state: RobotState, terms: TaskTerms) -> None:
        """Task terms; see the module docstring."""
        jacobian, drift, error, velocity, desired = terms
        reference = self.reference
        com, com_velocity, com_jacobian, com_drift = state.com_terms
        jacobian[...] = com_jacobian
        drift[...] = com_drift
        velocity[...] = com_velocity
        np.subtract(reference.position, com, out=error)
        self._gains.write_acceleration(
            desired, reference.acceleration, reference.velocity, velocity, error
        )
