"""Friction cones enforced in closed loop: a fast step on a slippery floor, on MuJoCo, lock-step.

Solo12 (its base) and Talos (its COM) stand on a floor of friction 0.3 (`ground_friction`, the
MuJoCo coefficient of the ground and of the feet) with `friction_coefficient: 0.3`, and their
target is stepped 5 cm at kp 400: the horizontal force that step asks for is more than the
floor can give. The controller is built from the shipped files as the node builds it; each
tick's command is applied for one control period. Pass: no foot slips 5 mm, every reported
contact force is inside its cone (friction ratio at most μ), and the stepped task gives way
instead: its level's residual shows it.
"""

from typing import NamedTuple

import numpy as np
import pytest
from sim_support import make_simulation

from wbc_control.config import (
    build_entries,
    parse_contacts,
    parse_controller_settings,
    parse_tasks,
)
from wbc_control.config.assembly import build_loop
from wbc_control.config.shipped import shipped_parameters

MU = 0.3
STEP_M = 0.05
KP, KD = 400.0, 40.0  # critically damped
HOLD_S, STEPPED_S = 0.5, 2.0
SLIP_LIMIT_M = 0.005
#: A contact lighter than this (N) has no meaningful friction ratio.
LOADED_N = 1.0

pytestmark = pytest.mark.slow


class Stepped(NamedTuple):
    """What a stepped run did."""

    slip: float  # the largest horizontal displacement of a foot since the step (m)
    ratio: float  # the largest friction ratio of a loaded contact the controller reported
    residual: float  # the stepped task's level's largest residual after the step
    base_drop: float  # how far the base fell (m)


ROBOTS = {
    'solo12': ('solo12', 'base', np.array([STEP_M, 0.0, 0.0])),
    'talos': ('talos', 'com', np.array([0.0, STEP_M, 0.0])),
}


def run(name: str) -> Stepped:
    robot_name, task, step = ROBOTS[name]
    parameters = shipped_parameters(
        f'{robot_name}_controller.yaml', 'wbc_controller', {'friction_coefficient': MU}
    )
    parameters['tasks'][task] |= {'kp': KP, 'kd': KD}
    sim_parameters = shipped_parameters(f'{robot_name}_sim.yaml', 'wbc_sim')
    timestep = float(sim_parameters.get('timestep', 0.001))
    period = float(sim_parameters.get('control_period', timestep))
    sim = make_simulation(
        robot_name,
        timestep_s=timestep,
        ground_plane=True,
        ground_friction=MU,
        box_collision_links=tuple(sim_parameters.get('box_collision_links', ())),
    )
    sim.reset(
        np.array(sim_parameters['initial_positions']),
        np.array(sim_parameters.get('initial_base_pose') or [0, 0, 0.5, 0, 0, 0, 1]),
    )
    sim.place_on_ground()
    robot = sim.robot
    contacts = parse_contacts(robot, parameters['contacts'], parameters.get('contact_types', []))
    settings = parse_controller_settings(robot, parameters)
    specs = parse_tasks(robot, parameters['task_names'], parameters['tasks'])
    loop = build_loop(robot, settings, build_entries(robot, specs), contacts, 1.0)
    steps = max(1, round(period / timestep))
    feet = [robot.frame_id(contact.frame) for contact in contacts]
    now, origin, feet_start, base_start = 0.0, None, None, sim.base_pose()[2]
    slip, ratio, residual, lowest = 0.0, 0.0, 0.0, base_start
    for _ in range(round((HOLD_S + STEPPED_S) / period)):
        outcome = loop.tick(
            sim.joint_positions(), sim.joint_velocities(), sim.base_pose(), sim.base_twist(),
            now, now,
        )  # fmt: skip
        assert not outcome.error, outcome.error
        loop.sent(now)
        result, state = loop.statistics.result, loop.state
        if origin is None:  # the task's value at the first state
            origin = (
                state.com.copy() if task == 'com' else _translation(state, robot, task, parameters)
            )
        if now >= HOLD_S:
            if feet_start is None:
                loop.controller.task(task).set_target(origin + step)
                feet_start = [state.frame_placement(f).translation[:2].copy() for f in feet]
            moved = [
                np.linalg.norm(state.frame_placement(f).translation[:2] - s)
                for f, s in zip(feet, feet_start)
            ]
            slip = max(slip, *moved)
            loaded = [c.friction_ratio for c in result.contacts if c.normal_force > LOADED_N]
            ratio = max(ratio, *loaded, 0.0)
            level = next(lv for lv in result.levels if task in lv.task_names)
            residual = max(residual, level.residual)
            lowest = min(lowest, sim.base_pose()[2])
        sim.apply_torque(outcome.torque)
        sim.step(steps)
        now += period
    return Stepped(slip, ratio, residual, base_start - lowest)


def _translation(state, robot, task: str, parameters: dict) -> np.ndarray:
    frame = robot.frame_id(parameters['tasks'][task]['frame'])
    return state.frame_placement(frame).translation.copy()


@pytest.mark.parametrize('name', ['solo12', 'talos'])
def test_a_fast_step_on_a_slippery_floor_gives_way_instead_of_slipping(name):
    result = run(name)
    print(f'{name}: {result}')
    assert result.slip < SLIP_LIMIT_M, result
    assert result.ratio <= MU + 1e-6, result
    assert result.residual > 1.0, result  # m/s²: the step was not met at kp 400
    assert result.base_drop < 0.02, result  # it did not fall
