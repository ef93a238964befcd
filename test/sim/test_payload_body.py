"""The simulated payload: MuJoCo's M(q) and h(q, v) with it equal Pinocchio's with the same one."""

import numpy as np
import pinocchio as pin
import pytest
from robots import example_urdf
from sim_support import bias_forces, make_simulation, mass_matrix, set_pinocchio_state

from wbc_control.model.payload import NO_PAYLOAD, Payload
from wbc_control.model.robot_model import RobotModel
from wbc_control.sim.payload_body import SimulatedPayload

CENTER = (0.013, -0.021, 0.047)
INERTIA = (0.011, 0.0012, -0.0021, 0.017, 0.0031, 0.023)


def pinocchio_terms(robot: RobotModel, q: np.ndarray, v: np.ndarray):
    data = robot.model.createData()
    mass = pin.crba(robot.model, data, q)
    return np.triu(mass) + np.triu(mass, 1).T, pin.nonLinearEffects(robot.model, data, q, v)


def random_state(robot: RobotModel, seed: int) -> tuple[np.ndarray, np.ndarray]:
    pin.seed(seed)
    q = pin.randomConfiguration(robot.model)
    if robot.floating_base:
        q[:3] = (0.1, -0.2, 0.4)
    return q, np.random.default_rng(seed).standard_normal(robot.nv)


@pytest.mark.parametrize(
    ('name', 'frame'),
    [('panda', 'panda_hand_tcp'), ('panda', 'panda_joint4'), ('solo12', 'FR_FOOT'),
     ('solo12', 'base_link')],
)  # fmt: skip
def test_mujoco_with_the_payload_matches_pinocchio_with_it(name, frame):
    sim = make_simulation(name)
    payload = Payload.create(sim.robot, frame, 2.0, CENTER, INERTIA)
    SimulatedPayload(sim).set(payload)
    reference = RobotModel.from_urdf_path(*example_urdf(name))
    reference.set_payload_parameters(payload.dynamic_parameters(reference))
    unloaded = RobotModel.from_urdf_path(*example_urdf(name))
    for seed in (1, 2):
        q, v = random_state(reference, seed)
        set_pinocchio_state(sim, q, v)
        expected_mass, expected_bias = pinocchio_terms(reference, q, v)
        scale = np.abs(expected_mass).max()
        np.testing.assert_allclose(mass_matrix(sim), expected_mass, rtol=0, atol=1e-12 * scale)
        scale = np.abs(expected_bias).max()
        np.testing.assert_allclose(bias_forces(sim), expected_bias, rtol=0, atol=1e-12 * scale)
        assert np.abs(expected_bias - pinocchio_terms(unloaded, q, v)[1]).max() > 0.1


def test_the_payload_is_removed_exactly_and_the_state_kept():
    sim = make_simulation('panda')
    q, v = random_state(sim.robot, 3)
    set_pinocchio_state(sim, q, v)
    before = mass_matrix(sim), bias_forces(sim)
    positions = sim.joint_positions()
    payload = SimulatedPayload(sim)
    payload.set(Payload.create(sim.robot, 'panda_hand', 1.5, CENTER, INERTIA))
    np.testing.assert_array_equal(sim.joint_positions(), positions)
    assert np.abs(mass_matrix(sim) - before[0]).max() > 1e-3
    payload.set(NO_PAYLOAD)
    np.testing.assert_array_equal(mass_matrix(sim), before[0])
    np.testing.assert_array_equal(bias_forces(sim), before[1])


def test_a_payload_on_a_frame_fixed_to_the_world_changes_nothing():
    sim = make_simulation('panda')
    before = mass_matrix(sim), bias_forces(sim)
    SimulatedPayload(sim).set(Payload.create(sim.robot, 'panda_link0', 3.0, CENTER))
    np.testing.assert_array_equal(mass_matrix(sim), before[0])
    np.testing.assert_array_equal(bias_forces(sim), before[1])
