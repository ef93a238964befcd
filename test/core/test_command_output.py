"""The command sent: limited, τ − g(q) for a robot that adds gravity, and the safe commands."""

import numpy as np
import numpy.testing as npt
import pinocchio as pin
import pytest
from robots import random_state, robot

from wbc_control.config.settings import parse_contacts
from wbc_control.control.constraints.torque_limits import TorqueLimiter
from wbc_control.control.contact.contacts import contact_jacobian, holding_torque
from wbc_control.control.loop.command_output import CommandOutput

FEET = ['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT']


def output(robot_name: str, compensates: bool, limit: float = np.inf) -> CommandOutput:
    n = robot(robot_name).n_actuated
    return CommandOutput(TorqueLimiter(np.full(n, limit)), compensates)


def gravity(name: str, q: np.ndarray) -> np.ndarray:
    """g(q) by Pinocchio, independently of RobotState."""
    model = robot(name).model
    return pin.computeGeneralizedGravity(model, model.createData(), q)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_a_robot_that_adds_gravity_is_sent_tau_minus_g(seed):
    state = random_state(robot('panda'), seed)
    torque = np.random.default_rng(seed).uniform(-20.0, 20.0, 9)
    plain = output('panda', False).task_command(torque, state, None)
    npt.assert_array_equal(plain.torque, torque)
    sent = output('panda', True).task_command(torque, state, None)
    npt.assert_allclose(sent.torque, torque - gravity('panda', state.q), rtol=1e-12, atol=1e-12)


def test_the_limits_apply_to_what_is_sent():
    state = random_state(robot('panda'), 3, speed=0.0)
    g = gravity('panda', state.q)
    holding = output('panda', True, limit=1.0).task_command(g.copy(), state, None)
    npt.assert_allclose(holding.torque, 0.0, atol=1e-12)
    assert not holding.saturated.any()
    pushed = output('panda', True, limit=1.0).task_command(g + 5.0, state, None)
    npt.assert_allclose(pushed.torque, 1.0)
    assert pushed.saturated.all()


def test_safe_commands_keep_their_meaning_on_a_robot_that_adds_gravity():
    state = random_state(robot('panda'), 4, speed=0.0)
    npt.assert_allclose(output('panda', False).safe_command('gravity', state, ()), state.gravity)
    npt.assert_allclose(output('panda', True).safe_command('gravity', state, ()), 0.0, atol=1e-12)
    for compensates in (False, True):
        npt.assert_array_equal(output('panda', compensates).safe_command('zero', state, ()), 0.0)
        npt.assert_array_equal(output('panda', compensates).safe_command('gravity', None, ()), 0.0)
    solo = robot('solo12')
    contacts = parse_contacts(solo, FEET, ['point'] * 4)
    standing = random_state(solo, 5, speed=0.0)
    sent = output('solo12', True).safe_command('gravity', standing, contacts)
    expected = holding_torque(standing, contacts) - gravity('solo12', standing.q)[6:]
    npt.assert_allclose(sent, expected, atol=1e-9)
    assert np.abs(sent).max() > 1e-3  # the legs carry the base: not zero


def test_the_safe_command_restarts_the_rate_limit():
    state = random_state(robot('panda'), 6, speed=0.0)
    limited = CommandOutput(TorqueLimiter(np.full(9, 100.0), np.full(9, 10.0)))
    limited.task_command(np.full(9, 50.0), state, None)
    npt.assert_array_equal(limited.safe_command('zero', state, ()), 0.0)
    ramp = limited.task_command(np.full(9, 50.0), state, 0.1)
    npt.assert_allclose(ramp.torque, 1.0)
    assert ramp.rate_limited.all()


@pytest.mark.parametrize('seed', [0, 1])
def test_the_gravity_safe_command_balances_the_base_through_the_contacts(seed):
    """Standing still: the base rows of g − Aᵀf vanish and the joints get its actuated rows."""
    solo = robot('solo12')
    contacts = parse_contacts(solo, FEET, ['point'] * 4)
    state = random_state(solo, seed, speed=0.0)
    torque = holding_torque(state, contacts)
    constraint = contact_jacobian(state, contacts)[0]
    forces = np.linalg.lstsq(constraint[:, :6].T, state.gravity[:6], rcond=None)[0]
    wrench = state.gravity - constraint.T @ forces
    npt.assert_allclose(wrench[:6], 0.0, atol=1e-9)
    npt.assert_allclose(torque, wrench[solo.indices.v], atol=1e-9)
    fixed = random_state(robot('panda'), seed, speed=0.0)
    npt.assert_allclose(holding_torque(fixed, ()), fixed.gravity)
