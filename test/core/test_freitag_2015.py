"""Freitag 2015 (The Secret Life of the N-Matrix), eqs 9-15, through the project's controller.

The slides' worked example: J₁ = diag(1, 1, 0, 0) and J₂ = [[1, 0, 1, 0], [0, 1, 0, 1]] (the
J₂ whose pseudo-inverse is eq 10's [[.5, 0], [0, .5], [.5, 0], [0, .5]]). The textbook update
Δq₂ = 𝒩₁J₂# e₂ (eq 8) "eats" half of Δq₂ (eq 10); the 𝒩-weighted inverse
Δq₂ = 𝒩₁J₂ᵀ(J₂𝒩₁J₂ᵀ + εI)⁻¹ e₂ (eq 13) gives Δq₂ = [[0, 0], [0, 0], [1, 0], [0, 1]] e₂ (eq 15).

The slides work with W = I (a Euclidean metric on the joints). The controller's metric is the
mass matrix (Khatib's dynamically consistent inverse), so the example runs on a real
4-joint robot whose mass matrix is the identity: three massless prismatic joints along x, y,
z carrying a 1 kg body that turns about its own z axis (I_zz = 1 kg m²). Then q̈ plays the role
of Δq and the desired task accelerations that of the errors e.
"""

import numpy as np
from robots import random_state

from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks.task import PDGains, Task, TaskTerms

_MASSLESS = '<inertial><mass value="0"/><inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/>'
_LIMIT = '<limit lower="-1" upper="1" effort="100" velocity="1"/>'
IDENTITY_MASS_URDF = f"""<?xml version="1.0"?>
<robot name="identity_mass">
  <link name="world"/>
  <link name="x">{_MASSLESS}</inertial></link>
  <link name="y">{_MASSLESS}</inertial></link>
  <link name="z">{_MASSLESS}</inertial></link>
  <link name="body"><inertial><mass value="1"/>
    <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="px" type="prismatic"><parent link="world"/><child link="x"/>
    <axis xyz="1 0 0"/>{_LIMIT}</joint>
  <joint name="py" type="prismatic"><parent link="x"/><child link="y"/>
    <axis xyz="0 1 0"/>{_LIMIT}</joint>
  <joint name="pz" type="prismatic"><parent link="y"/><child link="z"/>
    <axis xyz="0 0 1"/>{_LIMIT}</joint>
  <joint name="rz" type="revolute"><parent link="z"/><child link="body"/>
    <axis xyz="0 0 1"/>{_LIMIT}</joint>
</robot>
"""

J1 = np.diag([1.0, 1.0, 0.0, 0.0])  # eq 9
J2 = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])  # J₂# = eq 10's matrix
EQ15 = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])


class ConstantTask(Task):
    """A task with a fixed Jacobian, no drift and a given desired acceleration (the slides' e)."""

    def __init__(self, jacobian: np.ndarray, desired: np.ndarray) -> None:
        super().__init__(jacobian.shape[0], PDGains.create(0.0, 0.0, jacobian.shape[0]))
        self.jacobian = jacobian
        self.desired = np.asarray(desired, dtype=float)

    def compute(self, state: RobotState) -> TaskTerms:
        """J, J̇v = 0, e = ẍ* = the given desired acceleration."""
        zero = np.zeros(self.dim)
        return TaskTerms(self.jacobian, zero, self.desired, self.jacobian @ state.v, self.desired)

    def set_target(self, target: np.ndarray) -> None:
        """The desired acceleration plays the target."""
        self.desired = np.asarray(target, dtype=float)

    def target_from_state(self, state: RobotState) -> np.ndarray:
        """Holding still: no desired acceleration."""
        return np.zeros(self.dim)


def identity_mass_state() -> RobotState:
    robot = RobotModel.from_urdf_string(IDENTITY_MASS_URDF)
    state = RobotState(robot)
    state.update(np.zeros(4), np.zeros(4))
    np.testing.assert_allclose(state.mass_matrix, np.eye(4), atol=1e-12)
    return state


def two_groups(state: RobotState, e2: np.ndarray, e1=(0.0, 0.0, 0.0, 0.0)):
    entries = [
        TaskEntry('group1', ConstantTask(J1, e1), 0),
        TaskEntry('group2', ConstantTask(J2, e2), 1),
    ]
    return PrioritizedController(state.robot, entries, effort_limits=np.full(4, np.inf))


def test_the_robot_has_the_identity_mass_matrix_everywhere():
    robot = RobotModel.from_urdf_string(IDENTITY_MASS_URDF)
    for seed in range(5):
        state = random_state(robot, seed)
        np.testing.assert_allclose(state.mass_matrix, np.eye(4), atol=1e-12)


def test_the_textbook_null_space_update_eats_half_of_the_second_group():
    """Eqs 8-10: 𝒩₁J₂# e₂ moves joints 3 and 4 by only e₂ / 2, so J₂Δq₂ = e₂ / 2."""
    null_space = np.eye(4) - np.linalg.pinv(J1) @ J1
    np.testing.assert_allclose(null_space, np.diag([0.0, 0.0, 1.0, 1.0]))  # eq 9
    np.testing.assert_allclose(np.linalg.pinv(J2), 0.5 * J2.T)  # eq 10
    naive = null_space @ np.linalg.pinv(J2)
    np.testing.assert_allclose(J2 @ naive, 0.5 * np.eye(2))


def test_the_controller_gives_the_n_weighted_inverse_of_eq_15():
    state = identity_mass_state()
    for e2 in (np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([0.3, -0.7])):
        result = two_groups(state, e2).compute(state)
        np.testing.assert_allclose(result.acceleration, EQ15 @ e2, atol=1e-12)
        # The second group gets all of e₂ (J₂Δq₂ = e₂), the first keeps its zero.
        np.testing.assert_allclose(J2 @ result.acceleration, e2, atol=1e-12)
        np.testing.assert_allclose(J1 @ result.acceleration, 0.0, atol=1e-12)


def test_the_second_group_starts_from_what_the_first_already_did():
    """Eq 13 acts on the residual of e₂ after group 1 moved joints 1 and 2 (eqs 16-17)."""
    state = identity_mass_state()
    e1, e2 = np.array([0.2, -0.1, 0.0, 0.0]), np.array([0.5, 0.4])
    result = two_groups(state, e2, e1).compute(state)
    np.testing.assert_allclose(J1 @ result.acceleration, e1, atol=1e-12)
    np.testing.assert_allclose(J2 @ result.acceleration, e2, atol=1e-12)
    first = np.linalg.pinv(J1) @ e1
    np.testing.assert_allclose(result.acceleration, first + EQ15 @ (e2 - J2 @ first), atol=1e-12)


def test_the_level_reports_count_what_the_groups_control():
    """Group 1 has rank 2 (its zero rows have no authority); group 2 keeps rank 2 below it."""
    state = identity_mass_state()
    result = two_groups(state, np.array([1.0, 1.0])).compute(state)
    first, second = result.levels
    assert (first.rank, first.damped_directions) == (2, 0)
    assert (second.rank, second.damped_directions) == (2, 0)
    assert first.condition_number == 1.0
    # Below group 1, J₂𝒩₁J₂ᵀ = I, scaled by the unprojected mobility diag(J₂J₂ᵀ) = 2: κ = 1.
    assert abs(second.condition_number - 1.0) < 1e-12
