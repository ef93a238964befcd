"""RobotState against independent Pinocchio calls and finite differences (Savin, eqs 15-17)."""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pinocchio as pin
import pytest
from robots import random_state, robot

from wbc_control.exceptions import InvalidShape, InvalidValue
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

STEP = 1e-6
seeds = st.integers(0, 2**31 - 1)


def shifted(state: RobotState, step: float) -> RobotState:
    """The same robot at q ⊕ step·v with the same v."""
    other = RobotState(state.robot)
    other.update(pin.integrate(state.model, state.q, step * state.v), state.v)
    return other


def central_difference(state: RobotState, quantity) -> np.ndarray:
    """d/dt quantity(state) along q̇ = v, q̈ = 0."""
    return (quantity(shifted(state, STEP)) - quantity(shifted(state, -STEP))) / (2 * STEP)


@pytest.mark.parametrize('name', ['panda', 'ur5', 'talos'])
def test_dynamics_match_independent_pinocchio_calls(name):
    state = random_state(robot(name), seed=3)
    model, data = state.model, state.model.createData()
    mass = pin.crba(model, data, state.q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    np.testing.assert_allclose(state.mass_matrix, mass, atol=1e-12)
    np.testing.assert_array_equal(state.mass_matrix, state.mass_matrix.T)
    bias = pin.rnea(model, data, state.q, state.v, np.zeros(model.nv))
    np.testing.assert_allclose(state.nonlinear_effects, bias, atol=1e-10)
    gravity = pin.computeGeneralizedGravity(model, data, state.q)
    np.testing.assert_allclose(state.gravity, gravity, atol=1e-10)
    rhs = np.arange(model.nv, dtype=float)
    np.testing.assert_allclose(
        state.solve_mass_matrix(rhs), np.linalg.solve(mass, rhs), rtol=1e-9, atol=1e-9
    )


@settings(max_examples=20, deadline=None)
@given(seeds, st.sampled_from(['panda', 'ur5', 'talos', 'solo12']))
def test_the_inverse_mass_matrix_is_the_inverse_of_m(seed, name):
    state = random_state(robot(name), seed)
    inverse = state.inverse_mass_matrix
    np.testing.assert_allclose(inverse, inverse.T, rtol=0.0, atol=1e-12 * np.abs(inverse).max())
    identity = np.eye(state.model.nv)
    np.testing.assert_allclose(state.mass_matrix @ inverse, identity, atol=1e-9)
    dense = np.linalg.inv(state.mass_matrix)
    np.testing.assert_allclose(inverse, dense, rtol=1e-9, atol=1e-9 * np.abs(dense).max())


TWO_LINKS = """<?xml version="1.0"?>
<robot name="two_links">
  <link name="base"/>
  <link name="upper"><inertial><mass value="1.0"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="tip">{tip}</link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <joint name="wrist" type="revolute"><parent link="upper"/><child link="tip"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
</robot>
"""


NEGATIVE_INERTIA = """<inertial><mass value="0.5"/>
    <inertia ixx="0.001" iyy="0.001" izz="-0.005" ixy="0" ixz="0" iyz="0"/></inertial>"""


@pytest.mark.parametrize('tip', ['', NEGATIVE_INERTIA], ids=['massless', 'negative_inertia'])
def test_an_inertia_matrix_that_is_not_positive_definite_is_a_named_error(tip):
    # A massless subtree (a zero pivot) or a URDF typo that makes M indefinite (a negative one).
    model = RobotModel.from_urdf_string(TWO_LINKS.format(tip=tip))
    state = RobotState(model)
    state.update(model.configuration([0.3, -0.2]), np.zeros(2))
    with pytest.raises(InvalidValue, match='not positive definite'):
        _ = state.inverse_mass_matrix


@settings(max_examples=20, deadline=None)
@given(seeds)
def test_frame_jacobian_and_classical_drift_by_finite_differences(seed):
    state = random_state(robot('panda'), seed)
    frame = state.robot.frame_id('panda_hand_tcp')
    jacobian = state.frame_jacobian(frame)

    def position(s):
        return s.frame_placement(frame).translation.copy()

    np.testing.assert_allclose(
        central_difference(state, position), jacobian[:3] @ state.v, atol=1e-6
    )
    after, before = shifted(state, STEP), shifted(state, -STEP)
    rotation_rate = pin.log3(
        after.frame_placement(frame).rotation @ before.frame_placement(frame).rotation.T
    ) / (2 * STEP)
    np.testing.assert_allclose(rotation_rate, jacobian[3:] @ state.v, atol=1e-6)
    drift = central_difference(state, lambda s: s.frame_jacobian(frame) @ s.v)
    np.testing.assert_allclose(state.frame_drift(frame), drift, atol=1e-5)
    np.testing.assert_allclose(state.frame_velocity(frame), jacobian @ state.v, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(seeds)
def test_com_jacobian_and_drift_by_finite_differences(seed):
    state = random_state(robot('talos'), seed)
    com_rate = central_difference(state, lambda s: s.com.copy())
    np.testing.assert_allclose(state.com_jacobian @ state.v, com_rate, atol=1e-6)
    np.testing.assert_allclose(state.com_velocity, com_rate, atol=1e-6)
    drift = central_difference(state, lambda s: s.com_jacobian @ s.v)
    np.testing.assert_allclose(state.com_drift, drift, atol=1e-5)


def christoffel_coriolis(state: RobotState) -> np.ndarray:
    """C(q, v) from Christoffel symbols of finite-difference ∂M/∂q (Savin, eqs 16–17)."""
    model, n = state.model, state.robot.nv
    derivative = np.empty((n, n, n))  # [i, j, k] = ∂M_ij / ∂q_k
    for k in range(n):
        step = np.zeros(n)
        step[k] = STEP
        plus, minus = RobotState(state.robot), RobotState(state.robot)
        plus.update(pin.integrate(model, state.q, step), state.v)
        minus.update(pin.integrate(model, state.q, -step), state.v)
        derivative[:, :, k] = (plus.mass_matrix - minus.mass_matrix) / (2 * STEP)
    christoffel = 0.5 * (
        derivative + derivative.transpose(0, 2, 1) - derivative.transpose(2, 1, 0)
    )
    return christoffel @ state.v  # C_ij = Σ_k Γ_ijk v_k


@pytest.mark.parametrize('name', ['panda', 'ur5'])
def test_christoffel_coriolis_matches_pinocchio_and_is_passive(name):
    state = random_state(robot(name), seed=11)
    coriolis = christoffel_coriolis(state)
    # Savin, eq 15: C v from Christoffel symbols equals h − g.
    np.testing.assert_allclose(
        coriolis @ state.v, state.nonlinear_effects - state.gravity, atol=1e-6
    )
    mass_rate = central_difference(state, lambda s: s.mass_matrix)
    skew = mass_rate - 2.0 * coriolis
    np.testing.assert_allclose(skew, -skew.T, atol=1e-6)


def test_update_rejects_bad_vectors():
    state = RobotState(robot('panda'))
    q, v = state.q.copy(), state.v.copy()
    with pytest.raises(InvalidShape):
        state.update(q[:-1], v)
    state.update(q + 0.1, v + 0.2)
    for entry in (np.nan, np.inf, -np.inf):
        for index in (0, 2, len(v) - 1):
            bad_q, bad_v = q.copy(), v.copy()
            bad_q[index] = entry
            bad_v[index] = entry
            for pair in ((bad_q, v), (q, bad_v)):
                with pytest.raises(InvalidValue):
                    state.update(*pair)
                # Refused, the state keeps the last good q and v.
                np.testing.assert_array_equal(state.q, q + 0.1)
                np.testing.assert_array_equal(state.v, v + 0.2)
