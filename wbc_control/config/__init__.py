"""Configuration: parameter values -> validated controller settings, contacts and task specs.

The public face the nodes and tools use; the schema of every parameter is
``wbc_controller_parameters.yaml`` (read by :mod:`wbc_control.config.schema`).
"""

from wbc_control.config.live import (
    LiveUpdate,
    TaskUpdate,
    apply_live_update,
    apply_task_update,
    plan_live_update,
    plan_task_updates,
)
from wbc_control.config.settings import (
    LIVE_SETTINGS,
    ControllerSettings,
    parse_contacts,
    parse_controller_settings,
    robot_defaults,
    update_settings,
)
from wbc_control.config.tasks import (
    LIVE_TASK_FIELDS,
    TaskSpec,
    build_entries,
    check_task_names,
    parse_task,
    parse_tasks,
    task_class,
    task_fields,
    task_specs,
    unknown_task_parameters,
)

__all__ = [
    'LIVE_SETTINGS',
    'LIVE_TASK_FIELDS',
    'ControllerSettings',
    'LiveUpdate',
    'TaskSpec',
    'TaskUpdate',
    'apply_live_update',
    'apply_task_update',
    'build_entries',
    'check_task_names',
    'parse_contacts',
    'parse_controller_settings',
    'parse_task',
    'parse_tasks',
    'plan_live_update',
    'plan_task_updates',
    'robot_defaults',
    'task_class',
    'task_fields',
    'task_specs',
    'unknown_task_parameters',
    'update_settings',
]
