"""The joint limits' viability bounds (`control.constraints.joint_limits`), alone and in rollouts.

The bounds are checked against an independent numpy computation of their formula (Del Prete
2018's viability, v² ≤ 2 aᵦ d, tracked at the rate k and never asking more than aᵦ), on both
sides of every rule and at its boundary. The rollouts integrate q̈ = M⁻¹(τ − h) from
Pinocchio's ABA with semi-implicit Euler at 2 ms: no simulator and no joint stops; only the
controller keeps the joints inside their limits.
"""

import math

import numpy as np
import pinocchio as pin
import pytest
from robots import robot

from wbc_control.control.constraints.joint_limits import (
    BRAKING_SHARE,
    HELD_TOLERANCE,
    JERK_SHARE,
    MIN_BRAKING_SHARE,
    OVERSPEED_RESPONSE,
    JointLimits,
    acceleration_bounds,
    held_joints,
)
from wbc_control.control.constraints.torque_limits import TorqueLimiter
from wbc_control.control.loop.command_output import CommandOutput
from wbc_control.control.loop.controller_loop import ControllerLoop
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.exceptions import InvalidShape, InvalidValue
from wbc_control.model.example_robots import robots_directory
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks import FramePoseTask, JointPostureTask

READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]
HAND_TARGET = [0.307, 0.0, 0.59, 1.0, 0.0, 0.0, 0.0]  # config/panda_controller.yaml


def expected_bounds(limits: JointLimits, state: RobotState) -> tuple[np.ndarray, np.ndarray]:
    """The module docstring's a⁻, a⁺ computed joint by joint in plain Python."""
    robot_ = limits.robot
    lower, upper = [], []
    positions = robot_.joint_positions(state.q)
    for i, j in enumerate(robot_.indices.v):
        braking = limits.max_acceleration[i]
        if math.isnan(braking):
            effort, bias, inertia = (
                limits.effort_limits[i],
                state.nonlinear_effects[j],
                state.mass_matrix[j, j],
            )
            braking = BRAKING_SHARE * max(effort - abs(bias), MIN_BRAKING_SHARE * effort) / inertia
        k, speed, v = limits.response, limits.max_speed[i], state.v[j]
        jerk = JERK_SHARE * limits.torque_rate_limits[i] / state.mass_matrix[j, j]
        ramp = braking / jerk  # 0 without a rate limit

        def ceiling(distance, k=k, speed=speed, braking=braking, ramp=ramp):
            value = min(0.25 * k * distance, speed)
            if distance <= 0:
                return value
            # the speed v with v t + v² / (2 aᵦ) = d, by the quadratic formula
            stop = -braking * ramp + math.sqrt((braking * ramp) ** 2 + 2.0 * braking * distance)
            return min(value, stop)

        up = ceiling(limits.upper_wall[i] - positions[i])
        down = ceiling(positions[i] - limits.lower_wall[i])
        over = OVERSPEED_RESPONSE * k  # a joint beyond its velocity limit
        high = k * (up - v) - over * max(v - speed, 0.0)
        low = k * (-down - v) + over * max(-v - speed, 0.0)
        if math.isfinite(jerk):
            high = min(high, math.sqrt(2.0 * jerk * max(up - v, 0.0)))
            low = max(low, -math.sqrt(2.0 * jerk * max(down + v, 0.0)))
        high = max(high, -braking)
        upper.append(high)
        lower.append(min(low, braking, high))
    return np.array(lower), np.array(upper)


def states_across_the_walls(panda, limits, rng):
    """Panda states inside, at, just beyond and far beyond the walls, moving both ways."""
    lower, upper = panda.position_limits
    found = []
    for offset in (0.3, 0.06, 0.05, 0.049, 0.0, -0.02, -0.3):
        for side in (-1.0, 1.0):
            q = np.array(READY, dtype=float)
            joint = rng.integers(0, 7)
            wall = upper[joint] if side > 0 else lower[joint]
            q[joint] = wall - side * offset
            v = rng.uniform(-1.5, 1.5, panda.nv)
            state = RobotState(panda)
            state.update(q, v)
            found.append(state)
    return found


def test_the_bounds_are_the_viability_ceilings_tracked_at_rate_k():
    panda = robot('panda')
    rng = np.random.default_rng(4)
    for limits in (
        JointLimits(panda, panda.effort_limits),
        JointLimits(panda, panda.effort_limits, margin=0.1, response=6.0),
        JointLimits(panda, panda.effort_limits, max_acceleration=np.linspace(2.0, 9.0, 9)),
        JointLimits(panda, panda.effort_limits, torque_rate_limits=np.linspace(150.0, 1200.0, 9)),
        JointLimits(
            panda,
            panda.effort_limits,
            max_acceleration=np.linspace(2.0, 9.0, 9),
            torque_rate_limits=np.r_[np.inf, np.linspace(40.0, 900.0, 8)],
        ),
    ):
        for state in states_across_the_walls(panda, limits, rng):
            lower, upper = limits.bounds(state)
            expected_lower, expected_upper = expected_bounds(limits, state)
            np.testing.assert_allclose(lower, expected_lower, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(upper, expected_upper, rtol=1e-12, atol=1e-12)


def test_the_bounds_never_ask_for_more_braking_than_the_joint_has_and_are_never_empty():
    panda = robot('panda')
    declared = np.array([3.0, 1.5, 4.0, 2.5, 8.0, 7.0, 6.0, 1.0, 1.0])
    limits = JointLimits(panda, panda.effort_limits, max_acceleration=declared)
    rng = np.random.default_rng(0)
    for state in states_across_the_walls(panda, limits, rng):
        lower, upper = limits.bounds(state)
        assert (upper >= -declared - 1e-12).all() and (lower <= declared + 1e-12).all()
        assert (lower <= upper).all()


def test_at_the_ceiling_the_bound_is_zero_and_it_brakes_above_it():
    """On the viability ceiling the joint may keep its speed; faster, it must brake."""
    panda = robot('panda')
    braking = np.full(9, 4.0)
    limits = JointLimits(panda, panda.effort_limits, response=10.0, max_acceleration=braking)
    q = np.array(READY)
    distance = 0.5
    q[1] = limits.upper_wall[1] - distance
    ceiling = min(math.sqrt(2.0 * 4.0 * distance), 0.25 * 10.0 * distance, limits.max_speed[1])
    for excess, expected in ((0.0, 0.0), (0.1, -1.0), (1.0, -4.0), (-0.2, 2.0)):
        state = RobotState(panda)
        v = np.zeros(9)
        v[1] = ceiling + excess
        state.update(q, v)
        assert limits.bounds(state)[1][1] == pytest.approx(expected, abs=1e-12)


def test_beyond_a_wall_the_bound_pulls_the_joint_back_at_most_at_its_braking():
    panda = robot('panda')
    limits = JointLimits(panda, panda.effort_limits, max_acceleration=np.full(9, 3.0))
    q = np.array(READY)
    q[3] = limits.upper_wall[3] + 0.02  # beyond, at rest
    state = RobotState(panda)
    state.update(q, np.zeros(9))
    lower, upper = limits.bounds(state)
    assert upper[3] == pytest.approx(-0.25 * 10.0**2 * 0.02)  # (k²/4) d, d < 0
    q[3] = limits.upper_wall[3] + 0.5
    state.update(q, np.zeros(9))
    assert limits.bounds(state)[1][3] == pytest.approx(-3.0)  # capped at the braking


def test_the_bounds_move_by_little_between_neighbouring_states():
    """Lipschitz in (q, q̇) with constants k²/4 and k: what keeps a command from chattering.

    A joint faster than its velocity limit (the fingers here) is braked harder: its constant
    in q̇ is (1 + c) k.
    """
    panda = robot('panda')
    limits = JointLimits(panda, panda.effort_limits, max_acceleration=np.full(9, 5.0))
    k = limits.response
    rng = np.random.default_rng(2)
    state, nearby = RobotState(panda), RobotState(panda)
    lower, upper = panda.position_limits
    for _ in range(200):
        q = np.array(READY) + rng.uniform(-0.5, 0.5, 9) * np.r_[np.ones(7), 0.0, 0.0]
        q = np.clip(q, lower, upper)
        v = rng.uniform(-2.0, 2.0, 9)
        dq, dv = rng.uniform(-1e-3, 1e-3, 9), rng.uniform(-1e-3, 1e-3, 9)
        state.update(q, v)
        nearby.update(q + dq, v + dv)
        first = np.array(limits.bounds(state))
        second = np.array(limits.bounds(nearby))
        # The ceiling's slope is at most max(k/4, aᵦ/v⁺) where v⁺ > 0: bounded away from the
        # wall's tip, where the linear part takes over.
        over = np.maximum(np.abs(v), np.abs(v + dv)) > limits.max_speed
        gain = k * np.where(over, 1.0 + OVERSPEED_RESPONSE, 1.0)
        bound = (0.25 * k**2 + k * 5.0 / 0.2) * np.abs(dq) + gain * np.abs(dv)
        assert (np.abs(second - first) <= bound + 1e-9).all()


def test_continuous_and_unlimited_joints_get_velocity_bounds_only():
    """The double pendulum's URDF says lower = upper = 0 for none: no walls, no velocity limit."""
    path = robots_directory() / 'double_pendulum_description/urdf/double_pendulum.urdf'
    pendulum = RobotModel.from_urdf_path(path)
    limits = JointLimits(pendulum, np.full(2, 10.0))
    state = RobotState(pendulum)
    state.update(np.array([0.5, -2.0]), np.array([1.0, -1.0]))
    lower, upper = limits.bounds(state)
    assert np.all(lower == -np.inf) and np.all(upper == np.inf)


def test_a_zero_margin_puts_the_walls_at_the_urdf_limits():
    panda = robot('panda')
    limits = JointLimits(panda, panda.effort_limits, margin=0.0, response=0.5)
    np.testing.assert_array_equal(limits.lower_wall, panda.position_limits[0])
    np.testing.assert_array_equal(limits.upper_wall, panda.position_limits[1])


@pytest.mark.parametrize(
    ('margin', 'response', 'braking', 'error'),
    [
        (-0.1, 10.0, None, InvalidValue),
        (0.05, 0.0, None, InvalidValue),
        (float('nan'), 10.0, None, InvalidValue),
        (0.05, -1.0, None, InvalidValue),
        (0.05, 10.0, np.full(9, -1.0), InvalidValue),
        (0.05, 10.0, np.ones(3), InvalidShape),
    ],
)
def test_invalid_settings_are_named(margin, response, braking, error):
    panda = robot('panda')
    with pytest.raises(error):
        JointLimits(panda, panda.effort_limits, margin, response, braking)


def controller(panda, hand_target=HAND_TARGET, effort_limits=None, rate_limits=None):
    """The tasks of config/panda_controller.yaml with joint limits (and a torque rate limit)."""
    hand = FramePoseTask(panda, 'panda_hand', hand_target, kp=[100.0] * 3 + [60.0] * 3)
    posture = JointPostureTask(panda, READY, kp=25.0, kd=10.0)
    effort = panda.effort_limits if effort_limits is None else effort_limits
    return PrioritizedController(
        panda,
        [TaskEntry('hand', hand, 0), TaskEntry('posture', posture, 1)],
        effort_limits=effort,
        joint_limits=JointLimits(panda, effort, torque_rate_limits=rate_limits),
        torque_rate_limits=rate_limits,
    )


def rollout(ctrl, q0, seconds, dt=0.002):
    """Positions `(steps, nq)`, torques `(steps, n)` and the joints at a bound per step."""
    model = ctrl.robot
    data = model.model.createData()
    state = RobotState(model)
    q, v = np.array(q0, dtype=float), np.zeros(model.nv)
    positions, torques, limited = [], [], []
    for _ in range(round(seconds / dt)):
        state.update(q, v)
        result = ctrl.compute(state, dt)
        acceleration = pin.aba(model.model, data, q, v, result.torque)
        v = v + dt * acceleration
        q = pin.integrate(model.model, q, dt * v)
        positions.append(q.copy())
        torques.append(result.torque.copy())
        limited.append(tuple(result.joints_at_limit))
    return np.array(positions), np.array(torques), limited


@pytest.mark.parametrize('target', [[1.5, 0.0, 0.5], [-0.2, 1.2, 1.4], [0.0, 0.95, 0.4]])
def test_a_target_outside_the_workspace_keeps_every_joint_inside_its_limits(target):
    """URDF effort limits, no rate limit, no error clipping: 4 s towards a target out of reach."""
    panda = robot('panda')
    positions, torques, limited = rollout(controller(panda, [*target, 1, 0, 0, 0]), READY, 4.0)
    lower, upper = panda.position_limits
    assert (positions >= lower - 1e-9).all() and (positions <= upper + 1e-9).all()
    assert (np.abs(torques) <= panda.effort_limits * (1 + 1e-9)).all()
    assert any(limited), 'the target must drive joints onto their bounds'


def test_a_joint_driven_into_its_wall_stops_there_and_is_reported():
    panda = robot('panda')
    goal = np.array(READY)
    goal[3] = panda.position_limits[1][3] + 0.3  # the posture asks beyond joint 4's limit
    posture = JointPostureTask(panda, goal, kp=100.0)
    limits = JointLimits(panda, panda.effort_limits)
    ctrl = PrioritizedController(panda, [TaskEntry('posture', posture)], joint_limits=limits)
    positions, _, limited = rollout(ctrl, READY, 3.0)
    wall = limits.upper_wall[3]
    assert positions[:, 3].max() <= wall + 1e-3 and positions[-1, 3] == pytest.approx(
        wall, abs=2e-3
    )
    assert 'panda_joint4' in limited[-1]


def test_a_soft_start_ramps_the_tasks_while_the_bounds_brake_in_full():
    """With joint limits, the ramp scales the tasks' ẍ*, not the torque (ControllerLoop)."""
    panda = robot('panda')
    target = np.array(READY) + np.r_[0.2, np.zeros(8)]
    posture = JointPostureTask(panda, target, kp=25.0, kd=10.0)
    unlimited = np.full(panda.n_actuated, np.inf)
    limits = JointLimits(panda, panda.effort_limits)
    entries = [TaskEntry('posture', posture)]
    ctrl = PrioritizedController(panda, entries, effort_limits=unlimited, joint_limits=limits)
    output = CommandOutput(TorqueLimiter(unlimited))
    loop = ControllerLoop(ctrl, output, 'zero', timeout=0.1, soft_start_time=0.5)
    positions = np.array(READY)
    positions[3] = limits.upper_wall[3] - 0.01  # joint 4 just short of its wall...
    velocities = np.r_[0.0, 0.0, 0.0, 1.0, np.zeros(5)]  # ...and running into it
    first = loop.tick(positions, velocities, None, None, 1.0)
    result = loop.statistics.result
    assert 'panda_joint4' in result.joints_at_limit
    lower, upper = limits.bounds(loop.state)
    assert result.acceleration[3] == pytest.approx(upper[3]) and upper[3] < -1.0  # braking
    assert np.abs(first.torque - loop.state.gravity[:9]).max() > 1.0  # not the holding torque
    assert result.acceleration[0] == pytest.approx(0.0, abs=1e-9)  # the posture: α = 0
    loop.tick(positions, velocities, None, None, 1.25)
    half = loop.statistics.result.acceleration[0]
    assert half == pytest.approx(0.5 * 25.0 * 0.2, rel=1e-6)  # α = 1/2 of kp e on joint 1


def test_held_joints_are_those_on_a_bound_within_the_tolerance():
    lower, upper = np.array([-1.0, -2.0, -3.0, -4.0]), np.array([1.0, 2.0, 3.0, 4.0])
    tolerance = HELD_TOLERANCE * 3.0
    acceleration = np.array([-1.0, 2.0 - 0.5 * tolerance, 3.0 - 2.0 * tolerance, np.nan])
    found, held = held_joints(acceleration, lower, upper)
    assert found
    np.testing.assert_array_equal(held, [True, True, False, False])
    found, held = held_joints(np.array([0.0, 1.9, -2.9, 3.9]), lower, upper)
    assert not found and not held.any()


def test_with_a_torque_rate_limit_the_ceiling_leaves_room_for_the_braking_to_ramp_up():
    """v⁺ solves v t + v² / (2 aᵦ) = d, t = aᵦ / j; the approach to it is q̈ ≤ √(2 j (v⁺ − q̇))."""
    panda = robot('panda')
    braking, rates = np.full(9, 4.0), np.linspace(200.0, 1000.0, 9)
    limits = JointLimits(
        panda, panda.effort_limits, max_acceleration=braking, torque_rate_limits=rates
    )
    q, distance = np.array(READY), 0.8
    q[1] = limits.upper_wall[1] - distance
    state = RobotState(panda)
    state.update(q, np.zeros(9))
    jerk = JERK_SHARE * rates[1] / state.mass_matrix[1, 1]
    ramp = 4.0 / jerk
    ceiling = min(0.25 * 10.0 * distance, limits.max_speed[1])
    stop = np.roots([1.0 / (2.0 * 4.0), ramp, -distance]).max()
    assert stop < ceiling  # the ramp, not the linear tail or the URDF limit, sets it here
    for excess, expected in (
        (0.0, 0.0),
        (1e-3, -10.0 * 1e-3),
        (0.5, -4.0),
        (-0.2, min(10.0 * 0.2, math.sqrt(2.0 * jerk * 0.2))),
        (-stop, min(10.0 * stop, math.sqrt(2.0 * jerk * stop))),
    ):
        v = np.zeros(9)
        v[1] = stop + excess
        state.update(q, v)
        assert limits.bounds(state)[1][1] == pytest.approx(expected, rel=1e-9, abs=1e-12)


def ramped_approach(
    rate_limit: float, bound_rate: float, speed: float, distance: float, push: float
) -> float:
    """How far past its wall (m) a unit mass driven at its bound a⁺ gets, its force slewed.

    The force moves towards what a⁺ needs by at most `rate_limit` × dt a step, against a constant
    `push` towards the wall (h = −push); the bounds see `bound_rate` (inf: none). 1 ms steps,
    exact for a piecewise-constant force, 20 s from `distance` before the wall at `speed`.
    """
    dt, wall = 1e-3, 1.0
    position, velocity, force = wall - distance, speed, None
    bias, lower, upper = np.array([-push]), np.empty(1), np.empty(1)
    index, ones = np.zeros(1, dtype=np.int64), np.ones(1)
    beyond = -np.inf
    for _ in range(20000):
        acceleration_bounds(
            np.array([position]), np.array([velocity]), np.eye(1), bias, index, index,
            -10.0 * ones, wall * ones, 2.0 * ones, 20.0 * ones, np.full(1, np.nan),
            np.array([bound_rate]), 10.0, np.full((2, 1), np.inf), lower, upper,
        )  # fmt: skip
        wanted = upper[0] + bias[0]
        step = rate_limit * dt
        force = wanted if force is None else float(np.clip(wanted, force - step, force + step))
        acceleration = force - bias[0]
        position += dt * velocity + 0.5 * dt * dt * acceleration
        velocity += dt * acceleration
        beyond = max(beyond, position - wall)
    return beyond


@pytest.mark.parametrize(('rate', 'push'), [(30.0, 0.0), (10.0, 5.0), (5.0, 5.0)])
def test_a_joint_whose_torque_ramps_slowly_stops_before_its_wall_only_with_rate_aware_bounds(
    rate, push
):
    """A slewed force stops before the wall only where the bounds know the rate.

    From rest 2 m away (and from faster, nearer starts) it never passes the wall when the
    bounds know the rate; the same actuator with bounds that do not passes it by metres.
    """
    for speed, distance in ((0.0, 2.0), (2.0, 1.5), (1.2, 0.4), (0.5, 0.1)):
        assert ramped_approach(rate, rate, speed, distance, push) <= 0.0
    assert ramped_approach(rate, np.inf, 0.0, 2.0, push) > 1.0


@pytest.mark.parametrize('target', [[-0.2, 1.2, 1.4], [1.5, 0.3, 0.5]])
def test_with_a_slow_torque_rate_limit_a_target_out_of_reach_keeps_the_joints_inside(target):
    """150 N m/s (0.6 s across the shoulders' 87 N m effort limit), 4 s towards a target.

    The target is out of reach. Bounds that count on braking at once let the arm run through
    its limits (the rollout diverges); bounds that know the rate keep every joint inside.
    """
    panda = robot('panda')
    ctrl = controller(panda, [*target, 1, 0, 0, 0], rate_limits=np.full(9, 150.0))
    positions, torques, _ = rollout(ctrl, READY, 4.0)
    lower, upper = panda.position_limits
    assert (positions >= lower).all() and (positions <= upper).all()
    assert np.abs(np.diff(torques, axis=0)).max() <= 150.0 * 0.002 + 1e-9
