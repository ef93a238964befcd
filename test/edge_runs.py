"""Closed-loop runs towards targets out of reach, in process, on MuJoCo in lock-step.

The rule of `test/sim/test_edges.py` and `dev/out_of_reach_sweep.py`: the controller is built
from the shipped parameters as the node builds them (`parse_controller_settings`,
`parse_tasks`, `build_loop`), with the hand's target moved out of reach and without
`max_error` (the safety defaults of the schema otherwise); each tick's command is applied to
the simulator for one control period (config/panda_sim.yaml's 2 ms, two physics steps). At
rest: every joint below 0.02 rad/s over the last second of 6 s. No chatter: after the first
0.5 s no command step above 5 % of the largest effort limit.
"""

from pathlib import Path
from typing import NamedTuple

import numpy as np
from sim_support import make_simulation
import yaml

from wbc_control.config import build_entries, parse_controller_settings, parse_tasks
from wbc_control.config.assembly import build_loop
from wbc_control.model.robot_state import RobotState

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / 'config'
PANDA_READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
UR5_START = np.array([0.0, -1.2, 1.5, -1.9, -1.57, 0.0])
CONTROL_PERIOD_S = 0.002
STEPS = 2
SECONDS = 6.0
REST_SPEED = 0.02  # rad/s
CHATTER_SHARE = 0.05  # of the largest effort limit
RATE_LIMIT = 1000.0  # N m/s, the shipped Panda file's


class Run(NamedTuple):
    """What a run did."""

    last_second_speed: float  # the largest joint speed over the last second (rad/s)
    chatter: int  # command steps above CHATTER_SHARE of the largest limit after 0.5 s
    largest_step: float  # N m, after 0.5 s
    beyond: float  # the farthest any joint went past its URDF limit (<= 0: inside)
    start_distance: float  # the hand's distance to the target at the start (m)
    final_distance: float
    peak_torque_share: float  # the largest |τ| over its effort limit


def panda_parameters(target, rate_limit: float) -> dict:
    (section,) = yaml.safe_load((CONFIG / 'panda_controller.yaml').read_text()).values()
    parameters = section['ros__parameters']
    hand = parameters['tasks']['hand']
    hand['target'] = [*target, 1.0, 0.0, 0.0, 0.0]
    hand.pop('max_error', None)
    parameters['torque_rate_limit'] = rate_limit
    return parameters


def ur5_parameters(target, rate_limit: float) -> dict:
    hand = {'type': 'frame_pose', 'frame': 'tool0', 'kp': 100.0}
    return {
        'task_names': ['hand', 'posture'],
        'tasks': {
            'hand': {**hand, 'target': [*target, 0.0, 0.0, 0.0, 1.0]},
            'posture': {
                'type': 'joint_posture',
                'priority': 1,
                'kp': 25.0,
                'target': UR5_START.tolist(),
            },
        },
        'torque_rate_limit': rate_limit,
    }


def run(name: str, parameters: dict, start: np.ndarray, frame: str, target) -> Run:
    sim = make_simulation(name)
    sim.reset(start)
    robot = sim.robot
    settings = parse_controller_settings(robot, parameters)
    specs = parse_tasks(robot, parameters['task_names'], parameters['tasks'])
    loop = build_loop(robot, settings, build_entries(robot, specs), (), 1.0)
    limits = loop.output.limiter.effort_limits
    lower, upper = robot.position_limits
    state, frame_id = RobotState(robot), robot.frame_id(frame)
    target = np.asarray(target)

    def distance() -> float:
        state.update(robot.configuration(sim.joint_positions()), np.zeros(robot.nv))
        return float(np.linalg.norm(state.frame_placement(frame_id).translation - target))

    start_distance = distance()
    now_s, previous, steps, speeds, beyond, peak = 0.0, None, [], [], -np.inf, 0.0
    for _ in range(round(SECONDS / CONTROL_PERIOD_S)):
        outcome = loop.tick(
            sim.joint_positions(), sim.joint_velocities(), None, None, now_s, now_s
        )
        assert not outcome.error, outcome.error
        loop.sent(now_s)
        sim.apply_torque(outcome.torque)
        sim.step(STEPS)
        now_s += CONTROL_PERIOD_S
        if previous is not None:
            steps.append(float(np.abs(outcome.torque - previous).max()))
        previous = outcome.torque.copy()
        speeds.append(float(np.abs(sim.joint_velocities()).max()))
        positions = sim.joint_positions()
        beyond = max(beyond, float(np.maximum(lower - positions, positions - upper).max()))
        peak = max(peak, float((np.abs(outcome.torque) / limits).max()))
    late = np.array(steps[round(0.5 / CONTROL_PERIOD_S) :])
    return Run(
        max(speeds[-round(1.0 / CONTROL_PERIOD_S) :]),
        int((late > CHATTER_SHARE * limits.max()).sum()),
        float(late.max()),
        beyond,
        start_distance,
        distance(),
        peak,
    )
