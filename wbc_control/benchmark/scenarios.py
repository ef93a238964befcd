"""Scenarios to time: a robot, a controller, and where they came from.

The built-in Panda and Talos scenarios start from the shipped params files (config/*.yaml);
any other scenario is read from a controller params file. Each controller is built by
:mod:`wbc_control.config` as the node builds it.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wbc_control.config.shipped import node_parameters, shipped_config, shipped_parameters
from wbc_control.control.prioritized_controller import PrioritizedController
from wbc_control.exceptions import ModelError
from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_model import RobotModel
from wbc_control.tasks import ComTask

CONTROLLER_NODE = 'wbc_controller'


@dataclass(frozen=True)
class Scenario:
    """A robot and a controller to time, and where they came from."""

    name: str
    robot: RobotModel
    controller: PrioritizedController
    source: str  # 'built-in' or the params file
    uses_com: bool


def example_robot(name: str) -> RobotModel:
    """One of example-robot-data's robots (:data:`EXAMPLE_ROBOTS`)."""
    path, floating_base = example_robot_urdf(name)
    return RobotModel.from_urdf_path(path, floating_base)


def panda_scenario() -> Scenario:
    """Panda as shipped (config/panda_controller.yaml): the hand's pose over a posture."""
    return config_scenario(shipped_config('panda_controller.yaml'), 'panda', name='panda')


def talos_scenario() -> Scenario:
    """Talos as shipped (config/talos_controller.yaml) with both hands: five tasks, two soles.

    The contacts on top, the COM (0), the torso and both hands (1), the posture (2).
    """
    hands = {
        f'{side}_hand': {
            'type': 'frame_position',
            'frame': f'gripper_{side}_base_link',
            'priority': 1,
            'kp': 40.0,
            'target': [0.3, sign * 0.3, 1.0],
        }
        for side, sign in (('left', 1.0), ('right', -1.0))
    }
    parameters = shipped_parameters(
        'talos_controller.yaml',
        CONTROLLER_NODE,
        {'task_names': ['com', 'torso', 'left_hand', 'right_hand', 'posture'], 'tasks': hands},
    )
    return parameters_scenario(parameters, 'talos', 'talos', 'config/talos_controller.yaml')


BUILT_IN_SCENARIOS: dict[str, Callable[[], Scenario]] = {
    'panda': panda_scenario,
    'talos': talos_scenario,
}


def config_scenario(
    path: Path, robot_name: str | None = None, name: str | None = None
) -> Scenario:
    """A scenario from a controller params file: the controller `wbc_controller` builds from it.

    The robot is the file's `robot_description` or `urdf_path`, else the example robot
    `robot_name`.

    Raises:
        ModelError: the file has no section for `wbc_controller`, or names no robot.
    """
    parameters = node_parameters(path, CONTROLLER_NODE)
    return parameters_scenario(parameters, robot_name, name or Path(path).stem, str(path))


def parameters_scenario(
    parameters: dict, robot_name: str | None, name: str, source: str
) -> Scenario:
    """The controller `wbc_controller` builds from `parameters`, as a scenario.

    Settings, tasks and contacts are parsed by :mod:`wbc_control.config` and the controller is
    the node's (`build_loop`), joint-limit level and effort limits included.
    """
    from wbc_control.config import (
        build_entries,
        parse_contacts,
        parse_controller_settings,
        parse_tasks,
    )
    from wbc_control.config.assembly import build_loop

    robot = _config_robot(parameters, robot_name, source)
    settings = parse_controller_settings(robot, parameters)
    specs = parse_tasks(robot, parameters.get('task_names', []), parameters.get('tasks', {}))
    contacts = parse_contacts(
        robot, parameters.get('contacts', []) or [], parameters.get('contact_types', []) or []
    )
    entries = build_entries(robot, specs)
    controller = build_loop(robot, settings, entries, contacts, 1.0).controller
    uses_com = any(spec.type == ComTask.TYPE for spec in specs)
    return Scenario(name, robot, controller, source, uses_com)


def _config_robot(parameters: dict, robot_name: str | None, path: str) -> RobotModel:
    floating_base = bool(parameters.get('floating_base', False))
    if parameters.get('robot_description'):
        return RobotModel.from_urdf_string(parameters['robot_description'], floating_base)
    if parameters.get('urdf_path'):
        return RobotModel.from_urdf_path(parameters['urdf_path'], floating_base)
    if robot_name is None:
        raise ModelError(
            f'{path}: no robot_description or urdf_path; name an example robot with --robot'
        )
    return example_robot(robot_name)
