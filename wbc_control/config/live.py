"""Live parameter changes: validated as one batch first, applied after (all or nothing).

Live are the parameters the schema marks `read_only: false`: the task fields kp, kd, target,
weight, max_error, active, ki and max_integral, `contacts`, `payload.*` (the new payload is
`LiveUpdate.settings.payload`, which the controller loop ramps in:
:meth:`~wbc_control.control.loop.controller_loop.ControllerLoop.set_payload`), and the settings of
:data:`~wbc_control.config.settings.LIVE_SETTINGS`.

The node validates a `ros2 param set` batch in its on-set callback with
:func:`plan_live_update` (any error refuses the whole batch and names the parameter) and applies
the plan in its post-set callback with :func:`apply_live_update`, which cannot fail.
"""

from collections.abc import Mapping
from dataclasses import replace
from typing import NamedTuple

from wbc_control.config._coerce import parameter_errors, scalar
from wbc_control.config.payload import PAYLOAD_PARAMETERS, parse_payload, payload_values
from wbc_control.config.settings import (
    ControllerSettings,
    parse_live_contacts,
    update_settings,
)
from wbc_control.config.tasks import (
    LIVE_TASK_FIELDS,
    TaskSpec,
    parse_integral,
    parse_kd,
    parse_kp,
    parse_target,
    task_fields,
    task_specs,
)
from wbc_control.control.contact.contacts import Contact
from wbc_control.control.prioritized_controller import PrioritizedController, validate_weight
from wbc_control.exceptions import InvalidTaskConfig, InvalidValue
from wbc_control.model.robot_model import RobotModel
from wbc_control.tasks.task import check_max_error


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
        name, field_name = split_task_parameter(parameter)
        if name not in specs:
            raise InvalidTaskConfig(
                f'{parameter}: no task named {name!r}; tasks: {", ".join(specs)}'
            )
        kind = specs[name].type
        if field_name not in ('type', *task_fields(kind)):
            raise InvalidTaskConfig(f'{parameter}: a {kind} task has no {field_name}')
        if field_name not in LIVE_TASK_FIELDS:
            raise InvalidTaskConfig(
                f'{parameter} is structural and read-only at runtime; restart the node to '
                'change it'
            )
        grouped.setdefault(name, {})[field_name] = value
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
    for name in ('target', 'weight'):
        if name in changes and changes[name] is None:
            with parameter_errors(f'{prefix}.{name}'):
                raise InvalidValue(f'a {name} cannot be unset at runtime')
    if 'target' in changes:
        with parameter_errors(f'{prefix}.target'):
            target = parse_target(robot, spec.type, changes['target'])
    if 'weight' in changes:
        with parameter_errors(f'{prefix}.weight'):
            weight = validate_weight(spec.name, scalar(changes['weight'], 'weight'))
    max_error, active, ki, max_integral = spec.max_error, spec.active, spec.ki, spec.max_integral
    for name in ('ki', 'max_integral'):
        if name in changes:
            values = {'ki': ki, 'max_integral': max_integral, name: changes[name]}
            with parameter_errors(f'{prefix}.{name}'):
                ki, max_integral = parse_integral(values['ki'], values['max_integral'], size)
    if 'max_error' in changes:
        with parameter_errors(f'{prefix}.max_error'):
            max_error = check_max_error(changes['max_error'])
    if 'active' in changes:
        with parameter_errors(f'{prefix}.active'):
            if not isinstance(changes['active'], bool):
                raise InvalidValue(f'must be true or false, got {changes["active"]!r}')
        active = changes['active']
    new_spec = TaskSpec(
        spec.name,
        spec.type,
        spec.priority,
        kp,
        kd,
        target,
        weight,
        spec.options,
        max_error,
        active,
        ki,
        max_integral,
    )
    return TaskUpdate(new_spec, frozenset(changes))


def apply_task_update(controller: PrioritizedController, update: TaskUpdate) -> None:
    """Apply a validated update: the gains (kp and kd together), target and weight."""
    spec, fields = update.spec, update.fields
    task = controller.task(spec.name)
    if fields & {'kp', 'kd'}:
        task.set_gains(spec.kp, spec.kd)
    if 'target' in fields:
        task.assign_target(spec.target)
    if 'weight' in fields:
        controller.set_weight(spec.name, spec.weight)
    if 'max_error' in fields:
        task.set_max_error(spec.max_error)
    if 'active' in fields:
        controller.set_active(spec.name, spec.active)
    if fields & {'ki', 'max_integral'}:
        task.set_integral_gains(spec.ki, spec.max_integral)


class LiveUpdate(NamedTuple):
    """A validated batch of live changes."""

    settings: ControllerSettings  # the settings after the change
    tasks: tuple[TaskUpdate, ...]
    contacts: tuple[Contact, ...] | None = None  # the new contact set, None: unchanged


def plan_live_update(
    robot: RobotModel,
    controller: PrioritizedController,
    settings: ControllerSettings,
    changes: Mapping[str, object],
) -> LiveUpdate:
    """Validate a batch (parameter name -> value); the tasks' state is read from `controller`.

    Raises:
        InvalidTaskConfig: a parameter that is not live, or an unknown task or field.
        InvalidValue, InvalidShape: a value fails validation.
    """
    task_changes = {name: value for name, value in changes.items() if name.startswith('tasks.')}
    payload_changes = {name: changes[name] for name in PAYLOAD_PARAMETERS if name in changes}
    setting_changes = {
        name: value
        for name, value in changes.items()
        if name not in task_changes and name not in payload_changes and name != 'contacts'
    }
    updates = plan_task_updates(robot, task_specs(controller), task_changes)
    contacts = None
    if 'contacts' in changes:
        known = controller.stacks.known_contacts
        contacts = parse_live_contacts(robot, changes['contacts'], known)
    settings = update_settings(settings, setting_changes)
    if payload_changes:
        payload = parse_payload(robot, payload_values(settings.payload) | payload_changes)
        settings = replace(settings, payload=payload)
    return LiveUpdate(settings, updates, contacts)


def apply_live_update(controller: PrioritizedController, update: LiveUpdate) -> None:
    """Apply a planned batch to the controller (the caller keeps `update.settings`)."""
    for task_update in update.tasks:
        apply_task_update(controller, task_update)
    settings = update.settings
    controller.singular_value_threshold = settings.singular_value_threshold
    controller.friction_coefficient = settings.friction_coefficient
    controller.switching.contact_time = settings.contact_transition_time
    controller.switching.task_time = settings.task_transition_time
    if update.contacts is not None:
        controller.set_contacts(update.contacts)
