"""A payload changed at run time enters M, h and g(q) over soft_start_time, from the next tick."""

import numpy as np
import numpy.testing as npt
import pinocchio as pin
import pytest
from robots import example_urdf

from wbc_control.config import build_entries, parse_controller_settings, parse_tasks
from wbc_control.config.assembly import build_loop
from wbc_control.config.live import plan_live_update
from wbc_control.control.loop.payload_ramp import PayloadRamp
from wbc_control.exceptions import FrameNotFound
from wbc_control.model.payload import NO_PAYLOAD, Payload
from wbc_control.model.robot_model import RobotModel

READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
HAND = 'panda_hand_tcp'
CENTER = (0.011, -0.017, 0.052)
DURATION_S = 0.5
DT = 0.004


def panda() -> RobotModel:
    return RobotModel.from_urdf_path(*example_urdf('panda'))


def gravity(robot: RobotModel, positions=READY) -> np.ndarray:
    return pin.computeGeneralizedGravity(robot.model, robot.model.createData(), positions).copy()


def test_the_ramp_moves_g_linearly_from_the_next_tick_over_its_duration():
    robot = panda()
    ramp = PayloadRamp(robot, DURATION_S)
    unloaded = gravity(robot)
    loaded_payload = Payload.create(robot, HAND, 2.0, CENTER)
    ramp.request(loaded_payload)
    npt.assert_array_equal(gravity(robot), unloaded)  # nothing before the next tick
    ramp.update(10.0)  # the tick that starts the ramp: α = 0
    npt.assert_allclose(gravity(robot), unloaded, atol=1e-12)
    reference = panda()
    reference.set_payload_parameters(loaded_payload.dynamic_parameters(reference))
    loaded = gravity(reference)
    for elapsed in (0.1, 0.25, 0.4):
        ramp.update(10.0 + elapsed)
        alpha = elapsed / DURATION_S
        npt.assert_allclose(gravity(robot), unloaded + alpha * (loaded - unloaded), atol=1e-9)
        assert ramp.ramping
    ramp.update(10.0 + DURATION_S)
    npt.assert_allclose(gravity(robot), loaded, atol=1e-9)
    assert not ramp.ramping
    ramp.update(20.0)
    npt.assert_allclose(gravity(robot), loaded, atol=1e-9)


def test_a_change_during_a_ramp_starts_from_the_blend_reached():
    robot = panda()
    ramp = PayloadRamp(robot, DURATION_S)
    ramp.request(Payload.create(robot, HAND, 2.0, CENTER))
    ramp.update(0.0)
    ramp.update(0.2)
    reached = gravity(robot)
    ramp.request(Payload.create(robot, 'panda_link5', 1.0, (0.0, 0.03, -0.02)))
    ramp.update(0.204)  # the new ramp's first tick: still where the old one was
    npt.assert_allclose(gravity(robot), reached, atol=1e-12)
    ramp.update(0.704)
    reference = panda()
    reference.set_payload_parameters(
        Payload.create(reference, 'panda_link5', 1.0, (0.0, 0.03, -0.02)).dynamic_parameters(
            reference
        )
    )
    npt.assert_allclose(gravity(robot), gravity(reference), atol=1e-9)


def test_without_a_ramp_the_payload_applies_at_the_next_tick():
    robot = panda()
    ramp = PayloadRamp(robot, 0.0, Payload.create(robot, HAND, 1.0))
    with_one = gravity(robot)
    assert np.abs(with_one - gravity(panda())).max() > 0.1  # applied at construction
    ramp.request(NO_PAYLOAD)
    npt.assert_array_equal(gravity(robot), with_one)
    ramp.update(3.0)
    npt.assert_array_equal(gravity(robot), gravity(panda()))


def test_requesting_the_payload_in_force_starts_no_ramp():
    robot = panda()
    payload = Payload.create(robot, HAND, 1.0, CENTER)
    ramp = PayloadRamp(robot, DURATION_S, payload)
    ramp.request(Payload.create(robot, HAND, 1.0, CENTER))
    assert not ramp.ramping


def test_a_payload_given_at_start_up_is_in_the_model_from_the_first_tick():
    robot = panda()
    parameters = {
        'payload.frame': HAND,
        'payload.mass': 2.0,
        'payload.center_of_mass': list(CENTER),
    }
    loop, _ = posture_loop(robot, DURATION_S, parameters=parameters)
    reference = panda()
    reference.set_payload_parameters(
        Payload.create(reference, HAND, 2.0, CENTER).dynamic_parameters(reference)
    )
    loop.tick(READY, np.zeros(9), None, None, 0.0)
    npt.assert_allclose(loop.state.gravity, gravity(reference), atol=1e-9)
    with pytest.raises(FrameNotFound, match="payload.frame: frame 'gripper'"):
        parse_controller_settings(robot, {'payload.frame': 'gripper', 'payload.mass': 1.0})


def posture_loop(
    robot: RobotModel,
    soft_start_time: float,
    compensates: bool = False,
    parameters: dict | None = None,
):
    parameters = {
        'soft_start_time': soft_start_time,
        'robot_compensates_gravity': compensates,
        'joint_limits': False,
        **(parameters or {}),
    }
    settings = parse_controller_settings(robot, parameters)
    posture = {'type': 'joint_posture', 'kp': 25.0, 'target': READY.tolist()}
    specs = parse_tasks(robot, ['posture'], {'posture': posture})
    return build_loop(robot, settings, build_entries(robot, specs), (), 1.0), settings


def holding_commands(loop, settings, changes: dict, ticks: int) -> np.ndarray:
    """The commands holding READY at rest, `changes` planned and applied as the node does."""
    commands = [loop.tick(READY, np.zeros(9), None, None, 0.0).torque]
    for tick in range(1, 2 * int(DURATION_S / DT)):  # past the start-up soft start
        commands.append(loop.tick(READY, np.zeros(9), None, None, tick * DT).torque)
    planned = plan_live_update(loop.controller.robot, loop.controller, settings, changes)
    loop.set_payload(planned.settings.payload)
    start = len(commands)
    for tick in range(start, start + ticks):
        commands.append(loop.tick(READY, np.zeros(9), None, None, tick * DT).torque)
    return np.array(commands[start - 1 :])


@pytest.mark.parametrize('compensates', [False, True])
def test_a_live_payload_change_ramps_the_command_without_a_step(compensates):
    changes = {
        'payload.frame': HAND,
        'payload.mass': 2.0,
        'payload.center_of_mass': list(CENTER),
    }
    robot = panda()
    loop, settings = posture_loop(robot, DURATION_S, compensates)
    commands = holding_commands(loop, settings, changes, int(DURATION_S / DT) + 5)
    reference = panda()
    reference.set_payload_parameters(
        Payload.create(reference, HAND, 2.0, CENTER).dynamic_parameters(reference)
    )
    # at rest on target: τ = g(q) with the payload, or τ − g(q) = 0 for a driver that adds
    # g(q) itself: what it is sent less is the gravity with the payload
    held = np.zeros(9) if compensates else gravity(reference)
    npt.assert_allclose(commands[-1], held, atol=1e-9)
    change = np.zeros(9) if compensates else gravity(reference) - gravity(panda())
    steps = np.abs(np.diff(commands, axis=0)).max(axis=0)
    # each tick moves the command by Δg dt / T, the ramp's share, and no more
    assert (steps <= np.abs(change) * DT / DURATION_S * (1.0 + 1e-6) + 1e-9).all()
    # without the ramp the whole change is one step
    loop, settings = posture_loop(panda(), 0.0, compensates)
    commands = holding_commands(loop, settings, changes, 3)
    npt.assert_allclose(np.abs(np.diff(commands, axis=0)).max(axis=0), np.abs(change), atol=1e-9)
