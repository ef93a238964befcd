"""At the edges: targets out of reach, with and without a torque rate limit, on MuJoCo, lock-step.

The controller is built from the shipped parameters as the node builds them
(`parse_controller_settings`, `parse_tasks`, `build_loop`), with the hand's target moved out of
reach and without `max_error` (the safety defaults of the schema otherwise); each tick's command
is applied to the simulator for one control period (config/panda_sim.yaml's 2 ms, two physics
steps). At rest: every joint below 0.02 rad/s over the last second of 6 s. No chatter: after the
first 0.5 s no command step above 5 % of the largest effort limit.
"""

from pathlib import Path
import re
import subprocess
import sys
from typing import NamedTuple

import numpy as np
import pytest
from sim_support import make_simulation
import yaml

from wbc_control.config import build_entries, parse_controller_settings, parse_tasks
from wbc_control.config.assembly import build_loop
from wbc_control.model.robot_state import RobotState

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / 'config'
PANDA_READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02])
UR5_START = np.array([0.0, -1.2, 1.5, -1.9, -1.57, 0.0])
CONTROL_PERIOD_S = 0.002
STEPS = 2
SECONDS = 6.0
REST_SPEED = 0.02  # rad/s
CHATTER_SHARE = 0.05  # of the largest effort limit
RATE_LIMIT = 1000.0  # N m/s, the shipped Panda file's

pytestmark = pytest.mark.slow


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
    parameters.pop('singular_value_threshold', None)
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


CASES = [
    ('panda', [0.9, 0.0, 0.5]),
    ('panda', [1.5, 0.0, 0.5]),
    ('panda', [1.5, 0.3, 0.5]),
    ('panda', [-0.2, 1.2, 1.4]),
    ('panda', [0.0, 0.95, 0.4]),
    ('ur5', [1.5, 0.3, 0.5]),
]
#: What these runs still miss (measured; docs/safety.md). Strict: a fix makes them pass and
#: the expectation fail, so the entry goes.
CHATTER = (
    'chatter: 2-3 command steps of 9-13 N m after 0.5 s: the hand level drives a near-singular '
    'direction that the joint bounds clip; as a bound releases, or binds through a direction '
    'that hardly moves its joint, the free joints follow at 12-53 rad/s² a tick (the bounds '
    'move by < 1 rad/s² a tick)'
)
KNOWN_MISSES = {
    ('panda', 1, 0.0): CHATTER,
    ('panda', 2, 0.0): CHATTER,
}


def edge_cases():
    for rate_limit, rate_id in ((0.0, 'no_rate_limit'), (RATE_LIMIT, 'rate_limit')):
        for index, (name, target) in enumerate(CASES):
            miss = KNOWN_MISSES.get((name, index, rate_limit))
            marks = [pytest.mark.xfail(reason=miss, strict=True)] if miss else []
            case_id = f'{name}-{",".join(map(str, target))}-{rate_id}'
            yield pytest.param(name, target, rate_limit, marks=marks, id=case_id)


@pytest.mark.parametrize(('name', 'target', 'rate_limit'), edge_cases())
def test_an_arm_reaching_for_a_target_out_of_reach_comes_to_rest_inside_its_limits(
    name, target, rate_limit
):
    if name == 'panda':
        result = run(name, panda_parameters(target, rate_limit), PANDA_READY, 'panda_hand', target)
    else:
        result = run(name, ur5_parameters(target, rate_limit), UR5_START, 'tool0', target)
    print(f'{name} {target} rate limit {rate_limit}: {result}')
    assert result.last_second_speed < REST_SPEED, result
    assert result.beyond <= 0.0, result
    assert result.final_distance < result.start_distance, result  # reaching towards it
    assert result.peak_torque_share <= 1.0 + 1e-9, result
    assert result.chatter == 0, result


def test_the_random_sweep_counts_its_runs_by_the_same_rule():
    """dev/out_of_reach_sweep.py: every run printed, and its summary counts them by this rule."""
    done = subprocess.run(
        [sys.executable, str(REPO / 'dev' / 'out_of_reach_sweep.py'), '--targets', '2'],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    runs = re.findall(
        r'^(panda|ur5) .* rate limit (\S+): speed (\S+) rad/s, (\d+) steps', done.stdout, re.M
    )
    assert [run[0] for run in runs] == ['panda', 'panda', 'ur5', 'ur5']
    summaries = re.findall(
        r'^rate limit (\S+): (\d+) of (\d+) at rest, (\d+) without a step, (\d+) steps in all$',
        done.stdout,
        re.M,
    )
    assert [summary[0] for summary in summaries] == ['0', f'{RATE_LIMIT:g}']
    for limit, rest, count, smooth, total in summaries:
        mine = [run for run in runs if run[1] == limit]
        assert int(count) == len(mine) == 2
        assert int(rest) == sum(float(run[2]) < REST_SPEED for run in mine)
        assert int(smooth) == sum(int(run[3]) == 0 for run in mine)
        assert int(total) == sum(int(run[3]) for run in mine)
