"""Task parameters -> validated task specs -> tasks, and the specs in force read back.

Parameters of one task ``<name>`` are ``tasks.<name>.<field>``: ``type`` (a key of
:data:`~wbc_control.tasks.registry.TASK_TYPES`), ``priority``, ``kp``, ``kd``, ``target``,
``weight`` and the type's own fields (its class's ``FIELDS``, e.g. ``frame``). Names, types,
defaults and which fields are live come from the schema (``wbc_controller_parameters.yaml``);
what a type accepts comes from its class. Errors name the parameter at fault, e.g.
``tasks.hand.kp: kp must be non-negative, got [-1.0, ...]``.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
import re

import numpy as np

from wbc_control.config._coerce import as_floats, duplicates, parameter_errors, scalar, vector
from wbc_control.config.schema import load_schema, unknown_parameter_message
from wbc_control.control.prioritized_controller import (
    PrioritizedController,
    TaskEntry,
    validate_weight,
)
from wbc_control.exceptions import InvalidTaskConfig, InvalidValue
from wbc_control.model.robot_model import RobotModel
from wbc_control.tasks.integral import DEFAULT_MAX_INTEGRAL
from wbc_control.tasks.registry import TASK_TYPES
from wbc_control.tasks.task import PDGains, Task, check_max_error

#: Fields every task type takes besides `type` (a type adds its class's FIELDS).
COMMON_FIELDS = (
    'priority',
    'kp',
    'kd',
    'target',
    'weight',
    'max_error',
    'active',
    'ki',
    'max_integral',
)
TASK_NAME_PATTERN = re.compile(r'[A-Za-z][A-Za-z0-9_]*')
_SCHEMA = load_schema('wbc_controller')
_TASK_SCHEMA = _SCHEMA.maps['tasks']
#: Task fields that can change at runtime (the schema's read_only: false).
LIVE_TASK_FIELDS = frozenset(name for name, spec in _TASK_SCHEMA.fields.items() if spec.live)


@dataclass(frozen=True)
class TaskSpec:
    """One task's validated configuration.

    Attributes:
        name: task name (also the target topic `~/<name>/target`).
        type: a key of the task registry.
        priority: level, 0 = highest.
        kp: proportional gain per axis, `(gains_size,)`.
        kd: derivative gain per axis, or None for critical damping 2 √kp.
        target: target in the `target` parameter's format, or None: hold the value measured
            at the first joint state.
        weight: weight within the level.
        options: the type's own fields (e.g. frame), passed to its constructor by name.
        max_error: the error K_p acts on is clipped to this norm (0: none).
        active: the task is on (off: faded out over `task_transition_time`).
        ki: integral gain per axis, `(gains_size,)` (zeros: no integral action).
        max_integral: bound of the integral term per axis, `(gains_size,)`.
    """

    name: str
    type: str
    priority: int
    kp: np.ndarray
    kd: np.ndarray | None
    target: np.ndarray | None
    weight: float = 1.0
    options: Mapping[str, object] = field(default_factory=dict)
    max_error: float = 0.0
    active: bool = True
    ki: np.ndarray | float = 0.0
    max_integral: np.ndarray | float = DEFAULT_MAX_INTEGRAL

    @property
    def gains(self) -> PDGains:
        """The PD gains in force (critical damping filled in)."""
        return PDGains.create(self.kp, self.kd, self.kp.shape[0])


def task_fields(task_type: str) -> tuple[str, ...]:
    """Every field (besides `type`) a registered task type takes."""
    return (*TASK_TYPES[task_type].FIELDS, *COMMON_FIELDS)


def task_class(name: str, value: object) -> type[Task]:
    """The class of `tasks.<name>.type`."""
    with parameter_errors(f'tasks.{name}.type'):
        valid = ', '.join(TASK_TYPES)
        if value is None or value == '':
            raise InvalidTaskConfig(f'required; one of {valid}')
        if value not in TASK_TYPES:
            raise InvalidTaskConfig(f'unknown task type {value!r}; valid types: {valid}')
    return TASK_TYPES[value]


def parse_kp(value: object, size: int) -> np.ndarray:
    """Proportional gain: required, scalar or `size` values, finite and non-negative."""
    if value is None:
        raise InvalidValue(f'kp is required (a scalar or {size} values)')
    return PDGains.create(vector(value, size, 'kp'), None, size).kp


def parse_kd(value: object, size: int) -> np.ndarray | None:
    """Derivative gain: None (critical damping) or scalar / `size` non-negative values."""
    if value is None:
        return None
    return PDGains.create(np.zeros(size), vector(value, size, 'kd'), size).kd


def parse_integral(ki: object, max_integral: object, size: int) -> tuple[np.ndarray, np.ndarray]:
    """K_i (scalar or `size` values >= 0) and the bound of the integral term (> 0).

    Raises:
        InvalidValue, InvalidShape: the message names `ki` or `max_integral`.
    """
    ki_axes = vector(ki, size, 'ki')
    if (ki_axes < 0.0).any():
        raise InvalidValue(f'ki must be non-negative, got {ki_axes.tolist()}')
    bound = vector(max_integral, size, 'max_integral')
    if not (bound > 0.0).all():
        raise InvalidValue(f'max_integral must be > 0, got {bound.tolist()}')
    return ki_axes, bound


def parse_target(robot: RobotModel, task_type: str, value: object) -> np.ndarray:
    """A target in the `target` parameter format of a task type (checked by its class)."""
    return TASK_TYPES[task_type].parse_target(robot, as_floats(value, 'target'))


def _schema_value(name: str, field_name: str, value: object) -> object:
    """A field checked by the schema (type and bounds), or the schema's default where unset."""
    spec = _TASK_SCHEMA.fields[field_name]
    return spec.default if value is None else spec.check(value, f'tasks.{name}.{field_name}')


def parse_task(robot: RobotModel, name: str, values: Mapping[str, object]) -> TaskSpec:
    """Validate the parameters of one task (`values`: field -> value, None or absent = unset).

    Raises:
        InvalidTaskConfig, InvalidValue, InvalidShape, FrameNotFound: the message starts with
            the parameter at fault (`tasks.<name>.<field>`).
    """
    check_task_name(name)
    cls = task_class(name, values.get('type'))
    fields = task_fields(cls.TYPE)
    unused = sorted(f for f, v in values.items() if f not in ('type', *fields) and v is not None)
    if unused:
        raise InvalidTaskConfig(
            f'tasks.{name}: a {cls.TYPE} task takes no {", ".join(unused)} '
            f'(its fields: type, {", ".join(fields)})'
        )
    prefix = f'tasks.{name}'
    options = {}
    for option in cls.FIELDS:
        with parameter_errors(f'{prefix}.{option}'):
            options[option] = cls.parse_field(robot, option, values)
    size = cls.gains_size_for(robot)
    with parameter_errors(f'{prefix}.kp'):
        kp = parse_kp(values.get('kp'), size)
    with parameter_errors(f'{prefix}.kd'):
        kd = parse_kd(values.get('kd'), size)
    target = None
    if values.get('target') is not None:
        with parameter_errors(f'{prefix}.target'):
            target = cls.parse_target(robot, as_floats(values['target'], 'target'))
    priority = _schema_value(name, 'priority', values.get('priority'))
    weight = _TASK_SCHEMA.fields['weight'].default
    if values.get('weight') is not None:
        with parameter_errors(f'{prefix}.weight'):
            weight = validate_weight(name, scalar(values['weight'], 'weight'))
    max_error = _schema_value(name, 'max_error', values.get('max_error'))
    with parameter_errors(f'{prefix}.max_error'):
        max_error = check_max_error(max_error)
    active = _schema_value(name, 'active', values.get('active'))
    ki_value = _schema_value(name, 'ki', values.get('ki'))
    with parameter_errors(f'{prefix}.ki'):
        ki = parse_integral(ki_value, DEFAULT_MAX_INTEGRAL, size)[0]
    bound_value = _schema_value(name, 'max_integral', values.get('max_integral'))
    with parameter_errors(f'{prefix}.max_integral'):
        bound = parse_integral(0.0, bound_value, size)[1]
    return TaskSpec(
        name, cls.TYPE, priority, kp, kd, target, weight, options, max_error, active, ki, bound
    )


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
        repeated = duplicates(names)
        if repeated:
            raise InvalidTaskConfig(f'duplicate task names: {", ".join(repeated)}')
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
        Parameters of tasks that are not in `task_names` (the node refuses to start on them).

    Raises:
        InvalidTaskConfig: a listed task has a field its type does not take (a typo); the
            message names the closest field.
    """
    fields = {name: ('type', *task_fields(kind)) for name, kind in task_types.items()}
    unlisted = []
    for parameter in parameter_names:
        parts = parameter.split('.')
        if parts[0] != 'tasks':
            continue
        if len(parts) != 3 or parts[1] not in fields:
            unlisted.append(parameter)
        elif parts[2] not in fields[parts[1]]:
            taken = [f'tasks.{parts[1]}.{name}' for name in fields[parts[1]]]
            hint = unknown_parameter_message(parameter, _SCHEMA.closest(parameter, taken))
            raise InvalidTaskConfig(
                f'{parameter}: unknown field; tasks.{parts[1]} takes '
                f'{", ".join(fields[parts[1]])} ({hint})'
            )
    return tuple(unlisted)


def build_entries(robot: RobotModel, specs: Iterable[TaskSpec]) -> list[TaskEntry]:
    """The controller's task list (tasks without a target wait for the first state)."""
    return [
        TaskEntry(
            spec.name,
            TASK_TYPES[spec.type].from_spec(robot, spec),
            spec.priority,
            spec.weight,
            spec.active,
        )
        for spec in specs
    ]


def task_specs(controller: PrioritizedController) -> dict[str, TaskSpec]:
    """The specs in force, read back from the controller (gains, weight; not the target)."""
    specs = {}
    for entry in controller.entries:
        gains = entry.task.gains
        kd = None if gains.critically_damped else gains.kd
        weight = controller.weight(entry.name)
        specs[entry.name] = TaskSpec(
            entry.name, entry.task.TYPE, entry.priority, gains.kp, kd, None, weight
        )
        ki, max_integral = entry.task.integral_gains
        specs[entry.name] = replace(
            specs[entry.name],
            max_error=gains.max_error,
            active=controller.active(entry.name),
            ki=ki,
            max_integral=max_integral,
        )
    return specs
