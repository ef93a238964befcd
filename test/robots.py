"""Real robot models for the tests (example-robot-data) and small URDFs written here."""

from functools import cache
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from wbc_control.config import build_entries, parse_tasks
from wbc_control.config.assembly import build_loop
from wbc_control.config.settings import parse_contacts, parse_controller_settings
from wbc_control.control.constraints.joint_limits import JointLimits
from wbc_control.control.contact.contacts import Contact
from wbc_control.control.loop.controller_loop import ControllerLoop
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.exceptions import ModelError
from wbc_control.model.example_robots import NOT_FOUND, example_robot_urdf
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks import ComTask, JointPostureTask

REPO = Path(__file__).resolve().parents[1]


def example_urdf(name: str) -> tuple[Path, bool]:
    """URDF path and floating base of an example-robot-data robot; skips the test without it."""
    try:
        return example_robot_urdf(name)
    except ModelError as error:
        if str(error) == NOT_FOUND:
            pytest.skip(str(error), allow_module_level=True)
        raise


@cache
def robot(name: str) -> RobotModel:
    """An example-robot-data robot, loaded once per test session (skips without the package)."""
    path, floating_base = example_urdf(name)
    return RobotModel.from_urdf_path(path, floating_base)


def random_state(model: RobotModel, seed: int, speed: float = 1.0) -> RobotState:
    """A RobotState at a random configuration within limits and a random velocity."""
    rng = np.random.default_rng(seed)
    pin.seed(seed)
    state = RobotState(model)
    q = pin.randomConfiguration(model.model)
    if model.floating_base:
        q[:3] = rng.uniform(-1.0, 1.0, 3)
    state.update(q, speed * rng.standard_normal(model.nv))
    return state


#: Talos's half-sitting pose (example-robot-data's SRDF), actuated joints in model order.
TALOS_HALF_SITTING = np.array(
    [0.0, 0.0, -0.411354, 0.859395, -0.448041, -0.001708] * 2
    + [0.0, 0.006761]
    + [0.25847, 0.173046, -0.0002, -0.525366, 0.0, 0.0, 0.1, 0.0]
    + [-0.25847, -0.173046, 0.0002, -0.525366, 0.0, 0.0, 0.1, 0.0]
    + [0.0, 0.0]
)


def talos_standing_state(talos: RobotModel, seed: int, speed: float) -> RobotState:
    """Talos upright near half-sitting, moving.

    Soles level, so the floor can push; knees bent, so the legs are not at their stretched
    singularity.
    """
    rng = np.random.default_rng(seed)
    state = RobotState(talos)
    joints = TALOS_HALF_SITTING + rng.uniform(-0.1, 0.1, talos.n_actuated)
    base = [*rng.uniform(-0.03, 0.03, 2), 1.0, 0.0, 0.0, 0.0, 1.0]
    state.update(talos.configuration(joints, base), speed * rng.standard_normal(talos.nv))
    return state


def body_frames(robot: RobotModel) -> list:
    """The model's body frames (one per URDF link), in model order."""
    return [frame for frame in robot.model.frames if frame.type == pin.FrameType.BODY]


def beyond_reach(
    robot: RobotModel,
    positions: np.ndarray,
    distance: float = 1.2,
    direction: np.ndarray | None = None,
):
    """(frame id, placement, target): the last body frame's target `distance` m farther out.

    Farther out horizontally, from the base's vertical axis, than where the frame is at the
    joint `positions` of a fixed-base arm: a target out of reach; or `distance` m along
    `direction` (world axes, any length). The placement is a copy.
    """
    tip = robot.frame_id(body_frames(robot)[-1].name)
    state = RobotState(robot)
    state.update(robot.configuration(positions), np.zeros(robot.nv))
    placement = state.frame_placement(tip).copy()
    if direction is None:
        direction = np.array([placement.translation[0], placement.translation[1], 0.0])
    way = np.asarray(direction, dtype=float)
    return tip, placement, placement.translation + distance * way / np.linalg.norm(way)


def tilt_deg(qx: float, qy: float) -> float:
    """How far a base is from upright (deg), from its orientation quaternion's x and y.

    The angle between its z axis and the world's: 2 asin(√(qx² + qy²)).
    """
    return float(np.degrees(2.0 * np.arcsin(min(1.0, np.hypot(qx, qy)))))


#: Unitree G1 (29 joints, no SRDF ships): legs slightly bent (hip pitch, roll, yaw, knee, ankle
#: pitch, roll), the waist straight (yaw, roll, pitch), the elbows bent (shoulder pitch, roll,
#: yaw, elbow, wrist roll, pitch, yaw per arm); and its soles.
G1_URDF = 'g1_description/urdf/g1_29dof_rev_1_0.urdf'
G1_STANDING = (
    *(-0.1, 0.0, 0.0, 0.3, -0.2, 0.0) * 2,
    *(0.0, 0.0, 0.0),
    *(0.0, 0.2, 0.0, 0.9, 0.0, 0.0, 0.0),
    *(0.0, -0.2, 0.0, 0.9, 0.0, 0.0, 0.0),
)
G1_SOLES = ('left_ankle_roll_link', 'right_ankle_roll_link')


# Three joints of each supported kind: revolute, continuous (nq = 2, nv = 1), prismatic.
MIXED_JOINTS_URDF = """<?xml version="1.0"?>
<robot name="mixed">
  <link name="base"/>
  <link name="l1">
    <inertial><origin xyz="0.1 0 0"/><mass value="1.0"/>
      <inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="l2">
    <inertial><origin xyz="0.1 0 0"/><mass value="0.8"/>
      <inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="l3">
    <inertial><origin xyz="0.05 0 0"/><mass value="0.5"/>
      <inertia ixx="0.005" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="tool"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="40" velocity="2"/>
  </joint>
  <joint name="wrist" type="continuous">
    <parent link="l1"/><child link="l2"/><origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>
    <limit effort="20" velocity="3"/>
  </joint>
  <joint name="slider" type="prismatic">
    <parent link="l2"/><child link="l3"/><origin xyz="0.2 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-0.1" upper="0.1" effort="100" velocity="1"/>
  </joint>
  <joint name="tool_joint" type="fixed">
    <parent link="l3"/><child link="tool"/><origin xyz="0.1 0 0"/>
  </joint>
</robot>
"""


def shipped_parameters(config: str) -> dict:
    """The `ros__parameters` of config/<config>.yaml."""
    (section,) = yaml.safe_load((REPO / 'config' / f'{config}.yaml').read_text()).values()
    return section['ros__parameters']


def shipped_controller(name: str) -> PrioritizedController:
    """The controller config/<name>_controller.yaml builds for example robot `name`."""
    return core_controller(robot(name), shipped_parameters(f'{name}_controller'))


def core_controller(model: RobotModel, parameters: dict) -> PrioritizedController:
    """The controller `wbc_controller` builds from `parameters` (its loop's, unspun)."""
    return core_loop(model, parameters).controller


def core_loop(model: RobotModel, parameters: dict) -> ControllerLoop:
    """The loop `wbc_controller` builds from `parameters`."""
    settings = parse_controller_settings(model, parameters)
    specs = parse_tasks(model, parameters['task_names'], parameters['tasks'])
    contacts = parse_contacts(
        model, parameters.get('contacts', []), parameters.get('contact_types', [])
    )
    return build_loop(model, settings, build_entries(model, specs), contacts, 1.0)


def talos_sole_controller(
    effort_limits: np.ndarray, sole_size: np.ndarray, friction_coefficient: float
) -> PrioritizedController:
    """Talos on both soles (surface contacts with centre-of-pressure rows), joint limits on.

    The centre of mass (kp 400) over a posture (joints spread over ±0.3 rad, kp 30).
    """
    talos = robot('talos')
    posture = JointPostureTask(talos, np.linspace(-0.3, 0.3, talos.n_actuated), kp=30.0)
    entries = [
        TaskEntry('com', ComTask(talos, (0.02, -0.01, 0.85), kp=400.0), 0),
        TaskEntry('posture', posture, 1),
    ]
    contacts = [
        Contact.create(talos, f'{side}_sole_link', 'surface') for side in ('left', 'right')
    ]
    return PrioritizedController(
        talos,
        entries,
        contacts=contacts,
        joint_limits=JointLimits(talos, effort_limits),
        effort_limits=effort_limits,
        sole_size=sole_size,
        friction_coefficient=friction_coefficient,
    )
