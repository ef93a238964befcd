"""`wbc_bench parts`: where a controller tick's time goes, in µs, timed at public calls only.

For the built-in scenarios (or `--config` files), on the benchmark's random states, each tick
times `RobotState.update` (Pinocchio's kinematics and dynamics) and
`PrioritizedController.compute` (the law: task terms, contacts, the priority stack, limits);
beside the tick, every task's own `Task.compute` on the same state gives what the task terms
cost. That last figure is an upper bound of their share of `compute`, which writes the same terms
into preallocated rows. Means over the ticks no slower than the 95th percentile, so that a
preempted tick does not count.
"""

import argparse
import gc
import time

import numpy as np

from wbc_control.benchmark.scenarios import Scenario
from wbc_control.benchmark.tick import random_samples
from wbc_control.model.robot_state import RobotState

PARTS = ('state update', 'controller compute', 'tick', 'task terms (beside the tick)')
DEFAULT_PARTS_TICKS = 2000
SAMPLES = 256
#: Ticks kept for the means: the 95th percentile and faster.
KEPT_PERCENTILE = 95.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `wbc_bench parts` (the scenarios are chosen as for `wbc_bench`)."""
    parser.add_argument('--ticks', type=int, default=DEFAULT_PARTS_TICKS)


def parts_per_tick(scenario: Scenario, ticks: int) -> dict[str, float]:
    """Mean µs of each part per tick (:data:`PARTS`)."""
    robot, controller = scenario.robot, scenario.controller
    tasks = [entry.task for entry in controller.entries]
    state, q, v = RobotState(robot), np.empty(robot.nq), np.empty(robot.nv)
    samples = random_samples(robot, SAMPLES, seed=0)
    records = np.empty((ticks, len(PARTS)))
    gc.collect()
    for index in range(-len(samples), ticks):  # one pass over the samples to warm up
        sample = samples[index % len(samples)]
        robot.configuration(sample.positions, sample.base_pose, out=q)
        robot.velocity(sample.velocities, sample.base_twist, out=v)
        start = time.perf_counter_ns()
        state.update(q, v)
        updated = time.perf_counter_ns()
        controller.compute(state)
        computed = time.perf_counter_ns()
        for task in tasks:
            task.compute(state)
        terms = time.perf_counter_ns()
        if index >= 0:
            records[index] = (
                updated - start,
                computed - updated,
                computed - start,
                terms - computed,
            )
    kept = records[records[:, 2] <= np.percentile(records[:, 2], KEPT_PERCENTILE)]
    return dict(zip(PARTS, (kept.mean(axis=0) * 1e-3).tolist()))


def format_parts(tables: dict[str, dict[str, float]]) -> str:
    """One row per part, one column per scenario."""
    lines = [f'{"part (µs per tick, mean)":30s}' + ''.join(f'{name:>12s}' for name in tables)]
    for part in PARTS:
        lines.append(f'{part:30s}' + ''.join(f'{table[part]:12.1f}' for table in tables.values()))
    return '\n'.join(lines)


def run(arguments: argparse.Namespace, scenarios: list[Scenario]) -> int:
    """Time the scenarios' ticks by part and print the table."""
    tables = {scenario.name: parts_per_tick(scenario, arguments.ticks) for scenario in scenarios}
    print(format_parts(tables))
    return 0
