"""Joint posture task over all actuated joints.

With S selecting the actuated joints::

    J = S (selects the actuated joints' velocities),   J̇v = 0
    e = (q_ref ⊖ q) restricted to the actuated joints (Pinocchio's `difference`, so continuous
        joints take the short way round)
    ẍ* = q̈_ref + K_d (q̇_ref − q̇) + K_p e
"""

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks.task import PDGains, Task, TaskTerms, as_axis_vector, as_slice


class JointPostureTask(Task):
    """Drive every actuated joint to a target position (actuated-joint order)."""

    def __init__(
        self,
        robot: RobotModel,
        target: npt.ArrayLike,
        kp: npt.ArrayLike,
        kd: npt.ArrayLike | None = None,
    ) -> None:
        size = robot.n_actuated
        super().__init__(size, PDGains.create(kp, kd, size))
        self.robot = robot
        self._v_index = as_slice(robot.indices.v)
        self._jacobian = np.zeros((size, robot.nv))
        self._jacobian[np.arange(size), robot.indices.v] = 1.0
        self._jacobian.flags.writeable = False
        self._drift = np.zeros(size)
        self._q_reference = robot.neutral_configuration()
        self.set_target(target)

    def set_target(
        self,
        positions: npt.ArrayLike,
        velocities: npt.ArrayLike | None = None,
        accelerations: npt.ArrayLike | None = None,
    ) -> None:
        """Replace the posture reference (joint positions in actuated-joint order)."""
        size = self.dim
        zero = np.zeros(size)
        positions = as_axis_vector(positions, size, 'posture target')
        velocities = as_axis_vector(zero if velocities is None else velocities, size, 'velocity')
        accelerations = as_axis_vector(
            zero if accelerations is None else accelerations, size, 'acceleration'
        )
        q_reference = self.robot.configuration(positions)
        self._reference = (q_reference, positions, velocities, accelerations)

    @property
    def target_positions(self) -> np.ndarray:
        """The posture target in actuated-joint order."""
        return self._reference[1]

    def compute(self, state: RobotState) -> TaskTerms:
        """Task terms; see the module docstring."""
        q_reference, _, velocity_reference, acceleration_reference = self._reference
        # `difference` works joint by joint: the joints' entries do not depend on the base
        # coordinates, which the posture ignores (the reference holds an identity base pose).
        error = pin.difference(self.robot.model, state.q, q_reference)[self._v_index]
        velocity = state.v[self._v_index]
        desired = self.gains.acceleration(
            acceleration_reference, velocity_reference - velocity, error
        )
        return TaskTerms(self._jacobian, self._drift, error, velocity, desired)
