"""The joint-limit level (wbc_control.control.joint_limits) over simulated rollouts.

The rollouts integrate q̈ = M⁻¹(τ − h) from Pinocchio's ABA with semi-implicit Euler at 2 ms:
no simulator and no joint stops; only the controller keeps the joints inside their limits.
"""

import math

import numpy as np
import pinocchio as pin
import pytest
from robots import robot

from wbc_control.control.command_output import CommandOutput
from wbc_control.control.controller_loop import ControllerLoop
from wbc_control.control.joint_limits import JointLimits
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.control.torque_limits import TorqueLimiter
from wbc_control.exceptions import InvalidValue
from wbc_control.model.example_robots import robots_directory
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks import FramePoseTask, FramePositionTask, JointPostureTask

READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]
HAND_TARGET = [0.307, 0.0, 0.59, 1.0, 0.0, 0.0, 0.0]  # config/panda_controller.yaml


def shipped_controller(panda, hand_target=HAND_TARGET, joint_limits=True, effort_limits=None):
    """The tasks of config/panda_controller.yaml (URDF effort limits unless given)."""
    hand = FramePoseTask(panda, 'panda_hand', hand_target, kp=[100.0] * 3 + [60.0] * 3)
    posture = JointPostureTask(panda, READY, kp=25.0, kd=10.0)
    return PrioritizedController(
        panda,
        [TaskEntry('hand', hand, 0), TaskEntry('posture', posture, 1)],
        effort_limits=effort_limits,
        joint_limits=JointLimits(panda) if joint_limits else None,
    )


def rollout(ctrl, q0, seconds, dt=0.002, until_outside=False):
    """Positions `(steps, nq)`, hand position errors `(steps,)`, joints at limit per step.

    `until_outside`: stop at the first step that leaves the URDF limits.
    """
    model = ctrl.robot
    lower, upper = model.position_limits
    data = model.model.createData()
    state = RobotState(model)
    q, v = np.array(q0, dtype=float), np.zeros(model.nv)
    positions, errors, limited = [], [], []
    for _ in range(round(seconds / dt)):
        state.update(q, v)
        result = ctrl.compute(state, dt)
        acceleration = pin.aba(model.model, data, q, v, result.torque)
        v = v + dt * acceleration
        q = pin.integrate(model.model, q, dt * v)
        positions.append(q.copy())
        errors.append(np.linalg.norm(result.tasks[0].error[:3]))
        limited.append(result.joints_at_limit)
        if until_outside and ((q < lower) | (q > upper)).any():
            break
    return np.array(positions), np.array(errors), limited


@pytest.mark.parametrize('target', [[1.5, 0.0, 0.5], [-0.2, 1.2, 1.4], [0.0, 0.95, 0.4]])
def test_a_target_outside_the_workspace_never_drives_a_joint_past_its_limit(target):
    """Effort limits off, as in the singularity sweeps: the level's own guarantee."""
    panda = robot('panda')
    lower, upper = panda.position_limits
    unlimited = np.full(panda.n_actuated, np.inf)
    pose = [*target, 1.0, 0.0, 0.0, 0.0]
    positions, _, limited = rollout(shipped_controller(panda, pose, True, unlimited), READY, 3.0)
    assert (positions >= lower).all() and (positions <= upper).all()
    assert any(limited), 'the target must actually pull joints into their limits'
    # Without the level the same pull goes past a limit: the test can fail.
    without = shipped_controller(panda, pose, False, unlimited)
    positions = rollout(without, READY, 3.0, until_outside=True)[0]
    assert ((positions < lower) | (positions > upper)).any()


def fallen(seed: int, seconds: float = 3.0, dt: float = 0.002) -> np.ndarray:
    """Where the arm comes to rest when the torque stops near the ready pose.

    Zero torque, viscous joint friction, and the URDF limits as hard stops (the velocity into
    a stop is lost), as a robot's mechanical stops would do.
    """
    panda = robot('panda')
    lower, upper = panda.position_limits
    data = panda.model.createData()
    rng = np.random.default_rng(seed)
    q = np.array(READY) + np.r_[rng.uniform(-0.2, 0.2, 7), 0.0, 0.0]
    v = np.zeros(panda.nv)
    for _ in range(round(seconds / dt)):
        v = v + dt * pin.aba(panda.model, data, q, v, -2.0 * v)
        q = q + dt * v
        stopped = (q < lower) | (q > upper)
        q, v[stopped] = np.clip(q, lower, upper), 0.0
    return q


@pytest.mark.parametrize('seed', range(6))
def test_an_arm_fallen_against_its_limits_recovers(seed):
    """URDF effort limits: the hand returns near its target, every joint inside throughout.

    Not under 1 cm in general: from these states the hand's orientation error (about 1 rad)
    drives the wrist (joints 5 to 7) into its walls, where the pose task keeps a residual of
    1 to 3 cm in position (a local minimum of the pose error within the joint limits; 0 to
    2.8 cm after 8 s, the same at 10 s). The restart in the simulator, with the shipped error
    clipping and soft start, returns under 1 cm: test_limit_recovery. Where the braking needs
    more than the effort limits, the torque is fitted to them with the joints kept at their
    bounds, so no joint passes its stop (up to 9 mm did when the output clipped joint by joint).
    """
    panda = robot('panda')
    lower, upper = panda.position_limits
    q0 = fallen(seed)
    assert ((q0 <= lower + 1e-9) | (q0 >= upper - 1e-9))[:7].sum() >= 2, 'not against limits'
    positions, errors, _ = rollout(shipped_controller(panda), q0, seconds=8.0)
    assert errors[0] > 0.3 and errors[-1] < 0.03, f'hand error {errors[-1]:.3f} m after 8 s'
    assert (positions >= lower).all() and (positions <= upper).all()


def test_a_joint_pulled_into_its_wall_is_held_and_reported():
    panda = robot('panda')
    limits = JointLimits(panda, margin=0.1, kp=100.0)
    state = RobotState(panda)
    q = np.array(READY)
    q[3] = panda.position_limits[1][3] - 0.1  # joint 4 at its wall, at rest
    state.update(q, np.zeros(panda.nv))
    lower, upper = limits.bounds(state)
    assert upper[3] == pytest.approx(0.0, abs=1e-12) and lower[3] < 0.0
    beyond = np.array(READY)
    beyond[3] = 0.5  # the posture pulls joint 4 further out
    posture = JointPostureTask(panda, beyond, kp=25.0)
    ctrl = PrioritizedController(panda, [TaskEntry('posture', posture)], joint_limits=limits)
    result = ctrl.compute(state)
    assert result.acceleration[3] == pytest.approx(0.0, abs=1e-9)
    # The names are made when read, from this tick's set, not from the next tick's.
    state.update(np.array(READY), np.zeros(panda.nv))
    assert ctrl.compute(state).joints_at_limit != ('panda_joint4',)
    assert result.joints_at_limit == ('panda_joint4',)
    # Away from every limit the level changes nothing.
    state.update(np.array(READY) + np.r_[np.full(7, 0.05), 0.0, 0.0], np.zeros(panda.nv))
    gentle = [TaskEntry('posture', JointPostureTask(panda, READY, kp=25.0))]
    plain = PrioritizedController(panda, gentle).compute(state)
    limited = PrioritizedController(panda, gentle, joint_limits=limits).compute(state)
    assert limited.joints_at_limit == () and limited.task_scale == 1.0
    np.testing.assert_allclose(limited.torque, plain.torque)


def test_a_lower_levels_saturations_leave_the_higher_level_whole():
    """Multi-task SNS: a feasible hand above an infeasible posture is achieved exactly.

    The posture asks 10⁴ rad/s² of every joint. With one saturated set above all tasks, the
    joints it saturated for the posture were taken from the hand too (all 7, the hand then
    missed its acceleration by 1.2 m/s²); saturated level by level (Flacco, De Luca & Khatib
    2012), the posture's saturations act only in what the hand leaves free.
    """
    panda = robot('panda')
    state = RobotState(panda)
    state.update(np.array(READY), np.zeros(panda.nv))
    hand = FramePositionTask(panda, 'panda_hand', [0.327, -0.02, 0.61], kp=100.0)  # 2 cm off
    far = np.array(READY) + np.r_[np.full(7, 1.0), 0.0, 0.0]
    posture = JointPostureTask(panda, far, kp=1e4)
    limits = JointLimits(panda)
    ctrl = PrioritizedController(
        panda,
        [TaskEntry('hand', hand, 0), TaskEntry('posture', posture, 1)],
        effort_limits=np.full(panda.n_actuated, 1e6),  # the joint bounds alone limit
        joint_limits=limits,
    )
    result = ctrl.compute(state)
    hand_report, posture_report = result.tasks
    np.testing.assert_allclose(
        hand_report.achieved_acceleration, hand_report.desired_acceleration, atol=1e-6
    )
    achieved, desired = posture_report.achieved_acceleration, posture_report.desired_acceleration
    assert np.linalg.norm(achieved) < 0.1 * np.linalg.norm(desired)
    assert 0 < len(result.joints_at_limit) < 7
    lower, upper = limits.bounds(state)
    joints = result.acceleration[panda.indices.v]
    assert (joints <= upper + 1e-6).all() and (joints >= lower - 1e-6).all()


@pytest.mark.parametrize(
    ('margin', 'kp', 'deceleration'),
    [(-0.1, 100.0, 1.0), (0.1, 0.0, 1.0), (np.nan, 1.0, 1.0), (0.1, 1.0, 0.0)],
)
def test_invalid_settings(margin, kp, deceleration):
    with pytest.raises(InvalidValue):
        JointLimits(robot('panda'), margin, kp, deceleration)


def test_a_soft_start_ramps_the_tasks_while_the_level_brakes_in_full():
    """With the level, the ramp scales the tasks' ẍ*, not the torque (ControllerLoop).

    No effort limits: braking joint 4 needs more than joint 2's 87 N m, and the fit to the
    effort limits (test_a_plan_beyond_the_torque_range_is_fitted_to_it) would move joint 1.
    """
    panda = robot('panda')
    target = np.array(READY) + np.r_[0.2, np.zeros(8)]
    posture = JointPostureTask(panda, target, kp=25.0, kd=10.0)
    limits = JointLimits(panda)
    unlimited = np.full(panda.n_actuated, np.inf)
    entries = [TaskEntry('posture', posture)]
    ctrl = PrioritizedController(panda, entries, effort_limits=unlimited, joint_limits=limits)
    output = CommandOutput(TorqueLimiter(unlimited))
    loop = ControllerLoop(ctrl, output, 'zero', timeout=0.1, soft_start_time=0.5)
    positions = np.array(READY)
    positions[3] = panda.position_limits[1][3] - 0.06  # joint 4 just short of its wall...
    velocities = np.r_[0.0, 0.0, 0.0, 1.0, np.zeros(5)]  # ...and running into it
    first = loop.tick(positions, velocities, None, None, 1.0)
    result = loop.statistics.result
    assert 'panda_joint4' in result.joints_at_limit
    lower, upper = limits.bounds(loop.state)
    assert result.acceleration[3] == pytest.approx(upper[3]) and upper[3] < -10.0  # braking
    assert np.abs(first.torque - loop.state.gravity[:9]).max() > 1.0  # not the holding torque
    assert result.acceleration[0] == pytest.approx(0.0, abs=1e-9)  # the posture: α = 0
    loop.tick(positions, velocities, None, None, 1.25)
    half = loop.statistics.result.acceleration[0]
    assert half == pytest.approx(0.5 * 25.0 * 0.2, rel=1e-6)  # α = 1/2 of kp e on joint 1


def test_a_plan_beyond_the_torque_range_is_fitted_to_it():
    """The command the next tick can take (here ± 2 N m around the last) is what is planned.

    Joint 4 runs into its wall: braking it needs more torque change than the range allows.
    The plan is fitted to the range (`torque_fit.fit_torque`) instead of the output clipping
    joint by joint, which would change every joint's acceleration through M.
    """
    panda = robot('panda')
    ctrl = shipped_controller(panda)
    state = RobotState(panda)
    positions = np.array(READY)
    positions[3] = panda.position_limits[1][3] - 0.06
    state.update(positions, np.r_[0.0, 0.0, 0.0, 1.0, np.zeros(5)])
    free = ctrl.compute(state).torque_unlimited
    previous = state.gravity[:9]
    lower, upper = previous - 2.0, previous + 2.0
    assert ((free < lower) | (free > upper)).any(), 'the range must bind'
    ctrl.torque_bounds = (lower, upper)
    result = ctrl.compute(state)
    torque = result.torque_unlimited
    assert (torque >= lower - 1e-9).all() and (torque <= upper + 1e-9).all()
    held = (torque <= lower + 1e-9) | (torque >= upper - 1e-9)
    assert held.any() and (result.rate_limited == held).all()  # reported as limited
    np.testing.assert_allclose(
        torque, state.mass_matrix.dot(result.acceleration) + state.nonlinear_effects
    )
    # The range cannot brake joint 4 at its bound (−36 rad/s²); the fit brakes it (−1.9),
    # the clip would accelerate it into the wall (+1.1).
    clipped = state.solve_mass_matrix(np.clip(free, lower, upper) - state.nonlinear_effects)
    assert result.acceleration[3] < min(clipped[3], 0.0)


def viability_ceiling(limits: JointLimits, distance: float, max_speed: float) -> float:
    """v⁺(d) = min(ω d, √(2 A d), v_max) for d > 0, min(ω d, v_max) at or beyond the wall."""
    value = min(limits.kp / (2.0 * math.sqrt(limits.kp)) * distance, max_speed)
    if distance > 0.0:
        value = min(value, math.sqrt(2.0 * limits.deceleration * distance))
    return value


def viability_bounds(limits: JointLimits, positions, velocities):
    """(a⁻, a⁺) written out from the module docstring, joint by joint in plain Python.

    ω = kp / kd with kd = 2 √kp; aᵢ⁺ = kd (v⁺(dᵢ) − q̇ᵢ), aᵢ⁻ = kd (−v⁺(dᵢ⁻) − q̇ᵢ) ≤ aᵢ⁺.
    The walls stand `margin` inside each URDF limit, a quarter of a narrower range inside.
    """
    lower_limits, upper_limits = limits.robot.position_limits
    kd = 2.0 * math.sqrt(limits.kp)
    lower, upper = [], []
    for i, (q, v) in enumerate(zip(positions, velocities)):
        inset = min(limits.margin, 0.25 * (upper_limits[i] - lower_limits[i]))
        speed = limits.max_speed[i]
        up = kd * (viability_ceiling(limits, upper_limits[i] - inset - q, speed) - v)
        down = viability_ceiling(limits, q - lower_limits[i] - inset, speed)
        upper.append(up)
        lower.append(min(kd * (-down - v), up))
    return np.array(lower), np.array(upper)


@pytest.mark.parametrize('seed', range(8))
def test_the_bounds_are_the_viability_ceilings(seed):
    """`JointLimits.bounds` (compiled) against the formula, near, at and beyond the walls.

    Positions within 0.3 rad of a limit (some past it), speeds up to twice the URDF limits:
    every branch of v⁺ (the PD wall, the braking parabola, the speed limit, d ≤ 0) and the
    fingers, whose 4 cm range puts their walls a quarter of it inside.
    """
    panda = robot('panda')
    rng = np.random.default_rng(seed)
    limits = JointLimits(panda, margin=0.05, kp=float(rng.uniform(50.0, 800.0)),
                         deceleration=float(rng.uniform(1.0, 20.0)))  # fmt: skip
    lower_limits, upper_limits = panda.position_limits
    near_upper = rng.random(panda.n_actuated) < 0.5
    offset = rng.uniform(-0.3, 0.05, panda.n_actuated) * np.minimum(
        1.0, upper_limits - lower_limits
    )
    positions = np.where(near_upper, upper_limits + offset, lower_limits - offset)
    velocities = rng.uniform(-2.0, 2.0, panda.n_actuated) * limits.max_speed
    state = RobotState(panda)
    state.update(positions, velocities)
    lower, upper = limits.bounds(state)
    expected_lower, expected_upper = viability_bounds(limits, positions, velocities)
    np.testing.assert_allclose(upper, expected_upper, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(lower, expected_lower, rtol=1e-12, atol=1e-9)
    assert (lower <= upper).all()


def test_within_is_inclusive_up_to_its_tolerance_and_false_for_nan():
    panda = robot('panda')
    limits = JointLimits(panda)
    lower, upper = -np.ones(panda.n_actuated), np.ones(panda.n_actuated)
    acceleration = np.zeros(panda.nv)
    assert limits.within(acceleration, (lower, upper))
    for joint, value, inside in [(0, 1.0, True), (8, -1.0, True), (3, 1.0 + 5e-10, True),
                                 (3, 1.0 + 2e-9, False), (8, -1.0 - 2e-9, False),
                                 (4, np.nan, False)]:  # fmt: skip
        acceleration[:] = 0.0
        acceleration[joint] = value
        assert limits.within(acceleration, (lower, upper)) == inside, (joint, value)
    acceleration[:] = 0.0
    acceleration[5] = 1.5
    assert limits.within(acceleration, (lower, upper), tolerance=0.6)
    assert not limits.within(acceleration, (lower, upper), tolerance=0.4)


def test_without_tasks_the_joints_beyond_their_walls_are_pulled_back_dynamically_consistently():
    """No task levels: SNS with q̈₀ alone (`JointLimits.saturate`).

    Joint 4 stands 3 cm beyond its upper wall and joint 6 4 cm beyond its lower one, at rest:
    q̈ = 0 leaves their bounds (a⁺ = kp d < 0, a⁻ > 0), so both are saturated at that bound, and
    the other joints take the least-kinetic-energy q̈ that holds them there (Khatib 1987's
    dynamically consistent inverse): q̈ = M⁻¹Eᵀ(E M⁻¹Eᵀ)⁻¹ a_E, E the two rows eᵢᵀ.
    """
    panda = robot('panda')
    limits = JointLimits(panda)
    lower_limits, upper_limits = panda.position_limits
    positions = np.array(READY)
    positions[3] = upper_limits[3] - 0.02
    positions[5] = lower_limits[5] + 0.01
    state = RobotState(panda)
    state.update(positions, np.zeros(panda.nv))
    unlimited = np.full(panda.n_actuated, np.inf)
    ctrl = PrioritizedController(panda, [], effort_limits=unlimited, joint_limits=limits)
    result = ctrl.compute(state)
    lower, upper = limits.bounds(state)
    assert upper[3] == pytest.approx(limits.kp * -0.03) and lower[5] == pytest.approx(
        limits.kp * 0.04
    )
    assert result.joints_at_limit == ('panda_joint4', 'panda_joint6')
    assert result.task_scale == 1.0
    rows = np.zeros((2, panda.nv))
    rows[0, 3] = rows[1, 5] = 1.0
    inverse = state.inverse_mass_matrix
    expected = inverse @ rows.T @ np.linalg.solve(rows @ inverse @ rows.T, [upper[3], lower[5]])
    np.testing.assert_allclose(result.acceleration, expected, rtol=1e-9, atol=1e-9)
    joints = result.acceleration[panda.indices.v]
    assert (joints <= upper + 1e-9).all() and (joints >= lower - 1e-9).all()


def test_a_posture_beyond_the_bounds_of_eight_joints_is_saturated_joint_after_joint():
    """A posture (J = I) asking more than the bounds of 8 of the 9 joints at rest.

    Each try saturates the joint that limits the scale, held by rows eᵢᵀ whose dynamically
    consistent inverse also moves the free joints: the search goes through every joint before
    the scale reaches 1. The SNS properties: every joint within its bounds, every saturated
    joint exactly at a bound, the free joints at the posture's desired acceleration (the level
    acts in what the held rows leave), and the largest scale, 1.
    """
    panda = robot('panda')
    limits = JointLimits(panda)
    state = RobotState(panda)
    state.update(np.array(READY), np.zeros(panda.nv))
    offsets = np.r_[0.6, -0.5, 0.4, 0.3, -0.6, 0.5, -0.4, 0.01, 0.0]
    posture = JointPostureTask(panda, np.array(READY) + offsets, kp=1e4)
    unlimited = np.full(panda.n_actuated, np.inf)
    entries = [TaskEntry('posture', posture)]
    ctrl = PrioritizedController(panda, entries, effort_limits=unlimited, joint_limits=limits)
    result = ctrl.compute(state)
    lower, upper = limits.bounds(state)
    joints = result.acceleration[panda.indices.v]
    assert (joints <= upper + 1e-9).all() and (joints >= lower - 1e-9).all()
    saturated = np.isin(limits.joint_names, result.joints_at_limit)
    assert saturated.sum() >= 8
    at_bound = np.isclose(joints, upper, atol=1e-9) | np.isclose(joints, lower, atol=1e-9)
    assert at_bound[saturated].all()
    np.testing.assert_allclose(joints[~saturated], 1e4 * offsets[~saturated], atol=1e-9)
    assert result.task_scale == 1.0


def test_a_zero_margin_puts_the_walls_at_the_urdf_limits():
    """Any margin ≥ 0 and gain and deceleration > 0 are valid, small ones included."""
    panda = robot('panda')
    limits = JointLimits(panda, margin=0.0, kp=0.5, deceleration=0.25)
    assert (limits.kp, limits.deceleration) == (0.5, 0.25)
    np.testing.assert_array_equal(limits.lower_wall, panda.position_limits[0])
    np.testing.assert_array_equal(limits.upper_wall, panda.position_limits[1])


def test_joints_whose_urdf_limits_are_equal_get_no_wall():
    """The double pendulum's URDF says lower = upper = 0 for none: the level must not pin it."""
    path = robots_directory() / 'double_pendulum_description/urdf/double_pendulum.urdf'
    pendulum = RobotModel.from_urdf_path(path)
    limits = JointLimits(pendulum)
    state = RobotState(pendulum)
    state.update(np.array([0.5, -2.0]), np.array([1.0, -1.0]))
    lower, upper = limits.bounds(state)
    assert np.all(lower == -np.inf) and np.all(upper == np.inf)
