"""`wbc_out_of_reach`: move one task's target and report whether the robot comes to rest.

    wbc_out_of_reach --target 0.6 0 0.5 --target 0.9 0 0.5 --target -0.2 1.2 1.4
    wbc_out_of_reach --robot ur5 --params-file my_ur5.yaml --task tool --target 1 0 0.5

Builds the controller from the params file (default: the shipped Panda's) as the node does and
runs it against MuJoCo in lock-step (one command per control period, no DDS), from the posture
task's target (else the neutral configuration), once per target: the task's target position is
replaced (a pose keeps its configured orientation). Prints per target, over the second half of
the run: the largest joint speed (mean and maximum over the ticks), the share of ticks with a
command within 5 % of its effort limit, and the task frame's distance to the target (smallest,
and at the end). A target in reach ends at rest on it; docs/safety.md ("Measured behaviour")
has what targets out of reach do.
"""

import argparse
from pathlib import Path
import sys
from typing import NamedTuple

import numpy as np

from wbc_control.config import build_entries, parse_controller_settings, parse_tasks
from wbc_control.config.assembly import build_loop
from wbc_control.config.shipped import node_parameters, shipped_config
from wbc_control.exceptions import WbcError
from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.sim.simulation import MujocoSimulation
from wbc_control.sim.urdf_to_mujoco import MujocoOptions, build_mujoco_robot

#: The targets without --target: one in the Panda's reach, one out of it (m).
DEFAULT = [[0.6, 0.0, 0.5], [0.9, 0.0, 0.5]]
HEADER = (
    'target (m) | largest joint speed, mean / max | ticks near an effort limit | '
    'distance, closest / final (m)'
)
#: Simulated seconds per command and MuJoCo steps per command (config/panda_sim.yaml).
CONTROL_PERIOD_S = 0.002
STEPS = 2


class Settling(NamedTuple):
    """What one run did over its second half."""

    mean_speed: float  # rad/s (or m/s), the largest joint speed averaged over the ticks
    max_speed: float
    saturated_share: float  # ticks with a command within 5 % of its effort limit
    closest_m: float  # the task frame's smallest distance to the target
    final_m: float


def simulation(robot_name: str) -> MujocoSimulation:
    """A fixed-base example-robot-data robot in MuJoCo."""
    path, _ = example_robot_urdf(robot_name)
    robot = RobotModel.from_urdf_path(path, floating_base=False)
    options = MujocoOptions(floating_base=False, timestep_s=CONTROL_PERIOD_S / STEPS)
    return MujocoSimulation(robot, build_mujoco_robot(path.read_text(), options, path.parent))


def with_target(parameters: dict, task: str, position: list[float]) -> dict:
    """`parameters` with `task`'s target position replaced (a pose keeps its orientation)."""
    settings = dict(parameters['tasks'][task])
    settings['target'] = [*position, *settings.get('target', [])[3:]]
    return {**parameters, 'tasks': {**parameters['tasks'], task: settings}}


def start_positions(sim: MujocoSimulation, parameters: dict) -> np.ndarray:
    """The posture task's target, else the neutral configuration's joint positions."""
    for settings in parameters['tasks'].values():
        if settings.get('type') == 'joint_posture' and 'target' in settings:
            return np.asarray(settings['target'], dtype=float)
    return sim.robot.joint_positions(sim.robot.neutral_configuration())


def settle(sim: MujocoSimulation, parameters: dict, task: str, seconds: float) -> Settling:
    """Run the controller of `parameters` on `sim` for `seconds`; see the module docstring."""
    robot = sim.robot
    settings = parse_controller_settings(robot, parameters)
    specs = parse_tasks(robot, parameters['task_names'], parameters['tasks'])
    loop = build_loop(robot, settings, build_entries(robot, specs), (), 1.0)
    limits = loop.output.limiter.effort_limits
    frame = robot.frame_id(parameters['tasks'][task]['frame'])
    target = np.asarray(parameters['tasks'][task]['target'][:3], dtype=float)
    state, now_s = RobotState(robot), 0.0
    speeds, saturated, distances = [], [], []
    for _ in range(round(seconds / CONTROL_PERIOD_S)):
        positions, velocities = sim.joint_positions(), sim.joint_velocities()
        torque = loop.tick(positions, velocities, None, None, now_s, now_s).torque
        loop.sent(now_s)
        sim.apply_torque(torque)
        sim.step(STEPS)
        now_s += CONTROL_PERIOD_S
        speeds.append(float(np.abs(sim.joint_velocities()).max()))
        saturated.append(bool((np.abs(torque) >= 0.95 * limits).any()))
        state.update(robot.configuration(sim.joint_positions()), np.zeros(robot.nv))
        distances.append(float(np.linalg.norm(state.frame_placement(frame).translation - target)))
    half = len(speeds) // 2
    return Settling(
        float(np.mean(speeds[half:])),
        max(speeds[half:]),
        float(np.mean(saturated[half:])),
        min(distances),
        distances[-1],
    )


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; see the module docstring."""
    parser = argparse.ArgumentParser(
        prog='wbc_out_of_reach',
        description=__doc__.split('\n')[0],
    )
    parser.add_argument(
        '--robot',
        default='panda',
        help='example-robot-data name, fixed base (default: %(default)s)',
    )
    parser.add_argument(
        '--params-file', type=Path, default=None,
        help="wbc_controller's parameters (default: the shipped config/panda_controller.yaml)",
    )  # fmt: skip
    parser.add_argument(
        '--task', default='hand', help='the task whose target moves (default: %(default)s)'
    )
    parser.add_argument(
        '--target', nargs=3, type=float, action='append', metavar=('X', 'Y', 'Z'),
        help='a target position (m), repeatable; default 0.6 0 0.5 and 0.9 0 0.5',
    )  # fmt: skip
    parser.add_argument(
        '--seconds',
        type=float,
        default=4.0,
        help='simulated seconds per target (default: %(default)s)',
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Console script `wbc_out_of_reach`: run each target and print the table (1: bad input)."""
    args = parse_arguments(argv)
    try:
        path = args.params_file or shipped_config('panda_controller.yaml')
        parameters = node_parameters(path, 'wbc_controller')
        if args.task not in parameters.get('tasks', {}):
            raise WbcError(f"{path}: no task '{args.task}' (--task)")
        table = [settled_row(args, parameters, position) for position in args.target or DEFAULT]
    except (WbcError, OSError) as error:
        print(f'wbc_out_of_reach: {error}', file=sys.stderr)
        return 1
    print(HEADER)
    print('\n'.join(table))
    return 0


def settled_row(args: argparse.Namespace, parameters: dict, position: list[float]) -> str:
    """One target's line of the table."""
    sim = simulation(args.robot)
    moved = with_target(parameters, args.task, position)
    sim.reset(start_positions(sim, moved))
    result = settle(sim, moved, args.task, args.seconds)
    where = ', '.join(f'{value:g}' for value in position)
    return (
        f'{where} | {result.mean_speed:.2f} / {result.max_speed:.2f} | '
        f'{100 * result.saturated_share:.0f} % | {result.closest_m:.3f} / {result.final_m:.3f}'
    )


if __name__ == '__main__':
    sys.exit(main())
