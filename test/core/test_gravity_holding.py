"""The holding walls (`control.constraints.gravity_holding`) against Pinocchio's own gravity.

Each identity of the module docstring is checked by evaluating the generalized gravity of the
real model at the turned configuration (Pinocchio's RNEA), not the formula: the sinusoid along a
joint's own axis, the walls where |gᵢ| meets β τ̄ᵢ, the arc between them where the joint holds,
and the joint bounds that brake towards the walls (`control.constraints.joint_limits`).
"""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pinocchio as pin
import pytest
from robots import random_state, robot

from wbc_control.control.constraints.gravity_holding import (
    HOLDING_SHARE,
    HoldingWalls,
    peak_bounds,
)
from wbc_control.control.constraints.joint_limits import JointLimits
from wbc_control.model.example_robots import robots_directory
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

#: Arms whose effort limits cannot hold them in every pose: Talos's left arm as shipped, and a
#: UR5 and a Panda whose limits are cut (each joint differently) so that most joints get walls.
WEAK_ARMS = {
    'talos_left_arm': 1.0,
    'ur5': np.array([0.3, 0.25, 0.35, 0.2, 0.3, 0.4]),
    'panda': np.array([0.2, 0.15, 0.25, 0.1, 0.3, 0.35, 0.4, 1.0, 1.0]),
}
SEEDS = st.integers(min_value=0, max_value=2**31 - 1)


def weak_arm(name: str):
    """(model, effort limits) of a `WEAK_ARMS` entry."""
    model = robot(name)
    return model, model.effort_limits * WEAK_ARMS[name]


def gravity_at(model, q: np.ndarray) -> np.ndarray:
    """g(q) by Pinocchio's RNEA, on a data of its own."""
    return pin.computeGeneralizedGravity(model.model, model.model.createData(), q).copy()


def turned(model, q: np.ndarray, column: int, angle: float) -> np.ndarray:
    """`q` with the joint of velocity index `column` turned by `angle` (its own axis)."""
    step = np.zeros(model.nv)
    step[column] = angle
    return pin.integrate(model.model, q, step)


@pytest.mark.parametrize('name', list(WEAK_ARMS))
@settings(max_examples=15, deadline=None)
@given(seed=SEEDS)
def test_turning_one_joint_makes_its_gravity_torque_a_sinusoid_of_the_angle(name, seed):
    """gᵢ(q + δ eᵢ) = gᵢ cos δ + Gᵢᵢ sin δ, for δ of both signs up to a full turn."""
    model, limits = weak_arm(name)
    q = random_state(model, seed).q
    walls = HoldingWalls(model, limits)
    value = gravity_at(model, q)
    slopes = pin.computeGeneralizedGravityDerivatives(model.model, model.model.createData(), q)
    for column in walls.columns:
        for angle in (-2.9, -0.7, -0.01, 0.013, 0.4, 1.6, 6.0):
            expected = value[column] * np.cos(angle) + slopes[column, column] * np.sin(angle)
            actual = gravity_at(model, turned(model, q, column, angle))[column]
            assert actual == pytest.approx(expected, abs=1e-9 * (1.0 + abs(expected)))


@pytest.mark.parametrize('name', list(WEAK_ARMS))
@settings(max_examples=15, deadline=None)
@given(seed=SEEDS)
def test_the_walls_stand_where_gravity_takes_the_holding_share_and_the_joint_holds_between(
    name, seed
):
    model, limits = weak_arm(name)
    q = random_state(model, seed).q
    walls = HoldingWalls(model, limits)
    distances = walls.distances(q).copy()
    for joint, column in zip(walls.joints, walls.columns, strict=True):
        held = HOLDING_SHARE * limits[joint]
        above, below = distances[0, joint], distances[1, joint]
        if not np.isfinite(above):  # no wall: the joint holds in any pose of its own
            assert not np.isfinite(below)
            for angle in np.linspace(-np.pi, np.pi, 41):
                assert abs(gravity_at(model, turned(model, q, column, angle))[column]) <= held
            continue
        assert above + below > 0.0  # never both beyond: the arc between them is not empty
        for angle, sign in ((above, 1.0), (-below, -1.0)):  # on each wall: exactly β τ̄ᵢ
            on_wall = gravity_at(model, turned(model, q, column, angle))[column]
            assert abs(on_wall) == pytest.approx(held, rel=1e-9)
            past = gravity_at(model, turned(model, q, column, angle + sign * 1e-3))[column]
            assert abs(past) > held  # and beyond it, more
        inside = np.linspace(-below, above, 23)[1:-1]
        for angle in inside:
            assert abs(gravity_at(model, turned(model, q, column, angle))[column]) < held
        now = abs(gravity_at(model, q)[column])
        assert (now > held) == (above < 0.0 or below < 0.0)  # beyond a wall: not holding


def test_strong_joints_prismatic_joints_floating_bases_and_compensated_gravity_get_no_walls():
    panda = robot('panda')  # holds itself in every pose: no Pinocchio call at all
    state = random_state(panda, 3)
    strong = HoldingWalls(panda, panda.effort_limits)
    assert not strong.active
    assert np.isinf(strong.distances(state.q)).all()
    weak = panda.effort_limits * 0.05
    walls = HoldingWalls(panda, weak)
    assert list(walls.joints) == list(range(7))  # the fingers (prismatic) have none
    assert np.isinf(walls.distances(state.q)[:, 7:]).all()
    assert not strong.walled.any()
    assert walls.walled.tolist() == [True] * 7 + [False, False]
    mixed = panda.effort_limits * np.array([0.05, 0.05, 1.0, 1.0, 0.05, 1.0, 1.0, 0.01, 0.01])
    assert HoldingWalls(panda, mixed).walled.tolist() == [1, 1, 0, 0, 1, 0, 0, 0, 0]
    talos = robot('talos')  # floating base: the stance legs' load is the contacts'
    assert not HoldingWalls(talos, talos.effort_limits * 0.01).active
    assert not HoldingWalls(talos, talos.effort_limits * 0.01).walled.any()
    limits = JointLimits(panda, weak, holding=False)  # a driver adding gravity itself
    assert np.isinf(limits.holding.distances(state.q)).all()
    assert not limits.walled.any()
    assert JointLimits(panda, mixed).walled.tolist() == [1, 1, 0, 0, 1, 0, 0, 0, 0]


@settings(max_examples=20, deadline=None)
@given(seed=SEEDS)
def test_a_joint_brakes_towards_its_holding_wall_as_towards_a_position_wall(seed):
    """The bounds equal those of a joint whose position wall stands at the holding wall.

    Talos's left arm at random states; its position walls moved to where its holding walls are
    (nearer of the two), holding off: the same bounds, both sides, beyond a wall too.
    """
    arm = robot('talos_left_arm')
    state = random_state(arm, seed, speed=0.8)
    with_walls = JointLimits(arm, arm.effort_limits)
    moved = JointLimits(arm, arm.effort_limits, holding=False)
    positions = arm.joint_positions(state.q)
    distances = with_walls.holding.distances(state.q).copy()
    moved.upper_wall = np.minimum(moved.upper_wall, positions + distances[0])
    moved.lower_wall = np.maximum(moved.lower_wall, positions - distances[1])
    expected = moved.bounds(state).copy()
    actual = with_walls.bounds(state)
    np.testing.assert_allclose(actual, expected, rtol=1e-9, atol=1e-9)


def test_beyond_its_holding_wall_the_shoulder_is_pulled_back_and_inside_it_may_move():
    """Talos's shoulder at rest, the arm raised beyond what it holds (must come down), lowered."""
    arm = robot('talos_left_arm')
    limits = JointLimits(arm, arm.effort_limits)
    state = RobotState(arm)
    raised = np.array([0.8, 1.55, -0.37, 0.0, 0.18, 0.07, -0.05])  # 22.4 N m of 22.32
    state.update(arm.configuration(raised), np.zeros(arm.nv))
    assert abs(state.gravity[0]) > HOLDING_SHARE * arm.effort_limits[0]
    lower, upper = limits.bounds(state)
    assert upper[0] < 0.0  # it must come down
    lowered = raised.copy()
    lowered[0] = 0.1  # under 9 N m
    state.update(arm.configuration(lowered), np.zeros(arm.nv))
    assert abs(state.gravity[0]) < 0.5 * HOLDING_SHARE * arm.effort_limits[0]
    lower, upper = limits.bounds(state)
    assert lower[0] < 0.0 < upper[0]  # free to move either way


@pytest.mark.parametrize(
    ('share', 'walled'), [(1.0 - 1e-6, True), (1.0, False), (1.0 + 1e-6, False)]
)
def test_walls_stand_exactly_where_the_peak_gravity_exceeds_the_holding_share(share, walled):
    """βτ̄ᵢ just under, at and just over the peak A of its gravity sinusoid, on two joints."""
    ur5 = robot('ur5')
    q = ur5.configuration(np.array([0.3, -0.9, 1.2, -1.4, 0.8, 0.2]))
    value = gravity_at(ur5, q)
    slopes = pin.computeGeneralizedGravityDerivatives(ur5.model, ur5.model.createData(), q)
    peaks = np.hypot(value, np.diag(slopes))
    limits = ur5.effort_limits.copy()
    limits[1:3] = share * peaks[1:3] / HOLDING_SHARE  # shoulder lift and elbow
    distances = HoldingWalls(ur5, limits).distances(q)
    assert np.isfinite(distances[:, 1:3]).all() == walled
    assert np.isinf(distances[:, [0, 3, 4, 5]]).all()
    if walled:  # a tiny arc around the peak, which the joint cannot hold
        arcs = distances[0, 1:3] + distances[1, 1:3]
        assert (arcs < np.pi).all() and (arcs > np.pi - 0.01).all()


#: A shoulder lifting a 1 m telescope with a 5 kg load at its end: the slider's travel is most
#: of the load's lever.
TELESCOPE_URDF = """<robot name="telescope"><link name="base"/>
  <link name="boom"><inertial><origin xyz="0.1 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="load"><inertial><mass value="5"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="boom"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="60" velocity="1"/></joint>
  <joint name="extend" type="prismatic"><parent link="boom"/><child link="load"/>
    <origin xyz="0.2 0 0"/><axis xyz="1 0 0"/>
    <limit lower="0" upper="1.0" effort="100" velocity="1"/></joint>
</robot>"""


def test_a_sliders_travel_counts_in_the_peak_bound():
    """Held out and fully extended, the load's 5 kg at 1.2 m: the bound counts the travel."""
    telescope = RobotModel.from_urdf_string(TELESCOPE_URDF)
    q = telescope.configuration(np.array([0.0, 1.0]))
    peak = abs(gravity_at(telescope, q)[0])
    assert peak == pytest.approx(9.81 * (1.0 * 0.1 + 5.0 * 1.2), rel=1e-6)
    assert peak_bounds(telescope.model)[1] >= peak
    walls = HoldingWalls(telescope, telescope.effort_limits)  # 60 N m: 51 held, 59.8 needed
    assert walls.active
    assert np.isfinite(walls.distances(q)[:, 0]).all()
    free = RobotModel.from_urdf_string(TELESCOPE_URDF.replace('lower="0" upper="1.0"', ''))
    assert np.isinf(peak_bounds(free.model)[1])  # unbounded travel: no bound, always active


@pytest.mark.parametrize('name', ['panda', 'ur5', 'talos_left_arm', 'kinova', 'telescope'])
@settings(max_examples=40, deadline=None)
@given(seed=SEEDS)
def test_the_peak_gravity_torque_of_every_joint_stays_under_its_bound_in_any_pose(name, seed):
    """A = √(gᵢ² + Gᵢᵢ²) ≤ Âᵢ (`peak_bounds`) for every revolute joint, continuous ones too."""
    if name == 'kinova':
        path = robots_directory() / 'kinova_description/robots/kinova.urdf'
        model = RobotModel.from_urdf_path(path)  # continuous joints
    elif name == 'telescope':
        model = RobotModel.from_urdf_string(TELESCOPE_URDF)
    else:
        model = robot(name)
    q = random_state(model, seed).q
    slopes = pin.computeGeneralizedGravityDerivatives(model.model, model.model.createData(), q)
    amplitudes = np.hypot(gravity_at(model, q), np.diag(slopes))
    ids = [model.model.getJointId(joint) for joint in model.joint_names]
    ids = [
        joint for joint in ids if model.model.joints[joint].shortname().startswith('JointModelR')
    ]
    columns = [model.model.joints[joint].idx_v for joint in ids]
    peaks = peak_bounds(model.model)[ids]
    assert (amplitudes[columns] <= peaks * (1.0 + 1e-12) + 1e-9).all(), amplitudes[columns] / peaks
