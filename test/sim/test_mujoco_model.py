"""The MuJoCo model integrates the dynamics Pinocchio computes from the same URDF."""

from pathlib import Path
import shutil

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from wbc_control.exceptions import InvalidShape, InvalidValue, ModelError
from wbc_control.model.example_robots import example_robot_urdf, robots_directory
from wbc_control.model.robot_model import RobotModel
from wbc_control.sim.mujoco_model import (
    MujocoOptions,
    MujocoSimulation,
    build_mujoco_robot,
    resolve_mesh_uri,
)

ROBOTS = ['panda', 'ur5', 'solo12', 'talos']
SAMPLES = 5


def make_simulation(name: str, **options) -> MujocoSimulation:
    path, floating_base = example_robot_urdf(name)
    robot = RobotModel.from_urdf_path(path, floating_base)
    mujoco_robot = build_mujoco_robot(
        path.read_text(), MujocoOptions(floating_base=floating_base, **options), path.parent
    )
    return MujocoSimulation(robot, mujoco_robot)


@pytest.fixture(scope='module', params=ROBOTS)
def simulation(request: pytest.FixtureRequest) -> MujocoSimulation:
    return make_simulation(request.param)


def random_states(robot: RobotModel, seed: int = 0):
    """(q, v) inside the joint limits (no limit constraint active), base within ±1 m."""
    rng = np.random.default_rng(seed)
    model = robot.model
    lower = np.clip(model.lowerPositionLimit, -1.0, 1.0)
    upper = np.clip(model.upperPositionLimit, -1.0, 1.0)
    for _ in range(SAMPLES):
        q = pin.randomConfiguration(model, lower, upper)
        yield q, rng.normal(size=model.nv)


def pinocchio_mass_matrix(robot: RobotModel, q: np.ndarray) -> np.ndarray:
    upper = pin.crba(robot.model, robot.model.createData(), q)
    return np.triu(upper) + np.triu(upper, 1).T


def test_mass_matrix_matches_pinocchio(simulation: MujocoSimulation) -> None:
    robot = simulation.robot
    for q, v in random_states(robot):
        simulation.set_pinocchio_state(q, v)
        expected = pinocchio_mass_matrix(robot, q)
        np.testing.assert_allclose(
            simulation.mass_matrix(), expected, rtol=0.0, atol=1e-12 * np.abs(expected).max()
        )


def test_bias_forces_match_pinocchio_nle(simulation: MujocoSimulation) -> None:
    robot = simulation.robot
    data = robot.model.createData()
    for q, v in random_states(robot, seed=1):
        simulation.set_pinocchio_state(q, v)
        expected = pin.nonLinearEffects(robot.model, data, q, v)
        np.testing.assert_allclose(
            simulation.bias_forces(), expected, rtol=0.0, atol=1e-12 * np.abs(expected).max()
        )


def test_forward_dynamics_matches_aba(simulation: MujocoSimulation) -> None:
    robot = simulation.robot
    data = robot.model.createData()
    rng = np.random.default_rng(2)
    for q, v in random_states(robot, seed=2):
        torque = rng.normal(scale=5.0, size=robot.n_actuated)
        simulation.set_pinocchio_state(q, v)
        simulation.apply_torque(torque)
        mujoco.mj_forward(simulation.model, simulation.data)
        tau = np.zeros(robot.nv)
        tau[robot.indices.v] = torque
        expected = pin.aba(robot.model, data, q, v, tau)
        np.testing.assert_allclose(
            simulation.acceleration(), expected, rtol=0.0, atol=1e-10 * np.abs(expected).max()
        )


def test_gravity_only_step_of_panda_matches_aba() -> None:
    simulation = make_simulation('panda')
    robot = simulation.robot
    q = robot.configuration([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
    simulation.set_pinocchio_state(q, np.zeros(robot.nv))
    simulation.step()
    expected = pin.aba(robot.model, robot.model.createData(), q, np.zeros(robot.nv), np.zeros(9))
    # Semi-implicit Euler: v1 = v0 + dt * a(q0, v0).
    _, velocity = simulation.pinocchio_state()
    np.testing.assert_allclose(velocity / simulation.timestep_s, expected, atol=1e-9)
    assert np.abs(expected).max() > 1.0  # gravity really acts
    assert simulation.time_s == pytest.approx(simulation.timestep_s)


def test_gravity_compensation_holds_the_arm() -> None:
    simulation = make_simulation('ur5')
    robot = simulation.robot
    data = robot.model.createData()
    simulation.reset([0.3, -1.0, 1.2, -0.5, 0.4, 0.0])
    for _ in range(500):
        q, _ = simulation.pinocchio_state()
        simulation.apply_torque(pin.computeGeneralizedGravity(robot.model, data, q))
        simulation.step()
    drift = simulation.joint_positions() - [0.3, -1.0, 1.2, -0.5, 0.4, 0.0]
    assert np.abs(drift).max() < 1e-6


def test_floating_base_velocity_convention() -> None:
    """MuJoCo's free joint: world-frame linear velocity; Pinocchio's: base frame."""
    simulation = make_simulation('solo12')
    robot = simulation.robot
    q, v = next(random_states(robot, seed=3))
    simulation.set_pinocchio_state(q, v)
    base_qvel = simulation.data.qvel[:6]
    rotation = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()
    np.testing.assert_allclose(base_qvel[:3], rotation @ v[:3], atol=1e-12)
    np.testing.assert_allclose(base_qvel[3:], v[3:6], atol=1e-12)
    np.testing.assert_allclose(simulation.base_twist(), v[:6], atol=1e-12)
    q_back, v_back = simulation.pinocchio_state()
    np.testing.assert_allclose(pin.difference(robot.model, q, q_back), 0.0, atol=1e-12)
    np.testing.assert_allclose(v_back, v, atol=1e-12)


def test_floating_base_stands_on_the_ground_plane() -> None:
    simulation = make_simulation('solo12', ground_plane=True)
    simulation.reset()
    height = simulation.place_on_ground()
    assert height > 0.1
    simulation.step(200)
    assert simulation.data.ncon > 0
    assert simulation.base_pose()[2] > 0.05  # collision meshes hold it above the plane


def test_torques_are_applied_unclipped() -> None:
    simulation = make_simulation('panda')
    torque = 2.0 * simulation.robot.effort_limits
    simulation.apply_torque(torque)
    np.testing.assert_array_equal(simulation.applied_torque, torque)
    np.testing.assert_array_equal(simulation.data.qfrc_applied[simulation.joints.dof], torque)


def test_bad_torques_are_refused() -> None:
    simulation = make_simulation('panda')
    with pytest.raises(InvalidShape):
        simulation.apply_torque(np.zeros(3))
    with pytest.raises(InvalidValue):
        simulation.apply_torque(np.full(9, np.nan))


def test_dynamics_options_default_to_pinocchio() -> None:
    model = make_simulation('panda').model
    assert not model.dof_damping.any()
    assert not model.dof_armature.any()
    assert not model.dof_frictionloss.any()
    assert model.neq == 0  # the finger <mimic> is independent, as in Pinocchio
    np.testing.assert_allclose(model.opt.gravity, [0.0, 0.0, -9.81])
    assert model.opt.timestep == 0.001


def test_options_are_validated() -> None:
    with pytest.raises(InvalidValue):
        MujocoOptions(gravity_m_s2=(0.0, -9.81))
    with pytest.raises(InvalidValue):
        MujocoOptions(timestep_s=0.0)


def test_package_uris_resolve_to_example_robot_data() -> None:
    uri = 'package://example-robot-data/robots/panda_description/meshes/collision/link0.stl'
    path = resolve_mesh_uri(uri, Path.cwd())
    assert path is not None and path.is_file()
    assert path == (robots_directory() / 'panda_description/meshes/collision/link0.stl').resolve()
    assert resolve_mesh_uri('package://no_such_package/mesh.stl', Path.cwd()) is None


def test_collision_meshes_are_loaded() -> None:
    path, _ = example_robot_urdf('panda')
    mujoco_robot = build_mujoco_robot(path.read_text(), urdf_directory=path.parent)
    assert mujoco_robot.dropped_meshes == ()
    assert mujoco_robot.model.nmesh > 0


def test_collada_visuals_are_dropped_and_listed() -> None:
    path, _ = example_robot_urdf('panda')
    options = MujocoOptions(keep_visual=True)
    dropped = build_mujoco_robot(path.read_text(), options, path.parent).dropped_meshes
    assert dropped
    assert {mesh.element for mesh in dropped} == {'visual'}
    assert all(mesh.uri.endswith('.dae') and 'decode' in mesh.reason for mesh in dropped)


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


@pytest.fixture
def small_urdf(tmp_path: Path) -> Path:
    stl = robots_directory() / 'panda_description/meshes/collision/link0.stl'
    (tmp_path / 'meshes').mkdir()
    shutil.copy(stl, tmp_path / 'meshes' / 'part.stl')
    collada = robots_directory() / 'panda_description/meshes/visual/link0.dae'
    urdf = tmp_path / 'small.urdf'
    urdf.write_text(SMALL_URDF.format(relative='meshes/part.stl', collada=f'file://{collada}'))
    return urdf


def test_unreadable_meshes_are_dropped_not_fatal(small_urdf: Path) -> None:
    mujoco_robot = build_mujoco_robot(small_urdf.read_text(), urdf_directory=small_urdf.parent)
    reasons = {Path(mesh.uri).name: mesh.reason for mesh in mujoco_robot.dropped_meshes}
    assert set(reasons) == {'link0.dae', 'part.stl'}  # the collada collision, the missing file
    assert 'decode' in reasons['link0.dae']
    assert 'not found' in reasons['part.stl']
    assert mujoco_robot.model.nmesh == 1  # the relative path resolved against the URDF


def test_continuous_joints_are_angles(small_urdf: Path) -> None:
    robot = RobotModel.from_urdf_path(small_urdf)
    mujoco_robot = build_mujoco_robot(small_urdf.read_text(), urdf_directory=small_urdf.parent)
    simulation = MujocoSimulation(robot, mujoco_robot)
    simulation.reset([3.0 * np.pi + 0.25, 0.5])
    np.testing.assert_allclose(simulation.joint_positions(), [-np.pi + 0.25, 0.5])
    q, v = simulation.pinocchio_state()
    assert q.shape == (3,)  # (cos, sin) of the continuous joint, then the revolute one
    simulation.set_pinocchio_state(q, np.array([1.0, -2.0]))
    np.testing.assert_allclose(
        simulation.mass_matrix(), pinocchio_mass_matrix(robot, q), atol=1e-14
    )


def test_malformed_urdf_is_a_model_error() -> None:
    with pytest.raises(ModelError):
        build_mujoco_robot('<robot name="x"><link name="a"/>')
    with pytest.raises(ModelError):
        build_mujoco_robot('<sdf/>')
