"""Closed-loop runs towards targets out of reach, in process, on MuJoCo in lock-step.

The rule of `test/sim/test_edges.py` and `dev/out_of_reach_sweep.py`: the controller is built
from the shipped parameters as the node builds them (`parse_controller_settings`,
`parse_tasks`, `build_loop`), with the hand's target moved out of reach and without
`max_error` (the safety defaults of the schema otherwise); each tick's command is applied to
the simulator for one control period (config/panda_sim.yaml's 2 ms, two physics steps). At
rest: every joint below 0.02 rad/s over the last second of 6 s. No chatter: after the first
0.5 s no command step above 5 % of the largest effort limit.
"""

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
from robots import core_loop
from sim_support import make_simulation
import yaml

from wbc_control.control.loop.controller_loop import ControllerLoop
from wbc_control.model.robot_state import RobotState
from wbc_control.sim.simulation import MujocoSimulation

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
#: The first command step the rule counts: the one after 0.5 s.
LATE_START = round(0.5 / CONTROL_PERIOD_S)


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


def late_steps(commands: np.ndarray) -> np.ndarray:
    """Each joint's command step (N m) at each tick from `LATE_START` on, `(ticks, n_act)`."""
    return np.abs(np.diff(commands, axis=0))[LATE_START:]


def last_second_speed(speeds) -> float:
    """The largest of the per-period joint speeds `speeds` over the run's last second."""
    return max(speeds[-round(1.0 / CONTROL_PERIOD_S) :])


def lockstep(
    simulation: MujocoSimulation,
    loop: ControllerLoop,
    ticks: int,
    after: Callable[[], None] | None = None,
) -> np.ndarray:
    """`ticks` commands computed, sent and each applied for one control period; `(ticks, n_act)`.

    `after`: called after each simulated period (to record the simulation's state).
    """
    floating, now_s, commands = simulation.base is not None, 0.0, []
    for _ in range(ticks):
        pose = simulation.base_pose() if floating else None
        twist = simulation.base_twist() if floating else None
        positions, velocities = simulation.joint_positions(), simulation.joint_velocities()
        outcome = loop.tick(positions, velocities, pose, twist, now_s, now_s)
        assert not outcome.error and outcome.bug is None, outcome.error
        loop.sent(now_s)
        simulation.apply_torque(outcome.torque)
        simulation.step(STEPS)
        now_s += CONTROL_PERIOD_S
        commands.append(outcome.torque.copy())
        if after is not None:
            after()
    return np.array(commands)


def run(name: str, parameters: dict, start: np.ndarray, frame: str, target) -> Run:
    """`SECONDS` of the shipped robot `name` from `start`, `frame` towards `target`: the rule."""
    sim = make_simulation(name)
    sim.reset(start)
    robot = sim.robot
    loop = core_loop(robot, parameters)
    limits = loop.output.limiter.effort_limits
    lower, upper = robot.position_limits
    state, frame_id = RobotState(robot), robot.frame_id(frame)
    target = np.asarray(target)

    def distance() -> float:
        state.update(robot.configuration(sim.joint_positions()), np.zeros(robot.nv))
        return float(np.linalg.norm(state.frame_placement(frame_id).translation - target))

    start_distance, speeds, beyond = distance(), [], [-np.inf]

    def record() -> None:
        speeds.append(float(np.abs(sim.joint_velocities()).max()))
        positions = sim.joint_positions()
        beyond.append(float(np.maximum(lower - positions, positions - upper).max()))

    commands = lockstep(sim, loop, round(SECONDS / CONTROL_PERIOD_S), record)
    late = late_steps(commands).max(axis=1)
    return Run(
        last_second_speed(speeds),
        int((late > CHATTER_SHARE * limits.max()).sum()),
        float(late.max()),
        max(beyond),
        start_distance,
        distance(),
        float((np.abs(commands) / limits).max()),
    )
