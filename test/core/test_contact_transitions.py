"""Contacts released and established at run time with a load transfer (no torque jump)."""

import re

import numpy as np
import pytest
from robots import robot

from wbc_control.config import build_entries, parse_task
from wbc_control.config.live import apply_live_update, plan_live_update
from wbc_control.config.settings import parse_controller_settings
from wbc_control.config.tasks import task_specs
from wbc_control.control.contact.contacts import (
    CONTACT_VELOCITY_DAMPING,
    Contact,
    base_contact_forces,
    contact_jacobian,
    contact_row_weights,
)
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.control.switching.contact_transitions import (
    StackKey,
    StackSwitcher,
    smoothstep,
    validate_transition_time,
)
from wbc_control.exceptions import InvalidTaskConfig, InvalidValue, ModelError, WbcError
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks import ComTask, FrameOrientationTask, FramePositionTask, JointPostureTask

FEET = ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT')
STANDING = [0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6]
DT = 0.002


def standing_state(speed: float = 0.0) -> RobotState:
    """Solo12 on its four feet (base 24 cm up), COM over the FR-HL diagonal."""
    solo = robot('solo12')
    q = solo.configuration(STANDING, [0.0, 0.0, 0.24, 0.0, 0.0, 0.0, 1.0])
    velocity = speed * np.random.default_rng(0).standard_normal(solo.nv)
    state = RobotState(solo)
    state.update(q, velocity)
    return state


def contacts(frames=FEET) -> list[Contact]:
    return [Contact.create(robot('solo12'), frame, 'point') for frame in frames]


def solo_controller(
    state: RobotState, frames=FEET, transition_time: float = 0.3
) -> PrioritizedController:
    """COM and level base over a frame task on the front-left foot, over the posture."""
    solo = robot('solo12')
    foot = state.frame_placement(solo.frame_id('FL_FOOT')).translation.copy()
    entries = [
        TaskEntry('com', ComTask(solo, state.com.copy(), kp=100.0), 0),
        TaskEntry('base', FrameOrientationTask(solo, 'base_link', [0, 0, 0, 1], kp=100.0), 0),
        TaskEntry('foot', FramePositionTask(solo, 'FL_FOOT', foot, kp=400.0), 1),
        TaskEntry('posture', JointPostureTask(solo, STANDING, kp=10.0), 2),
    ]
    return PrioritizedController(
        solo,
        entries,
        contacts=contacts(frames),
        effort_limits=np.full(solo.n_actuated, np.inf),
        contact_transition_time=transition_time,
    )


def run(controller, state, ticks: int, start_s: float = 0.0):
    """Results of `ticks` ticks DT apart at a fixed state."""
    return [controller.compute(state, None, start_s + k * DT) for k in range(ticks)]


def steps(results) -> np.ndarray:
    torques = np.array([result.torque for result in results])
    return np.abs(np.diff(torques, axis=0)).max(axis=1)


def normal_force(result, frame: str) -> float:
    return next((c.normal_force for c in result.contacts if c.frame == frame), 0.0)


@pytest.mark.parametrize('speed', [0.0, 0.3])
def test_release_transfers_the_load_without_a_torque_jump_and_ends_on_three_feet(speed):
    state = standing_state(speed)
    controller = solo_controller(state)
    before = run(controller, state, 5)
    controller.set_contacts(contacts(FEET[1:]))
    during = run(controller, state, 200, 5 * DT)
    three_feet = solo_controller(state, FEET[1:]).compute(state)

    # After T = 0.3 s (150 ticks) the result is the three-feet stack's, exactly.
    np.testing.assert_allclose(during[-1].torque, three_feet.torque, rtol=0, atol=1e-12)
    assert [c.frame for c in during[-1].contacts] == list(FEET[1:])
    # The abrupt switch jumps; the transfer's steps are of the order 1.5 dt / T of that jump
    # (the blend's rate times the jump, plus the load shares' own effect: 1.12 times measured).
    abrupt = np.abs(three_feet.torque - before[-1].torque).max()
    largest = steps(before[-1:] + during).max()
    assert abrupt > 0.3
    assert largest <= 2.0 * 1.5 * DT / 0.3 * abrupt
    assert during[-1].transition.max_torque_step == pytest.approx(largest, rel=1e-9)
    assert during[-1].transition.transitions == 1 and during[-1].transition.switching == ''
    # The leaving foot's load falls to zero monotonically; the others take it; the base is held.
    leaving = [normal_force(result, 'FL_FOOT') for result in during[:151]]
    assert leaving[0] > 2.0 and leaving[-1] == pytest.approx(0.0, abs=1e-9)
    assert np.all(np.diff(leaving) <= 1e-9)
    # Halfway (s = 0.5) the blend alone halves it; the load shares move it further only as
    # far as the other feet can take the load without pulling (HR is unloaded here).
    assert during[75].transition.progress == pytest.approx(0.5)
    assert leaving[75] <= 0.5 * leaving[0] + 1e-9
    for result in during:
        assert result.base_wrench_residual < 1e-9
        # The COM stands over the FR-HL diagonal: HR ends unloaded, none pulls.
        assert all(c.normal_force > -1e-9 for c in result.contacts)


def test_contacts_common_to_both_stacks_are_held_exactly_during_a_switch():
    state = standing_state(0.3)
    controller = solo_controller(state)
    controller.set_contacts(contacts(FEET[1:]))
    kept, drift = contact_jacobian(state, contacts(FEET[1:]))
    damped = drift + CONTACT_VELOCITY_DAMPING * kept @ state.v  # A q̈ = −Ȧq̇ − K A q̇
    for result in run(controller, state, 150):
        np.testing.assert_allclose(kept @ result.acceleration + damped, 0.0, atol=1e-9)


def test_establishing_a_contact_ramps_its_load_up_and_ends_on_four_feet():
    state = standing_state()
    controller = solo_controller(state, FEET[1:])
    before = run(controller, state, 3)
    controller.set_contacts(contacts(FEET))
    during = run(controller, state, 160, 3 * DT)
    four_feet = solo_controller(state).compute(state)
    np.testing.assert_allclose(during[-1].torque, four_feet.torque, rtol=0, atol=1e-12)
    arriving = [normal_force(result, 'FL_FOOT') for result in during[:151]]
    assert arriving[0] == pytest.approx(0.0, abs=1e-9) and arriving[-1] > 5.0
    assert np.all(np.diff(arriving) >= -1e-9)
    abrupt = np.abs(four_feet.torque - before[-1].torque).max()
    assert steps(before[-1:] + during).max() <= 2.0 * 1.5 * DT / 0.3 * abrupt


def test_a_request_during_a_switch_waits_for_it_then_goes_to_the_newest():
    state = standing_state()
    controller = solo_controller(state)
    controller.set_contacts(contacts(FEET[1:]))
    run(controller, state, 10)
    controller.set_contacts(contacts(FEET[:3]))
    controller.set_contacts(contacts(FEET))
    results = run(controller, state, 400, 10 * DT)
    reports = [result.transition for result in results]
    assert reports[100].switching == 'contacts -FL_FOOT'
    assert reports[200].switching == 'contacts +FL_FOOT'
    assert reports[-1].transitions == 2
    four_feet = solo_controller(state).compute(state)
    np.testing.assert_allclose(results[-1].torque, four_feet.torque, rtol=0, atol=1e-12)


def test_without_a_clock_a_switch_is_immediate():
    state = standing_state()
    controller = solo_controller(state)
    controller.set_contacts(contacts(FEET[1:]))
    result = controller.compute(state)
    np.testing.assert_allclose(
        result.torque, solo_controller(state, FEET[1:]).compute(state).torque, atol=1e-12
    )
    assert [c.frame for c in controller.contacts] == list(FEET[1:])


def test_bad_contact_sets_are_refused_and_change_nothing():
    state = standing_state()
    controller = solo_controller(state)
    with pytest.raises(ModelError):
        controller.set_contacts([])
    with pytest.raises(InvalidTaskConfig, match='duplicate'):
        controller.set_contacts(contacts(('FL_FOOT', 'FL_FOOT')))
    assert controller.switching.requested == controller.switching.current
    assert [c.frame for c in controller.contacts] == list(FEET)


def test_weighted_force_distribution_unloads_a_contact_continuously():
    state = standing_state()
    constraint = contact_jacobian(state, contacts())[0]
    load = state.gravity
    full = base_contact_forces(constraint, load, 6)
    shares = np.ones(12)
    np.testing.assert_allclose(
        base_contact_forces(constraint, load, 6, shares).forces, full.forces, atol=1e-12
    )
    previous = None
    for share in (1.0, 0.5, 0.1, 1e-3, 1e-6, 0.0):
        shares[:3] = share
        forces = base_contact_forces(constraint, load, 6, shares)
        assert forces.base_residual < 1e-9
        if previous is not None:
            assert np.linalg.norm(forces.forces[:3]) <= np.linalg.norm(previous[:3]) + 1e-12
        previous = forces.forces
    assert np.all(previous[:3] == 0.0)


def test_smoothstep_and_transition_times():
    assert smoothstep(-1.0) == 0.0 and smoothstep(0.5) == 0.5 and smoothstep(2.0) == 1.0
    fractions = np.linspace(0.0, 1.0, 1001)
    shares = np.array([smoothstep(f) for f in fractions])
    assert np.abs(np.diff(shares)).max() <= 1.5 * 1e-3 + 1e-12
    assert validate_transition_time('t', 0) == 0.0
    for bad in (-0.1, float('nan'), float('inf')):
        with pytest.raises(InvalidValue):
            validate_transition_time('t', bad)


def test_switch_durations_follow_what_changes():
    key = StackKey(('a', 'b'), frozenset())
    switcher = StackSwitcher(key, 0.3, 0.2)
    assert switcher.duration(key, key._replace(contacts=('a',))) == 0.3
    assert switcher.duration(key, key._replace(inactive=frozenset({'t'}))) == 0.2
    both = StackKey(('a',), frozenset({'t'}))
    assert switcher.duration(key, both) == 0.3
    assert switcher.plan(0.0)[0].share == 1.0


# Live parameters: contacts, tasks.<name>.active, the transition times ---------------------


def live_plan(controller, changes):
    solo = robot('solo12')
    settings = parse_controller_settings(solo, {})
    return plan_live_update(solo, controller, settings, changes)


def test_live_contacts_and_transition_times_are_planned_then_applied():
    state = standing_state()
    controller = solo_controller(state)
    plan = live_plan(
        controller,
        {
            'contacts': list(FEET[1:]),
            'contact_transition_time': 0.5,
            'tasks.posture.active': False,
        },
    )
    assert [c.frame for c in plan.contacts] == list(FEET[1:])
    assert plan.contacts[0].kind.value == 'point'  # the start-up type is kept
    assert controller.switching.requested == controller.switching.current  # nothing applied
    apply_live_update(controller, plan)
    assert controller.switching.contact_time == 0.5
    assert not controller.active('posture')
    assert task_specs(controller)['posture'].active is False
    result = run(controller, state, 1)[0]
    assert result.transition.switching == 'contacts -FL_FOOT; tasks -posture'


@pytest.mark.parametrize(
    ('changes', 'words'),
    [
        ({'contacts': []}, 'contacts: a floating base needs at least one contact'),
        ({'contacts': ['FL_FOOT', 'FL_FOOT']}, 'contacts: duplicate frames: FL_FOOT'),
        ({'contacts': ['base_link']}, "contacts: frame(s) 'base_link' were not contacts"),
        ({'contact_transition_time': -0.1}, 'contact_transition_time'),
        ({'task_transition_time': 11.0}, 'task_transition_time'),
        ({'tasks.foot.active': 1.0}, 'tasks.foot.active'),
    ],
)
def test_bad_live_switches_are_refused_naming_the_parameter(changes, words):
    controller = solo_controller(standing_state())
    with pytest.raises(WbcError, match=re.escape(words)):
        live_plan(controller, changes)


def test_a_task_configured_inactive_starts_switched_off():
    solo = robot('solo12')
    values = {'type': 'joint_posture', 'kp': 10.0, 'active': False}
    (entry,) = build_entries(solo, [parse_task(solo, 'posture', values)])
    state = standing_state()
    controller = PrioritizedController(solo, [entry], contacts=contacts())
    assert not controller.active('posture')
    assert controller.compute(state).tasks == ()


def test_a_com_over_one_sole_loads_that_sole_instead_of_twisting_both():
    """Moments weighed at MOMENT_ARM_M: the vertical load follows the COM between the feet."""
    talos = robot('talos')
    state = RobotState(talos)
    state.update(
        talos.configuration(np.zeros(talos.n_actuated), [0, 0, 1.0, 0, 0, 0, 1]),
        np.zeros(talos.nv),
    )
    soles = [
        Contact.create(talos, foot, 'surface') for foot in ('left_sole_link', 'right_sole_link')
    ]
    constraint = contact_jacobian(state, soles)[0]
    left_y = state.frame_placement(talos.frame_id('left_sole_link')).translation[1]
    weight = sum(inertia.mass for inertia in talos.model.inertias) * 9.81
    for com_y, left_share in ((0.0, 0.5), (0.5 * left_y, 0.75), (-0.5 * left_y, 0.25)):
        load = np.zeros(talos.nv)
        load[2] = weight
        load[3] = weight * com_y  # the moment about x of the weight acting at com_y
        forces = base_contact_forces(constraint, load, 6, contact_row_weights(soles)).forces
        # At least 90 % of the way from the equal split to the lever rule (95 % at L = 2 cm);
        # the unweighted minimum norm stays at the equal split with twisting ankle moments.
        shift = forces[2] / weight - 0.5
        assert 0.9 * (left_share - 0.5) - 1e-9 <= shift * np.sign(left_share - 0.5 + 1e-12)
        assert abs(shift) <= abs(left_share - 0.5) + 1e-9
