"""Floating base and rigid contacts (Mistry & Righetti 2011; Johnson 2024)."""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
from oracles.constrained_dynamics import dagger_terms
import pytest
from robots import random_state, robot

from wbc_control.control.contact.contacts import (
    CONTACT_VELOCITY_DAMPING,
    MOMENT_ARM_M,
    Contact,
    contact_force_reports,
    contact_jacobian,
    holding_torque,
)
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.exceptions import InvalidTaskConfig, InvalidValue, SingularConstraint
from wbc_control.model.example_robots import robots_directory
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks import ComTask, FrameOrientationTask, FramePositionTask, JointPostureTask

seeds = st.integers(0, 2**31 - 1)
FEET = ('left_sole_link', 'right_sole_link')


def talos_controller(extra_levels: int = 2, com_target=(0.0, 0.0, 0.9), com_kp=50.0):
    talos = robot('talos')
    entries = [TaskEntry('com', ComTask(talos, com_target, kp=com_kp), 0)]
    if extra_levels >= 1:
        hand = FramePositionTask(talos, 'gripper_left_base_link', [0.4, 0.3, 1.0], kp=40.0)
        entries.append(TaskEntry('hand', hand, 1))
    if extra_levels >= 2:
        entries.append(
            TaskEntry(
                'torso', FrameOrientationTask(talos, 'torso_2_link', [0, 0, 0, 1], kp=30.0), 1
            )
        )
        posture = JointPostureTask(talos, np.zeros(talos.n_actuated), kp=10.0)
        entries.append(TaskEntry('posture', posture, 2))
    contacts = [Contact.create(talos, foot, 'surface') for foot in FEET]
    return PrioritizedController(
        talos, entries, contacts=contacts, effort_limits=np.full(talos.n_actuated, np.inf)
    )


def kkt_acceleration(state: RobotState, constraint, drift, torque) -> np.ndarray:
    """Forward dynamics under the contacts: [M Aᵀ; A 0][q̈; λ] = [Sᵀτ − h; −drift]."""
    nv, m = state.robot.nv, constraint.shape[0]
    generalized = np.zeros(nv)
    generalized[state.robot.indices.v] = torque
    block = np.block([[state.mass_matrix, constraint.T], [constraint, np.zeros((m, m))]])
    rhs = np.concatenate([generalized - state.nonlinear_effects, -drift])
    return np.linalg.solve(block, rhs)[:nv]


@settings(max_examples=15, deadline=None)
@given(seeds)
def test_contacts_are_kept_and_the_torque_produces_the_planned_acceleration(seed):
    state = random_state(robot('talos'), seed, speed=0.3)
    ctrl = talos_controller()
    result = ctrl.compute(state)
    constraint, drift = contact_jacobian(state, ctrl.contacts)
    # The contact rows A q̈ = −Ȧq̇ − K A q̇: the feet of a random state move, K damps them.
    damped = drift + CONTACT_VELOCITY_DAMPING * constraint @ state.v
    np.testing.assert_allclose(constraint @ result.acceleration + damped, 0.0, atol=1e-8)
    assert result.base_wrench_residual < 1e-8
    # Closed loop consistency: the contact-constrained dynamics driven by τ give back q̈.
    np.testing.assert_allclose(
        kkt_acceleration(state, constraint, damped, result.torque),
        result.acceleration,
        atol=1e-6,
    )


@pytest.mark.parametrize('seed', [4, 5])
def test_the_contact_rows_bring_moving_contacts_to_rest_and_leave_resting_ones(seed):
    """A q̈ + Ȧq̇ = −K A q̇ (Baumgarte 1972): 0 where the soles rest, against their motion else."""
    talos = robot('talos')
    moving = random_state(talos, seed, speed=0.3)
    constraint, _ = contact_jacobian(moving, talos_controller().contacts)
    free = np.eye(talos.nv) - np.linalg.pinv(constraint) @ constraint
    resting = RobotState(talos)
    resting.update(moving.q, free @ moving.v)  # the same motion, the soles at rest
    for state, at_rest in ((moving, False), (resting, True)):
        result = talos_controller().compute(state)
        constraint, drift = contact_jacobian(state, talos_controller().contacts)
        velocity = constraint @ state.v
        contact_acceleration = constraint @ result.acceleration + drift
        assert bool(np.abs(velocity).max() < 1e-9) is at_rest
        np.testing.assert_allclose(
            contact_acceleration, -CONTACT_VELOCITY_DAMPING * velocity, atol=1e-8
        )
        moving_rows = np.abs(velocity) > 1e-3
        assert (contact_acceleration[moving_rows] * velocity[moving_rows] < 0.0).all()
        assert bool(moving_rows.any()) is not at_rest


@settings(max_examples=15, deadline=None)
@given(seeds)
def test_lower_levels_never_disturb_higher_ones_in_the_constrained_space(seed):
    state = random_state(robot('talos'), seed, speed=0.3)
    alone, full = talos_controller(0).compute(state), talos_controller(2).compute(state)
    if any(level.damped_directions for level in alone.levels):
        return
    com = ComTask(robot('talos'), (0.0, 0.0, 0.9), kp=50.0).compute(state)
    np.testing.assert_allclose(
        com.jacobian @ full.acceleration, com.jacobian @ alone.acceleration, atol=1e-7
    )


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_dagger_identities_on_the_real_robot(seed):
    state = random_state(robot('talos'), seed)
    ctrl = talos_controller(0)
    constraint, _ = contact_jacobian(state, ctrl.contacts)
    terms = dagger_terms(state.mass_matrix, constraint)
    mass, m_dagger, a_dagger = state.mass_matrix, terms.m_dagger, terms.a_dagger
    identity = np.eye(mass.shape[0])
    np.testing.assert_allclose(mass @ m_dagger + constraint.T @ a_dagger, identity, atol=1e-8)
    np.testing.assert_allclose(constraint @ m_dagger, 0.0, atol=1e-8)
    np.testing.assert_allclose(constraint @ a_dagger.T, np.eye(12), atol=1e-8)


def test_standing_still_needs_pushing_forces_that_carry_the_weight():
    talos = robot('talos')
    state = RobotState(talos)
    state.update(
        talos.configuration(np.zeros(talos.n_actuated), [0, 0, 1.0, 0, 0, 0, 1]),
        np.zeros(talos.nv),
    )
    com = state.com.copy()
    result = talos_controller(0, com_target=com).compute(state)
    weight = sum(inertia.mass for inertia in talos.model.inertias) * 9.81
    normal = sum(report.normal_force for report in result.contacts)
    assert normal == pytest.approx(weight, rel=1e-6)
    assert not any(report.pulling or report.outside_friction_cone for report in result.contacts)


def test_contact_forces_never_pull_the_task_gives_way_instead():
    talos = robot('talos')
    state = RobotState(talos)
    # Knees bent 0.3 rad: with straight legs the COM's vertical direction is near-singular
    # (condition 58, inside the damping band), and its damping, not the contacts, would set
    # how fast the COM may fall.
    joints = np.zeros(talos.n_actuated)
    for side in ('left', 'right'):
        legs = talos.joint_index([f'leg_{side}_{number}_joint' for number in (3, 4, 5)])
        joints[legs] = [-0.15, 0.3, -0.15]  # hip, knee, ankle pitch
    state.update(talos.configuration(joints, [0, 0, 1.0, 0, 0, 0, 1]), np.zeros(talos.nv))
    # Accelerating the COM downwards faster than gravity could only be done by pulling.
    target = state.com - np.array([0.0, 0.0, 1.0])
    result = talos_controller(0, com_target=target, com_kp=100.0).compute(state)
    assert not any(report.pulling for report in result.contacts)
    assert all(report.normal_force >= -1e-9 for report in result.contacts)
    com = ComTask(talos, target, kp=100.0).compute(state)
    achieved_z = (com.jacobian @ result.acceleration + com.drift)[2]
    assert achieved_z == pytest.approx(-9.81, abs=0.05)  # falling freely, no faster


@pytest.mark.parametrize('kind', ['surface', 'point'])
def test_friction_cone_report_between_mu_and_two_mu(kind):
    """‖f_t‖ / f_n against μ: inside below μ, outside from just above μ on (not only past 2μ)."""
    talos = robot('talos')
    contact = Contact.create(talos, FEET[0], kind)
    mu, normal = 0.5, 300.0
    for ratio, outside in ((0.9, False), (1.01, True), (1.5, True), (1.99, True), (3.0, True)):
        force = np.zeros(contact.dim)
        tangential = np.array([0.6, 0.8]) * ratio * mu * normal  # in the xy plane of the world
        force[:3] = [tangential[0], tangential[1], normal]
        (report,) = contact_force_reports([contact], force, mu)
        assert report.friction_ratio == pytest.approx(ratio * mu, rel=1e-12)
        assert report.normal_force == pytest.approx(normal)
        assert report.outside_friction_cone is outside, ratio
        assert not report.pulling
    force = np.zeros(contact.dim)
    force[2] = -1.0
    (report,) = contact_force_reports([contact], force, mu)
    assert report.pulling and report.outside_friction_cone
    force[2] = 0.5  # a light push, straight down: inside the cone whatever its size
    (report,) = contact_force_reports([contact], force, mu)
    assert report.friction_ratio == 0.0 and not report.outside_friction_cone
    assert not report.pulling


# Johnson 2024, section 5: a crank-slider whose coupler is massless. M is singular (eq 31) but the
# slider constraint covers its null space (eq 32), so the block matrix solution works.
CRANK_SLIDER = """<?xml version="1.0"?>
<robot name="crank_slider">
  <link name="ground"/>
  <link name="crank">
    <inertial><origin xyz="0.5 0 0"/><mass value="3.0"/>
      <inertia ixx="0.01" iyy="0.25" izz="0.25" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="coupler">
    <inertial><mass value="0.0"/>
      <inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="slider"/>
  <joint name="crank_joint" type="revolute">
    <parent link="ground"/><child link="crank"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="100" velocity="5"/>
  </joint>
  <joint name="coupler_joint" type="revolute">
    <parent link="crank"/><child link="coupler"/><origin xyz="1 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="100" velocity="5"/>
  </joint>
  <joint name="slider_joint" type="fixed">
    <parent link="coupler"/><child link="slider"/><origin xyz="1 0 0"/>
  </joint>
</robot>
"""


def test_crank_slider_with_a_massless_coupler_works_through_the_block_matrix():
    model = RobotModel.from_urdf_string(CRANK_SLIDER)
    state = RobotState(model)
    crank = 0.6
    state.update(model.configuration([crank, -2 * crank]), np.array([0.5, -1.0]))
    assert np.linalg.matrix_rank(state.mass_matrix) == 1
    slider = Contact.create(model, 'slider', 'along', axis=[0.0, 1.0, 0.0])
    posture = JointPostureTask(model, [0.2, -0.4], kp=30.0)
    ctrl = PrioritizedController(model, [TaskEntry('posture', posture)], contacts=[slider])
    result = ctrl.compute(state)
    assert np.isfinite(result.torque).all()
    constraint, drift = contact_jacobian(state, [slider])
    np.testing.assert_allclose(constraint @ result.acceleration + drift, 0.0, atol=1e-9)
    np.testing.assert_allclose(
        kkt_acceleration(state, constraint, drift, result.torque_unlimited),
        result.acceleration,
        atol=1e-8,
    )


def test_an_uncovered_massless_link_is_a_clear_error():
    model = RobotModel.from_urdf_string(CRANK_SLIDER)
    state = RobotState(model)
    state.update(model.configuration([0.6, -1.2]), np.zeros(2))
    # A constraint on the crank alone leaves the massless coupler free: eq 32 fails.
    crank_tip = Contact.create(model, 'coupler', 'along', axis=[0.0, 1.0, 0.0])
    ctrl = PrioritizedController(model, [], contacts=[crank_tip])
    with pytest.raises(SingularConstraint):
        ctrl.compute(state)


def test_bad_contact_descriptions():
    talos = robot('talos')
    with pytest.raises(InvalidTaskConfig, match='surface, point or along'):
        Contact.create(talos, 'left_sole_link', 'glued')
    with pytest.raises(InvalidTaskConfig, match='axis'):
        Contact.create(talos, 'left_sole_link', 'along')
    with pytest.raises(InvalidValue):
        PrioritizedController(
            talos,
            [],
            contacts=[Contact.create(talos, 'left_sole_link')],
            friction_coefficient=-1.0,
        )


def test_contact_types_fix_6_3_and_1_directions():
    talos = robot('talos')
    dims = [
        Contact.create(talos, 'left_sole_link', k, [0, 0, 1]).dim
        for k in ('surface', 'point', 'along')
    ]
    assert dims == [6, 3, 1]


@pytest.mark.parametrize('seed', range(3))
def test_the_stacked_constraint_rows_are_each_contacts_rows_of_its_frame_terms(seed):
    """A = stacked C_i J_i and Ȧq̇ = stacked C_i J̇_i v, C_i the contact's rows, every type."""
    talos = robot('talos')
    state = random_state(talos, seed)
    contacts = [
        Contact.create(talos, 'left_sole_link', 'surface'),
        Contact.create(talos, 'right_sole_link', 'point'),
        Contact.create(talos, 'gripper_left_base_link', 'along', axis=[0.3, -0.2, 0.9]),
    ]
    constraint, drift = contact_jacobian(state, contacts)
    expected_rows, expected_drift = [], []
    for contact in contacts:
        _, jacobian, frame_drift = state.frame_terms(contact.frame_id)
        expected_rows.append(contact.rows @ jacobian)
        expected_drift.append(contact.rows @ frame_drift)
    np.testing.assert_allclose(constraint, np.vstack(expected_rows), rtol=0.0, atol=1e-15)
    np.testing.assert_allclose(drift, np.concatenate(expected_drift), rtol=0.0, atol=1e-15)
    assert constraint.shape == (10, talos.nv)


def test_an_along_contact_takes_a_finite_non_zero_axis_and_normalises_it():
    talos = robot('talos')
    contact = Contact.create(talos, 'left_sole_link', 'along', axis=[0.0, 0.0, 2.0])
    np.testing.assert_allclose(contact.rows, [[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]])
    for axis in ([0.0, 0.0, 0.0], [np.nan, 0.0, 1.0], [np.inf, 0.0, 1.0], [1.0, 0.0]):
        with pytest.raises(InvalidValue):
            Contact.create(talos, 'left_sole_link', 'along', axis=axis)


def test_the_holding_torque_leaves_nothing_for_the_unactuated_base():
    """The torque g − Aᵀf, where the contact forces f carry the base rows of g.

    f is the minimum of ‖f_lin‖² + ‖m / L‖² (moments weighed at the arm L = MOMENT_ARM_M).
    """
    talos = robot('talos')
    state = random_state(talos, 3, speed=0.0)
    contacts = [Contact.create(talos, foot, 'surface') for foot in FEET]
    torque = holding_torque(state, contacts)
    constraint, _ = contact_jacobian(state, contacts)
    base = constraint[:, :6].T
    scale = np.tile([1.0, 1.0, 1.0, MOMENT_ARM_M, MOMENT_ARM_M, MOMENT_ARM_M], 2)
    forces = scale * np.linalg.lstsq(base * scale, state.gravity[:6], rcond=None)[0]
    np.testing.assert_allclose(base @ forces, state.gravity[:6], atol=1e-8)
    expected = (state.gravity - constraint.T @ forces)[talos.indices.v]
    np.testing.assert_allclose(torque, expected, atol=1e-8)


def test_a_fixed_base_has_no_base_wrench_to_balance():
    panda = robot('panda')
    state = random_state(panda, 2)
    contact = Contact.create(panda, 'panda_hand', 'point')
    ctrl = PrioritizedController(panda, [], contacts=[contact])
    result = ctrl.compute(state)
    assert result.base_wrench_residual == 0.0
    np.testing.assert_array_equal(result.contacts[0].force, 0.0)


def solo8() -> RobotModel:
    """Solo-8 (example-robot-data's solo.urdf): two joints per leg, both in its sagittal plane."""
    return RobotModel.from_urdf_path(
        robots_directory() / 'solo_description/robots/solo.urdf', True
    )


def test_contacts_whose_directions_depend_on_each_other_are_refused_by_name():
    """Solo-8's feet cannot move sideways: four point feet fix 12 directions of rank 11.

    Their forces would never be determined (the block matrix is singular, Johnson 2024, eq 32),
    so the set is refused when the controller is built or the contacts change, naming the
    contacts; two diagonal point feet (6 independent directions) are taken and give torques.
    Three are taken too, independent at random configurations; where their rows lose rank (the
    feet on one plane) the tick still holds them.
    """
    solo = solo8()
    feet = [Contact.create(solo, f'{leg}_FOOT', 'point') for leg in ('FL', 'FR', 'HL', 'HR')]
    posture = [TaskEntry('posture', JointPostureTask(solo, np.zeros(8), kp=10.0), 0)]
    refusal = r'FL_FOOT \(point\), .*HR_FOOT \(point\) fix 12 directions of which only 11'
    with pytest.raises(InvalidTaskConfig, match=refusal):
        PrioritizedController(solo, posture, contacts=feet)
    controller = PrioritizedController(solo, posture, contacts=[feet[0], feet[3]])
    with pytest.raises(InvalidTaskConfig, match=refusal):
        controller.stacks.set_contacts(feet)
    assert controller.stacks.switching.requested.contacts == ('FL_FOOT', 'HR_FOOT')
    state = RobotState(solo)
    q = solo.configuration([0.8, -1.6, 0.8, -1.6, -0.8, 1.6, -0.8, 1.6], [0, 0, 0.25, 0, 0, 0, 1])
    state.update(q, np.zeros(solo.nv))
    assert np.isfinite(controller.compute(state).torque).all()
    # Three feet on one plane, as standing on flat ground: their lateral rows lose rank here
    # (8 of 9), and the hierarchy keeps the 8 independent ones, the forces' freedom taken by
    # the least weighted force norm.
    three = PrioritizedController(solo, posture, contacts=feet[:3])
    result = three.compute(state)
    assert np.isfinite(result.torque).all()
    constraint, drift = contact_jacobian(state, three.contacts)
    np.testing.assert_allclose(constraint @ result.acceleration + drift, 0.0, atol=1e-9)


def test_a_contact_on_a_frame_the_joints_cannot_move_is_refused():
    """A contact on the fixed base's root fixes directions nothing moves: A's rows are zero."""
    panda = robot('panda')
    root = Contact.create(panda, 'panda_link0', 'point')
    with pytest.raises(
        InvalidTaskConfig, match=r'panda_link0 \(point\) fix 3 directions of which only 0'
    ):
        PrioritizedController(panda, [], contacts=[root])
