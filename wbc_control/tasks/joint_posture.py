"""Joint posture task over all actuated joints.

With S selecting the actuated joints::

    J = S (selects the actuated joints' velocities),   J̇v = 0
    e = (q_ref ⊖ q) restricted to the actuated joints (Pinocchio's `difference`, so continuous
        joints take the short way round)
    ẍ* = q̈_ref + K_d (q̇_ref − q̇) + K_p e
"""

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from wbc_control.exceptions import InvalidShape, InvalidValue
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks.task import (
    PDGains,
    ReferenceSample,
    Task,
    TaskTerms,
    as_axis_vector,
    as_slice,
)

#: How far (rad or m) a posture target may lie beyond a URDF position limit (rounding).
POSITION_LIMIT_TOLERANCE = 1e-6


def check_posture_limits(robot: RobotModel, positions: np.ndarray) -> None:
    """Refuse posture targets outside the URDF position limits, naming the joints.

    Raises:
        InvalidValue: a joint is outside its limits by more than the tolerance.
    """
    lower, upper = robot.position_limits
    outside = (positions < lower - POSITION_LIMIT_TOLERANCE) | (
        positions > upper + POSITION_LIMIT_TOLERANCE
    )
    if outside.any():
        details = ', '.join(
            f'{robot.joint_names[i]}={positions[i]:.4g} not in [{lower[i]:.4g}, {upper[i]:.4g}]'
            for i in np.flatnonzero(outside)
        )
        raise InvalidValue(f'posture target outside the URDF position limits: {details}')


def merge_posture_target(
    robot: RobotModel,
    current: np.ndarray,
    names: Sequence[str],
    positions: Sequence[float],
) -> np.ndarray:
    """A posture target from a (possibly partial) joint state: named joints change, others stay.

    Names that are not actuated joints of the model are ignored, like in `joint_states`.
    `current` may hold NaN for joints without a target yet; those must then be named.

    Raises:
        InvalidShape: ragged arrays, duplicate names, or no joint of the model named.
        InvalidValue: non-finite positions or a result outside the position limits.
    """
    if len(names) != len(positions):
        raise InvalidShape(f'{len(names)} names but {len(positions)} positions')
    if len(set(names)) != len(names):
        raise InvalidShape('duplicate joint names')
    lookup = {name: i for i, name in enumerate(robot.joint_names)}
    known = [(lookup[name], i) for i, name in enumerate(names) if name in lookup]
    if not known:
        raise InvalidShape(f'names no joint of the model ({", ".join(robot.joint_names)})')
    joints, message_index = (np.array(column, dtype=int) for column in zip(*known))
    values = np.asarray(positions, dtype=float)[message_index]
    if not np.isfinite(values).all():
        raise InvalidValue('non-finite positions')
    target = np.array(current, dtype=float)
    target[joints] = values
    unset = [robot.joint_names[i] for i in np.flatnonzero(~np.isfinite(target))]
    if unset:
        raise InvalidShape(
            f'joint(s) {", ".join(unset)} have no target yet: name every joint of the model'
        )
    check_posture_limits(robot, target)
    return target


class JointPostureTask(Task):
    """Drive every actuated joint to a target position (actuated-joint order)."""

    TYPE = 'joint_posture'
    MESSAGE = 'joint_state'
    TRAJECTORY = 'joint'

    def __init__(
        self,
        robot: RobotModel,
        target: npt.ArrayLike,
        kp: npt.ArrayLike,
        kd: npt.ArrayLike | None = None,
    ) -> None:
        size = robot.n_actuated
        super().__init__(size, PDGains.create(kp, kd, size, groups=(1,) * size))
        self.robot = robot
        self._v_index = as_slice(robot.indices.v)
        self.jacobian_columns = self._v_index
        self._jacobian = np.zeros((size, robot.nv))
        self._jacobian[np.arange(size), robot.indices.v] = 1.0
        self._jacobian.flags.writeable = False
        self._drift = np.zeros(size)
        self._drift.flags.writeable = False
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
        self._reference = (q_reference, positions.copy(), velocities.copy(), accelerations.copy())

    def row_groups(self) -> tuple[int, ...]:
        """One group: the joints' rows share one normalisation, the residual stays Euclidean.

        Each joint keeps its own gains and `max_error` (the gains' groups), but its row is not
        scaled by its own mobility: that would weigh the posture's residual by a diagonal of
        the task-space inertia, and a posture level the levels above leave rank-deficient would
        then depart from Khatib's recursion, whose J̄ projects the posture's error onto what they
        leave free in the Euclidean metric (docs/theory.md, "The equality case").
        """
        return (self.dim,)

    def target_configuration(self) -> np.ndarray:
        """The configuration q `(nq,)` of the target positions (a neutral base), a copy."""
        return self._reference[0].copy()

    def reference_sample(self) -> ReferenceSample:
        """Joint positions, velocities and accelerations in actuated-joint order."""
        return ReferenceSample(self.dim, False, self.dim)

    def read_reference(self, sample: ReferenceSample) -> None:
        """Positions, velocities and accelerations (actuated-joint order)."""
        _, positions, velocities, accelerations = self._reference
        sample.position[...] = positions
        sample.velocity[...] = velocities
        sample.acceleration[...] = accelerations

    def write_reference(self, sample: ReferenceSample) -> None:
        """Positions, velocities, accelerations; see `Task.write_reference`."""
        q_reference, positions, velocities, accelerations = self._reference
        positions[...] = sample.position
        velocities[...] = sample.velocity
        accelerations[...] = sample.acceleration
        self.robot.configuration(positions, out=q_reference)
        self.target_pending = False

    @classmethod
    def gains_size_for(cls, robot: RobotModel) -> int:
        """One gain per actuated joint."""
        return robot.n_actuated

    @classmethod
    def target_size_for(cls, robot: RobotModel) -> int:
        """One position per actuated joint, in model order."""
        return robot.n_actuated

    @classmethod
    def parse_target(cls, robot: RobotModel, target: np.ndarray) -> np.ndarray:
        """Joint positions inside the URDF position limits."""
        target = super().parse_target(robot, target)
        check_posture_limits(robot, target)
        return target

    @classmethod
    def placeholder_target(cls, robot: RobotModel) -> np.ndarray:
        """The neutral configuration's joint positions."""
        return robot.joint_positions(robot.neutral_configuration())

    def target_from_state(self, state: RobotState) -> np.ndarray:
        """The joint positions now, clipped to the limits (a joint may read a hair beyond)."""
        return np.clip(self.robot.joint_positions(state.q), *self.robot.position_limits)

    def target_from_message(self, robot: RobotModel, message: object) -> np.ndarray:
        """Merge a joint state's (names, positions): unnamed joints keep their target."""
        names, positions = message
        current = self._reference[1]
        if self.target_pending:
            current = np.full(self.dim, np.nan)
        return merge_posture_target(robot, current, names, positions)

    def position_error(self, state: RobotState) -> np.ndarray:
        """The error e = q_ref ⊖ q of the module docstring per actuated joint, `(n_act,)`."""
        return pin.difference(self.robot.model, state.q, self._reference[0])[self._v_index]

    def compute(self, state: RobotState) -> TaskTerms:
        """Task terms in new arrays, but the shared read-only Jacobian S and zero drift."""
        terms = TaskTerms(self._jacobian, self._drift, *(np.empty(self.dim) for _ in range(3)))
        self.write_terms(state, terms)
        return terms

    def prepare_terms(self, terms: TaskTerms) -> TaskTerms:
        """Write the constant Jacobian S and drift 0 once."""
        terms.jacobian[...] = self._jacobian
        terms.drift[...] = 0.0
        return terms

    def write_terms(self, state: RobotState, terms: TaskTerms) -> None:
        """Error, velocity and desired acceleration (S and 0 are written once); see the module."""
        _, _, error, velocity, desired = terms
        q_reference, _, velocity_reference, acceleration_reference = self._reference
        # `difference` works joint by joint: the joints' entries do not depend on the base
        # coordinates, which the posture ignores (the reference holds an identity base pose).
        error[...] = pin.difference(self.robot.model, state.q, q_reference)[self._v_index]
        velocity[...] = state.v[self._v_index]
        self._gains.write_acceleration(
            desired, acceleration_reference, velocity_reference, velocity, error
        )
