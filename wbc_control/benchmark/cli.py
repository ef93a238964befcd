"""The command line of `wbc_bench`: arguments, the measurements they ask for, the output.

The JSON document (every figure, with a description of the machine) is written with --json;
the tables go to stdout.
"""

import argparse
from collections.abc import Sequence
from contextlib import nullcontext
import datetime
import json
import os
from pathlib import Path
import platform
import sys

import numpy as np
import pinocchio as pin

from wbc_control.benchmark import launch_rate, tick_parts
from wbc_control.benchmark.conditioning_cost import conditioning_section
from wbc_control.benchmark.dds import DEFAULT_DDS_SECONDS, dds_benchmark
from wbc_control.benchmark.report import evaluate_targets, format_report
from wbc_control.benchmark.scenarios import BUILT_IN_SCENARIOS, Scenario, config_scenario
from wbc_control.benchmark.tick import DEFAULT_TICKS, measure_ticks
from wbc_control.blas_threads import BLAS_THREAD_VARIABLES, use_one_thread
from wbc_control.cpu_latency import CpuLatencyRequest, CpuLatencyUnavailable
from wbc_control.exceptions import ModelError, WbcError
from wbc_control.model.example_robots import EXAMPLE_ROBOTS


def machine_description() -> dict:
    """What the figures depend on: CPU, Python, library versions, load, BLAS threads."""
    return {
        'machine': f'{platform.machine()} {os.cpu_count()} CPUs ({_cpu_model()})',
        'python': platform.python_version(),
        'numpy': np.__version__,
        'pinocchio': pin.__version__,
        'blas_threads': {name: os.environ.get(name) for name in BLAS_THREAD_VARIABLES},
        'load_average_start': [round(value, 2) for value in os.getloadavg()],
        'started': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
    }


def _cpu_model() -> str:
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or 'unknown CPU'


SUBCOMMANDS = {
    'launch': 'does wbc_sim.launch.py keep real time here (wbc_bench launch --help)',
    'parts': "where a tick's time goes, by public call (wbc_bench parts --help)",
}


def add_scenario_arguments(parser: argparse.ArgumentParser) -> None:
    """--config and --robot: the controllers to time."""
    parser.add_argument(
        '--config',
        nargs='+',
        type=Path,
        default=[],
        metavar='YAML',
        help='controller params files to time (default: built-in Panda and Talos scenarios)',
    )
    parser.add_argument(
        '--robot',
        action='append',
        choices=sorted(EXAMPLE_ROBOTS),
        help='built-in scenario(s) to time (panda, talos), or the robot of a '
        '--config file without urdf_path',
    )


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line of `wbc_bench`: the measurements, or one subcommand's options."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in SUBCOMMANDS:
        return parse_subcommand(argv[0], argv[1:])
    subcommands = '\n'.join(f'  {name:8s}{what}' for name, what in SUBCOMMANDS.items())
    parser = argparse.ArgumentParser(
        prog='wbc_bench',
        description='Per-tick cost, DDS latency and conditioning-estimator cost, with targets.',
        epilog=f'subcommands:\n{subcommands}',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_scenario_arguments(parser)
    parser.add_argument('--ticks', type=int, default=DEFAULT_TICKS)
    parser.add_argument('--json', type=Path, help='write every figure to this file')
    parser.add_argument('--plot', type=Path, help='conditioning plot (PNG)')
    parser.add_argument('--dds-seconds', type=float, default=DEFAULT_DDS_SECONDS)
    parser.add_argument('--skip-dds', action='store_true')
    parser.add_argument('--skip-conditioning', action='store_true')
    parser.add_argument(
        '--domain-id', type=int, help='ROS domain of the DDS run (default: random)'
    )
    parser.add_argument(
        '--cpu-dma-latency',
        type=int,
        metavar='US',
        help="hold the CPUs' wake-up latency at US µs for the whole run (0: idle CPUs poll; "
        "needs write access to /dev/cpu_dma_latency); default: the system's idle states",
    )
    arguments = parser.parse_args(argv)
    arguments.command = None
    if arguments.ticks < 1:
        parser.error('--ticks must be >= 1')
    if arguments.cpu_dma_latency is not None and arguments.cpu_dma_latency < 0:
        parser.error('--cpu-dma-latency must be >= 0')
    return arguments


def parse_subcommand(name: str, argv: Sequence[str]) -> argparse.Namespace:
    """The options of `wbc_bench NAME`."""
    module = launch_rate if name == 'launch' else tick_parts
    parser = argparse.ArgumentParser(
        prog=f'wbc_bench {name}',
        description=module.__doc__.split('\n\n')[0],
    )
    if name == 'parts':
        add_scenario_arguments(parser)
    module.add_arguments(parser)
    arguments = parser.parse_args(argv)
    arguments.command = name
    if name == 'parts' and arguments.ticks < 1:
        parser.error('--ticks must be >= 1')
    return arguments


def scenarios_from(arguments: argparse.Namespace) -> list[Scenario]:
    """Config files if given, else the built-in scenarios of --robot (default: all)."""
    if arguments.config:
        robot_name = arguments.robot[0] if arguments.robot else None
        return [config_scenario(path, robot_name) for path in arguments.config]
    names = arguments.robot or list(BUILT_IN_SCENARIOS)
    unknown = [name for name in names if name not in BUILT_IN_SCENARIOS]
    if unknown:
        raise ModelError(f'no built-in scenario for {unknown}; give a --config file')
    return [BUILT_IN_SCENARIOS[name]() for name in names]


def run(arguments: argparse.Namespace) -> dict:
    """Every measurement the arguments ask for, as the JSON document.

    Raises:
        CpuLatencyUnavailable: --cpu-dma-latency asked for a request this process cannot make.
    """
    latency = arguments.cpu_dma_latency
    with CpuLatencyRequest(latency) if latency is not None else nullcontext():
        return _measure(arguments)


def _measure(arguments: argparse.Namespace) -> dict:
    results: dict = {'meta': machine_description()}
    results['meta']['ticks'] = arguments.ticks
    results['meta']['cpu_dma_latency_us'] = arguments.cpu_dma_latency
    results['tick'] = {
        scenario.name: measure_ticks(scenario, arguments.ticks)
        for scenario in scenarios_from(arguments)
    }
    if not arguments.skip_dds:
        results['dds'] = dds_benchmark(arguments.dds_seconds, domain_id=arguments.domain_id)
    if not arguments.skip_conditioning:
        results['conditioning'] = conditioning_section(plot_path=arguments.plot)
    results['meta']['load_average_end'] = [round(value, 2) for value in os.getloadavg()]
    results['targets'] = evaluate_targets(results)
    return results


def single_threaded_blas(argv: Sequence[str]) -> None:
    """Re-run this process with single-threaded BLAS unless the user chose a thread count.

    Multithreaded OpenBLAS on these small matrices adds millisecond tails (threads woken for
    a 38×38 product on a loaded machine); a real-time controller runs with one BLAS thread.
    The variables must be set before numpy loads, hence the re-exec.
    """
    environment = dict(os.environ)
    if use_one_thread(environment):
        arguments = [sys.executable, '-m', 'wbc_control.benchmark', *argv]
        os.execve(sys.executable, arguments, environment)


def main(argv: Sequence[str] | None = None) -> int:
    """Console script `wbc_bench` (called with `argv`, it runs in this process as it is)."""
    if argv is None:
        argv = sys.argv[1:]
        parse_arguments(argv)  # --help and usage errors before the re-exec
        single_threaded_blas(argv)
    arguments = parse_arguments(argv)
    try:
        if arguments.command == 'launch':
            return launch_rate.run(arguments)
        if arguments.command == 'parts':
            return tick_parts.run(arguments, scenarios_from(arguments))
        results = run(arguments)
    except (WbcError, CpuLatencyUnavailable) as error:
        print(f'wbc_bench: {error}', file=sys.stderr)
        return 1
    print(format_report(results))
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(results, indent=2) + '\n')
    return 0
