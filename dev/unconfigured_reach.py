"""An arm we ship no config for reaching 1.2 m beyond its last frame, closed loop: rest and steps.

The run of `test/sim/test_unconfigured_robots.py` (`test/unconfigured_runs.py`'s `reach`: an
example-robot-data arm, default settings, the last body frame's target 1.2 m away over a
joint posture, 6 s on MuJoCo in lock-step), in any of the named directions and with controller
parameters set besides (`--set name=value`, a YAML value). Prints, per run, the largest joint
speed over the last second (at rest: below 0.02 rad/s) and the command steps above 5 % of the
largest effort limit after the first 0.5 s, with when and on which joint:

    OPENBLAS_NUM_THREADS=1 python dev/unconfigured_reach.py --directions out back
    OPENBLAS_NUM_THREADS=1 python dev/unconfigured_reach.py --set singular_value_threshold=0.08

Several arms and rate limits run each combination and end with how many runs met the rule;
docs/safety.md's count of the five arms in seven directions:

    OPENBLAS_NUM_THREADS=1 python dev/unconfigured_reach.py --arm xarm7 z1 so101 kinova ur10 \
        --rate-limit 0 1000 --directions out up down back left right diagonal

`--starts N --seed S` runs N reaches from random start poses (the posture target the start)
in random directions instead:

    OPENBLAS_NUM_THREADS=1 python dev/unconfigured_reach.py --arm xarm7 z1 --starts 12 --seed 1

`--arm` takes the tested arms (`unconfigured_runs.ARMS`) and four more (`MORE_ARMS`: ur3, ur5,
so100, talos_left_arm), whose figures docs/safety.md gives too.
"""

import argparse
from pathlib import Path
import sys

import numpy as np
import yaml

TESTS = Path(__file__).resolve().parents[1] / 'test'
sys.path[:0] = [str(TESTS)]
import edge_runs as rule  # noqa: E402  (the tests' rule and run, not installed)
import unconfigured_runs as runs  # noqa: E402

from wbc_control.config.schema import load_schema  # noqa: E402
from wbc_control.exceptions import InvalidValue  # noqa: E402

#: The tested arms and the four more (`unconfigured_runs`), by name.
ARMS = runs.ARMS | runs.MORE_ARMS
#: The ways to the target from the frame, in world axes; 'out': horizontally away from the base.
DIRECTIONS = {
    'out': None,
    'up': (0.0, 0.0, 1.0),
    'down': (0.0, 0.0, -1.0),
    'front': (1.0, 0.0, 0.0),
    'back': (-1.0, 0.0, 0.0),
    'left': (0.0, 1.0, 0.0),
    'right': (0.0, -1.0, 0.0),
    'diagonal': (1.0, 1.0, 1.0),
}


def setting(text: str) -> tuple[str, object]:
    """`name=value` as (name, value), the value read as YAML (a number, a list, ...)."""
    name, separator, value = text.partition('=')
    if not separator or not name:
        raise argparse.ArgumentTypeError(f'expected name=value, got {text!r}')
    return name, yaml.safe_load(value)


def describe(arm: str, direction: str, rate_limit: float, outcome, limits) -> tuple[str, bool]:
    """One line: the speed over the last second and the late command steps; the rule met."""
    period = rule.CONTROL_PERIOD_S
    speed = rule.last_second_speed(outcome.speeds)
    each = rule.late_steps(outcome.commands)
    late = each.max(axis=1)
    steps = np.flatnonzero(late > rule.CHATTER_SHARE * limits.max())
    joints = each[steps].argmax(axis=1)
    where = ', '.join(
        f'{(rule.LATE_START + 1 + tick) * period:.3f} s joint {joint + 1}'
        for tick, joint in zip(steps[:6], joints[:6], strict=True)
    )
    line = (
        f'{arm} {direction} rate limit {rate_limit:g}: speed {speed:.4f} rad/s over the last '
        f'second, {steps.size} steps (largest {late.max():.2f} N m)'
    )
    met = speed < rule.REST_SPEED and steps.size == 0
    return (f'{line}: {where}' if where else line), met


def main() -> None:
    """Run each direction and print what it did."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    arms = sorted(ARMS)
    parser.add_argument('--arm', nargs='+', choices=arms, default=['xarm7'])
    parser.add_argument('--directions', nargs='+', choices=list(DIRECTIONS), default=['out'])
    parser.add_argument(
        '--rate-limit', nargs='+', type=float, default=[0.0], help='torque_rate_limit, N m/s'
    )
    tasks = ('frame_position', 'frame_pose')
    parser.add_argument('--task', choices=tasks, default=tasks[0])
    parser.add_argument('--set', type=setting, action='append', default=[], metavar='NAME=VALUE')
    parser.add_argument('--seconds', type=float, default=rule.SECONDS)
    parser.add_argument(
        '--starts', type=int, default=0,
        help='instead of --directions: N runs from random start poses in random directions',
    )  # fmt: skip
    parser.add_argument('--seed', type=int, default=0, help='of --starts')
    arguments = parser.parse_args()
    schema = load_schema('wbc_controller')
    for name, value in arguments.set:
        try:
            schema.check(name, value)
        except InvalidValue as refused:
            parser.error(str(refused))
    ticks = round(arguments.seconds / rule.CONTROL_PERIOD_S)
    runs_met = []
    for arm in arguments.arm:
        for rate_limit in arguments.rate_limit:
            if arguments.starts:
                cases = random_starts(arm, arguments.starts, arguments.seed)
            else:
                cases = [(direction, None) for direction in arguments.directions]
            for direction, start in cases:
                line, met = reach_once(arm, direction, rate_limit, arguments, ticks, start)
                print(line, flush=True)
                runs_met.append(met)
    if len(runs_met) > 1:
        print(f'{sum(runs_met)} of {len(runs_met)} runs at rest without a step')


def random_starts(arm: str, count: int, seed: int) -> list[tuple[str, np.ndarray]]:
    """`count` (direction, start): a unit direction and joint positions drawn from `seed`.

    Each joint uniform over the middle 70 % of its range (a joint without limits: of ±π);
    the direction's name is its rounded components, which `DIRECTIONS` learns.
    """
    robot, _, _ = runs.build(ARMS[arm], False)
    lower, upper = robot.position_limits
    bounded = np.isfinite(lower) & np.isfinite(upper)
    lower, upper = np.where(bounded, lower, -np.pi), np.where(bounded, upper, np.pi)
    draws = np.random.default_rng(seed)
    cases = []
    for _ in range(count):
        start = lower + (upper - lower) * (0.15 + 0.7 * draws.random(lower.shape[0]))
        way = draws.normal(size=3)
        way /= np.linalg.norm(way)
        name = '({:.2f}, {:.2f}, {:.2f})'.format(*way)
        DIRECTIONS[name] = tuple(way)
        cases.append((name, start))
    return cases


def reach_once(
    arm: str,
    direction: str,
    rate_limit: float,
    arguments: argparse.Namespace,
    ticks: int,
    start: np.ndarray | None = None,
) -> tuple[str, bool]:
    """`describe`'s line and verdict for one arm, direction, rate limit (and start pose)."""
    robot, simulation, positions = runs.build(ARMS[arm], False)
    if start is not None:
        positions = start
        simulation.reset(positions)
    way = DIRECTIONS[direction]
    outcome = runs.reach(
        robot, simulation, positions, rate_limit, arguments.task,
        None if way is None else np.array(way), dict(arguments.set), ticks,
    )  # fmt: skip
    return describe(arm, direction, rate_limit, outcome, robot.effort_limits)


if __name__ == '__main__':
    main()
