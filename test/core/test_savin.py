"""Savin (Manipulator Equations for Systems with Constraints), eqs 9-10: H from body Jacobians.

The kinetic energy of the bodies, T = Σ ½ q̇ᵀ(Jᵥᵢᵀ mᵢ Jᵥᵢ + Jωᵢᵀ Iᵢ Jωᵢ)q̇ (eq 9), is the quadratic
form of H = Σ Jᵥᵢᵀ mᵢ Jᵥᵢ + Jωᵢᵀ Iᵢ Jωᵢ (eq 10). Here H is summed body by body from each body's
joint Jacobian (Pinocchio's `computeJointJacobians`, kinematics only), shifted to the body's
centre of mass, and compared with the mass matrix the controller uses (`RobotState`, which
takes it from the composite-rigid-body algorithm). Tolerance: both sides are sums of O(nv)
products of O(1) numbers; 1e-10 relative to ‖H‖ is far above double-precision round-off.
"""

import numpy as np
import pinocchio as pin
import pytest
from robots import random_state, robot

from wbc_control.model.robot_state import RobotState


def skew(vector: np.ndarray) -> np.ndarray:
    x, y, z = vector
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def eq10_inertia(state: RobotState) -> np.ndarray:
    """H = Σ Jᵥᵀ m Jᵥ + Jωᵀ I Jω over the bodies, world-aligned axes."""
    model, data = state.model, model_data(state)
    pin.computeJointJacobians(model, data, state.q)
    inertia = np.zeros((model.nv, model.nv))
    for joint in range(1, model.njoints):
        body = model.inertias[joint]
        jacobian = pin.getJointJacobian(model, data, joint, pin.LOCAL_WORLD_ALIGNED)
        rotation = data.oMi[joint].rotation
        com_offset = rotation @ body.lever  # joint origin → centre of mass, world axes
        linear = jacobian[:3] - skew(com_offset) @ jacobian[3:]  # Jᵥ = J_o − [r]× Jω
        angular = jacobian[3:]
        body_inertia = rotation @ body.inertia @ rotation.T  # about the COM, world axes
        inertia += body.mass * linear.T @ linear + angular.T @ body_inertia @ angular
    return inertia


def model_data(state: RobotState) -> pin.Data:
    """Fresh Pinocchio data: nothing computed by RobotState is reused."""
    return state.model.createData()


@pytest.mark.parametrize('name', ['panda', 'ur5', 'talos', 'solo12'])
@pytest.mark.parametrize('seed', [0, 1, 2])
def test_mass_matrix_is_the_sum_of_body_kinetic_energies(name, seed):
    state = random_state(robot(name), seed)
    expected = eq10_inertia(state)
    scale = np.linalg.norm(expected, 2)
    np.testing.assert_allclose(state.mass_matrix, expected, atol=1e-10 * scale)


def test_kinetic_energy_of_eq9_is_half_v_h_v():
    """T from the bodies' own velocities (eq 9, summed directly) equals ½ vᵀ H v."""
    state = random_state(robot('panda'), 7)
    model, data = state.model, model_data(state)
    pin.forwardKinematics(model, data, state.q, state.v)
    energy = 0.0
    for joint in range(1, model.njoints):
        body = model.inertias[joint]
        velocity = data.v[joint]  # body twist in the joint frame
        com_velocity = velocity.linear + np.cross(velocity.angular, body.lever)
        energy += 0.5 * body.mass * com_velocity @ com_velocity
        energy += 0.5 * velocity.angular @ body.inertia @ velocity.angular
    assert energy == pytest.approx(0.5 * state.v @ state.mass_matrix @ state.v, rel=1e-10)
