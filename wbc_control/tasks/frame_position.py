"""Frame position task with a point, line or plane target (Freitag 2015, "Target/Method").

The target is a set the frame origin p must reach: a point (3 constrained directions), a line
through `target` along `axis` (the 2 directions normal to the line), or a plane through `target`
with normal `axis` (1 direction). With P the (k, 3) matrix whose orthonormal rows span the
constrained directions::

    J = P J_lin,   J̇v = P a_lin,   e = P (p_ref − p)
    ẍ* = P [Pᵀ P ẍ_ref + K_d Pᵀ P (ṗ_ref − ṗ) + K_p Pᵀ P (p_ref − p)]

where K_p, K_d are diagonal per world axis and the free directions are left uncontrolled: a
trajectory's velocity and acceleration are fed forward along the constrained directions only.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

import numpy as np
import numpy.typing as npt

from wbc_control.exceptions import InvalidShape, InvalidTaskConfig, InvalidValue
from wbc_control.model.reach import frame_reach
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks.task import (
    PDGains,
    ReferenceSample,
    Task,
    TaskTerms,
    as_axis_vector,
)


class TargetSet(Enum):
    """The set a frame position task drives the frame origin onto."""

    POINT = 'point'
    LINE = 'line'
    PLANE = 'plane'


def target_set(constraint: object) -> TargetSet:
    """The target set named by the `constraint` parameter (unset: a point).

    Raises:
        InvalidTaskConfig: not point, line or plane.
    """
    if constraint is None or constraint == '':
        return TargetSet.POINT
    try:
        return TargetSet(constraint)
    except ValueError as error:
        valid = ', '.join(member.value for member in TargetSet)
        raise InvalidTaskConfig(
            f'constraint must be one of {valid}; got {constraint!r}'
        ) from error


@dataclass(frozen=True)
class LinearReference:
    """Position, velocity and acceleration reference in the world frame (m, m/s, m/s²)."""

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray

    @classmethod
    def create(
        cls,
        position: npt.ArrayLike,
        velocity: npt.ArrayLike | None = None,
        acceleration: npt.ArrayLike | None = None,
    ) -> 'LinearReference':
        """Validate a reference; velocity and acceleration feed-forward default to zero.

        The reference owns copies of the arrays (a trajectory writes into them).
        """
        zero = np.zeros(3)
        return cls(
            as_axis_vector(position, 3, 'target position').copy(),
            as_axis_vector(zero if velocity is None else velocity, 3, 'target velocity').copy(),
            as_axis_vector(
                zero if acceleration is None else acceleration, 3, 'target acceleration'
            ).copy(),
        )

    def read(self, sample: ReferenceSample) -> None:
        """Copy position, velocity and acceleration into `sample`."""
        sample.position[...] = self.position
        sample.velocity[...] = self.velocity
        sample.acceleration[...] = self.acceleration


def constrained_directions(target_set: TargetSet, axis: npt.ArrayLike | None) -> np.ndarray:
    """Orthonormal rows spanning the directions a target set constrains, `(k, 3)`."""
    if target_set is TargetSet.POINT:
        return np.eye(3)
    if axis is None:
        raise InvalidTaskConfig(f"a '{target_set.value}' target needs an axis")
    direction = as_axis_vector(axis, 3, 'axis')
    norm = np.linalg.norm(direction)
    if norm < 1e-9:
        raise InvalidValue('axis must be a non-zero vector')
    direction = direction / norm
    if target_set is TargetSet.PLANE:
        return direction[np.newaxis, :]
    # Line: the two directions normal to it, from an SVD of the rank-1 projector.
    _, _, rows = np.linalg.svd(direction[np.newaxis, :])
    return rows[1:]


def write_position_terms(
    state: RobotState,
    frame_id: int,
    selection: np.ndarray,
    reference: LinearReference,
    gains: PDGains,
    terms: TaskTerms,
) -> None:
    """Terms of the (projected) frame position task; `selection` is P, `(k, 3)`."""
    position = state.frame_placement(frame_id).translation
    velocity_world = state.frame_velocity(frame_id)[:3]
    projector = selection.T @ selection
    error_world = projector @ (reference.position - position)
    velocity_error_world = projector @ (reference.velocity - velocity_world)
    acceleration_world = gains.acceleration(
        projector @ reference.acceleration, velocity_error_world, error_world
    )
    jacobian, drift, error, velocity, desired = terms
    jacobian[...] = selection @ state.frame_jacobian(frame_id)[:3]
    drift[...] = selection @ state.frame_drift(frame_id)[:3]
    error[...] = selection @ error_world
    velocity[...] = selection @ velocity_world
    desired[...] = selection @ acceleration_world


class LinearTarget:
    """`set_target` of the tasks whose reference is a point in the world (frame position, COM)."""

    reference: LinearReference

    def set_target(
        self,
        position: npt.ArrayLike,
        velocity: npt.ArrayLike | None = None,
        acceleration: npt.ArrayLike | None = None,
    ) -> None:
        """Replace the reference: a position (m), optional velocity / acceleration feed-forward.

        For line and plane target sets the position is any point on the line or plane.
        """
        self.reference = LinearReference.create(position, velocity, acceleration)

    def read_reference(self, sample: ReferenceSample) -> None:
        """Position, velocity and acceleration (world, 3 each)."""
        self.reference.read(sample)

    def write_reference(self, sample: ReferenceSample) -> None:
        """Position, velocity and acceleration (world, 3 each); see `Task.write_reference`."""
        reference = self.reference
        reference.position[...] = sample.position
        reference.velocity[...] = sample.velocity
        reference.acceleration[...] = sample.acceleration
        self.target_pending = False


class FramePositionTask(LinearTarget, Task):
    """Drive a frame's origin onto a point, a line or a plane."""

    TYPE = 'frame_position'
    FIELDS = ('frame', 'constraint', 'axis')

    def __init__(
        self,
        robot: RobotModel,
        frame: str,
        target: npt.ArrayLike,
        kp: npt.ArrayLike,
        kd: npt.ArrayLike | None = None,
        constraint: str = 'point',
        axis: npt.ArrayLike | None = None,
    ) -> None:
        self.target_set = target_set(constraint)
        self.selection = constrained_directions(self.target_set, axis)
        super().__init__(self.selection.shape[0], PDGains.create(kp, kd, 3))
        self.frame = frame
        self.frame_id = robot.frame_id(frame)
        self.reference = LinearReference.create(target)
        self.reach = frame_reach(robot, self.frame_id)

    @property
    def gains_size(self) -> int:
        """Gains are per world axis (3 values) whatever the target set."""
        return 3

    def axis_rows(self, values: np.ndarray) -> np.ndarray:
        """Per-world-axis values on the constrained directions p_r: Σ_i p_r,i² v_i.

        The values themselves for a point, and for a line or plane along the world axes.
        """
        return (self.selection**2) @ values

    @classmethod
    def parse_field(cls, robot: RobotModel, field: str, values: Mapping[str, object]) -> object:
        """`constraint` (point, line, plane; line and plane need an axis) and `axis` (3 values)."""
        if field not in ('constraint', 'axis'):
            return super().parse_field(robot, field, values)
        constraint = target_set(values.get('constraint'))
        axis = values.get('axis')
        if field == 'constraint':
            if constraint is TargetSet.POINT and axis is not None:
                raise InvalidTaskConfig('axis is only used with constraint line or plane')
            if constraint is not TargetSet.POINT and axis is None:
                raise InvalidTaskConfig(f'constraint {constraint.value} needs an axis (3 values)')
            return constraint.value
        if axis is None:
            return None
        try:
            vector = np.asarray(axis, dtype=float)
        except (TypeError, ValueError) as error:
            raise InvalidValue(f'axis must be 3 numbers, got {axis!r}') from error
        if vector.shape != (3,):
            raise InvalidShape(f'axis needs 3 values, got {vector.size}')
        constrained_directions(constraint, vector)
        return as_axis_vector(vector, 3, 'axis')

    def target_point(self) -> np.ndarray | None:
        """The target point (None for a line or a plane, which may pass within reach)."""
        return self.reference.position if self.target_set is TargetSet.POINT else None

    def target_from_state(self, state: RobotState) -> np.ndarray:
        """The frame origin now (for a line or plane: a point on it)."""
        return np.array(state.frame_placement(self.frame_id).translation)

    def write_terms(self, state: RobotState, terms: TaskTerms) -> None:
        """Task terms; see the module docstring (a point target skips the identity P)."""
        frame_id, reference = self.frame_id, self.reference
        if self.target_set is not TargetSet.POINT:
            write_position_terms(state, frame_id, self.selection, reference, self._gains, terms)
            return
        jacobian, drift, error, velocity, desired = terms
        oMf, frame_jacobian, frame_drift = state.frame_terms(frame_id)
        linear = frame_jacobian[:3]  # (3, nv)
        jacobian[...] = linear
        drift[...] = frame_drift[:3]
        np.subtract(reference.position, oMf.translation, out=error)
        linear.dot(state.v, out=velocity)
        self._gains.write_acceleration(
            desired, reference.acceleration, reference.velocity, velocity, error
        )
