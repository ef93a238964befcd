"""wbc_bench on tiny sizes: the JSON it writes, the sanity of its figures, and that it measures.

No test asserts how fast the controller is; one asserts that the harness times a workload of
known cost at that cost.
"""

import json
import math
import os
from pathlib import Path
import time

from dev_scripts import run_dev_script
import numpy as np
import pytest
import yaml

from wbc_control import benchmark, cpu_latency
from wbc_control.benchmark import dds, tick_parts
from wbc_control.benchmark.conditioning_cost import conditioning_section
from wbc_control.benchmark.dds import match_commands
from wbc_control.benchmark.report import TARGETS, evaluate_targets, format_report
from wbc_control.benchmark.scenarios import (
    Scenario,
    config_scenario,
    panda_scenario,
    talos_scenario,
)
from wbc_control.benchmark.tick import (
    CALL_COUNT_TICKS,
    INPUT_POOL_SIZE,
    WARMUP_TICKS,
    count_calls,
    measure_ticks,
    random_samples,
)
from wbc_control.benchmark.tick_parts import PARTS, parts_per_tick
from wbc_control.control.prioritized_controller import TaskEntry
from wbc_control.model.robot_state import RobotState

REPO = Path(__file__).resolve().parents[2]

TICKS = 200
TICK_KEYS = {
    'robot',
    'source',
    'nv',
    'tasks',
    'contacts',
    'ticks',
    'tick_us',
    'floor_us',
    'ratio',
    'tick_cpu_us',
    'floor_cpu_us',
    'ratio_cpu',
    'p99_over_p50',
    'calls_per_tick',
}
SUMMARY_KEYS = {'median', 'p99', 'max'}


def check_summary(summary: dict) -> None:
    assert set(summary) == SUMMARY_KEYS
    assert 0.0 < summary['median'] <= summary['p99'] <= summary['max']


def check_tick_figures(figures: dict, ticks: int = TICKS) -> None:
    assert set(figures) == TICK_KEYS
    assert figures['ticks'] == ticks
    for key in ('tick_us', 'floor_us', 'tick_cpu_us', 'floor_cpu_us'):
        check_summary(figures[key])
    assert figures['ratio'] == pytest.approx(
        figures['tick_us']['median'] / figures['floor_us']['median']
    )
    assert figures['ratio_cpu'] == pytest.approx(
        figures['tick_cpu_us']['median'] / figures['floor_cpu_us']['median']
    )
    assert figures['p99_over_p50'] == pytest.approx(
        figures['tick_us']['p99'] / figures['tick_us']['median']
    )
    calls = figures['calls_per_tick']
    assert calls['python'] >= 1.0 and calls['c'] > 0.0  # the tick itself is a Python call
    assert calls['total'] == pytest.approx(calls['python'] + calls['c'])
    assert sum(calls['by_module'].values()) == pytest.approx(calls['total'])
    assert 'wbc_control/control/prioritized_controller.py' in calls['by_module']


def test_call_count_is_a_figure_noise_cannot_move():
    scenario = panda_scenario()
    ticks = 50
    first, second = count_calls(scenario, ticks=ticks), count_calls(scenario, ticks=ticks)
    assert first == second
    # A whole number of calls over the run; not necessarily per tick: near a singularity a
    # level takes the kinematic-damping branch, which a few of the random samples reach.
    assert first['total'] * ticks == pytest.approx(round(first['total'] * ticks), abs=1e-6)
    # The harness adds the tick call and nothing else: from tick.py, the tick and its four
    # calls (configuration, velocity, state update, controller).
    assert first['by_module']['wbc_control/benchmark/tick.py'] == pytest.approx(5.0)


@pytest.mark.parametrize('build', [panda_scenario, talos_scenario])
def test_tick_figures_of_the_built_in_scenarios(build):
    scenario = build()
    figures = measure_ticks(scenario, TICKS)
    check_tick_figures(figures)
    assert figures['nv'] == scenario.robot.nv
    assert [task['name'] for task in figures['tasks']] == [
        entry.name for entry in scenario.controller.entries
    ]
    if scenario.name == 'talos':
        assert figures['contacts'] == ['left_sole_link', 'right_sole_link']
        assert scenario.uses_com


def test_a_params_file_builds_the_scenario(tmp_path):
    params = {
        'wbc_controller': {
            'ros__parameters': {
                'task_names': ['hand', 'posture'],
                'tasks': {
                    'hand': {'type': 'frame_position', 'frame': 'panda_hand', 'kp': 50.0},
                    'posture': {'type': 'joint_posture', 'priority': 1, 'kp': 10.0},
                },
                'singular_value_threshold': 0.01,
            }
        }
    }
    path = tmp_path / 'my_panda.yaml'
    path.write_text(yaml.safe_dump(params))
    scenario = config_scenario(path, 'panda')
    assert isinstance(scenario, Scenario)
    assert scenario.name == 'my_panda' and scenario.source == str(path)
    assert [entry.priority for entry in scenario.controller.entries] == [0, 1]
    assert scenario.controller.singular_value_threshold == 0.01
    assert scenario.controller.joint_limits is not None  # the node's default: on
    check_tick_figures(measure_ticks(scenario, TICKS))
    params['wbc_controller']['ros__parameters']['joint_limits'] = False
    path.write_text(yaml.safe_dump(params))
    assert config_scenario(path, 'panda').controller.joint_limits is None


def test_conditioning_section_and_plot(tmp_path):
    plot = tmp_path / 'conditioning.png'
    section = conditioning_section(
        chain_sizes=(4, 38),
        robot_names=('panda',),
        repeats=20,
        swing_chains=(4,),
        swing_duration_s=0.1,
        plot_path=plot,
    )
    assert plot.stat().st_size > 0 and section['plot'] == str(plot)
    assert [row['model'] for row in section['cost']] == [
        'serial_chain_4',
        'serial_chain_38',
        'panda',
    ]
    for row in section['cost']:
        for key in ('condition_number_us', 'diagonal_ratio_us', 'scaled_diagonal_ratio_us'):
            assert row[key] > 0.0
        assert row['speedup_diagonal_ratio'] == pytest.approx(
            row['condition_number_us'] / row['diagonal_ratio_us']
        )
    assert section['speedup_at_38'] == section['cost'][1]['speedup_diagonal_ratio']
    assert {(row['start'], row['n']) for row in section['swing']} == {
        ('horizontal', 4),
        ('inclined_60deg', 4),
    }
    for row in section['swing']:
        assert row['samples'] == 11  # every 10 ms over 0.1 s, both ends included
        assert 0.0 <= row['median_relative_error'] <= row['max_relative_error']
        # The first sample anchors alpha: there the estimate is κ itself.
        series = row['series']
        assert series['scaled_diagonal_ratio'][0] == pytest.approx(series['condition_number'][0])


def test_commands_are_matched_to_the_state_they_answer():
    fingerprints = {b'a': 0, b'b': 1}
    sends = [(0, 1_000), (1, 2_000), (0, 3_000), (1, 4_000)]
    received = [
        (1_500, b'a'),  # answers send 0 after 500 ns
        (4_600, b'b'),  # answers send 3 (the latest state 1 before it): 600 ns
        (4_700, b'b'),  # send 3 was answered already
        (4_800, b'?'),  # no such command
    ]
    report = match_commands(sends, received, fingerprints, period_s=550e-9)
    assert report['sent'] == 4 and report['received'] == 4
    assert report['missed'] == 2 and report['missed_fraction'] == 0.5
    assert report['unmatched'] == 2
    assert report['late'] == 1
    assert report['latency_us'] == {'median': 0.55, 'p99': pytest.approx(0.599), 'max': 0.6}


def test_dds_is_skipped_without_the_controller_node(monkeypatch):
    monkeypatch.setattr(dds, 'controller_executable', lambda: None)
    assert dds.dds_benchmark(seconds=0.1) == {'status': 'skipped: wbc_controller not installed'}


def test_targets_pass_miss_or_skip():
    results = {
        'tick': {
            'panda': {
                'tick_us': {'median': 50.0, 'p99': 200.0},
                'ratio': 5.0,
                'p99_over_p50': 4.0,
                'calls_per_tick': {'total': 41.0},
            },
        },
        'conditioning': {'speedup_at_38': 25.0},
    }
    statuses = {row['name']: row['status'] for row in evaluate_targets(results)}
    assert len(statuses) == len(TARGETS)
    assert statuses['Panda tick / floor'] == 'PASS'
    assert statuses['Panda tick p99 / p50'] == 'MISS'
    assert statuses['Panda calls per tick'] == 'MISS'
    assert statuses['Talos tick / floor'] == 'SKIPPED'
    assert statuses['1 kHz missed - null node'] == 'SKIPPED'
    assert statuses['δ cheaper than κ at n = 38'] == 'PASS'


def test_main_writes_every_section_to_json(tmp_path, capsys):
    output = tmp_path / 'bench.json'
    argv = ['--robot', 'panda', '--ticks', str(TICKS), '--skip-dds', '--json', str(output)]
    assert benchmark.main([*argv, '--skip-conditioning']) == 0
    results = json.loads(output.read_text())
    assert set(results) == {'meta', 'tick', 'targets'}
    assert {'machine', 'python', 'numpy', 'pinocchio', 'blas_threads', 'ticks'} <= set(
        results['meta']
    )
    check_tick_figures(results['tick']['panda'])
    printed = capsys.readouterr().out
    assert 'Panda tick / floor' in printed and 'DDS: skipped' in printed
    statuses = {row['status'] for row in results['targets']}
    assert statuses <= {'PASS', 'MISS', 'SKIPPED'}
    for row in results['targets']:
        assert row['value'] is None or math.isfinite(row['value'])


def _holds(device: Path) -> bool:
    """Whether this process has `device` open."""
    target = os.path.realpath(device)
    descriptors = Path('/proc/self/fd').iterdir()
    return any(os.path.realpath(descriptor) == target for descriptor in descriptors)


def test_a_cpu_latency_request_is_held_for_the_run_and_recorded(tmp_path, capsys, monkeypatch):
    """--cpu-dma-latency holds the request while the figures are taken, and says so."""
    held = []
    measure = benchmark.cli._measure
    monkeypatch.setattr(
        benchmark.cli,
        '_measure',
        lambda arguments: held.append(cpu_latency.current_latency_us()) or measure(arguments),
    )
    output = tmp_path / 'bench.json'
    argv = ['--robot', 'panda', '--ticks', '10', '--skip-dds', '--skip-conditioning']
    if not os.access(cpu_latency.DEVICE, os.W_OK):  # the request cannot be made: a named error
        assert benchmark.main([*argv, '--cpu-dma-latency', '0']) == 1
        assert 'cannot open /dev/cpu_dma_latency' in capsys.readouterr().err
        return
    assert benchmark.main([*argv, '--cpu-dma-latency', '0', '--json', str(output)]) == 0
    assert held == [0]
    assert json.loads(output.read_text())['meta']['cpu_dma_latency_us'] == 0
    # Released after the run: this process holds the device no more. (The value the device
    # reads is the lowest request of every process: another run on the machine may hold one.)
    assert not _holds(cpu_latency.DEVICE)
    with pytest.raises(SystemExit):
        benchmark.cli.parse_arguments(['--cpu-dma-latency', '-1'])


def dds_rate(rate_hz: float) -> dict:
    sends = [(0, 1_000), (0, 2_000_000)]
    row = match_commands(sends, [(500_000, b'a')], {b'a': 0}, 1.0 / rate_hz)
    row.update(rate_hz=rate_hz, controller_cpu_share=0.5, probe_cpu_share=0.25)
    return row


def test_report_formats_a_full_result(tmp_path):
    rates = {'1000': dds_rate(1000.0), '500': dds_rate(500.0)}
    results = {
        'meta': {'machine': 'test machine', 'load_average_start': [0.0, 0.0, 0.0]},
        'tick': {'panda': measure_ticks(panda_scenario(), TICKS)},
        'dds': {
            'status': 'ok',
            'robot': 'panda',
            'rates': rates,
            'null_node_rates': {'1000': dds_rate(1000.0) | {'missed_fraction': 0.0}},
        },
        'conditioning': conditioning_section(
            chain_sizes=(4,), robot_names=(), repeats=5, swing_chains=(4,), swing_duration_s=0.05
        ),
    }
    results['targets'] = evaluate_targets(results)
    report = format_report(results)
    for heading in ('Per tick', 'End to end', 'Conditioning diagnostics', 'Rod-chain swing'):
        assert heading in report
    statuses = {row['name']: row['status'] for row in results['targets']}
    # The controller misses one state of two, the null node none: 50 percentage points more.
    assert statuses['1 kHz missed - null node'] == 'MISS'
    # Equal latencies: the controller's p99 minus the null node's is 0 <= the tick's p99.
    assert statuses['1 kHz p99 - null p99 - tick p99'] == 'PASS'


# The harness measures something ---------------------------------------------------------------

KNOWN_COST_US = 1000.0


class KnownCostController:
    """A stand-in controller whose tick burns a known amount of this thread's CPU time."""

    entries = ()
    contacts = ()

    def __init__(self, cost_us: float) -> None:
        self.cost_ns = int(cost_us * 1e3)
        self.calls = 0

    def compute(self, state) -> None:
        """Spin until `cost_us` of thread CPU time has passed."""
        self.calls += 1
        end = time.thread_time_ns() + self.cost_ns
        while time.thread_time_ns() < end:
            pass


def known_cost_scenario() -> tuple[Scenario, KnownCostController]:
    controller = KnownCostController(KNOWN_COST_US)
    panda = panda_scenario().robot
    return Scenario('known_cost', panda, controller, 'test', False), controller


def test_a_workload_of_known_cost_is_timed_at_that_cost():
    """The harness's tick time of a 1 ms busy loop is 1 ms plus the joint-state update.

    The update (configuration, velocity, RobotState.update) is timed independently here, with
    the same clock, outside the harness; the harness must land between the workload alone and
    twice the workload plus that update (thread CPU time does not count other processes).
    """
    scenario, controller = known_cost_scenario()
    figures = measure_ticks(scenario, ticks=50)
    state = RobotState(scenario.robot)
    update_ns = []
    for sample in random_samples(scenario.robot, 50, seed=0):
        start = time.thread_time_ns()
        q = scenario.robot.configuration(sample.positions)
        state.update(q, scenario.robot.velocity(sample.velocities))
        update_ns.append(time.thread_time_ns() - start)
    update_us = float(np.median(update_ns)) * 1e-3
    measured = figures['tick_cpu_us']['median']
    assert KNOWN_COST_US <= measured <= 2.0 * (KNOWN_COST_US + update_us), (measured, update_us)
    assert figures['tick_us']['median'] >= KNOWN_COST_US  # wall time includes the CPU time
    assert figures['ratio_cpu'] == pytest.approx(measured / figures['floor_cpu_us']['median'])


def test_the_ticks_reported_are_the_ticks_run():
    """Warm-up, timed ticks and the call count: every compute() the harness makes."""
    scenario, controller = known_cost_scenario()
    figures = measure_ticks(scenario, ticks=37)
    assert figures['ticks'] == 37
    assert figures['calls_per_tick']['ticks'] == CALL_COUNT_TICKS
    # The call count first runs each sample it will count once (at most the pool).
    warmup = min(CALL_COUNT_TICKS, INPUT_POOL_SIZE)
    expected_calls = WARMUP_TICKS + 37 + warmup + CALL_COUNT_TICKS
    assert controller.calls == expected_calls


class KnownCostTask:
    """A stand-in task whose public `compute` burns a known amount of thread CPU time."""

    def __init__(self, cost_us: float) -> None:
        self.cost_ns, self.calls = int(cost_us * 1e3), 0

    def compute(self, state) -> None:
        """Spin until the cost of thread CPU time has passed."""
        self.calls += 1
        end = time.thread_time_ns() + self.cost_ns
        while time.thread_time_ns() < end:
            pass


def test_the_tick_parts_time_the_public_calls_at_their_cost():
    """`wbc_bench parts`: the controller's compute is 1 ms, the task terms 0.3 ms, every tick run.

    Lower bounds only (wall time includes any preemption); the known costs differ, so any two
    columns swapped fail.
    """
    scenario, controller = known_cost_scenario()
    task = KnownCostTask(0.3 * KNOWN_COST_US)
    controller.entries = (TaskEntry('known', task),)
    figures = parts_per_tick(scenario, ticks=40)
    assert set(figures) == set(PARTS)
    assert KNOWN_COST_US <= figures['controller compute'] < figures['tick']
    assert 0.3 * KNOWN_COST_US <= figures['task terms (beside the tick)']
    assert figures['state update'] > 0.0
    assert figures['tick'] == pytest.approx(
        figures['state update'] + figures['controller compute']
    )
    assert controller.calls == task.calls == 40 + tick_parts.SAMPLES  # warm-up and timed ticks


def test_the_tick_parts_command_prints_a_row_per_part_and_a_column_per_scenario(capsys):
    assert benchmark.main(['parts', '--robot', 'panda', '--robot', 'talos', '--ticks', '5']) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-2:] == ['panda', 'talos']
    for part, line in zip(PARTS, lines[1:], strict=True):
        assert line.startswith(part)
        assert all(float(cell) > 0.0 for cell in line[len(part) :].split())
    with pytest.raises(SystemExit):
        benchmark.cli.parse_arguments(['parts', '--ticks', '0'])


def test_the_tick_profile_splits_all_the_time_by_module():
    """dev/profile_tick.py: shares sum to 1, the recursion among them.

    The recursion's compiled level kernel (task inertia included) is no Python function: its
    time counts for prioritized_controller.py, which calls it.
    """
    output = run_dev_script('profile_tick.py', '--ticks', '50', timeout=300)
    rows = [line.split() for line in output.splitlines()[1:]]
    shares = {row[0]: [float(cell.rstrip('%')) for cell in row[1:]] for row in rows}
    assert 'wbc_control/control/prioritized_controller.py' in shares
    for column in range(2):
        assert sum(values[column] for values in shares.values()) == pytest.approx(100.0, abs=10)
