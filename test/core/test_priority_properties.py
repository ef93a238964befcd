"""What each priority level achieves, checked against independent computations.

Khatib 1987 / Sentis & Khatib 2005: with Khatib's dynamically consistent inverse, every level
whose task acceleration is feasible in the null space of the levels above reaches it exactly,
J_k q̈ + J̇_k v = ẍ*_k, also when q̈ does not start at zero (the rigid contacts of Johnson 2024,
eq 22, are the top level). The tasks of one level are stacked (Freitag 2015, "Simultaneous
tasks"); when they conflict, the level's weights decide: the achieved acceleration minimises
Σ wᵢ ‖ẍᵢ − ẍᵢ*‖² over the rows normalised by their mobility μᵢ = (J M⁻¹ Jᵀ)ᵢᵢ.

The expected values come from the task objects (fresh instances) and numpy, never from the
controller's own reports.
"""

import dataclasses

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from robots import random_state, robot, talos_standing_state

from wbc_control.control.contact.contacts import (
    CONTACT_VELOCITY_DAMPING,
    Contact,
    contact_jacobian,
)
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.exceptions import InvalidTaskConfig, InvalidValue
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks import (
    ComTask,
    FrameOrientationTask,
    FramePoseTask,
    FramePositionTask,
    JointPostureTask,
)

seeds = st.integers(0, 2**31 - 1)
FEET = ('left_sole_link', 'right_sole_link')


THRESHOLD = 0.05


def controller(model, entries, **kwargs) -> PrioritizedController:
    kwargs.setdefault('effort_limits', np.full(model.n_actuated, np.inf))
    kwargs.setdefault('singular_value_threshold', THRESHOLD)
    return PrioritizedController(model, entries, **kwargs)


def exact(result) -> bool:
    """No level was damped: Λ is the exact inverse, so feasible tasks are met exactly."""
    return all(level.damped_directions == 0 for level in result.levels)


def achieved(task, state: RobotState, acceleration: np.ndarray) -> np.ndarray:
    """J q̈ + J̇v of a task, from its own terms."""
    terms = task.compute(state)
    return terms.jacobian @ acceleration + terms.drift


def panda_levels(panda):
    """Hand position (3 rows) above the link-7 orientation (3 rows): 6 of 9 directions."""
    hand = FramePositionTask(panda, 'panda_hand', [0.4, 0.1, 0.5], kp=60.0, kd=10.0)
    wrist = FrameOrientationTask(panda, 'panda_link7', [0.0, 0.0, 0.3, 0.95], kp=30.0, kd=8.0)
    return hand, wrist


@settings(max_examples=30, deadline=None)
@given(seeds)
def test_a_lower_level_reaches_its_desired_acceleration_when_it_is_feasible(seed):
    panda = robot('panda')
    state = random_state(panda, seed)
    hand, wrist = panda_levels(panda)
    entries = [TaskEntry('hand', hand, 0), TaskEntry('wrist', wrist, 1)]
    result = controller(panda, entries).compute(state)
    assume(exact(result))
    fresh_hand, fresh_wrist = panda_levels(panda)
    qdd = np.linalg.solve(state.mass_matrix, result.torque - state.nonlinear_effects)
    for task in (fresh_hand, fresh_wrist):
        desired = task.compute(state).desired_acceleration
        np.testing.assert_allclose(achieved(task, state, qdd), desired, atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(seeds)
def test_a_level_of_two_stacked_tasks_meets_both_at_non_zero_velocity(seed):
    """Both tasks' drifts J̇ᵢv enter the stacked target ẍ* − J̇v, row for row."""
    panda = robot('panda')
    state = random_state(panda, seed, speed=2.0)
    assert np.linalg.norm(state.v) > 0.5
    hand, wrist = panda_levels(panda)
    entries = [TaskEntry('hand', hand, 0), TaskEntry('wrist', wrist, 0, weight=3.0)]
    result = controller(panda, entries).compute(state)
    assume(exact(result))
    qdd = np.linalg.solve(state.mass_matrix, result.torque - state.nonlinear_effects)
    for task in panda_levels(panda):
        terms = task.compute(state)
        assert np.linalg.norm(terms.drift) > 1e-3  # the drift is really there
        np.testing.assert_allclose(
            achieved(task, state, qdd), terms.desired_acceleration, atol=1e-6
        )


def talos_com_under_contacts(talos):
    contacts = [Contact.create(talos, foot, 'surface') for foot in FEET]
    com = ComTask(talos, [0.02, 0.01, 0.85], kp=50.0, kd=15.0)
    hand = FramePositionTask(talos, 'gripper_left_base_link', [0.4, 0.3, 1.0], kp=40.0)
    entries = [TaskEntry('com', com, 0), TaskEntry('hand', hand, 1)]
    # μ = 1: the tasks' forces stay inside the pyramids at these moving states.
    return controller(talos, entries, contacts=contacts, friction_coefficient=1.0), contacts


@pytest.mark.parametrize('seed', range(6))
def test_the_first_level_under_contacts_reaches_its_desired_acceleration(seed):
    """Under contacts q̈ starts at −A†ᵀ(Ȧq̇ + K A q̇) ≠ 0; the first level must correct for it.

    The COM and one hand (6 rows) are feasible for Talos standing on both feet at these
    states (32 joints, 12 contact rows), inside the friction pyramids.
    """
    talos = robot('talos')
    state = talos_standing_state(talos, seed, speed=0.1)
    ctrl, contacts = talos_com_under_contacts(talos)
    result = ctrl.compute(state)
    constraint, drift = contact_jacobian(state, contacts)
    assert np.linalg.norm(drift) > 1e-3  # the contacts' own acceleration is not zero
    # Forward dynamics of the sent torque under the contact rows A q̈ = −Ȧq̇ − K A q̇ (the feet
    # of these states move; K damps them): [M Aᵀ; A 0][q̈; λ] = [Sᵀτ − h; −Ȧq̇ − K A q̇].
    nv, m = talos.nv, constraint.shape[0]
    generalized = np.zeros(nv)
    generalized[talos.indices.v] = result.torque
    block = np.block([[state.mass_matrix, constraint.T], [constraint, np.zeros((m, m))]])
    damped = drift + CONTACT_VELOCITY_DAMPING * constraint @ state.v
    rhs = np.concatenate([generalized - state.nonlinear_effects, -damped])
    qdd = np.linalg.solve(block, rhs)[:nv]
    com = ComTask(talos, [0.02, 0.01, 0.85], kp=50.0, kd=15.0)
    np.testing.assert_allclose(
        achieved(com, state, qdd), com.compute(state).desired_acceleration, atol=1e-6
    )
    hand = FramePositionTask(talos, 'gripper_left_base_link', [0.4, 0.3, 1.0], kp=40.0)
    np.testing.assert_allclose(
        achieved(hand, state, qdd), hand.compute(state).desired_acceleration, atol=1e-6
    )


# Weights within a level ----------------------------------------------------------------------


def test_task_entries_are_immutable_and_priorities_are_integers():
    panda = robot('panda')
    task = JointPostureTask(panda, np.zeros(panda.n_actuated), kp=1.0)
    entry = TaskEntry('posture', task, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.priority = 0
    for priority in (True, 1.5, '1', None):
        with pytest.raises(InvalidTaskConfig, match='integer'):
            TaskEntry('posture', task, priority)
    assert TaskEntry('posture', task, np.int64(2)).priority == 2


def test_defaults_are_the_top_level_and_unit_weight():
    """TaskEntry without priority is level 0 (above level 1); without weight it weighs 1."""
    panda = robot('panda')
    state = random_state(panda, 4, speed=0.7)
    near = FramePositionTask(panda, 'panda_hand', [0.5, 0.0, 0.5], kp=100.0)
    far = FramePositionTask(panda, 'panda_hand', [0.3, 0.2, 0.3], kp=100.0)
    posture = JointPostureTask(panda, np.zeros(panda.n_actuated), kp=20.0)
    entries = [
        TaskEntry('posture', posture, 1),
        TaskEntry('near', near),
        TaskEntry('far', far, 0, 1.0),
    ]
    ctrl = controller(panda, entries)
    result = ctrl.compute(state)
    assert [level.task_names for level in result.levels] == [('near', 'far'), ('posture',)]
    assert ctrl.weight('near') == 1.0
    desired = [task.compute(state).desired_acceleration for task in (near, far)]
    np.testing.assert_allclose(
        achieved(near, state, result.acceleration), 0.5 * (desired[0] + desired[1]), atol=1e-7
    )


def test_weights_of_two_tasks_on_one_point_give_the_weighted_mean_of_their_targets():
    """Same Jacobian, different targets: argmin Σ wᵢ‖ẍ − ẍᵢ*‖² = Σ wᵢẍᵢ* / Σ wᵢ.

    Weights 1 and 4 tell w from √w (1/3, 2/3) and w² (1/17, 16/17).
    """
    panda = robot('panda')
    state = random_state(panda, 4, speed=0.7)
    near = FramePositionTask(panda, 'panda_hand', [0.5, 0.0, 0.5], kp=100.0)
    far = FramePositionTask(panda, 'panda_hand', [0.3, 0.2, 0.3], kp=100.0)
    for w_near, w_far in ((1.0, 4.0), (1.0, 1.0), (9.0, 0.5)):
        entries = [TaskEntry('near', near, 0, w_near), TaskEntry('far', far, 0, w_far)]
        result = controller(panda, entries).compute(state)
        desired = [task.compute(state).desired_acceleration for task in (near, far)]
        expected = (w_near * desired[0] + w_far * desired[1]) / (w_near + w_far)
        for task in (near, far):
            np.testing.assert_allclose(
                achieved(task, state, result.acceleration), expected, rtol=1e-7, atol=1e-7
            )


def weighted_least_squares_residual(state, tasks, weights) -> list[np.ndarray]:
    """Per-task residual of argmin Σ wᵢ ‖Dᵢ(Jᵢq̈ + J̇ᵢv − ẍᵢ*)‖² (by lstsq).

    D = 1/√(the mean mobility (J M⁻¹ Jᵀ)ⱼⱼ of each row's group (a frame task's linear rows,
    its angular rows, a posture's joints)).

    The residual of a least-squares problem is unique even where its solution is not.
    """
    terms = [task.compute(state) for task in tasks]
    jacobian = np.vstack([t.jacobian for t in terms])
    target = np.concatenate([t.desired_acceleration - t.drift for t in terms])
    mobilities = mobility(jacobian, state.inverse_mass_matrix)
    row_weights = np.concatenate([np.full(t.jacobian.shape[0], w) for t, w in zip(terms, weights)])
    groups = [g for t in tasks for g in t.row_groups()]
    scale = np.sqrt(row_weights / group_mean(mobilities, groups))
    solution = np.linalg.lstsq(scale[:, None] * jacobian, scale * target, rcond=None)[0]
    residual = jacobian @ solution - target
    split = np.cumsum([t.jacobian.shape[0] for t in terms])[:-1]
    return np.split(residual, split)


@settings(max_examples=20, deadline=None)
@given(seeds)
def test_weights_within_a_level_match_an_independent_weighted_least_squares(seed):
    """12 rows, rank 7 (the fingers move none of these frames): they cannot all be met."""
    panda = robot('panda')
    state = random_state(panda, seed, speed=0.5)
    tasks = (
        FramePoseTask(panda, 'panda_hand', [0.45, 0.1, 0.4, 1.0, 0.0, 0.0, 0.0], kp=80.0),
        FramePositionTask(panda, 'panda_link4', [0.2, -0.2, 0.6], kp=50.0),
        FramePositionTask(panda, 'panda_link7', [0.3, 0.3, 0.5], kp=50.0),
    )
    weights = (1.0, 4.0, 0.25)
    entries = [TaskEntry(f't{i}', task, 0, w) for i, (task, w) in enumerate(zip(tasks, weights))]
    # A narrow band: the test is about the weights, not the regularisation of weak directions.
    result = controller(panda, entries, singular_value_threshold=1e-3).compute(state)
    assume(exact(result))
    assert result.levels[0].rank == 7  # a real conflict: 12 rows, 7 directions
    expected = weighted_least_squares_residual(state, tasks, weights)
    for task, residual in zip(tasks, expected):
        terms = task.compute(state)
        got = terms.jacobian @ result.acceleration + terms.drift - terms.desired_acceleration
        np.testing.assert_allclose(got, residual, atol=1e-6 * (1.0 + np.abs(residual).max()))


# Level reports -------------------------------------------------------------------------------


def group_mean(mobility: np.ndarray, groups) -> np.ndarray:
    """Each row's group's mean mobility, `(m,)`."""
    bounds = np.cumsum([0, *groups])
    return np.concatenate(
        [np.full(b - a, mobility[a:b].mean()) for a, b in zip(bounds[:-1], bounds[1:])]
    )


def singular_values(rows: np.ndarray, free: np.ndarray | None = None) -> np.ndarray:
    """Descending singular values of the rows normalised per group, on the free directions."""
    restricted = rows if free is None else rows @ free
    return np.linalg.svd(restricted, compute_uv=False)


def expected_level_health(values: np.ndarray, threshold: float) -> tuple[float, int, int]:
    """(s_max / s_min, directions with s ≥ ε s_max, directions) of the descending values."""
    kept = values[values**2 > 1e-9 * values[0] ** 2]
    return kept[0] / kept[-1], int((kept >= threshold * kept[0]).sum()), kept.size


def clear_of_the_band_edge(values: np.ndarray, threshold: float) -> bool:
    """No singular value within rounding of ε s_max, where the count of weak ones flips."""
    kept = values[values**2 > 1e-9 * values[0] ** 2]
    return bool((np.abs(kept / kept[0] - threshold) > 1e-6).all())


def assert_report_matches(report, health) -> None:
    """Condition within round-off; exact and weak directions add up; exact ones are σ ≥ ε."""
    condition, above_epsilon, directions = health
    np.testing.assert_allclose(report.condition_number, condition, rtol=1e-6)
    assert report.rank + report.damped_directions == directions, (report, health)
    assert report.rank == above_epsilon, (report, health)


def mobility(rows: np.ndarray, inverse_inertia: np.ndarray) -> np.ndarray:
    """(J M⁻¹ Jᵀ)ᵢᵢ per row: its inverse task-space mass (Khatib 1987)."""
    return np.einsum('ij,jk,ik->i', rows, inverse_inertia, rows)


def normalised(rows: np.ndarray, groups, inverse_inertia: np.ndarray) -> np.ndarray:
    """Rows divided by √ of the mean mobility of their group."""
    mean = group_mean(mobility(rows, inverse_inertia), groups)
    return rows / np.sqrt(mean)[:, None]


def test_level_report_of_the_top_level_through_a_singularity():
    """UR5 hand pose while the elbow stretches: condition, exact and weak counts against numpy."""
    ur5 = robot('ur5')
    hand = FramePoseTask(ur5, 'tool0', [0.9, 0.3, 0.4, 0.0, 0.0, 0.0, 1.0], kp=100.0)
    threshold = 1e-2
    ctrl = controller(ur5, [TaskEntry('hand', hand, 0)], singular_value_threshold=threshold)
    state = RobotState(ur5)
    healths = []
    for elbow in (0.8, 0.05, 0.004, 0.0005):
        state.update(np.array([0.0, -1.2, elbow, 0.3, 1.2, 0.0]), np.zeros(6))
        report = ctrl.compute(state).levels[0]
        jacobian = normalised(
            hand.compute(state).jacobian, hand.row_groups(), state.inverse_mass_matrix
        )
        health = expected_level_health(singular_values(jacobian), threshold)
        assert_report_matches(report, health)
        healths.append((report.rank, report.damped_directions, health[1]))
    # Far from the singularity every direction is exact; at 0.5 mrad one is below ε.
    assert healths[0] == (6, 0, 6) and healths[-1][1] > 0 and healths[-1][2] < 6, healths


# Most random Panda states put a hand direction near the band's edge and are assumed away.
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(seeds)
def test_level_report_of_a_lower_level_uses_what_the_higher_one_leaves_free(seed):
    """Panda hand pose above a posture: the posture's rows on what the hand leaves free.

    The posture's rows are joint directions, each scaled by its mobility; on the hand's null
    space every direction left is exact.
    """
    panda = robot('panda')
    state = random_state(panda, seed)
    hand = FramePoseTask(panda, 'panda_hand', [0.45, 0.1, 0.4, 1.0, 0.0, 0.0, 0.0], kp=80.0)
    posture = JointPostureTask(panda, np.zeros(panda.n_actuated), kp=20.0)
    weights = np.array([2.0, 0.5])
    entries = [
        TaskEntry('hand', hand, 0, weights[0]),
        TaskEntry('posture', posture, 1, weights[1]),
    ]
    top_report, low_report = controller(panda, entries).compute(state).levels
    inverse = state.inverse_mass_matrix.copy()
    top = normalised(hand.compute(state).jacobian, hand.row_groups(), inverse)
    top_health = expected_level_health(singular_values(top), THRESHOLD)
    assume(top_health[1] == 6 and clear_of_the_band_edge(singular_values(top), THRESHOLD))
    assert_report_matches(top_report, top_health)
    free = np.linalg.svd(top)[2][6:].T  # (nv, 3): the joint accelerations the hand leaves
    rows = normalised(np.eye(panda.nv), posture.row_groups(), inverse)
    values = singular_values(rows, free)
    assume(clear_of_the_band_edge(values, THRESHOLD))
    low_health = expected_level_health(values, THRESHOLD)
    assert_report_matches(low_report, low_health)
    assert low_health[2] == panda.nv - 6  # what the hand leaves free


def test_the_singular_value_threshold_lies_strictly_between_0_and_1():
    panda = robot('panda')
    entries = [TaskEntry('posture', JointPostureTask(panda, np.zeros(panda.n_actuated), kp=1.0))]
    for threshold in (0.0, 1.0, -0.1, 1.5, np.nan):
        with pytest.raises(InvalidValue, match='singular_value_threshold'):
            controller(panda, entries, singular_value_threshold=threshold)
    assert controller(panda, entries, singular_value_threshold=0.5).singular_value_threshold == 0.5


def test_tasks_are_found_by_name_and_nothing_is_left_unbalanced_without_contacts():
    panda = robot('panda')
    near = FramePositionTask(panda, 'panda_hand', [0.5, 0.0, 0.5], kp=100.0)
    posture = JointPostureTask(panda, np.zeros(panda.n_actuated), kp=20.0)
    ctrl = controller(panda, [TaskEntry('near', near), TaskEntry('posture', posture, 1)])
    assert ctrl.task('near') is near and ctrl.task('posture') is posture
    with pytest.raises(KeyError):
        ctrl.task('far')
    result = ctrl.compute(random_state(panda, 1))
    assert result.base_wrench_residual == 0.0 and result.contacts == ()
