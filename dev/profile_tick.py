"""Where a controller tick's time goes, by the module of wbc_control making the calls.

Runs the built-in `wbc_bench` scenario ticks under cProfile and attributes each function's own
time to the module making the call: a Python function's to its own module, a C function's
(numpy, Pinocchio, eigenpy) to the module that called it. Calls per tick by module are
`wbc_bench`'s noise-free figure; this adds the time shares, which the profiler's own overhead
skews towards the modules that make many small calls. Run with single-threaded BLAS:

    OPENBLAS_NUM_THREADS=1 python dev/profile_tick.py --ticks 3000
"""

import argparse
import cProfile
import pstats

import numpy as np

from wbc_control.benchmark.scenarios import panda_scenario, talos_scenario
from wbc_control.benchmark.tick import package_module, random_samples, tick_function
from wbc_control.model.robot_state import RobotState


def time_shares(stats: pstats.Stats) -> dict[str, float]:
    """Fraction of the profiled time per calling module."""
    seconds: dict[str, float] = {}
    for (filename, _, _), (_, _, own, _, callers) in stats.stats.items():
        if filename != '~':  # a Python function: its own module
            module = package_module(filename)
            seconds[module] = seconds.get(module, 0.0) + own
            continue
        calls = sum(entry[1] for entry in callers.values()) or 1
        for (caller_file, _, _), entry in callers.items():  # split by the callers' calls
            module = package_module(caller_file)
            seconds[module] = seconds.get(module, 0.0) + own * entry[1] / calls
    total = sum(seconds.values()) or 1.0
    return {name: value / total for name, value in sorted(seconds.items(), key=lambda i: -i[1])}


def profile(scenario, ticks: int) -> dict[str, float]:
    """Time shares by module over `ticks` ticks of `scenario`."""
    robot = scenario.robot
    tick = tick_function(scenario, RobotState(robot), np.empty(robot.nq), np.empty(robot.nv))
    samples = random_samples(robot, 256, seed=0)
    for sample in samples:
        tick(sample)
    profiler = cProfile.Profile()
    profiler.enable()
    for index in range(ticks):
        tick(samples[index % len(samples)])
    profiler.disable()
    return time_shares(pstats.Stats(profiler))


def main() -> None:
    """Print the time share table of the built-in Panda and Talos scenarios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--ticks', type=int, default=3000)
    arguments = parser.parse_args()
    shares = {
        scenario.name: profile(scenario, arguments.ticks)
        for scenario in (panda_scenario(), talos_scenario())
    }
    modules = sorted(
        {m for table in shares.values() for m in table},
        key=lambda m: -max(table.get(m, 0.0) for table in shares.values()),
    )
    print(f'{"module":44s}' + ''.join(f'{name:>10s}' for name in shares))
    for module in modules:
        print(f'{module:44s}' + ''.join(f'{t.get(module, 0.0):10.0%}' for t in shares.values()))


if __name__ == '__main__':
    main()
