"""The controller node's parameters, declared from its schema and validated by the config layer.

Every parameter comes from ``wbc_controller_parameters.yaml``; the robot fills in the defaults
that depend on it (all actuated joints, the URDF root link). `tasks.<name>.*` is declared for
the names in `task_names`, with the fields of each task's type. Any parameter the user gave that
is not declared then (a typo, a field the type does not take, a task not in `task_names`) stops
the start-up with one line naming it and the closest declared name.
"""

from typing import NamedTuple

from rclpy.node import Node

from wbc_control.config import (
    ControllerSettings,
    TaskSpec,
    check_task_names,
    parse_contacts,
    parse_controller_settings,
    parse_task,
    robot_defaults,
    task_class,
    task_fields,
    unknown_task_parameters,
)
from wbc_control.config.schema import ParameterSchema, unknown_parameter_message
from wbc_control.control.contact.contacts import Contact
from wbc_control.exceptions import StartupError
from wbc_control.model.robot_model import RobotModel
from wbc_control.ros.parameters import check_overrides, declare, declare_group, given_parameters


class ControllerParameters(NamedTuple):
    """The validated start-up configuration of the controller node."""

    settings: ControllerSettings
    contacts: tuple[Contact, ...]
    tasks: tuple[TaskSpec, ...]


def declare_controller_parameters(
    node: Node, robot: RobotModel, schema: ParameterSchema
) -> ControllerParameters:
    """Declare every parameter of `schema` on `node` and validate them.

    Raises:
        StartupError: a parameter given but not declared.
        WbcError: a value the configuration refuses (the message names the parameter).
    """
    defaults = robot_defaults(robot)
    values = {spec.name: declare(node, spec, default=defaults.get(spec.name)) for spec in schema}
    settings = parse_controller_settings(robot, values)
    contacts = parse_contacts(robot, values['contacts'], values['contact_types'])
    types = {}
    for name in check_task_names(values['task_names']):
        value = declare_group(node, schema, 'tasks', name, ['type'])['type']
        types[name] = task_class(name, value).TYPE
    for unlisted in unknown_task_parameters(types, given_parameters(node)):
        closest = schema.closest(unlisted, schema.names({'tasks': types}))
        message = unknown_parameter_message(unlisted, closest)
        raise StartupError(f'{message} (tasks.<name>.* needs the name in task_names)')
    tasks = tuple(
        parse_task(robot, name, {'type': kind, **_declare_task(node, schema, name, kind)})
        for name, kind in types.items()
    )
    check_overrides(node, schema)
    return ControllerParameters(settings, contacts, tasks)


def _declare_task(node: Node, schema: ParameterSchema, name: str, kind: str) -> dict:
    return declare_group(node, schema, 'tasks', name, task_fields(kind))
