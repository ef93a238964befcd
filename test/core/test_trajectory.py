"""Trajectory inputs: validation, interpolation (positions and SO(3)), replacement rules.

Expected values come from closed forms (polynomials, constant-rate rotations) or from finite
differences of the interpolation itself, never from the code under test.
"""

import numpy as np
import pinocchio as pin
import pytest
from robots import robot

from wbc_control.inputs.trajectory_follower import TaskTrajectories, trajectory_tasks
from wbc_control.inputs.trajectory_points import TrajectoryPoints, TrajectoryRejected
from wbc_control.tasks.frame_orientation import FrameOrientationTask, quaternion_xyzw
from wbc_control.tasks.frame_pose import FramePoseTask
from wbc_control.tasks.frame_position import FramePositionTask
from wbc_control.tasks.joint_posture import JointPostureTask
from wbc_control.tasks.task import ReferenceSample

HAND = 'panda_hand'
START = np.array([0.4, 0.0, 0.5])
DOWN = np.array([1.0, 0.0, 0.0, 0.0])


def hand_task():
    return FramePositionTask(robot('panda'), HAND, START, 100.0)


def follower(task, name='hand'):
    return TaskTrajectories(robot('panda'), [(name, task)])


def transform_points(times, positions, quaternions=None, twists=(), accelerations=(), **kw):
    quaternions = [DOWN] * len(times) if quaternions is None else quaternions
    values = [[*p, *q] for p, q in zip(positions, quaternions)]
    return TrajectoryPoints(
        kw.get('names', ['hand']),
        kw.get('stamp_s', 10.0),
        list(times),
        values,
        list(twists) or [[]] * len(times),
        list(accelerations) or [[]] * len(times),
    )


def sampled(trajectories: TaskTrajectories, task, now_s: float) -> ReferenceSample:
    trajectories.apply(now_s)
    sample = task.reference_sample()
    task.read_reference(sample)
    return sample


def quintic(t):
    """x(t) = a polynomial of degree 5 per axis, with its two derivatives."""
    c = np.array([[0.4, 0.1, -0.3, 0.2, -0.05, 0.01], [0.0, -0.2, 0.1, 0.05, 0.0, -0.01]] * 2)
    c = c[:3]
    powers = np.array([t**k for k in range(6)])
    d1 = np.array([k * t ** (k - 1) if k else 0.0 for k in range(6)])
    d2 = np.array([k * (k - 1) * t ** (k - 2) if k > 1 else 0.0 for k in range(6)])
    return c @ powers, c @ d1, c @ d2


def test_a_quintic_is_reproduced_exactly_from_positions_velocities_and_accelerations():
    task = hand_task()
    trajectories = follower(task)
    times = [0.0, 0.5, 1.2, 2.0]
    values = [quintic(t) for t in times]
    twists = [[*v, 0.0, 0.0, 0.0] for _, v, _ in values]
    accelerations = [[*a, 0.0, 0.0, 0.0] for _, _, a in values]
    points = transform_points(times, [p for p, _, _ in values], None, twists, accelerations)
    trajectories.receive('hand', points, now_s=10.0)
    for t in (0.0, 0.3, 0.77, 1.5, 1.99):
        sample = sampled(trajectories, task, 10.0 + t)
        for got, want in zip((sample.position, sample.velocity, sample.acceleration), quintic(t)):
            np.testing.assert_allclose(got, want, atol=1e-9)


def test_positions_only_pass_through_the_points_start_and_end_at_rest_and_hold():
    task = hand_task()
    trajectories = follower(task)
    positions = [START, START + [0.1, 0.0, 0.0], START + [0.1, 0.1, 0.0]]
    trajectories.receive('hand', transform_points([0.0, 1.0, 2.0], positions), now_s=10.0)
    for t, position in zip((0.0, 1.0), positions):
        np.testing.assert_allclose(sampled(trajectories, task, 10.0 + t).position, position)
    np.testing.assert_allclose(sampled(trajectories, task, 10.0).velocity, 0.0, atol=1e-12)
    # Velocities and accelerations are the derivatives of the interpolated positions.
    h, t = 1e-5, 10.6
    ahead, behind = (sampled(trajectories, task, t + d).position for d in (h, -h))
    middle = sampled(trajectories, task, t)
    np.testing.assert_allclose(middle.velocity, (ahead - behind) / (2 * h), atol=1e-6)
    held = sampled(trajectories, task, 13.0)
    np.testing.assert_allclose(held.position, positions[-1])
    assert not held.velocity.any() and not held.acceleration.any()
    assert not trajectories.following('hand')


def random_rotations(seed, count):
    rng = np.random.default_rng(seed)
    rotation = np.eye(3)
    out = []
    for _ in range(count):
        rotation = pin.exp3(rng.uniform(-0.8, 0.8, 3)) @ rotation
        out.append(rotation.copy())
    return out


def test_a_constant_world_rate_rotation_is_reproduced_exactly():
    """R(t) = exp(ω t) R₀: every point's ω given; the interpolation is this rotation (SLERP)."""
    task = FrameOrientationTask(robot('panda'), HAND, DOWN, 10.0)
    trajectories = follower(task)
    omega, start = np.array([0.4, -0.9, 1.3]), random_rotations(1, 1)[0]
    times = [0.0, 0.7, 1.5, 2.5]
    quaternions = [quaternion_xyzw(pin.exp3(omega * t) @ start) for t in times]
    twists = [[0.0, 0.0, 0.0, *omega]] * len(times)
    accelerations = [[0.0] * 6] * len(times)
    points = transform_points(times, [START] * 4, quaternions, twists, accelerations)
    trajectories.receive('hand', points, now_s=10.0)
    for t in (0.2, 1.1, 2.2):
        sample = sampled(trajectories, task, 10.0 + t)
        np.testing.assert_allclose(sample.rotation, pin.exp3(omega * t) @ start, atol=1e-9)
        np.testing.assert_allclose(sample.velocity, omega, atol=1e-9)
        np.testing.assert_allclose(sample.acceleration, 0.0, atol=1e-9)


@pytest.mark.parametrize('given_accelerations', [False, True])
def test_orientation_rates_are_the_derivatives_of_the_interpolated_rotation(given_accelerations):
    """ω = vee(Ṙ Rᵀ), ω̇ = dω/dt by finite differences; the points' values are met."""
    task = FrameOrientationTask(robot('panda'), HAND, DOWN, 10.0)
    trajectories = follower(task)
    rotations = random_rotations(2, 4)
    rng = np.random.default_rng(3)
    omegas, alphas = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    times = [0.0, 0.8, 1.4, 2.4]
    twists = [[0.0, 0.0, 0.0, *w] for w in omegas]
    accelerations = [[0.0, 0.0, 0.0, *a] for a in alphas] if given_accelerations else ()
    quaternions = [quaternion_xyzw(r) for r in rotations]
    points = transform_points(times, [START] * 4, quaternions, twists, accelerations)
    trajectories.receive('hand', points, now_s=10.0)
    for i in (1, 2):
        sample = sampled(trajectories, task, 10.0 + times[i])
        np.testing.assert_allclose(sample.rotation, rotations[i], atol=1e-9)
        np.testing.assert_allclose(sample.velocity, omegas[i], atol=1e-8)
        if given_accelerations:
            np.testing.assert_allclose(sample.acceleration, alphas[i], atol=1e-7)
        # The segment that ends at the point meets the same values (continuity).
        left = sampled(trajectories, task, 10.0 + times[i] - 1e-9)
        np.testing.assert_allclose(left.rotation, rotations[i], atol=1e-8)
        np.testing.assert_allclose(left.velocity, omegas[i], atol=1e-6)
        if given_accelerations:
            np.testing.assert_allclose(left.acceleration, alphas[i], atol=1e-6)
    h = 1e-5
    for t in (10.3, 11.1, 11.9):
        ahead, behind = (sampled(trajectories, task, t + d) for d in (h, -h))
        ahead_rotation, ahead_rate = ahead.rotation.copy(), ahead.velocity.copy()
        behind = sampled(trajectories, task, t - h)
        rate = pin.log3(ahead_rotation @ behind.rotation.T) / (2 * h)
        acceleration = (ahead_rate - behind.velocity) / (2 * h)
        middle = sampled(trajectories, task, t)
        np.testing.assert_allclose(middle.velocity, rate, atol=1e-5)
        np.testing.assert_allclose(middle.acceleration, acceleration, atol=1e-4)


def test_a_pose_trajectory_moves_position_and_orientation_with_stacked_rates():
    panda = robot('panda')
    task = FramePoseTask(panda, HAND, [*START, *DOWN], 10.0)
    trajectories = follower(task)
    omega = np.array([0.0, 0.0, 0.5])
    times = [0.0, 2.0]
    quaternions = [
        quaternion_xyzw(pin.exp3(omega * t) @ pin.exp3(np.array([np.pi, 0, 0]))) for t in times
    ]
    twists = [[0.05, 0.0, 0.0, *omega]] * 2
    positions = [START, START + [0.1, 0.0, 0.0]]
    trajectories.receive('hand', transform_points(times, positions, quaternions, twists), 10.0)
    sample = sampled(trajectories, task, 11.0)
    np.testing.assert_allclose(sample.position, START + [0.05, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(sample.velocity, [0.05, 0.0, 0.0, *omega], atol=1e-9)


def test_a_joint_trajectory_is_matched_by_name_in_any_order():
    panda = robot('panda')
    ready = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
    task = JointPostureTask(panda, ready, 10.0)
    trajectories = follower(task, 'posture')
    names = list(reversed(panda.joint_names))
    goal = ready + 0.1 * (np.arange(9) < 7)
    points = TrajectoryPoints(
        names, 0.0, [0.0, 1.0], [ready[::-1], goal[::-1]], [[], []], [[], []]
    )
    trajectories.receive('posture', points, now_s=5.0)  # zero stamp: starts on receipt
    np.testing.assert_allclose(sampled(trajectories, task, 5.0).position, ready)
    np.testing.assert_allclose(sampled(trajectories, task, 6.0).position, goal)


def rejection(task, points, name='hand', now_s=10.0) -> str:
    with pytest.raises(TrajectoryRejected) as caught:
        follower(task, name).receive(name, points, now_s)
    return caught.value.reason


def test_each_bad_trajectory_is_rejected_with_its_reason():
    task = hand_task()
    good = transform_points([0.0, 1.0], [START, START + 0.1])
    follower(task).receive('hand', good, 10.0)
    assert rejection(task, good._replace(times=[0.0, 0.0])) == 'times'
    assert rejection(task, good._replace(times=[1.0, 0.5])) == 'times'
    assert rejection(task, good._replace(times=[])) == 'size'
    assert rejection(task, good._replace(names=['elbow'])) == 'names'
    assert rejection(task, good._replace(names=['hand', HAND])) == 'names'
    assert rejection(task, good._replace(values=[[np.nan] * 7, good.values[1]])) == 'non_finite'
    assert rejection(task, good._replace(values=[[0.0] * 6, good.values[1]])) == 'size'
    assert rejection(task, good._replace(velocities=[[0.0] * 5, []])) == 'size'
    assert rejection(task, good._replace(accelerations=[[np.inf] * 6, []])) == 'non_finite'
    assert rejection(task, good._replace(stamp_s=5.0)) == 'expired'
    orientation = FrameOrientationTask(robot('panda'), HAND, DOWN, 10.0)
    squashed = [[*START, 0.0, 0.0, 0.0, 0.5], good.values[1]]
    assert rejection(orientation, good._replace(values=squashed)) == 'quaternion'
    # A position task ignores the rotation, so its quaternion is not judged.
    follower(task).receive('hand', good._replace(values=squashed), 10.0)
    # The frame's name is as good as the task's.
    follower(task).receive('hand', good._replace(names=[HAND]), 10.0)


def test_posture_trajectories_must_name_every_joint_and_stay_inside_the_limits():
    panda = robot('panda')
    task = JointPostureTask(panda, np.zeros(9), 10.0)
    names, zeros = panda.joint_names, [np.zeros(9)]
    points = TrajectoryPoints(names[:-1], 0.0, [0.0], [np.zeros(8)], [[]], [[]])
    assert rejection(task, points, 'posture') == 'names'
    points = TrajectoryPoints([*names[:-1], names[0]], 0.0, [0.0], zeros, [[]], [[]])
    assert rejection(task, points, 'posture') == 'names'
    beyond = [np.full(9, 10.0)]
    points = TrajectoryPoints(names, 0.0, [0.0], beyond, [[]], [[]])
    assert rejection(task, points, 'posture') == 'limits'


def test_a_later_first_point_starts_from_the_reference_in_force():
    task = hand_task()
    trajectories = follower(task)
    trajectories.receive('hand', transform_points([1.0], [START + 0.1], stamp_s=0.0), 20.0)
    np.testing.assert_allclose(sampled(trajectories, task, 20.0).position, START)
    np.testing.assert_allclose(sampled(trajectories, task, 21.0).position, START + 0.1)


def test_a_new_trajectory_replaces_the_old_from_its_start_time():
    task = hand_task()
    trajectories = follower(task)
    line = transform_points([0.0, 4.0], [START, START + [0.4, 0.0, 0.0]], stamp_s=10.0)
    trajectories.receive('hand', line, 10.0)
    before = sampled(trajectories, task, 11.0).position.copy()
    # Starts at 12 s: until then the first trajectory goes on.
    up = transform_points([1.0], [START + [0.0, 0.0, 0.2]], stamp_s=12.0)
    trajectories.receive('hand', up, 11.0)
    at_start = sampled(trajectories, task, 11.5).position.copy()
    assert at_start[0] > before[0] and at_start[2] == pytest.approx(START[2])
    # From 12 s on the second: it starts where the first was at 12 s and ends at its point.
    first_at_12 = START[0] + 0.4 * 0.5  # the first trajectory's clamped cubic at its middle
    np.testing.assert_allclose(sampled(trajectories, task, 12.0).position[0], first_at_12)
    np.testing.assert_allclose(sampled(trajectories, task, 13.0).position, START + [0, 0, 0.2])
    np.testing.assert_allclose(sampled(trajectories, task, 14.0).position, START + [0, 0, 0.2])


def test_a_set_point_ends_the_trajectory():
    task = hand_task()
    trajectories = follower(task)
    trajectories.receive('hand', transform_points([0.0, 4.0], [START, START + 0.4]), 10.0)
    sampled(trajectories, task, 11.0)
    task.assign_target(START - 0.1)
    assert not trajectories.following('hand')
    np.testing.assert_allclose(sampled(trajectories, task, 12.0).position, START - 0.1)


def test_a_rejected_trajectory_keeps_the_one_in_force():
    task = hand_task()
    trajectories = follower(task)
    trajectories.receive('hand', transform_points([0.0, 4.0], [START, START + 0.4]), 10.0)
    with pytest.raises(TrajectoryRejected):
        trajectories.receive('hand', transform_points([0.0], [[np.nan] * 3]), 11.0)
    assert trajectories.following('hand')
    np.testing.assert_allclose(sampled(trajectories, task, 14.0).position, START + 0.4)


def test_tasks_that_take_trajectories_are_found():
    panda = robot('panda')

    class Entry:
        def __init__(self, name, task):
            self.name, self.task = name, task

    entries = [
        Entry('hand', hand_task()),
        Entry('posture', JointPostureTask(panda, np.zeros(9), 1.0)),
    ]
    assert [name for name, _ in trajectory_tasks(entries)] == ['hand', 'posture']
