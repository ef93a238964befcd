"""Hand targets out of reach at random, closed loop: how many runs rest, how many chatter.

`test/sim/test_edges.py` holds six chosen targets; this draws `--targets` more (a Panda and a
UR5 in turn, 1.0-1.6 m from the base at any azimuth, 0-1.2 m high), runs each 6 s on MuJoCo in
lock-step with and without `torque_rate_limit` (`test/edge_runs.py`'s `run`, the test's:
shipped Panda settings without `max_error`; the UR5 with a hand and a posture task) and prints
what each run did and the counts the test's rule passes (at rest: every joint below
0.02 rad/s over the last second; no command step above 5 % of the largest effort limit after
0.5 s):

    OPENBLAS_NUM_THREADS=1 python dev/out_of_reach_sweep.py --targets 16 --seed 1
"""

import argparse
from pathlib import Path
import sys

import numpy as np

TESTS = Path(__file__).resolve().parents[1] / 'test'
sys.path[:0] = [str(TESTS)]
import edge_runs as edges  # noqa: E402  (the tests' closed-loop run, not installed)


def random_target(rng: np.random.Generator) -> list[float]:
    """A point 1.0-1.6 m from the base's axis at any azimuth, 0-1.2 m high."""
    reach, azimuth, height = rng.uniform(1.0, 1.6), rng.uniform(-np.pi, np.pi), rng.uniform(0, 1.2)
    return [reach * np.cos(azimuth), reach * np.sin(azimuth), height]


def sweep(targets: int, seed: int) -> list[tuple[str, float, 'edges.Run']]:
    """(robot, rate limit, run) of each target, with and without the rate limit."""
    rng = np.random.default_rng(seed)
    runs = []
    for index in range(targets):
        name, target = ('panda', 'ur5')[index % 2], random_target(rng)
        for rate_limit in (0.0, edges.RATE_LIMIT):
            if name == 'panda':
                parameters = edges.panda_parameters(target, rate_limit)
                result = edges.run(name, parameters, edges.PANDA_READY, 'panda_hand', target)
            else:
                parameters = edges.ur5_parameters(target, rate_limit)
                result = edges.run(name, parameters, edges.UR5_START, 'tool0', target)
            runs.append((name, rate_limit, result))
            print(
                f'{name} {np.round(target, 2)} rate limit {rate_limit:g}: '
                f'speed {result.last_second_speed:.3f} rad/s, {result.chatter} steps '
                f'(largest {result.largest_step:.1f} N m)',
                flush=True,
            )
    return runs


def main() -> None:
    """Run the sweep and print each run and the counts."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--targets', type=int, default=16)
    parser.add_argument('--seed', type=int, default=1)
    arguments = parser.parse_args()
    runs = sweep(arguments.targets, arguments.seed)
    for rate_limit in (0.0, edges.RATE_LIMIT):
        chosen = [result for _, limit, result in runs if limit == rate_limit]
        rest = sum(result.last_second_speed < edges.REST_SPEED for result in chosen)
        smooth = sum(result.chatter == 0 for result in chosen)
        print(
            f'rate limit {rate_limit:g}: {rest} of {len(chosen)} at rest, {smooth} without a '
            f'step, {sum(result.chatter for result in chosen)} steps in all'
        )


if __name__ == '__main__':
    main()
