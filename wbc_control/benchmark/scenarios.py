"""Scenarios to time: a robot, a controller, and where they came from.

The built-in Panda and Talos scenarios, and scenarios read from a controller params file
(`task_names` / `tasks.<name>.*` / `contacts`), built by
:mod:`wbc_control.config` as the
node builds them.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
import sys

import numpy as np

from wbc_control.control.contacts import Contact
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.exceptions import ModelError
from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_model import RobotModel
from wbc_control.tasks import (
    ComTask,
    FrameOrientationTask,
    FramePoseTask,
    FramePositionTask,
    JointPostureTask,
)

CONTROLLER_NODE = 'wbc_controller'

TALOS_FEET = ('left_sole_link', 'right_sole_link')


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
    """Panda: end-effector pose (level 0) and joint posture (level 1).

    From the shipped config/panda_controller.yaml when it can be found, else the same tasks
    built here.
    """
    shipped = shipped_config('panda_controller.yaml')
    if shipped is not None:
        return config_scenario(shipped, 'panda', name='panda')
    panda = example_robot('panda')
    hand = FramePoseTask(panda, 'panda_hand', [0.307, 0.0, 0.59, 1.0, 0.0, 0.0, 0.0], kp=100.0)
    posture = JointPostureTask(
        panda, [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02], kp=25.0
    )
    entries = [TaskEntry('hand', hand, 0), TaskEntry('posture', posture, 1)]
    return Scenario('panda', panda, PrioritizedController(panda, entries), 'built-in', False)


def talos_scenario() -> Scenario:
    """Talos: both soles in surface contact, COM (0), torso and both hands (1), posture (2)."""
    talos = example_robot('talos')
    entries = [
        TaskEntry('com', ComTask(talos, [0.0, 0.0, 0.88], kp=50.0), 0),
        TaskEntry('torso', FrameOrientationTask(talos, 'torso_2_link', [0, 0, 0, 1], kp=30.0), 1),
        TaskEntry(
            'left_hand',
            FramePositionTask(talos, 'gripper_left_base_link', [0.3, 0.3, 1.0], kp=40.0),
            1,
        ),
        TaskEntry(
            'right_hand',
            FramePositionTask(talos, 'gripper_right_base_link', [0.3, -0.3, 1.0], kp=40.0),
            1,
        ),
        TaskEntry('posture', JointPostureTask(talos, np.zeros(talos.n_actuated), kp=10.0), 2),
    ]
    contacts = [Contact.create(talos, foot, 'surface') for foot in TALOS_FEET]
    controller = PrioritizedController(talos, entries, contacts=contacts)
    return Scenario('talos', talos, controller, 'built-in', True)


BUILT_IN_SCENARIOS: dict[str, Callable[[], Scenario]] = {
    'panda': panda_scenario,
    'talos': talos_scenario,
}


def controller_parameters(path: Path) -> dict:
    """The `ros__parameters` of `wbc_controller` (or of the only node) in a params file.

    Raises:
        ModelError: the file has no such section.
    """
    import yaml

    document = yaml.safe_load(Path(path).read_text()) or {}
    sections = {
        name: value['ros__parameters']
        for name, value in document.items()
        if isinstance(value, dict) and 'ros__parameters' in value
    }
    for name in (CONTROLLER_NODE, f'/{CONTROLLER_NODE}', '/**'):
        if name in sections:
            return sections[name]
    if len(sections) == 1:
        return next(iter(sections.values()))
    raise ModelError(f"{path}: no 'wbc_controller: ros__parameters:' section")


def config_scenario(
    path: Path, robot_name: str | None = None, name: str | None = None
) -> Scenario:
    """A scenario from a controller params file: the controller `wbc_controller` builds from it.

    The robot is the file's `robot_description` or `urdf_path`, else the example robot
    `robot_name`. Settings, tasks and contacts are parsed by :mod:`wbc_control.config` and the
    controller is the node's (`build_loop`), joint-limit level and effort limits included.
    """
    from wbc_control.config import (
        build_entries,
        parse_contacts,
        parse_controller_settings,
        parse_tasks,
    )
    from wbc_control.config.assembly import build_loop

    parameters = controller_parameters(path)
    robot = _config_robot(parameters, robot_name, path)
    settings = parse_controller_settings(robot, parameters)
    specs = parse_tasks(robot, parameters.get('task_names', []), parameters.get('tasks', {}))
    contacts = parse_contacts(
        robot, parameters.get('contacts', []) or [], parameters.get('contact_types', []) or []
    )
    entries = build_entries(robot, specs)
    controller = build_loop(robot, settings, entries, contacts, 1.0).controller
    uses_com = any(spec.type == ComTask.TYPE for spec in specs)
    return Scenario(name or Path(path).stem, robot, controller, str(path), uses_com)


def _config_robot(parameters: dict, robot_name: str | None, path: Path) -> RobotModel:
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


def shipped_config(name: str) -> Path | None:
    """The shipped `config/<name>` (installed share directory or source tree), if present."""
    candidates = [
        Path(sys.prefix) / 'share' / 'wbc_control' / 'config' / name,
        Path(__file__).resolve().parents[2] / 'config' / name,
    ]
    return next((path for path in candidates if path.is_file()), None)
