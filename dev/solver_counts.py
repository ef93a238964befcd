"""What the cascade's solvers do on the built-in scenarios' ticks: counts, noise-free.

Per tick over `wbc_bench`'s random states (after a warm-up tick on the last, as the bench's
ticks cycle through them, each warm-started from the one before): DAQP calls,
the ones that found no solution (by exit flag) and its iterations; quadprog calls and the ones
that found no solution either; the cascades solved, by which rows were soft (none; the joint
bounds, where the hard constraints conflict; every inequality, where even the torque range and
the friction pyramids do). The counts do not depend on the machine's load, the µs of
`wbc_bench` do:

    OPENBLAS_NUM_THREADS=1 python dev/solver_counts.py --robot talos --states 256
"""

import argparse
from collections import Counter

import daqp
import numpy as np

from wbc_control.benchmark.scenarios import BUILT_IN_SCENARIOS
from wbc_control.benchmark.tick import INPUT_POOL_SIZE, random_samples
from wbc_control.control.hierarchy import stack_problem, stage_qp
from wbc_control.model.robot_state import RobotState


def counted(counts: Counter):
    """Wrap DAQP, quadprog and the cascade where the controller calls them, into `counts`."""
    solve, fallback, cascade = daqp.solve, stage_qp._quadprog, stack_problem.solve_cascade

    def daqp_solve(*arguments, **settings):
        result = solve(*arguments, **settings)
        counts['DAQP calls'] += 1
        counts['DAQP iterations'] += result[3]['iterations']
        if result[2] < 1:
            counts[f'DAQP no solution (flag {result[2]})'] += 1
        return result

    def quadprog_solve(*arguments):
        result = fallback(*arguments)
        counts['quadprog calls'] += 1
        counts['quadprog no solution'] += isinstance(result, str)
        return result

    def solve_cascade(levels, hard, *arguments, **keywords):
        soft = hard.soft
        kind = 'none' if soft is None else 'every inequality' if soft.all() else 'joint bounds'
        counts[f'cascades, soft: {kind}'] += 1
        return cascade(levels, hard, *arguments, **keywords)

    stage_qp.daqp.solve = daqp_solve
    stage_qp._quadprog = quadprog_solve
    stack_problem.solve_cascade = solve_cascade


def counts_over(robot_name: str, states: int) -> Counter:
    """The counts over the scenario's first `states` bench states, one tick each."""
    scenario = BUILT_IN_SCENARIOS[robot_name]()
    robot = scenario.robot
    state = RobotState(robot)
    q, v = np.empty(robot.nq), np.empty(robot.nv)
    counts: Counter = Counter()
    samples = random_samples(robot, states, seed=0)
    for k, sample in enumerate([samples[-1], *samples]):
        robot.configuration(sample.positions, sample.base_pose, out=q)
        robot.velocity(sample.velocities, sample.base_twist, out=v)
        state.update(q, v)
        if k == 1:
            counted(counts)
        scenario.controller.compute(state)
    return counts


def main() -> None:
    """Print the counts per tick (and in total) of one scenario."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robot', choices=sorted(BUILT_IN_SCENARIOS), default='talos')
    parser.add_argument('--states', type=int, default=INPUT_POOL_SIZE)
    arguments = parser.parse_args()
    if arguments.states < 1:
        parser.error('--states must be at least 1')
    counts = counts_over(arguments.robot, arguments.states)
    print(f'{arguments.robot}: {arguments.states} ticks, per tick (total)')
    for name in sorted(counts):
        print(f'{name:40s} {counts[name] / arguments.states:8.3f} ({counts[name]})')


if __name__ == '__main__':
    main()
