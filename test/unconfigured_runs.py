"""Robots we ship no configuration for, through the node's loop on MuJoCo in lock-step.

The loop is built from parameters as `wbc_controller` builds it (`parse_controller_settings`,
`parse_tasks`, `parse_contacts`, `build_loop`: default settings, the joint-limit level on); the
simulator from the same URDF (`build_mujoco_robot`). Each tick's command is applied for one
control period (2 ms, two physics steps, as the shipped sim configs). Used by
`test/sim/test_unconfigured_robots.py` and `dev/unconfigured_reach.py`.
"""

from typing import NamedTuple

from edge_runs import CONTROL_PERIOD_S, SECONDS, lockstep
import numpy as np
import pinocchio as pin
from robots import beyond_reach, core_loop
from sim_support import simulation_of

from wbc_control.model.example_robots import robots_directory
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.sim.simulation import MujocoSimulation

#: Commands of a run other than the out-of-reach ones (2 s).
TICKS = 1000
#: The out-of-reach runs take `edge_runs`' rule (test_edges.py's, its `REST_SPEED`,
#: `CHATTER_SHARE` and `RATE_LIMIT`) and its 6 s, control period and physics steps.
REACH_TICKS = round(SECONDS / CONTROL_PERIOD_S)


class Robot(NamedTuple):
    """An example-robot-data URDF, and where it starts: an SRDF's `standing`, given, or neutral."""

    urdf: str
    srdf: str | None = None  # relative to the `robots` directory, like `urdf`
    start: tuple[float, ...] | None = None  # actuated joint positions
    pose: str = 'standing'  # the SRDF's group state


ARMS = {
    'z1': Robot('z1_description/urdf/z1.urdf'),
    'xarm7': Robot('xarm_description/urdf/xarm7.urdf'),
    'so101': Robot('so_arm_description/urdf/so101.urdf'),
    'kinova': Robot(  # continuous joints
        'kinova_description/robots/kinova.urdf', start=(0.0, 2.9, 1.3, -2.07, 1.4, 0.0)
    ),
    'ur10': Robot('ur_description/urdf/ur10_robot.urdf'),
}
#: Arms `dev/unconfigured_reach.py` also runs (docs/safety.md gives their figures); the tests
#: run Talos' left arm alone for its holding walls only.
MORE_ARMS = {
    'ur3': Robot('ur_description/urdf/ur3_robot.urdf'),
    'ur5': Robot('ur_description/urdf/ur5_robot.urdf'),
    'so100': Robot('so_arm_description/urdf/so100.urdf'),
    'talos_left_arm': Robot('talos_data/robots/talos_left_arm.urdf'),
}
QUADRUPEDS = {
    'a1': Robot('a1_description/urdf/a1.urdf', 'a1_description/srdf/a1.srdf'),
    'go1': Robot('go1_description/urdf/go1.urdf', start=(0.0, 0.9, -1.8) * 4),
    'go2': Robot('go2_description/urdf/go2.urdf', 'go2_description/srdf/go2.srdf'),
    'anymal_c': Robot(
        'anymal_c_simple_description/urdf/anymal.urdf',
        'anymal_c_simple_description/srdf/anymal.srdf',
    ),
    'hyq': Robot('hyq_description/robots/hyq_no_sensors.urdf', 'hyq_description/srdf/hyq.srdf'),
    'b1': Robot('b1_description/urdf/b1.urdf', 'b1_description/srdf/b1.srdf'),
}


def build(
    entry: Robot, floating_base: bool, clearance_m: float = 0.0
) -> tuple[RobotModel, MujocoSimulation, np.ndarray]:
    """The model, its simulation at the start pose (`clearance_m` above the ground), the pose."""
    simulation = simulation_of(
        robots_directory() / entry.urdf, floating_base, ground_plane=floating_base
    )
    robot = simulation.robot
    q = pin.neutral(robot.model)
    if entry.srdf is not None:
        pin.loadReferenceConfigurations(robot.model, str(robots_directory() / entry.srdf), False)
        q = robot.model.referenceConfigurations[entry.pose]
    positions = robot.joint_positions(q) if entry.start is None else np.array(entry.start)
    simulation.reset(positions)
    if floating_base:
        simulation.place_on_ground(clearance_m)
    return robot, simulation, positions


class Reach(NamedTuple):
    """What an out-of-reach run did: its commands, per-period speed and overshoot, the miss."""

    commands: np.ndarray
    speeds: list
    beyond: list  # how far the farthest joint was past a limit (negative: inside)
    reached: float  # the tip's distance to its target at the end (m)


def reach(
    robot: RobotModel,
    simulation,
    positions,
    rate_limit: float,
    task_type: str,
    direction: np.ndarray | None = None,
    overrides: dict | None = None,
    ticks: int = REACH_TICKS,
) -> Reach:
    """The last body frame 1.2 m away, a posture below; no `max_error`.

    `direction`: the way to the target from the frame (None: horizontally outwards from the
    base's vertical axis); `overrides`: controller parameters set besides (`torque_rate_limit`
    is `rate_limit`).
    """
    tip, placement, target = beyond_reach(robot, positions, direction=direction)
    orientation = pin.Quaternion(placement.rotation).coeffs().tolist()  # x y z w
    tasks = {
        'tip': {'type': task_type, 'frame': robot.model.frames[tip].name, 'kp': 100.0,
                'target': [*target, *orientation] if task_type == 'frame_pose' else [*target]},
        'posture': {'type': 'joint_posture', 'priority': 1, 'kp': 25.0, 'target': list(positions)},
    }  # fmt: skip
    parameters = {'task_names': ['tip', 'posture'], 'tasks': tasks, **(overrides or {})}
    parameters['torque_rate_limit'] = rate_limit
    lower, upper = robot.position_limits
    speeds, beyond = [], [-np.inf]

    def record() -> None:
        speeds.append(np.abs(simulation.joint_velocities()).max())
        q = simulation.joint_positions()
        beyond.append(float(np.nanmax(np.maximum(lower - q, q - upper))))

    commands = lockstep(simulation, core_loop(robot, parameters), ticks, record)
    state = RobotState(robot)
    state.update(robot.configuration(simulation.joint_positions()), np.zeros(robot.nv))
    reached = float(np.linalg.norm(state.frame_placement(tip).translation - target))
    return Reach(commands, speeds, beyond, reached)
