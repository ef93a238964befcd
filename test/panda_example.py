"""The shipped Panda controller config as core objects, for the config tests."""

from pathlib import Path

import numpy as np
from robots import core_controller, robot
import yaml

from wbc_control.config.tasks import TaskSpec, build_entries, parse_tasks
from wbc_control.control.prioritized_controller import PrioritizedController
from wbc_control.control.results import ControllerResult
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

CONFIG = Path(__file__).resolve().parents[1] / 'config' / 'panda_controller.yaml'
READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]
HAND = {'type': 'frame_pose', 'frame': 'panda_hand', 'kp': 100.0}


def panda() -> RobotModel:
    """The example-robot-data Panda."""
    return robot('panda')


def example_parameters() -> dict:
    """The `ros__parameters` of config/panda_controller.yaml."""
    (section,) = yaml.safe_load(CONFIG.read_text()).values()  # keyed /** or by the node name
    return section['ros__parameters']


def example_specs() -> dict[str, TaskSpec]:
    """The example's task specs by name."""
    parameters = example_parameters()
    specs = parse_tasks(panda(), parameters['task_names'], parameters['tasks'])
    return {spec.name: spec for spec in specs}


def example_controller(specs: dict[str, TaskSpec]) -> PrioritizedController:
    """A controller running `specs`."""
    return PrioritizedController(panda(), build_entries(panda(), specs.values()))


def ready_state() -> RobotState:
    """The Panda at rest in its ready posture."""
    state = RobotState(panda())
    state.update(panda().configuration(READY), np.zeros(panda().nv))
    return state


def core_result(
    parameters: dict, positions: np.ndarray, velocities: np.ndarray
) -> ControllerResult:
    """What the core computes for a Panda parameter set (the node must publish exactly this)."""
    state = RobotState(panda())
    state.update(panda().configuration(positions), panda().velocity(velocities))
    return core_controller(panda(), parameters).compute(state)
