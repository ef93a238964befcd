"""The task interface: what every operational-space task gives the controller.

A task is a small object with a dimension and a `compute(state)` that returns its Jacobian J,
drift J̇v, error e, velocity J v and desired task acceleration, the PD law of operational-space
control (Khatib 1987, eq 26)::

    ẍ* = ẍ_ref + K_d (ẋ_ref − J v) + K_p e

A far target is not a reason for a large torque: with a maximum error `max_error` (0: none) the
error that enters K_p e is clipped in its direction, e ← e · min(1, e_max / ‖e‖), per group of
rows of one unit (position in m, orientation in rad, each posture joint in rad or m), as
crisp_controllers' `error_clip` does; the reported error stays the true one. The hand then
moves towards a far target at the speed and torque of an e_max error. The gains and the law are
:mod:`wbc_control.tasks.pd_law`'s; a task may add integral action (K_i, a bounded integral
term: :mod:`wbc_control.tasks.integral`), which the controller adds to ẍ*.

On every tick the controller calls :meth:`Task.write_terms` instead, which writes the same
terms into arrays the controller keeps (the rows of the task in its priority level's stacked
Jacobian, drift, error, velocity and desired acceleration), with no allocation of its own; what
never changes (a selection Jacobian, a zero drift) is written once, when the controller hands a
task its rows (:meth:`Task.prepare_terms`).

Priority and weight are not part of a task; they belong to the controller's task list.
Gains and set-point references are replaced as whole immutable objects, so a reader never sees
half of an update. A moving reference (a trajectory) is the exception, for speed: each tick,
before the controller reads the task, :meth:`Task.write_reference` copies a
:class:`ReferenceSample` (position, velocity, acceleration) into the reference's own arrays,
without allocating, on the thread that runs the tick.

Everything the configuration needs to know about a task *type* is on its class (the `type`
string, its extra parameters, gain and target sizes, how to read and check a target, how to
take the target from the current state, which message kind streams it), so that
:mod:`wbc_control.tasks.registry` only maps the `type` string to the class.
"""

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from wbc_control.exceptions import InvalidShape, InvalidTaskConfig, InvalidValue
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks.integral import DEFAULT_MAX_INTEGRAL, IntegralAction
from wbc_control.tasks.pd_law import PDGains, as_axis_vector, check_max_error

if TYPE_CHECKING:
    from wbc_control.model.reach import Reach
    from wbc_control.model.robot_model import RobotModel

__all__ = [
    'PDGains',
    'ReferenceSample',
    'Task',
    'TaskSpecLike',
    'TaskTerms',
    'as_axis_vector',
    'as_slice',
    'check_max_error',
    'parse_frame',
]


class TaskTerms(NamedTuple):
    """One task's quantities at the current tick (task coordinates, world axes)."""

    # Valid for the tick they were computed at: arrays may be views of the state's buffers.
    jacobian: np.ndarray  # (k, nv)
    drift: np.ndarray  # (k,) J̇ v
    error: np.ndarray  # (k,) e, target minus current
    velocity: np.ndarray  # (k,) J v
    desired_acceleration: np.ndarray  # (k,) ẍ*


def as_slice(indices: np.ndarray) -> slice | np.ndarray:
    """A contiguous ascending index array as the equivalent slice, else the array itself.

    Basic (slice) indexing costs a fraction of fancy indexing on the small per-tick vectors.
    """
    if indices.size and np.array_equal(indices, np.arange(indices[0], indices[0] + indices.size)):
        return slice(int(indices[0]), int(indices[0]) + indices.size)
    return indices


class TaskSpecLike(Protocol):
    """What :meth:`Task.from_spec` reads of a validated task configuration.

    Also, where present: `max_error`, `ki` and `max_integral` (defaults: none).
    """

    kp: np.ndarray
    kd: np.ndarray | None
    target: np.ndarray | None
    options: Mapping[str, object]
    max_error: float


class ReferenceSample:
    """Preallocated buffers for one reference sample: what a trajectory writes each tick.

    Attributes:
        position: (p,) positions: x, y, z (COM, frame position, frame pose) or joint positions
            in actuated order (joint posture); empty for an orientation.
        rotation: (3, 3) rotation matrix in the world (orientation and pose), else None.
        velocity: (k,) ẋ_ref, world axes; a pose stacks (linear, angular).
        acceleration: (k,) ẍ_ref, like `velocity`.
    """

    def __init__(self, positions: int, rotation: bool, rates: int) -> None:
        self.position = np.zeros(positions)
        self.rotation = np.eye(3) if rotation else None
        self.velocity = np.zeros(rates)
        self.acceleration = np.zeros(rates)


class Task(ABC):
    """An operational-space task of fixed dimension.

    Class attributes (per task type):
        TYPE: the value of parameter `tasks.<name>.type` that selects the class.
        FIELDS: the parameters `tasks.<name>.<field>` the type takes besides type, priority,
            kp, kd, target and weight; they are passed to the constructor by name.
        MESSAGE: what `~/<name>/target` carries: 'point' (x, y, z), 'pose' (x, y, z and a
            quaternion x, y, z, w) or 'joint_state' (names and positions).
        TRAJECTORY: what a trajectory of the task moves (the layout of its
            :class:`ReferenceSample`): 'linear' (x, y, z), 'rotation', 'pose' (both) or
            'joint' (every actuated joint).
    """

    TYPE: ClassVar[str]
    FIELDS: ClassVar[tuple[str, ...]] = ()
    #: When the Jacobian is a selection of velocity columns (row i is the unit row of
    #: column `jacobian_columns[i]`, as for a joint posture), those columns, so that a caller
    #: can take J A Jᵀ as A[cols, cols] instead of a dense product; None: a general Jacobian.
    jacobian_columns: slice | np.ndarray | None = None
    MESSAGE: ClassVar[str] = 'point'
    TRAJECTORY: ClassVar[str] = 'linear'
    #: Where the task's frame can be (fixed base, `wbc_control.model.reach`); None: no bound.
    reach: 'Reach | None' = None

    def __init__(self, dim: int, gains: PDGains) -> None:
        cls = type(self)
        if cls.compute is Task.compute and cls.write_terms is Task.write_terms:
            raise TypeError(f'{cls.__name__} must define compute or write_terms')
        self.dim = dim
        self._gains = gains
        #: Built without a target: it holds the value measured at the first state.
        self.target_pending = False
        #: Counts the targets assigned (:meth:`assign_target`): a trajectory that sees it
        #: change knows a set-point replaced it.
        self.target_count = 0
        #: The integral term of the law (:mod:`wbc_control.tasks.integral`), off until a K_i.
        self.integral = IntegralAction(dim)
        self._integral_gains: tuple[np.ndarray, np.ndarray] | None = None

    def row_groups(self) -> tuple[int, ...]:
        """The sizes of the runs of rows that share a unit (one per frame task's part).

        The controller scales each group's rows by one factor, 1/√ of their mean mobility
        (`wbc_control.control.hierarchy.stack_problem`); they are the error's groups of the
        gains (a pose's position and orientation), else one group.
        """
        groups = self._gains.groups
        return groups if sum(groups) == self.dim else (self.dim,)

    @property
    def gains(self) -> PDGains:
        """The gains in force."""
        return self._gains

    def target_point(self) -> np.ndarray | None:
        """The point the task drives its frame to now, `(3,)`, for the reach check; None: none."""
        return None

    def beyond_reach(self) -> float:
        """How far the target point lies beyond the frame's reach (m; <= 0 or nan: within)."""
        point = self.target_point()
        if point is None or self.reach is None:
            return float('nan')
        return self.reach.beyond(point)

    def set_gains(self, kp: npt.ArrayLike, kd: npt.ArrayLike | None = None) -> None:
        """Replace both gains at once (the maximum error stays); on error the old gains stay."""
        old = self._gains
        self._gains = PDGains.create(kp, kd, self.gains_size, old.max_error, old.groups)

    def set_max_error(self, max_error: float) -> None:
        """Clip the error to `max_error` (0: no clipping); see the module docstring."""
        self._gains = self._gains.with_max_error(max_error)

    @property
    def gains_size(self) -> int:
        """Number of per-axis gain values this task takes."""
        return self.dim

    def set_integral_gains(self, ki: npt.ArrayLike, max_integral: npt.ArrayLike) -> None:
        """K_i (1/s³) and the bound of the integral term, scalars or per axis like kp.

        Raises:
            InvalidShape: not a scalar or one value per axis.
            InvalidValue: K_i negative, a bound not > 0, or not finite.
        """
        size = self.gains_size
        ki_axes = as_axis_vector(ki, size, 'ki')
        bound_axes = as_axis_vector(max_integral, size, 'max_integral')
        if (ki_axes < 0.0).any():
            raise InvalidValue(f'ki must be non-negative, got {ki_axes.tolist()}')
        if not (bound_axes > 0.0).all():
            raise InvalidValue(f'max_integral must be > 0, got {bound_axes.tolist()}')
        self.integral.set_gains(self.axis_rows(ki_axes), self.axis_rows(bound_axes))
        self._integral_gains = ki_axes, bound_axes

    @property
    def integral_gains(self) -> tuple[np.ndarray, np.ndarray]:
        """K_i and the integral bound per axis (the `ki`, `max_integral` parameters)."""
        if self._integral_gains is None:
            size = self.gains_size
            return np.zeros(size), np.full(size, DEFAULT_MAX_INTEGRAL)
        return self._integral_gains

    def axis_rows(self, values: np.ndarray) -> np.ndarray:
        """Per-axis gain values `(gains_size,)` as per-row values `(dim,)` (here the same)."""
        return values

    def compute(self, state: RobotState) -> TaskTerms:
        """Jacobian, drift, error, velocity and desired acceleration at the current tick.

        In new arrays, by :meth:`write_terms` (a task type defines one of the two).
        """
        dim = self.dim
        vectors = (np.empty(dim) for _ in range(4))
        terms = TaskTerms(np.empty((dim, state.v.shape[0])), *vectors)
        self.write_terms(state, self.prepare_terms(terms))
        return terms

    def prepare_terms(self, terms: TaskTerms) -> object:
        """Make `terms` (arrays of the task's rows that the caller keeps) ready for writing.

        Called once per set of arrays, outside the tick: a task writes here what never changes
        (a constant Jacobian or drift), and returns what its :meth:`write_terms` takes (by
        default `terms` itself).
        """
        return terms

    def write_terms(self, state: RobotState, terms: object) -> None:
        """Write the terms of :meth:`compute` into arrays made ready by :meth:`prepare_terms`.

        What the controller calls every tick. By default it copies what :meth:`compute`
        returns; the built-in types write in place instead.
        """
        for array, value in zip(terms, self.compute(state)):
            array[...] = value

    @abstractmethod
    def set_target(self, target: npt.ArrayLike) -> None:
        """Replace the reference; `target` is in the format of the `target` parameter."""

    @abstractmethod
    def target_from_state(self, state: RobotState) -> np.ndarray:
        """The target that holds the task where the robot is now (`target` parameter format)."""

    # Moving references (per tick, no allocation) -----------------------------------------

    def reference_sample(self) -> ReferenceSample:
        """New buffers in the layout :meth:`write_reference` reads (allocate once, reuse)."""
        return ReferenceSample(3, False, 3)

    def read_reference(self, sample: ReferenceSample) -> None:
        """Copy the reference in force (position, velocity, acceleration) into `sample`.

        Raises:
            InvalidTaskConfig: the task type takes no trajectory.
        """
        raise InvalidTaskConfig(f'a {self.TYPE} task takes no trajectory')

    def write_reference(self, sample: ReferenceSample) -> None:
        """Copy a trusted sample (finite, validated upstream) into the reference in force.

        With no allocation, in one call per tick; the task then no longer waits for a state to
        take its target from (:attr:`target_pending` is False).

        Raises:
            InvalidTaskConfig: the task type takes no trajectory.
        """
        raise InvalidTaskConfig(f'a {self.TYPE} task takes no trajectory')

    # Configuration of the type -----------------------------------------------------------

    @classmethod
    def gains_size_for(cls, robot: 'RobotModel') -> int:
        """Number of per-axis gain values the type takes on `robot`."""
        return 3

    @classmethod
    def target_size_for(cls, robot: 'RobotModel') -> int:
        """Number of values of the type's `target` parameter on `robot`."""
        return 3

    @classmethod
    def parse_field(cls, robot: 'RobotModel', field: str, values: Mapping[str, object]) -> object:
        """Validate one of :attr:`FIELDS` (`values`: every field given, None = unset).

        Raises:
            InvalidTaskConfig, InvalidValue, FrameNotFound: the reason, without the parameter.
        """
        if field == 'frame' and 'frame' in cls.FIELDS:
            return parse_frame(robot, cls.TYPE, values.get('frame'))
        raise InvalidTaskConfig(f'a {cls.TYPE} task takes no {field}')

    @classmethod
    def parse_target(cls, robot: 'RobotModel', target: np.ndarray) -> np.ndarray:
        """Check a target in the `target` parameter format: its size and finiteness.

        Raises:
            InvalidShape: wrong number of values.
            InvalidValue: non-finite values (subclasses: quaternions, joint limits).
        """
        size = cls.target_size_for(robot)
        if target.shape != (size,):
            raise InvalidShape(
                f'target of a {cls.TYPE} task needs {size} values, got {target.size}'
            )
        return as_axis_vector(target, size, 'target')

    @classmethod
    def placeholder_target(cls, robot: 'RobotModel') -> np.ndarray:
        """A valid target to build the task with until the first state gives the real one."""
        return np.zeros(cls.target_size_for(robot))

    @classmethod
    def from_spec(cls, robot: 'RobotModel', spec: TaskSpecLike) -> 'Task':
        """The task of a validated configuration (a placeholder target where it has none)."""
        target = cls.placeholder_target(robot) if spec.target is None else spec.target
        task = cls(robot, target=target, kp=spec.kp, kd=spec.kd, **spec.options)
        task.target_pending = spec.target is None
        task.set_max_error(getattr(spec, 'max_error', 0.0))
        ki = getattr(spec, 'ki', 0.0)
        task.set_integral_gains(ki, getattr(spec, 'max_integral', DEFAULT_MAX_INTEGRAL))
        return task

    # Targets at runtime ------------------------------------------------------------------

    def assign_target(self, target: npt.ArrayLike) -> None:
        """Replace the target (parameter format); the task no longer waits for a state.

        The integral term starts over: the offset it held was the old target's.
        """
        self.set_target(target)
        self.target_pending = False
        self.target_count += 1
        self.integral.reset()

    def set_target_from_state(self, state: RobotState) -> np.ndarray:
        """Hold the task where the robot is now (pink's `set_target_from_configuration`).

        Not a set-point (:attr:`target_count` unchanged): a trajectory received before goes on.
        """
        target = self.target_from_state(state)
        self.set_target(target)
        self.target_pending = False
        return target

    def target_from_message(self, robot: 'RobotModel', message: object) -> np.ndarray:
        """The new target from a decoded `~/<name>/target` message of kind :attr:`MESSAGE`.

        Raises:
            InvalidShape, InvalidValue: the message does not make a valid target.
        """
        return self.parse_target(robot, np.asarray(message, dtype=float))


def parse_frame(robot: 'RobotModel', task_type: str, value: object) -> str:
    """The frame of a frame task; FrameNotFound lists the model's frames.

    Raises:
        InvalidTaskConfig: no frame, or one no joint moves (welded to the world: on a fixed
            base the root link and the links fixed to it), which a task could never move.
    """
    if value is None or value == '':
        raise InvalidTaskConfig(f'a {task_type} task needs a frame')
    if not isinstance(value, str):
        raise InvalidValue(f'frame must be a string, got {value!r}')
    if robot.model.frames[robot.frame_id(value)].parentJoint == 0:
        raise InvalidTaskConfig(
            f"{task_type} task: frame '{value}' is fixed to the world (no joint moves it), so "
            'the task could never move it'
        )
    return value
