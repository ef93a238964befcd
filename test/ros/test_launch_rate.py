"""`wbc_bench launch` launches wbc_sim.launch.py for real and counts what the probe sees.

What it prints is a rate on this machine, which no test judges; this checks that the figures
are counts of real traffic: states arrive, the controller answers them and ticks, and simulated
time advances.
"""

import json
import subprocess

from launch_support import launch_sources
import pytest

from wbc_control.benchmark.cli import parse_arguments
from wbc_control.ros.runtime import executable

#: The launch harness (or an installed launch) must be there, as for the launch tests.
SOURCES = launch_sources()


@pytest.mark.slow
@pytest.mark.parametrize('distro', SOURCES[:1])
def test_the_launched_loop_is_counted(tmp_path, distro, monkeypatch):
    pytest.importorskip('mujoco', reason='wbc_sim needs mujoco (pip install mujoco)')
    if distro is not None:
        monkeypatch.setenv('LAUNCH_DISTRO', distro)
    output = tmp_path / 'rate.json'
    command = [executable('wbc_bench'), 'launch', '--robot', 'panda', '--seconds', '3']
    done = subprocess.run(
        [*command, '--warmup', '1', '--json', str(output)],
        capture_output=True,
        text=True,
        timeout=600,  # wall-clock bound: start-up compiles and imports on a loaded machine
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(output.read_text())
    assert result['robot'] == 'panda' and result['seconds'] >= 3.0, result
    assert result['joint_state_rate_hz'] > 0.0 and result['command_rate_hz'] > 0.0, result
    # Counts of two streams over the same window, by a probe that may miss some of either:
    # near 1, but not exactly; a command counted twice would give 2.
    assert 0.0 < result['answered_fraction'] < 1.5, result
    assert result['real_time_factor'] > 0.0, result
    assert result['controller_tick_rate_hz'] is None or result['controller_tick_rate_hz'] > 0.0
    assert done.stdout.startswith('panda: joint states ')


def test_launch_arguments_pass_through_and_the_robot_is_checked():
    arguments = parse_arguments(['launch', '--robot', 'talos', 'lockstep:=true'])
    assert (arguments.command, arguments.robot) == ('launch', 'talos')
    assert arguments.launch_arguments == ['lockstep:=true']
    with pytest.raises(SystemExit):
        parse_arguments(['launch', '--robot', 'not_a_robot'])
