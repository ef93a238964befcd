"""The MuJoCo simulation integrates the dynamics Pinocchio computes from the same URDF."""

from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest
from sim_support import (
    acceleration,
    bias_forces,
    make_simulation,
    mass_matrix,
    pinocchio_state,
    set_pinocchio_state,
    simulation_of,
    write_small_urdf,
)

from wbc_control.exceptions import InvalidShape, InvalidValue
from wbc_control.model.example_robots import robots_directory
from wbc_control.model.robot_model import RobotModel
from wbc_control.sim.simulation import MujocoSimulation
from wbc_control.sim.urdf_to_mujoco import MujocoOptions, build_mujoco_robot

ROBOTS = ['panda', 'ur5', 'solo12', 'talos']
SAMPLES = 5


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
        set_pinocchio_state(simulation, q, v)
        expected = pinocchio_mass_matrix(robot, q)
        np.testing.assert_allclose(
            mass_matrix(simulation), expected, rtol=0.0, atol=1e-12 * np.abs(expected).max()
        )


def test_bias_forces_match_pinocchio_nle(simulation: MujocoSimulation) -> None:
    robot = simulation.robot
    data = robot.model.createData()
    for q, v in random_states(robot, seed=1):
        set_pinocchio_state(simulation, q, v)
        expected = pin.nonLinearEffects(robot.model, data, q, v)
        np.testing.assert_allclose(
            bias_forces(simulation), expected, rtol=0.0, atol=1e-12 * np.abs(expected).max()
        )


def test_forward_dynamics_matches_aba(simulation: MujocoSimulation) -> None:
    robot = simulation.robot
    data = robot.model.createData()
    rng = np.random.default_rng(2)
    for q, v in random_states(robot, seed=2):
        torque = rng.normal(scale=5.0, size=robot.n_actuated)
        set_pinocchio_state(simulation, q, v)
        simulation.apply_torque(torque)
        mujoco.mj_forward(simulation.model, simulation.data)
        tau = np.zeros(robot.nv)
        tau[robot.indices.v] = torque
        expected = pin.aba(robot.model, data, q, v, tau)
        np.testing.assert_allclose(
            acceleration(simulation), expected, rtol=0.0, atol=1e-10 * np.abs(expected).max()
        )


def test_gravity_only_step_of_panda_matches_aba() -> None:
    simulation = make_simulation('panda')
    robot = simulation.robot
    q = robot.configuration([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
    set_pinocchio_state(simulation, q, np.zeros(robot.nv))
    simulation.step()
    expected = pin.aba(robot.model, robot.model.createData(), q, np.zeros(robot.nv), np.zeros(9))
    # Semi-implicit Euler: v1 = v0 + dt * a(q0, v0).
    _, velocity = pinocchio_state(simulation)
    np.testing.assert_allclose(velocity / simulation.timestep_s, expected, atol=1e-9)
    assert np.abs(expected).max() > 1.0  # gravity really acts
    assert simulation.time_s == pytest.approx(simulation.timestep_s)


def test_gravity_compensation_holds_the_arm() -> None:
    simulation = make_simulation('ur5')
    robot = simulation.robot
    data = robot.model.createData()
    simulation.reset([0.3, -1.0, 1.2, -0.5, 0.4, 0.0])
    for _ in range(500):
        q, _ = pinocchio_state(simulation)
        simulation.apply_torque(pin.computeGeneralizedGravity(robot.model, data, q))
        simulation.step()
    drift = simulation.joint_positions() - [0.3, -1.0, 1.2, -0.5, 0.4, 0.0]
    assert np.abs(drift).max() < 1e-6


def test_floating_base_velocity_convention() -> None:
    """MuJoCo's free joint: world-frame linear velocity; Pinocchio's: base frame."""
    simulation = make_simulation('solo12')
    robot = simulation.robot
    q, v = next(random_states(robot, seed=3))
    set_pinocchio_state(simulation, q, v)
    base_qvel = simulation.data.qvel[:6]
    rotation = pin.Quaternion(q[6], q[3], q[4], q[5]).toRotationMatrix()
    np.testing.assert_allclose(base_qvel[:3], rotation @ v[:3], atol=1e-12)
    np.testing.assert_allclose(base_qvel[3:], v[3:6], atol=1e-12)
    np.testing.assert_allclose(simulation.base_twist(), v[:6], atol=1e-12)
    q_back, v_back = pinocchio_state(simulation)
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


@pytest.mark.parametrize(
    ('urdf', 'standing'),
    [
        # Spheres and tilted cylinders (the lower legs): their bounding boxes reach 13 mm lower.
        ('hyq_description/robots/hyq_no_sensors.urdf', [-0.2, 0.75, -1.5, -0.2, -0.75, 1.5] * 2),
        ('talos_data/robots/talos_reduced.urdf', None),  # meshes
        ('solo_description/robots/solo12.urdf', None),
    ],
)
def test_place_on_ground_finds_the_lowest_point_of_the_collision_geometry(urdf, standing):
    """0.1 mm below it MuJoCo finds a contact, 0.1 mm above it none."""
    simulation = simulation_of(robots_directory() / urdf, True, ground_plane=True)
    simulation.reset(standing)
    for clearance, touching in ((1e-4, False), (-1e-4, True)):
        simulation.place_on_ground(clearance_m=clearance)
        assert (simulation.data.ncon > 0) == touching, (clearance, simulation.data.ncon)


def test_a_robot_without_readable_collision_geometry_is_told_apart() -> None:
    """Romeo's collision meshes are COLLADA: none is left, nothing of it touches the ground."""
    path = robots_directory() / 'romeo_description/urdf/romeo_small.urdf'
    robot = RobotModel.from_urdf_path(path, floating_base=True)
    options = MujocoOptions(floating_base=True, ground_plane=True)
    mujoco_robot = build_mujoco_robot(path.read_text(), options, path.parent)
    assert 'collision' in {mesh.element for mesh in mujoco_robot.dropped_meshes}
    assert MujocoSimulation(robot, mujoco_robot).colliding_geometry == 0
    assert make_simulation('solo12', ground_plane=True).colliding_geometry > 0


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


def test_continuous_joints_are_angles(tmp_path: Path) -> None:
    small_urdf = write_small_urdf(tmp_path)
    robot = RobotModel.from_urdf_path(small_urdf)
    mujoco_robot = build_mujoco_robot(small_urdf.read_text(), urdf_directory=small_urdf.parent)
    simulation = MujocoSimulation(robot, mujoco_robot)
    simulation.reset([3.0 * np.pi + 0.25, 0.5])
    np.testing.assert_allclose(simulation.joint_positions(), [-np.pi + 0.25, 0.5])
    q, v = pinocchio_state(simulation)
    assert q.shape == (3,)  # (cos, sin) of the continuous joint, then the revolute one
    set_pinocchio_state(simulation, q, np.array([1.0, -2.0]))
    np.testing.assert_allclose(
        mass_matrix(simulation), pinocchio_mass_matrix(robot, q), atol=1e-14
    )
