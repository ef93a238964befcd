"""Tasks write their terms in place, into the rows their priority level keeps, every tick."""

import numpy as np
import numpy.testing as npt
import pytest
from robots import random_state, robot

from wbc_control.control.prioritized_controller import PrioritizedController
from wbc_control.control.switching.stacks import Level, TaskEntry
from wbc_control.tasks import (
    ComTask,
    FrameOrientationTask,
    FramePoseTask,
    FramePositionTask,
    JointPostureTask,
    PDGains,
    Task,
)
from wbc_control.tasks.frame_orientation import rotation_from_quaternion

POSE = [0.4, 0.1, 0.5, 1.0, 0.0, 0.0, 0.0]


def every_kind_of_task(panda) -> list[Task]:
    """One task of each type and target set, some with a clipped error, some with feed-forward."""
    tasks = [
        FramePositionTask(panda, 'panda_hand', [0.4, 0.1, 0.5], kp=[50.0, 40.0, 30.0]),
        FramePositionTask(panda, 'panda_hand', [0.4, 0.1, 0.5], 50.0, None, 'line', [1, 1, 0]),
        FramePositionTask(panda, 'panda_hand', [0.4, 0.1, 0.5], 50.0, None, 'plane', [0, 0, 2]),
        FrameOrientationTask(panda, 'panda_hand', [1.0, 0.0, 0.0, 0.0], kp=30.0, kd=3.0),
        FramePoseTask(panda, 'panda_hand', POSE, kp=40.0),
        FramePoseTask(panda, 'panda_link4', POSE, kp=40.0),
        ComTask(panda, [0.0, 0.0, 0.4], kp=10.0),
        JointPostureTask(panda, np.zeros(panda.n_actuated), kp=5.0),
        JointPostureTask(panda, np.zeros(panda.n_actuated), kp=5.0),
    ]
    tasks[0].set_target([0.4, 0.1, 0.5], velocity=[0.1, 0.2, 0.3], acceleration=[1, 2, 3])
    tasks[4].set_target(POSE, np.full(6, 0.1), np.full(6, -0.2))
    for task, max_error in zip(tasks[3:], (0.05, 0.1, 0.0, 0.02, 0.0, 0.1)):
        task.set_max_error(max_error)  # one group, two groups, rows; clipping and not
    return tasks


def level_of(tasks: list[Task], nv: int) -> Level:
    return Level(0, [TaskEntry(f'task_{i}', task) for i, task in enumerate(tasks)], nv)


def write(level: Level, state) -> None:
    """What the controller does each tick with a level."""
    for write_terms, buffers in level.writers:
        write_terms(state, buffers)


@pytest.mark.parametrize('seed', range(4))
def test_the_rows_each_task_writes_into_its_level_are_its_computed_terms(seed):
    panda = robot('panda')
    tasks = every_kind_of_task(panda)
    level = level_of(tasks, panda.nv)
    state = random_state(panda, seed, speed=2.0)
    write(level, random_state(panda, seed + 50))  # a tick before: every row is overwritten
    write(level, state)
    for task, terms, rows in zip(tasks, level.terms, level.slices):
        expected = task.compute(state)
        for name, written, computed in zip(expected._fields, terms, expected):
            npt.assert_array_equal(written, computed, err_msg=f'{task.TYPE} {name}')
        npt.assert_array_equal(level.jacobian[rows], expected.jacobian)
        npt.assert_array_equal(level.desired_acceleration[rows], expected.desired_acceleration)
    stacked = level.stack([task.compute(state) for task in tasks])
    npt.assert_array_equal(level.jacobian, stacked[0])
    npt.assert_array_equal(level.drift, stacked[1])


def test_the_tick_clips_the_error_of_the_law_and_keeps_the_true_error():
    panda = robot('panda')
    tasks = every_kind_of_task(panda)
    level = level_of(tasks, panda.nv)
    state = random_state(panda, 7, speed=2.0)
    write(level, state)
    clipped = 0
    for task, terms in zip(tasks, level.terms):
        if task.TYPE not in ('frame_orientation', 'joint_posture') or not task.gains.clips(
            terms.error
        ):
            continue  # those without feed-forward, whose law is K_d (0 − J v) + K_p clip(e)
        clipped += 1
        gains = task.gains
        expected = -gains.kd * terms.velocity + gains.kp * gains.clipped(terms.error)
        npt.assert_allclose(terms.desired_acceleration, expected, rtol=1e-14, atol=1e-12)
        npt.assert_array_equal(terms.error, task.compute(state).error)
    assert clipped == 2  # the orientation and a posture


@pytest.mark.parametrize(
    'gains',
    [
        PDGains.create([4.0, 9.0, 16.0], [1.0, 2.0, 3.0], 3),
        PDGains.create(25.0, None, 3, max_error=0.05),
        PDGains.create(25.0, None, 6, max_error=0.05, groups=(3, 3)),
        PDGains.create(25.0, None, 6, max_error=0.05, groups=(2, 1, 3)),
        PDGains.create(25.0, None, 5, max_error=0.05, groups=(1,) * 5),
    ],
)
def test_the_in_place_law_gives_the_same_numbers_as_the_law(gains):
    rng = np.random.default_rng(3)
    size = gains.kp.shape[0]
    for scale in (0.001, 0.04, 1.0, 30.0):  # inside and beyond the bound, group by group
        feed_forward, reference, velocity = rng.standard_normal((3, size))
        error = scale * rng.standard_normal(size)
        original = error.copy()
        desired = np.full(size, np.nan)
        gains.write_acceleration(desired, feed_forward, reference, velocity, error)
        expected = gains.acceleration(feed_forward, reference - velocity, error)
        npt.assert_array_equal(desired, expected)
        npt.assert_array_equal(error, original)


def test_a_group_beyond_the_bound_is_scaled_and_the_others_are_kept_bit_for_bit():
    gains = PDGains.create(1.0, None, 6, max_error=0.1, groups=(2, 1, 3))
    error = np.array([0.3, 0.4, -0.05, 0.01, -0.02, 0.03])
    npt.assert_array_equal(gains.clipped(error)[2:], error[2:])
    npt.assert_allclose(gains.clipped(error)[:2], [0.06, 0.08], rtol=1e-15)
    assert gains.clips(error)
    assert not gains.clips(np.array([0.05, 0.05, 0.1, 0.0, 0.0, 0.1]))


def test_the_posture_selection_and_zero_drift_are_written_once_and_stay():
    panda = robot('panda')
    posture = JointPostureTask(panda, np.zeros(panda.n_actuated), kp=5.0)
    hand = FramePositionTask(panda, 'panda_hand', [0.4, 0.1, 0.5], kp=50.0)
    level = level_of([hand, posture], panda.nv)
    selection = level.jacobian[level.slices[1]]
    npt.assert_array_equal(selection, np.eye(panda.nv)[panda.indices.v])
    for seed in range(3):
        write(level, random_state(panda, seed))
        npt.assert_array_equal(selection, np.eye(panda.nv)[panda.indices.v])
        npt.assert_array_equal(level.drift[level.slices[1]], 0.0)
    assert not posture.compute(random_state(panda, 0)).drift.flags.writeable


def test_the_state_gives_a_frame_and_the_com_terms_in_one_call():
    talos = robot('talos')
    state = random_state(talos, 4)
    frame = talos.frame_id('gripper_left_base_link')
    placement, jacobian, drift = state.frame_terms(frame)
    npt.assert_array_equal(placement.homogeneous, state.frame_placement(frame).homogeneous)
    npt.assert_array_equal(jacobian, state.frame_jacobian(frame))
    npt.assert_array_equal(drift, state.frame_drift(frame))
    com, velocity, com_jacobian, com_drift = state.com_terms
    npt.assert_array_equal(com, state.com)
    npt.assert_array_equal(velocity, state.com_velocity)
    npt.assert_array_equal(com_jacobian, state.com_jacobian)
    npt.assert_array_equal(com_drift, state.com_drift)


@pytest.mark.parametrize('seed', range(3))
def test_task_reports_keep_their_own_tick_after_the_next_one(seed):
    """Reports are built from the level's rows, which the next tick overwrites: they copy them."""
    panda = robot('panda')
    hand = FramePoseTask(panda, 'panda_hand', POSE, kp=40.0)
    posture = JointPostureTask(panda, np.zeros(panda.n_actuated), kp=5.0)
    entries = [TaskEntry('hand', hand, 0), TaskEntry('posture', posture, 1)]
    controller = PrioritizedController(panda, entries)
    first = random_state(panda, seed)
    reports = controller.compute(first).tasks
    built = [(report.error.copy(), report.desired_acceleration.copy()) for report in reports]
    controller.compute(random_state(panda, seed + 10))
    for report, (error, desired), task in zip(reports, built, (hand, posture)):
        npt.assert_array_equal(report.error, error)
        npt.assert_array_equal(report.desired_acceleration, desired)
        npt.assert_array_equal(report.error, task.compute(first).error)


def test_a_task_type_must_define_compute_or_write_terms():
    class Nothing(Task):
        TYPE = 'nothing'

        def set_target(self, target):
            pass

        def target_from_state(self, state):
            return np.zeros(1)

    with pytest.raises(TypeError, match='compute or write_terms'):
        Nothing(1, PDGains.create(1.0, None, 1))


def test_a_trajectory_sample_is_written_in_one_call_and_ends_the_wait_for_a_state():
    panda = robot('panda')
    rng = np.random.default_rng(5)
    for task in every_kind_of_task(panda):
        sample = task.reference_sample()
        for array in (sample.position, sample.velocity, sample.acceleration):
            array[...] = rng.uniform(-0.5, 0.5, array.shape)
        if sample.rotation is not None:
            sample.rotation[...] = rotation_from_quaternion([0.6, 0.0, 0.0, 0.8])
        task.target_pending = True
        task.write_reference(sample)
        assert not task.target_pending
        back = task.reference_sample()
        task.read_reference(back)
        for written, read in zip(vars(sample).values(), vars(back).values()):
            npt.assert_array_equal(read, written)
