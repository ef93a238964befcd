"""A MujocoSimulation read and written in Pinocchio's coordinates, for the tests.

The simulator itself only needs joint vectors and the base pose and twist (what it publishes);
the tests also compare MuJoCo's M(q), h(q, v) and forward dynamics with Pinocchio's, which needs
the full state (q, v) and the velocity map v_mujoco = T v_pinocchio, T = blockdiag(R, I₃, I)
(R: base orientation in the world; MuJoCo's free-joint linear velocity is in the world frame,
Pinocchio's in the base frame).
"""

from pathlib import Path
import shutil

import mujoco
import numpy as np
import numpy.typing as npt

from wbc_control.model.example_robots import example_robot_urdf, robots_directory
from wbc_control.model.robot_model import FREE_FLYER_NQ, FREE_FLYER_NV, RobotModel
from wbc_control.sim.simulation import MujocoSimulation
from wbc_control.sim.urdf_to_mujoco import MujocoOptions, build_mujoco_robot

__all__ = [
    'acceleration',
    'bias_forces',
    'make_simulation',
    'mass_matrix',
    'pinocchio_state',
    'set_pinocchio_state',
    'simulation_of',
    'write_small_urdf',
]

# Two joints (continuous, revolute) and every kind of mesh reference: a relative path, a COLLADA
# file MuJoCo cannot decode (as a collision and a visual) and a missing file.
SMALL_URDF = """<robot name="small">
  <link name="base"/>
  <link name="wheel">
    <inertial><mass value="1.0"/><origin xyz="0.1 0 0"/>
      <inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><mesh filename="{relative}"/></geometry></collision>
    <collision><geometry><mesh filename="{collada}"/></geometry></collision>
    <collision><geometry><mesh filename="missing/part.stl"/></geometry></collision>
    <visual><geometry><mesh filename="{collada}"/></geometry></visual>
  </link>
  <link name="arm">
    <inertial><mass value="0.5"/><origin xyz="0 0.2 0"/>
      <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="spin" type="continuous">
    <parent link="base"/><child link="wheel"/><axis xyz="0 1 0"/>
  </joint>
  <joint name="lift" type="revolute">
    <parent link="wheel"/><child link="arm"/><origin xyz="0.3 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-2" upper="2" effort="10" velocity="5"/>
  </joint>
</robot>
"""


def make_simulation(name: str, **options) -> MujocoSimulation:
    """The simulation of an example-robot-data robot, `options` for :class:`MujocoOptions`."""
    return simulation_of(*example_robot_urdf(name), **options)


def simulation_of(path: Path, floating_base: bool, **options) -> MujocoSimulation:
    """The simulation of the URDF at `path`, `options` for :class:`MujocoOptions`."""
    robot = RobotModel.from_urdf_path(path, floating_base)
    mujoco_robot = build_mujoco_robot(
        path.read_text(), MujocoOptions(floating_base=floating_base, **options), path.parent
    )
    return MujocoSimulation(robot, mujoco_robot)


def write_small_urdf(directory: Path) -> Path:
    """Write SMALL_URDF and its one readable mesh (meshes/part.stl) into `directory`."""
    stl = robots_directory() / 'panda_description/meshes/collision/link0.stl'
    (directory / 'meshes').mkdir()
    shutil.copy(stl, directory / 'meshes' / 'part.stl')
    collada = robots_directory() / 'panda_description/meshes/visual/link0.dae'
    urdf = directory / 'small.urdf'
    urdf.write_text(SMALL_URDF.format(relative='meshes/part.stl', collada=f'file://{collada}'))
    return urdf


def pinocchio_state(sim: MujocoSimulation) -> tuple[np.ndarray, np.ndarray]:
    """(q, v) for the Pinocchio model of the same URDF."""
    floating = sim.base is not None
    base_pose = sim.base_pose() if floating else None
    base_twist = sim.base_twist() if floating else None
    q = sim.robot.configuration(sim.joint_positions(), base_pose)
    v = sim.robot.velocity(sim.joint_velocities(), base_twist)
    return q, v


def set_pinocchio_state(sim: MujocoSimulation, q: npt.ArrayLike, v: npt.ArrayLike) -> None:
    """Set MuJoCo's state from Pinocchio's (q, v) and recompute everything derived."""
    robot = sim.robot
    q = np.asarray(q, dtype=float).reshape(robot.nq)
    v = np.asarray(v, dtype=float).reshape(robot.nv)
    base_pose = q[:FREE_FLYER_NQ] if sim.base is not None else None
    sim.reset(robot.joint_positions(q), base_pose)
    velocity = np.zeros(sim.model.nv)
    velocity[_pinocchio_dofs(sim)] = v
    if sim.base is not None:
        velocity[sim.base.dof[:3]] = sim.base_rotation() @ v[:3]
    sim.data.qvel[:] = velocity
    mujoco.mj_forward(sim.model, sim.data)


def mass_matrix(sim: MujocoSimulation) -> np.ndarray:
    """M(q) in Pinocchio's velocity coordinates, `(nv, nv)`: Tᵀ M_mujoco T."""
    transform = _velocity_transform(sim)
    return transform.T @ _mujoco_mass_matrix(sim) @ transform


def bias_forces(sim: MujocoSimulation) -> np.ndarray:
    """h(q, v) = C(q, v) v + g(q) in Pinocchio's coordinates, `(nv,)`.

    MuJoCo's `qfrc_bias` is for its own velocity; with a floating base the world-frame linear
    velocity adds the term M_mujoco c with c = (R (ω × v_base), 0), so that
    h = Tᵀ (qfrc_bias + M_mujoco c).
    """
    bias = sim.data.qfrc_bias.copy()
    if sim.base is not None:
        twist = sim.base_twist()
        drift = np.zeros(sim.model.nv)
        drift[sim.base.dof[:3]] = sim.base_rotation() @ np.cross(twist[3:], twist[:3])
        bias += _mujoco_mass_matrix(sim) @ drift
    return _velocity_transform(sim).T @ bias


def acceleration(sim: MujocoSimulation) -> np.ndarray:
    """MuJoCo's last forward-dynamics acceleration in Pinocchio's coordinates, `(nv,)`."""
    result = sim.data.qacc[_pinocchio_dofs(sim)].copy()
    if sim.base is not None:
        twist = sim.base_twist()
        linear_world = sim.data.qacc[sim.base.dof[:3]]
        result[:3] = sim.base_rotation().T @ linear_world - np.cross(twist[3:], twist[:3])
    return result


def _mujoco_mass_matrix(sim: MujocoSimulation) -> np.ndarray:
    full = np.zeros((sim.model.nv, sim.model.nv))
    mujoco.mj_fullM(sim.model, sim.data, full)
    return full


def _pinocchio_dofs(sim: MujocoSimulation) -> np.ndarray:
    """MuJoCo dof address of each Pinocchio velocity coordinate, `(nv,)`."""
    order = np.empty(sim.robot.nv, dtype=int)
    order[sim.robot.indices.v] = sim.joints.dof
    if sim.base is not None:
        order[:FREE_FLYER_NV] = sim.base.dof
    return order


def _velocity_transform(sim: MujocoSimulation) -> np.ndarray:
    """T with v_mujoco = T v_pinocchio, `(nv, nv)`, columns in Pinocchio order."""
    nv = sim.model.nv
    transform = np.zeros((nv, nv))
    transform[_pinocchio_dofs(sim), np.arange(nv)] = 1.0
    if sim.base is not None:
        transform[np.ix_(sim.base.dof[:3], np.arange(3))] = sim.base_rotation()
    return transform
