"""Where a controller tick's time goes, in µs per tick, by part (no profiler).

Times the parts of the built-in `wbc_bench` scenarios' ticks with `perf_counter_ns` around
each: the state update (Pinocchio), the task terms (every task's `write_terms`), the contact
path (constraint terms and M†, contact forces), the compiled stack (`solve_stack`: the
recursion and the joint-limit search), the torque fit, and the rest of the tick (the
controller's own numpy work, limits, results). Each figure is a mean per tick over the ticks no
slower than the 95th percentile; the rest is the tick minus the parts. The timers add about
0.3 µs per timed call, far less than cProfile's skew. Run with single-threaded BLAS:

    OPENBLAS_NUM_THREADS=1 python tools/time_tick_parts.py --ticks 3000
"""

import argparse
from collections.abc import Callable
import gc
import time

import numpy as np

from wbc_control.benchmark.scenarios import Scenario, panda_scenario, talos_scenario
from wbc_control.benchmark.tick import random_samples
import wbc_control.control.prioritized_controller as prioritized
import wbc_control.control.torque_fit as torque_fit
from wbc_control.model.robot_state import RobotState

PARTS = ('state update', 'task terms', 'contact path', 'compiled stack', 'torque fit')


def timed(function: Callable, spent: dict[str, int], part: str) -> Callable:
    """`function`, adding its time (ns) to `spent[part]`."""

    def call(*arguments, **keywords):
        start = time.perf_counter_ns()
        try:
            return function(*arguments, **keywords)
        finally:
            spent[part] += time.perf_counter_ns() - start

    return call


def instrument(scenario: Scenario, spent: dict[str, int]) -> None:
    """Route the controller's parts through timers (this process only)."""
    for name, part in (
        ('solve_stack', 'compiled stack'),
        ('contact_dynamics', 'contact path'),
        ('base_contact_forces', 'contact path'),
    ):
        setattr(prioritized, name, timed(getattr(prioritized, name), spent, part))
    torque_fit.fitted_acceleration = timed(torque_fit.fitted_acceleration, spent, 'torque fit')
    controller = scenario.controller
    controller._writers = [
        (timed(write, spent, 'task terms'), buffers) for write, buffers in controller._writers
    ]


def parts_per_tick(scenario: Scenario, ticks: int) -> dict[str, float]:
    """Median µs per tick of each part, of the whole tick, and of the rest."""
    robot, controller = scenario.robot, scenario.controller
    state, q, v = RobotState(robot), np.empty(robot.nq), np.empty(robot.nv)
    spent = dict.fromkeys(PARTS, 0)
    instrument(scenario, spent)
    samples = random_samples(robot, 256, seed=0)
    records = np.empty((ticks, len(PARTS) + 1))
    gc.collect()
    for index in range(-len(samples), ticks):
        sample = samples[index % len(samples)]
        robot.configuration(sample.positions, sample.base_pose, out=q)
        robot.velocity(sample.velocities, sample.base_twist, out=v)
        for part in PARTS:
            spent[part] = 0
        start = time.perf_counter_ns()
        state.update(q, v)
        updated = time.perf_counter_ns()
        controller.compute(state)
        end = time.perf_counter_ns()
        spent['state update'] = updated - start
        if index >= 0:
            records[index] = [spent[part] for part in PARTS] + [end - start]
    # Means over the ticks no slower than the 95th percentile: a part that runs on some ticks
    # only (the torque fit) counts at its share, and a preempted tick does not.
    kept = records[records[:, -1] <= np.percentile(records[:, -1], 95.0)]
    means = kept.mean(axis=0) * 1e-3
    figures = dict(zip((*PARTS, 'tick'), means.tolist()))
    figures['the rest'] = figures['tick'] - float(np.sum(means[:-1]))
    return figures


def main() -> None:
    """Print the parts of the built-in Panda and Talos scenarios' ticks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--ticks', type=int, default=3000)
    arguments = parser.parse_args()
    tables = {}
    for build in (panda_scenario, talos_scenario):
        scenario = build()
        tables[scenario.name] = parts_per_tick(scenario, arguments.ticks)
    print(f'{"part (µs per tick, mean)":28s}' + ''.join(f'{name:>10s}' for name in tables))
    for part in (*PARTS, 'the rest', 'tick'):
        print(f'{part:28s}' + ''.join(f'{table[part]:10.1f}' for table in tables.values()))


if __name__ == '__main__':
    main()
