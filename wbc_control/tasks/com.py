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

    def compute(self, state: RobotState) -> TaskTerms:
        """Task terms; see the module docstring."""
        reference, gains = self.reference, self._gains
        error = reference.position - state.com
        # The state's own arrays, not copies: terms live for one tick and nothing writes them.
        velocity = state.com_velocity
        desired = gains.acceleration(reference.acceleration, reference.velocity - velocity, error)
        return TaskTerms(state.com_jacobian, state.com_drift, error, velocity, desired)
