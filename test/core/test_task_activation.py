"""Tasks switched off and on at run time, faded over task_transition_time (no torque jump)."""

import numpy as np
import pytest
from robots import random_state, robot

from wbc_control.control.contact.contacts import (
    CONTACT_VELOCITY_DAMPING,
    Contact,
    contact_jacobian,
)
from wbc_control.control.prioritized_controller import PrioritizedController, TaskEntry
from wbc_control.tasks import ComTask, FrameOrientationTask, FramePositionTask, JointPostureTask

FEET = ('left_sole_link', 'right_sole_link')
DT, FADE = 0.004, 0.2


def talos_entries(without: str = '') -> list[TaskEntry]:
    talos = robot('talos')
    hand = FramePositionTask(talos, 'gripper_left_base_link', [0.4, 0.3, 1.0], kp=40.0)
    torso = FrameOrientationTask(talos, 'torso_2_link', [0, 0, 0, 1], kp=30.0)
    entries = [
        TaskEntry('com', ComTask(talos, (0.0, 0.0, 0.9), kp=50.0), 0),
        TaskEntry('hand', hand, 1),
        TaskEntry('torso', torso, 1),
        TaskEntry('posture', JointPostureTask(talos, np.zeros(talos.n_actuated), kp=10.0), 2),
    ]
    return [entry for entry in entries if entry.name != without]


def talos_controller(without: str = '', fade: float = FADE) -> PrioritizedController:
    talos = robot('talos')
    return PrioritizedController(
        talos,
        talos_entries(without),
        contacts=[Contact.create(talos, foot, 'surface') for foot in FEET],
        effort_limits=np.full(talos.n_actuated, np.inf),
        task_transition_time=fade,
    )


def run(controller, state, ticks: int, start_s: float = 0.0):
    return [controller.compute(state, None, start_s + k * DT) for k in range(ticks)]


def largest_step(results) -> float:
    torques = np.array([result.torque for result in results])
    return float(np.abs(np.diff(torques, axis=0)).max())


@pytest.mark.parametrize('seed', [0, 1])
@pytest.mark.parametrize('name', ['hand', 'posture'])
def test_a_fade_out_has_no_torque_jump_and_ends_exactly_on_the_stack_without(seed, name):
    state = random_state(robot('talos'), seed, speed=0.3)
    controller = talos_controller()
    before = run(controller, state, 3)
    controller.set_active(name, False)
    assert not controller.active(name)
    fading = run(controller, state, 60, 3 * DT)
    without = talos_controller(name).compute(state)
    np.testing.assert_allclose(fading[-1].torque, without.torque, rtol=1e-12, atol=1e-12)
    assert name not in [task.name for task in fading[-1].tasks]
    abrupt = np.abs(without.torque - before[-1].torque).max()
    # At a fixed state the stacks do not change: the steps are the blend's alone.
    assert largest_step(before[-1:] + fading) <= 1.5 * DT / FADE * abrupt * (1 + 1e-9)
    assert abrupt > 10.0 * largest_step(before[-1:] + fading)


@pytest.mark.parametrize('seed', [0, 1])
def test_a_fade_in_ends_exactly_on_the_full_stack(seed):
    state = random_state(robot('talos'), seed, speed=0.3)
    controller = talos_controller()
    full = controller.compute(state, None, 0.0)
    controller.set_active('hand', False)
    run(controller, state, 60, DT)
    controller.set_active('hand', True)
    fading = run(controller, state, 60, 61 * DT)
    np.testing.assert_allclose(fading[-1].torque, full.torque, rtol=1e-12, atol=1e-12)
    assert fading[-1].transition.transitions == 2
    abrupt = np.abs(full.torque - fading[0].torque).max()
    assert largest_step(fading) <= 1.5 * DT / FADE * abrupt * (1 + 1e-9)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_during_a_fade_higher_levels_and_contacts_are_kept_exactly(seed):
    state = random_state(robot('talos'), seed, speed=0.3)
    reference = talos_controller().compute(state)
    if reference.levels[0].rank < 3:  # COM singular at this state
        pytest.skip('the COM level is singular here')
    com = ComTask(robot('talos'), (0.0, 0.0, 0.9), kp=50.0).compute(state)
    constraint, drift = contact_jacobian(state, talos_controller().contacts)
    damped = drift + CONTACT_VELOCITY_DAMPING * constraint @ state.v  # A q̈ = −Ȧq̇ − K A q̇
    controller = talos_controller()
    controller.set_active('hand', False)
    for result in run(controller, state, 50):
        np.testing.assert_allclose(
            com.jacobian @ result.acceleration, com.jacobian @ reference.acceleration, atol=1e-7
        )
        np.testing.assert_allclose(constraint @ result.acceleration + damped, 0.0, atol=1e-8)
    assert 0.0 < run(controller, state, 1, 0.1)[0].transition.progress < 1.0


def test_the_abrupt_switch_jumps_where_the_fade_does_not():
    state = random_state(robot('talos'), 3, speed=0.3)
    abrupt, faded = talos_controller(fade=0.0), talos_controller()
    steps = []
    for controller in (abrupt, faded):
        before = controller.compute(state, None, 0.0)
        controller.set_active('hand', False)
        steps.append(largest_step([before, *run(controller, state, 60, DT)]))
    assert steps[0] > 20.0 * steps[1]


def test_switching_tasks_names_them_and_refuses_unknown_ones():
    controller = talos_controller()
    assert controller.active('hand')
    with pytest.raises(KeyError):
        controller.set_active('nope', False)
    with pytest.raises(KeyError):
        controller.active('nope')
    controller.set_active('hand', False)
    controller.set_active('torso', False)
    result = controller.compute(random_state(robot('talos'), 0), None, 0.0)
    assert result.transition.switching == 'tasks -hand -torso'
    controller.set_active('hand', True)
    assert controller.active('hand') and not controller.active('torso')


@pytest.mark.parametrize('seed', [0, 1])
def test_a_fixed_base_robot_fades_a_task_out_and_in(seed):
    # No contacts at all: the blend of the two stacks has no contact forces to mix.
    panda = robot('panda')
    hand = FramePositionTask(panda, 'panda_hand', [0.4, 0.1, 0.5], kp=100.0)
    posture = JointPostureTask(panda, np.zeros(panda.n_actuated), kp=10.0)
    entries = [TaskEntry('hand', hand, 0), TaskEntry('posture', posture, 1)]
    controller = PrioritizedController(
        panda, entries, effort_limits=np.full(9, np.inf), task_transition_time=FADE
    )
    state = random_state(panda, seed, speed=0.3)
    before = run(controller, state, 3)
    controller.set_active('hand', False)
    fading = run(controller, state, 60, 3 * DT)
    assert all(np.isfinite(result.torque).all() and not result.contacts for result in fading)
    alone = PrioritizedController(
        panda, [TaskEntry('posture', JointPostureTask(panda, np.zeros(9), kp=10.0), 1)]
    )
    np.testing.assert_allclose(
        fading[-1].torque, alone.compute(state).torque, rtol=1e-12, atol=1e-12
    )
    controller.set_active('hand', True)
    back = run(controller, state, 60, 63 * DT)
    np.testing.assert_allclose(back[-1].torque, before[-1].torque, rtol=1e-12, atol=1e-12)
