"""`wbc_demo` end to end, headless: three nodes over DDS, a plot and a summary."""

import json
import subprocess

import numpy as np
from ros_support import executable

from wbc_control.demo.report import DemoRecord, summarize
from wbc_control.demo.scenarios import SCENARIOS

#: Wall-clock upper bound for the whole demo: up to 2 minutes for three nodes to come up on
#: a loaded 2-core machine, then 3 s of lock-stepped simulated time.
DEMO_TIMEOUT_S = 600.0


def test_demo_runs_headless_and_writes_the_report(tmp_path):
    command = [executable('wbc_demo'), '--headless', '--duration', '3', '--output', str(tmp_path)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=DEMO_TIMEOUT_S)
    except subprocess.TimeoutExpired as error:
        raise AssertionError(
            f'waited {DEMO_TIMEOUT_S:.0f} s for wbc_demo to simulate 3 s:\n{error.stdout}'
        ) from error
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / 'demo.png').stat().st_size > 10_000
    summary = json.loads((tmp_path / 'summary.json').read_text())
    assert summary['sim_time_s'] >= 3.0
    # The circle goes as one trajectory, fed forward: no lag (set-points alone left ~4 mm).
    assert summary['tracking_error_rms_mm'] <= 0.5
    assert summary['tracking_error_max_mm'] < 2.0
    assert summary['saturated_fraction'] == 0.0
    assert summary['condition_number_min'] > 1.0
    assert 'tracking_error_rms_mm' in (tmp_path / 'summary.txt').read_text()
    assert 'tracking error' in result.stdout


def test_scenario_targets_start_where_the_controller_starts():
    for make in SCENARIOS.values():
        scenario = make()
        task = scenario.controller['tasks'][scenario.tracked_task]
        assert np.allclose(scenario.target(0.0), task['target'])


def test_the_panda_circle_motion_is_the_target_with_its_derivatives():
    scenario = SCENARIOS['panda']()
    h = 1e-5
    for t in (0.5, 1.3, 1.9, 4.0, 8.7):
        position, velocity, acceleration = scenario.motion(t)
        np.testing.assert_allclose(position, scenario.target(t))
        ahead, behind = scenario.target(t + h), scenario.target(t - h)
        np.testing.assert_allclose(velocity, (ahead - behind) / (2 * h), atol=1e-8)
        second = (ahead - 2 * scenario.target(t) + behind) / h**2
        np.testing.assert_allclose(acceleration, second, atol=1e-4)


def test_summary_of_an_empty_record_is_explicit():
    record = DemoRecord(effort_limits=[1.0], joint_names=('j',))
    summary = summarize(record, settle_s=1.0)
    assert summary['samples'] == 0
    assert summary['tracking_error_rms_mm'] is None
