"""Task and controller configuration from plain parameter values (no ROS needed).

The controller node reads its parameters as plain Python values (numbers, lists, strings;
``None`` for "not set") and hands them to this module, which validates them and builds the
core objects. Start-up and live updates (``ros2 param set``) share the same validators, so a
value is accepted or refused for the same reason on both paths.

Parameters of one task ``<name>`` are ``tasks.<name>.<field>``:

==========  ================================================================  ==========
field       meaning                                                           at runtime
==========  ================================================================  ==========
type        frame_position | frame_orientation | frame_pose | com |            read-only
            joint_posture
frame       frame the task drives (frame_* types only)                         read-only
priority    level, 0 = highest (default 0)                                     read-only
kp          proportional gain, scalar or one value per axis (required)         live
kd          derivative gain, scalar or per axis; unset = critical damping      live
            kd = 2 √kp
target      see below; unset = hold the value measured at the first joint      live
            state
weight      weight within its level, > 0 (default 1)                           live
constraint  frame_position only: point (default) | line | plane                read-only
axis        frame_position only: line direction / plane normal (world axes)    read-only
==========  ================================================================  ==========

Targets, all in the world frame (SI units, quaternions x, y, z, w):
frame_position and com take x, y, z (for line / plane: a point on the line / plane);
frame_orientation a quaternion; frame_pose x, y, z and a quaternion; joint_posture one
position per actuated joint in model order. Gains have 3 values per axis for frame_position
(world x, y, z, whatever the constraint), frame_orientation and com, 6 for frame_pose
(x, y, z, rx, ry, rz) and one per actuated joint for joint_posture.

Rigid contacts (parameters `contacts`, `contact_types`, `friction_coefficient`) are the top
priority level of the controller
(:mod:`wbc_control.control.contacts`); a floating-base robot needs at
least one. Each contact is a frame of the model and a type, `surface` (6 constrained
directions: a foot sole) or `point` (3: a ball foot); no types at all means every contact is a
surface contact.

Errors are the typed errors of :mod:`wbc_control.exceptions`; their message starts with the
parameter at fault, e.g. ``tasks.hand.kp: kp must be non-negative, got [-1.0, ...]``.
"""

import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
import re
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from wbc_control.control.contacts import Contact, base_contact_forces, contact_jacobian
from wbc_control.control.prioritized_controller import (
    DEFAULT_FRICTION_COEFFICIENT,
    DEFAULT_SINGULAR_VALUE_THRESHOLD,
    PrioritizedController,
    TaskEntry,
    validate_threshold,
    validate_weight,
)
from wbc_control.exceptions import (
    InvalidShape,
    InvalidTaskConfig,
    InvalidValue,
    ModelError,
    WbcError,
)
from wbc_control.inputs.odometry import ODOM_PAIRINGS
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks import (
    ComTask,
    FrameOrientationTask,
    FramePoseTask,
    FramePositionTask,
    JointPostureTask,
    PDGains,
    TargetSet,
    Task,
)
from wbc_control.tasks.frame_orientation import rotation_from_quaternion
from wbc_control.tasks.frame_position import constrained_directions
from wbc_control.tasks.task import as_axis_vector

TASK_TYPES: tuple[str, ...] = (
    'frame_position',
    'frame_orientation',
    'frame_pose',
    'com',
    'joint_posture',
)
_COMMON_FIELDS = ('priority', 'kp', 'kd', 'target', 'weight')
#: The fields (besides `type`) each task type takes.
TASK_FIELDS: dict[str, tuple[str, ...]] = {
    'frame_position': ('frame', *_COMMON_FIELDS, 'constraint', 'axis'),
    'frame_orientation': ('frame', *_COMMON_FIELDS),
    'frame_pose': ('frame', *_COMMON_FIELDS),
    'com': _COMMON_FIELDS,
    'joint_posture': _COMMON_FIELDS,
}
#: Task fields that can change at runtime; every other field is structural (read-only).
LIVE_TASK_FIELDS = frozenset({'kp', 'kd', 'target', 'weight'})
TASK_NAME_PATTERN = re.compile(r'[A-Za-z][A-Za-z0-9_]*')
STALE_COMMANDS = ('zero', 'gravity')
#: Controller-level settings that can change at runtime.
LIVE_SETTINGS = frozenset({'singular_value_threshold', 'stale_command', 'friction_coefficient'})
#: Contact types the `contact_types` parameter takes.
CONTACT_TYPES = ('surface', 'point')
#: World frame (odometry frame_id) of a floating-base robot unless `world_frame` says otherwise.
DEFAULT_ODOM_FRAME = 'odom'
DEFAULT_JOINT_STATE_TIMEOUT_S = 0.1
DEFAULT_DIAGNOSTICS_RATE_HZ = 2.0
POSITION_LIMIT_TOLERANCE = 1e-6

_IDENTITY_XYZW = np.array([0.0, 0.0, 0.0, 1.0])


@contextmanager
def parameter_errors(parameter: str) -> Iterator[None]:
    """Prefix the message of any WbcError raised inside with the parameter's name."""
    try:
        yield
    except WbcError as error:
        error.args = (f'{parameter}: {error}',)
        raise


def numbers(value: object, what: str) -> np.ndarray:
    """A number or a list of numbers from a parameter value, as floats (bools and text refused).

    Raises:
        InvalidValue: the value is not numeric.
    """
    items = value if isinstance(value, list | tuple | array.array | np.ndarray) else [value]
    if any(isinstance(item, bool | np.bool_ | str | bytes) or item is None for item in items):
        raise InvalidValue(f'{what} must be a number or a list of numbers, got {value!r}')
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError) as error:
        raise InvalidValue(
            f'{what} must be a number or a list of numbers, got {value!r}'
        ) from error


def vector(value: object, size: int, what: str) -> np.ndarray:
    """A scalar (expanded) or exactly `size` finite numbers."""
    return as_axis_vector(numbers(value, what), size, what)


def scalar(value: object, what: str) -> float:
    """One finite number."""
    number = numbers(value, what)
    if number.ndim != 0 or not np.isfinite(number):
        raise InvalidValue(f'{what} must be one finite number, got {value!r}')
    return float(number)


def gains_size(robot: RobotModel, task_type: str) -> int:
    """Number of per-axis gain values a task type takes."""
    sizes = {'frame_pose': 6, 'joint_posture': robot.n_actuated}
    return sizes.get(task_type, 3)


def target_size(robot: RobotModel, task_type: str) -> int:
    """Number of target values a task type takes."""
    sizes = {'frame_orientation': 4, 'frame_pose': 7, 'joint_posture': robot.n_actuated}
    return sizes.get(task_type, 3)


@dataclass(frozen=True)
class TaskSpec:
    """One task's validated configuration.

    Attributes:
        name: task name (also the target topic `~/<name>/target`).
        type: one of :data:`TASK_TYPES`.
        priority: level, 0 = highest.
        kp: proportional gain per axis, `(gains_size,)`.
        kd: derivative gain per axis, or None for critical damping 2 √kp.
        target: target in the `target` parameter's format, or None: hold the value measured
            at the first joint state.
        weight: weight within the level.
        frame: frame name (frame_* types), else None.
        constraint: frame_position target set: point, line or plane.
        axis: line direction / plane normal for line and plane targets, else None.
    """

    name: str
    type: str
    priority: int
    kp: np.ndarray
    kd: np.ndarray | None
    target: np.ndarray | None
    weight: float = 1.0
    frame: str | None = None
    constraint: str = 'point'
    axis: np.ndarray | None = None

    @property
    def gains(self) -> PDGains:
        """The PD gains in force (critical damping filled in)."""
        return PDGains.create(self.kp, self.kd, self.kp.shape[0])


def task_type(name: str, value: object) -> str:
    """Validate `tasks.<name>.type`."""
    with parameter_errors(f'tasks.{name}.type'):
        if value is None or value == '':
            raise InvalidTaskConfig(f'required; one of {", ".join(TASK_TYPES)}')
        if value not in TASK_TYPES:
            raise InvalidTaskConfig(
                f'unknown task type {value!r}; valid types: {", ".join(TASK_TYPES)}'
            )
    return str(value)


def parse_kp(value: object, size: int) -> np.ndarray:
    """Proportional gain: required, scalar or `size` values, finite and non-negative."""
    if value is None:
        raise InvalidValue(f'kp is required (a scalar or {size} values)')
    return PDGains.create(vector(value, size, 'kp'), None, size).kp


def parse_kd(value: object, size: int) -> np.ndarray | None:
    """Derivative gain: None (critical damping) or scalar / `size` non-negative values."""
    if value is None:
        return None
    kd = vector(value, size, 'kd')
    return PDGains.create(np.zeros(size), kd, size).kd


def parse_target(robot: RobotModel, kind: str, value: object) -> np.ndarray:
    """A target in the format of `kind` (see the module docstring).

    Raises:
        InvalidShape: wrong number of values.
        InvalidValue: non-finite values, a quaternion that is not unit, or a posture outside
            the URDF position limits.
    """
    size = target_size(robot, kind)
    target = numbers(value, 'target')
    if target.shape != (size,):
        raise InvalidShape(f'target of a {kind} task needs {size} values, got {target.size}')
    target = as_axis_vector(target, size, 'target')
    if kind == 'frame_orientation':
        rotation_from_quaternion(target)
    elif kind == 'frame_pose':
        rotation_from_quaternion(target[3:])
    elif kind == 'joint_posture':
        check_posture_limits(robot, target)
    return target


def check_posture_limits(robot: RobotModel, positions: np.ndarray) -> None:
    """Refuse posture targets outside the URDF position limits, naming the joints."""
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


def parse_weight(value: object, name: str) -> float:
    """Weight within a level: finite and > 0 (default 1)."""
    if value is None:
        return 1.0
    return validate_weight(name, scalar(value, 'weight'))


def parse_priority(value: object) -> int:
    """Priority level: an integer >= 0 (default 0)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise InvalidValue(f'priority must be an integer >= 0, got {value!r}')
    return int(value)


def parse_frame(robot: RobotModel, kind: str, value: object) -> str:
    """Frame of a frame_* task; FrameNotFound lists the model's frames."""
    if value is None or value == '':
        raise InvalidTaskConfig(f'a {kind} task needs a frame')
    if not isinstance(value, str):
        raise InvalidValue(f'frame must be a string, got {value!r}')
    robot.frame_id(value)
    return value


def parse_constraint(value: object, axis_value: object) -> tuple[str, np.ndarray | None]:
    """Target set and axis of a frame_position task."""
    constraint = 'point' if value is None or value == '' else value
    valid = [target_set.value for target_set in TargetSet]
    if constraint not in valid:
        raise InvalidTaskConfig(f'constraint must be one of {", ".join(valid)}; got {value!r}')
    if constraint == 'point':
        if axis_value is not None:
            raise InvalidTaskConfig('axis is only used with constraint line or plane')
        return constraint, None
    if axis_value is None:
        raise InvalidTaskConfig(f'constraint {constraint} needs an axis (3 values)')
    axis = numbers(axis_value, 'axis')
    if axis.shape != (3,):
        raise InvalidShape(f'axis needs 3 values, got {axis.size}')
    constrained_directions(TargetSet(constraint), axis)
    return constraint, as_axis_vector(axis, 3, 'axis')


def parse_task(robot: RobotModel, name: str, values: Mapping[str, object]) -> TaskSpec:
    """Validate the parameters of one task (`values`: field -> value, None or absent = unset).

    Raises:
        InvalidTaskConfig, InvalidValue, InvalidShape, FrameNotFound: the message starts with
            the parameter at fault (`tasks.<name>.<field>`).
    """
    check_task_name(name)
    kind = task_type(name, values.get('type'))
    fields = TASK_FIELDS[kind]
    unused = sorted(
        f for f, v in values.items() if f != 'type' and f not in fields and v is not None
    )
    if unused:
        raise InvalidTaskConfig(
            f'tasks.{name}: a {kind} task takes no {", ".join(unused)} '
            f'(its fields: type, {", ".join(fields)})'
        )
    prefix = f'tasks.{name}'
    size = gains_size(robot, kind)
    frame, constraint, axis = None, 'point', None
    if 'frame' in fields:
        with parameter_errors(f'{prefix}.frame'):
            frame = parse_frame(robot, kind, values.get('frame'))
    if 'constraint' in fields:
        with parameter_errors(f'{prefix}.constraint'):
            constraint, axis = parse_constraint(values.get('constraint'), values.get('axis'))
    with parameter_errors(f'{prefix}.priority'):
        priority = parse_priority(values.get('priority'))
    with parameter_errors(f'{prefix}.kp'):
        kp = parse_kp(values.get('kp'), size)
    with parameter_errors(f'{prefix}.kd'):
        kd = parse_kd(values.get('kd'), size)
    target = None
    if values.get('target') is not None:
        with parameter_errors(f'{prefix}.target'):
            target = parse_target(robot, kind, values['target'])
    with parameter_errors(f'{prefix}.weight'):
        weight = parse_weight(values.get('weight'), name)
    return TaskSpec(name, kind, priority, kp, kd, target, weight, frame, constraint, axis)


def check_task_name(name: object) -> None:
    """Task names become topic and parameter name tokens: a letter, then letters, digits, _."""
    if not isinstance(name, str) or not TASK_NAME_PATTERN.fullmatch(name):
        raise InvalidTaskConfig(
            f'task name {name!r} is not valid: use a letter followed by letters, digits or _'
        )


def check_task_names(task_names: object) -> tuple[str, ...]:
    """`task_names`: a non-empty list of unique, valid names."""
    with parameter_errors('task_names'):
        if not task_names or isinstance(task_names, str):
            raise InvalidTaskConfig(
                'list the tasks to run, e.g. [hand, posture], and describe each under '
                'tasks.<name> (see config/panda_controller.yaml)'
            )
        names = tuple(task_names)
        for name in names:
            check_task_name(name)
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise InvalidTaskConfig(f'duplicate task names: {", ".join(duplicates)}')
    return names


def parse_tasks(
    robot: RobotModel, task_names: object, values: Mapping[str, Mapping[str, object]]
) -> tuple[TaskSpec, ...]:
    """Validate every task of `task_names`; `values[name]` holds that task's fields."""
    return tuple(
        parse_task(robot, name, values.get(name, {})) for name in check_task_names(task_names)
    )


def unknown_task_parameters(
    task_types: Mapping[str, str], parameter_names: Iterable[str]
) -> tuple[str, ...]:
    """Check the `tasks.*` parameter names a user gave against the configured tasks.

    Args:
        task_types: type of each task in `task_names`.
        parameter_names: every parameter name given (others than `tasks.*` are skipped).

    Returns:
        Parameters of tasks that are not in `task_names` (ignored; worth a warning).

    Raises:
        InvalidTaskConfig: a listed task has a field its type does not take (a typo).
    """
    fields = {name: ('type', *TASK_FIELDS[kind]) for name, kind in task_types.items()}
    ignored = []
    for parameter in parameter_names:
        parts = parameter.split('.')
        if parts[0] != 'tasks':
            continue
        if len(parts) != 3 or parts[1] not in fields:
            ignored.append(parameter)
        elif parts[2] not in fields[parts[1]]:
            raise InvalidTaskConfig(
                f'{parameter}: unknown field; tasks.{parts[1]} takes {", ".join(fields[parts[1]])}'
            )
    return tuple(ignored)


def placeholder_target(robot: RobotModel, kind: str) -> np.ndarray:
    """A target to construct a task whose real target is measured at the first joint state."""
    if kind == 'joint_posture':
        return robot.joint_positions(robot.neutral_configuration())
    if kind == 'frame_orientation':
        return _IDENTITY_XYZW.copy()
    if kind == 'frame_pose':
        return np.concatenate([np.zeros(3), _IDENTITY_XYZW])
    return np.zeros(3)


def build_task(robot: RobotModel, spec: TaskSpec) -> Task:
    """The core task object of a spec (a placeholder target where the spec has none)."""
    target = placeholder_target(robot, spec.type) if spec.target is None else spec.target
    kp, kd = spec.kp, spec.kd
    if spec.type == 'frame_position':
        return FramePositionTask(robot, spec.frame, target, kp, kd, spec.constraint, spec.axis)
    if spec.type == 'frame_orientation':
        return FrameOrientationTask(robot, spec.frame, target, kp, kd)
    if spec.type == 'frame_pose':
        return FramePoseTask(robot, spec.frame, target, kp, kd)
    if spec.type == 'com':
        return ComTask(robot, target, kp, kd)
    return JointPostureTask(robot, target, kp, kd)


def build_entries(robot: RobotModel, specs: Iterable[TaskSpec]) -> list[TaskEntry]:
    """The controller's task list."""
    return [
        TaskEntry(spec.name, build_task(robot, spec), spec.priority, spec.weight) for spec in specs
    ]


def measured_target(state: RobotState, spec: TaskSpec) -> np.ndarray:
    """The target that holds a task where the robot is now (the `target` parameter format)."""
    robot = state.robot
    if spec.type == 'com':
        return np.array(state.com)
    if spec.type == 'joint_posture':
        # Clipped so that the held posture is a valid target even if a joint reads a hair
        # beyond its limit.
        return np.clip(robot.joint_positions(state.q), *robot.position_limits)
    oMf = state.frame_placement(robot.frame_id(spec.frame))
    quaternion = pin.Quaternion(oMf.rotation).coeffs()  # x, y, z, w
    if spec.type == 'frame_orientation':
        return np.array(quaternion)
    if spec.type == 'frame_pose':
        return np.concatenate([oMf.translation, quaternion])
    return np.array(oMf.translation)


def merge_posture_target(
    robot: RobotModel,
    current: np.ndarray,
    names: Sequence[str],
    positions: Sequence[float],
) -> np.ndarray:
    """A posture target from a (possibly partial) JointState: named joints change, others stay.

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


class TaskUpdate(NamedTuple):
    """A validated live change of one task, ready to apply."""

    spec: TaskSpec  # the task's configuration after the change
    fields: frozenset[str]  # the changed fields, a subset of LIVE_TASK_FIELDS


def split_task_parameter(parameter: str) -> tuple[str, str]:
    """(task, field) of a `tasks.<task>.<field>` parameter name."""
    parts = parameter.split('.')
    if len(parts) != 3 or parts[0] != 'tasks':
        raise InvalidTaskConfig(f'{parameter}: not a tasks.<name>.<field> parameter')
    return parts[1], parts[2]


def plan_task_updates(
    robot: RobotModel, specs: Mapping[str, TaskSpec], changes: Mapping[str, object]
) -> tuple[TaskUpdate, ...]:
    """Validate a batch of live changes (`tasks.<name>.<field>` -> value) as a whole.

    Nothing is applied here: either every change is valid and the returned updates can be
    applied with :func:`apply_task_update` without any further check, or an error names the
    first offending parameter and the reason, and nothing must change.

    Raises:
        InvalidTaskConfig: unknown task, structural (read-only) or unknown field.
        InvalidValue, InvalidShape: a value fails validation.
    """
    grouped: dict[str, dict[str, object]] = {}
    for parameter, value in changes.items():
        name, field = split_task_parameter(parameter)
        if name not in specs:
            raise InvalidTaskConfig(
                f'{parameter}: no task named {name!r}; tasks: {", ".join(specs)}'
            )
        if field not in ('type', *TASK_FIELDS[specs[name].type]):
            raise InvalidTaskConfig(f'{parameter}: a {specs[name].type} task has no {field}')
        if field not in LIVE_TASK_FIELDS:
            raise InvalidTaskConfig(
                f'{parameter} is structural and read-only at runtime; restart the node to '
                'change it'
            )
        grouped.setdefault(name, {})[field] = value
    return tuple(_task_update(robot, specs[name], fields) for name, fields in grouped.items())


def _task_update(robot: RobotModel, spec: TaskSpec, changes: Mapping[str, object]) -> TaskUpdate:
    prefix = f'tasks.{spec.name}'
    size = spec.kp.shape[0]
    kp, kd, target, weight = spec.kp, spec.kd, spec.target, spec.weight
    if 'kp' in changes:
        with parameter_errors(f'{prefix}.kp'):
            kp = parse_kp(changes['kp'], size)
    if 'kd' in changes:
        with parameter_errors(f'{prefix}.kd'):
            kd = parse_kd(changes['kd'], size)
    if 'target' in changes:
        with parameter_errors(f'{prefix}.target'):
            if changes['target'] is None:
                raise InvalidValue('a target cannot be unset at runtime')
            target = parse_target(robot, spec.type, changes['target'])
    if 'weight' in changes:
        with parameter_errors(f'{prefix}.weight'):
            if changes['weight'] is None:
                raise InvalidValue('a weight cannot be unset at runtime')
            weight = parse_weight(changes['weight'], spec.name)
    new_spec = replace(spec, kp=kp, kd=kd, target=target, weight=weight)
    return TaskUpdate(new_spec, frozenset(changes))


def apply_task_update(controller: PrioritizedController, update: TaskUpdate) -> None:
    """Apply a validated update: the gains (kp and kd together), target and weight."""
    spec, fields = update.spec, update.fields
    task = controller.task(spec.name)
    if fields & {'kp', 'kd'}:
        task.set_gains(spec.kp, spec.kd)
    if 'target' in fields:
        task.set_target(spec.target)
    if 'weight' in fields:
        controller.set_weight(spec.name, spec.weight)


@dataclass(frozen=True)
class ControllerSettings:
    """Validated controller-level parameters.

    Attributes:
        command_joints: joints of the command, in its order.
        command_index: positions of `command_joints` in the actuated-joint order, `(n_cmd,)`.
        effort_limits: per actuated joint (N m or N; inf = none), `(n_act,)`.
        torque_rate_limits: per actuated joint (N m/s; inf = none), `(n_act,)`.
        joint_state_timeout: seconds without a valid joint state before the safe command.
        stale_command: safe command while stale: 'zero' or 'gravity' (:func:`holding_torque`
            at the last state).
        singular_value_threshold: ε of the regularized task-space inertia, in (0, 1).
        world_frame: frame_id accepted (besides '') for targets and odometry.
        diagnostics_rate: /diagnostics rate (Hz); 0 disables it.
        friction_coefficient: μ of the friction-cone check of contact forces.
        odom_pairing: how joint states and odometry make a tick (floating base), one of
            :data:`~wbc_control.inputs.odometry.ODOM_PAIRINGS`.
        base_frame: child_frame_id accepted (besides '') for odometry.
    """

    command_joints: tuple[str, ...]
    command_index: np.ndarray
    effort_limits: np.ndarray
    torque_rate_limits: np.ndarray
    joint_state_timeout: float
    stale_command: str
    singular_value_threshold: float
    world_frame: str
    diagnostics_rate: float
    friction_coefficient: float = DEFAULT_FRICTION_COEFFICIENT
    odom_pairing: str = 'latest'
    base_frame: str = ''


def root_link(robot: RobotModel) -> str:
    """Name of the URDF root link: the first body frame on the world (or free-flyer) joint."""
    root_joint = 1 if robot.floating_base else 0
    for frame in robot.model.frames:
        if frame.type == pin.FrameType.BODY and frame.parentJoint == root_joint:
            return frame.name
    return robot.model.frames[0].name


def default_settings(robot: RobotModel) -> dict[str, object]:
    """Default value of every controller-level setting (what the node declares)."""
    return {
        'command_joints': list(robot.joint_names),
        'effort_limits': None,
        'torque_rate_limit': 0.0,
        'joint_state_timeout': DEFAULT_JOINT_STATE_TIMEOUT_S,
        'stale_command': 'zero',
        'singular_value_threshold': DEFAULT_SINGULAR_VALUE_THRESHOLD,
        'world_frame': DEFAULT_ODOM_FRAME if robot.floating_base else root_link(robot),
        'diagnostics_rate': DEFAULT_DIAGNOSTICS_RATE_HZ,
        'friction_coefficient': DEFAULT_FRICTION_COEFFICIENT,
        'odom_pairing': 'latest',
        'base_frame': root_link(robot),
    }


def parse_contacts(robot: RobotModel, frames: object, types: object) -> tuple[Contact, ...]:
    """Validate `contacts` (frame names) and `contact_types` (same length, or empty: surface).

    Raises:
        InvalidTaskConfig, InvalidShape, FrameNotFound: the message starts with the parameter
            at fault and names the bad frames or types.
        ModelError: a floating base without contacts (its base is not actuated).
    """
    frames = _string_list(frames, 'contacts')
    kinds = _string_list(types, 'contact_types') or ['surface'] * len(frames)
    if robot.floating_base and not frames:
        raise ModelError(
            'floating_base: true needs contacts: the base is not actuated, so list the frames '
            'in rigid contact with the ground (e.g. contacts: [left_sole_link, right_sole_link])'
        )
    with parameter_errors('contacts'):
        duplicates = sorted({frame for frame in frames if frames.count(frame) > 1})
        if duplicates:
            raise InvalidTaskConfig(f'duplicate frames: {", ".join(duplicates)}')
        unknown = [repr(frame) for frame in frames if not robot.model.existFrame(frame)]
        if unknown:
            raise InvalidTaskConfig(
                f'frame(s) {", ".join(unknown)} not in the robot model; available frames: '
                f'{", ".join(robot.frame_names)}'
            )
    with parameter_errors('contact_types'):
        if len(kinds) != len(frames):
            raise InvalidShape(
                f'{len(kinds)} types for {len(frames)} contacts: give one type per contact '
                '(or none: all surface)'
            )
        bad = [
            f'{frame}: {kind!r}' for frame, kind in zip(frames, kinds) if kind not in CONTACT_TYPES
        ]
        if bad:
            raise InvalidTaskConfig(
                f'{", ".join(bad)}; each type must be one of {", ".join(CONTACT_TYPES)}'
            )
    return tuple(Contact.create(robot, frame, kind) for frame, kind in zip(frames, kinds))


def _string_list(value: object, parameter: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not all(isinstance(item, str) for item in value):
        raise InvalidValue(f'{parameter}: must be a list of strings, got {value!r}')
    return list(value)


def holding_torque(state: RobotState, contacts: Sequence[Contact]) -> np.ndarray:
    """The `gravity` safe command: torques that hold the state still, `(n_act,)`.

    Without contacts, g(q) of the actuated joints. With contacts, the actuated rows of
    g − Aᵀf where f are the contact forces that balance g on the base rows (the rule of
    :mod:`wbc_control.control.contacts`; f = 0 for a fixed base). For a robot standing on its
    feet this
    is what its legs must push to carry it at q̈ = 0, not g(q) of the joints alone, which
    would treat the legs as arms hanging from a fixed base.
    """
    robot = state.robot
    gravity = state.gravity
    if contacts:
        constraint = contact_jacobian(state, contacts)[0]  # (m, nv)
        forces = base_contact_forces(constraint, gravity, robot.base_nv).forces
        gravity = gravity - constraint.T.dot(forces)
    return gravity[robot.indices.v]


def parse_controller_settings(
    robot: RobotModel, values: Mapping[str, object]
) -> ControllerSettings:
    """Validate the controller-level settings; missing ones take :func:`default_settings`."""
    values = {**default_settings(robot), **{k: v for k, v in values.items() if v is not None}}
    with parameter_errors('command_joints'):
        command_joints = _command_joints(values['command_joints'])
        command_index = robot.joint_index(command_joints)
    with parameter_errors('effort_limits'):
        effort_limits = _effort_limits(robot, command_index, values['effort_limits'])
    with parameter_errors('torque_rate_limit'):
        rate_limits = _rate_limits(robot, command_index, values['torque_rate_limit'])
    with parameter_errors('joint_state_timeout'):
        timeout = scalar(values['joint_state_timeout'], 'joint_state_timeout')
        if timeout <= 0.0:
            raise InvalidValue(f'must be > 0 s, got {timeout}')
    with parameter_errors('diagnostics_rate'):
        diagnostics_rate = scalar(values['diagnostics_rate'], 'diagnostics_rate')
        if diagnostics_rate < 0.0:
            raise InvalidValue(f'must be >= 0 Hz (0 disables), got {diagnostics_rate}')
    world_frame = _frame_name(values['world_frame'], 'world_frame')
    base_frame = _frame_name(values['base_frame'], 'base_frame')
    with parameter_errors('odom_pairing'):
        if values['odom_pairing'] not in ODOM_PAIRINGS:
            raise InvalidValue(
                f'must be one of {", ".join(ODOM_PAIRINGS)}, got {values["odom_pairing"]!r}'
            )
    settings = ControllerSettings(
        command_joints,
        command_index,
        effort_limits,
        rate_limits,
        timeout,
        'zero',
        DEFAULT_SINGULAR_VALUE_THRESHOLD,
        world_frame,
        diagnostics_rate,
        DEFAULT_FRICTION_COEFFICIENT,
        values['odom_pairing'],
        base_frame,
    )
    live = {name: values[name] for name in LIVE_SETTINGS}
    return update_settings(settings, live)


def update_settings(
    settings: ControllerSettings, changes: Mapping[str, object]
) -> ControllerSettings:
    """Validate live changes of :data:`LIVE_SETTINGS` and return the new settings.

    Raises:
        InvalidTaskConfig: a setting that is not live.
        InvalidValue: a value fails validation.
    """
    updated = {}
    for name, value in changes.items():
        with parameter_errors(name):
            if name not in LIVE_SETTINGS:
                raise InvalidTaskConfig('read-only at runtime; restart the node to change it')
            if name == 'stale_command':
                if value not in STALE_COMMANDS:
                    raise InvalidValue(
                        f'must be one of {", ".join(STALE_COMMANDS)}, got {value!r}'
                    )
                updated[name] = value
            elif name == 'friction_coefficient':
                updated[name] = _friction_coefficient(value)
            else:
                updated[name] = validate_threshold(scalar(value, name))
    return replace(settings, **updated)


def _friction_coefficient(value: object) -> float:
    mu = scalar(value, 'friction_coefficient')
    if mu <= 0.0:
        raise InvalidValue(f'must be > 0, got {mu}')
    return mu


def _frame_name(value: object, parameter: str) -> str:
    with parameter_errors(parameter):
        if not isinstance(value, str) or not value:
            raise InvalidValue(f'must be a non-empty frame name, got {value!r}')
    return value


def _command_joints(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not value or not all(isinstance(v, str) for v in value):
        raise InvalidValue(f'must be a non-empty list of joint names, got {value!r}')
    names = tuple(value)
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise InvalidValue(f'duplicate joints: {", ".join(duplicates)}')
    return names


def _effort_limits(robot: RobotModel, command_index: np.ndarray, value: object) -> np.ndarray:
    limits = robot.effort_limits
    if value is None:
        return limits
    override = numbers(value, 'effort_limits')
    if override.size == 0:
        return limits
    override = np.broadcast_to(override, command_index.shape) if override.ndim == 0 else override
    if override.shape != command_index.shape:
        raise InvalidShape(
            f'needs one value per command joint ({command_index.size}) or a scalar, '
            f'got {override.size}'
        )
    if np.isnan(override).any() or (override <= 0.0).any():
        raise InvalidValue(f'must be > 0 (.inf for none), got {override.tolist()}')
    limits[command_index] = override
    return limits


def _rate_limits(robot: RobotModel, command_index: np.ndarray, value: object) -> np.ndarray:
    rates = numbers(value, 'torque_rate_limit')
    limits = np.full(robot.n_actuated, np.inf)
    if rates.size == 0:
        return limits
    if rates.ndim != 0 and rates.shape != command_index.shape:
        raise InvalidShape(
            f'needs a scalar or one value per command joint ({command_index.size}), '
            f'got {rates.size}'
        )
    if np.isnan(rates).any() or (rates < 0.0).any():
        raise InvalidValue(f'must be >= 0 (0 = no limit), got {rates.tolist()}')
    limits[command_index] = np.where(rates > 0.0, rates, np.inf)
    return limits
