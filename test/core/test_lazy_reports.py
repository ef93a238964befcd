"""Reports built on first access, the cheap friction-cone test, and M⁻¹ formed once per tick."""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from robots import random_state, robot

from wbc_control.control.contact.contacts import (
    Contact,
    cone_check_terms,
    contact_force_reports,
    may_leave_friction_cone,
)
from wbc_control.control.loop.tick_statistics import TickStatistics
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.control.results import ContactReports, LazyReports
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks import ComTask, FramePositionTask, JointPostureTask

FEET = ('left_sole_link', 'right_sole_link')


def test_lazy_reports_build_once_on_first_access_and_compare_as_tuples():
    built = []

    def build(*values):
        built.append(values)
        return [value * 2 for value in values]

    reports = LazyReports(build, 1, 2)
    assert built == []
    assert len(reports) == 2 and reports[1] == 4 and list(reports) == [2, 4]
    assert reports == (2, 4) and reports != (2,) and reports == LazyReports(build, 1, 2)
    assert len(built) == 2  # the second object above; the first built once


def _contacts():
    talos = robot('talos')
    axis = [0.0, 0.6, 0.8]
    return [
        Contact.create(talos, FEET[0], 'surface'),
        Contact.create(talos, FEET[1], 'point'),
        Contact.create(talos, 'gripper_left_base_link', 'along', axis),
    ]


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 2**31 - 1),
    st.floats(0.1, 1.5),
    st.sampled_from([0.5, 1.0, 0.99, 1.01, 1.0 / 0.99, 2.0]),
)
def test_the_cheap_cone_test_never_misses_a_pull_or_a_cone_exit(seed, mu, ratio):
    """False from `may_leave_friction_cone` means no report says pulling or outside the cone."""
    contacts = _contacts()
    rng = np.random.default_rng(seed)
    forces = rng.standard_normal(sum(c.dim for c in contacts)) * 100.0
    # The surface contact's force exactly at `ratio` times the cone's edge (or pulling).
    tangential = rng.standard_normal(2)
    normal = abs(forces[2]) * rng.choice([1.0, -1.0, 0.0], p=[0.8, 0.1, 0.1])
    forces[:2] = tangential / np.linalg.norm(tangential) * ratio * mu * abs(normal)
    forces[2] = normal
    reports = contact_force_reports(contacts, forces, mu)
    trouble = any(r.pulling or r.outside_friction_cone for r in reports)
    flagged = may_leave_friction_cone(cone_check_terms(contacts), forces, mu)
    assert flagged or not trouble
    lazy = ContactReports(contacts, forces, mu, cone_check_terms(contacts))
    assert lazy.may_leave_friction_cone() is flagged
    flags = [(r.frame, r.normal_force, r.pulling, r.outside_friction_cone) for r in reports]
    assert [(r.frame, r.normal_force, r.pulling, r.outside_friction_cone) for r in lazy] == flags
    assert lazy.may_leave_friction_cone() is trouble  # exact once built


def test_the_cheap_cone_test_passes_forces_well_inside_the_cone():
    contacts = _contacts()
    forces = np.zeros(sum(c.dim for c in contacts))
    forces[2], forces[8] = 300.0, 200.0  # both feet pushing straight up
    forces[9] = -50.0  # `along` contacts are not checked
    assert not may_leave_friction_cone(cone_check_terms(contacts), forces, 0.7)
    forces[0] = 0.7 * 300.0 * 1.001
    assert may_leave_friction_cone(cone_check_terms(contacts), forces, 0.7)


def test_a_com_task_that_would_pull_gives_way_and_healthy_ticks_build_no_reports():
    """A COM sent down faster than gravity would need pulling feet: the task gives way.

    The feet push, the task's level residual shows it, and nothing is flagged; a healthy
    tick's reports are not built.
    """
    talos = robot('talos')
    state = RobotState(talos)
    state.update(
        talos.configuration(np.zeros(talos.n_actuated), [0, 0, 1.0, 0, 0, 0, 1]),
        np.zeros(talos.nv),
    )
    contacts = [Contact.create(talos, frame) for frame in FEET]
    statistics = TickStatistics(talos.n_actuated, 0.0)
    flags = np.zeros(talos.n_actuated, dtype=bool)
    for pull in (False, True):
        target = state.com - np.array([0.0, 0.0, 1.0 if pull else 0.0])
        entries = [TaskEntry('com', ComTask(talos, target, kp=100.0), 0)]
        result = PrioritizedController(talos, entries, contacts=contacts).compute(state)
        statistics.start_period(0.0)
        statistics.tick(result, flags, flags, 1e-4)
        assert statistics.pulling == set() and statistics.outside_friction_cone == set()
        if not pull:  # a healthy tick's reports were not built
            assert result.contacts._reports is None
            continue
        assert all(report.normal_force >= -1e-9 for report in result.contacts)
        (level,) = result.levels
        assert level.residual > 50.0  # asked -100 m/s², the floor gives at most -g


@pytest.mark.parametrize('seed', range(5))
def test_reports_read_after_the_next_tick_are_those_of_their_own_tick(seed):
    """The achieved accelerations are kept at the tick; later ticks do not change them."""
    panda = robot('panda')
    hand = FramePositionTask(panda, 'panda_hand', [0.4, 0.1, 0.5], kp=50.0)
    posture = JointPostureTask(panda, np.zeros(panda.n_actuated), kp=10.0)
    entries = [TaskEntry('hand', hand, 0), TaskEntry('posture', posture, 0, weight=0.1)]
    controller = PrioritizedController(panda, entries)
    first = random_state(panda, seed)
    result = controller.compute(first)
    jacobian = np.vstack([hand.compute(first).jacobian, posture.compute(first).jacobian])
    drift = np.concatenate([hand.compute(first).drift, posture.compute(first).drift])
    expected = jacobian @ result.acceleration + drift
    controller.compute(random_state(panda, seed + 100))
    achieved = np.concatenate([report.achieved_acceleration for report in result.tasks])
    np.testing.assert_allclose(achieved, expected, rtol=1e-12, atol=1e-9)
    assert [level.priority for level in result.levels] == [0]


@pytest.mark.parametrize('seed', range(5))
def test_the_inverse_mass_matrix_is_formed_once_per_tick(seed):
    panda = robot('panda')
    state = random_state(panda, seed)
    inverse = state.inverse_mass_matrix
    assert state.inverse_mass_matrix is inverse
    np.testing.assert_allclose(inverse @ state.mass_matrix, np.eye(panda.nv), atol=1e-9)
    other = random_state(panda, seed + 1)
    state.update(other.q, other.v)
    np.testing.assert_allclose(
        state.inverse_mass_matrix, np.linalg.inv(other.mass_matrix), rtol=1e-9, atol=1e-9
    )
