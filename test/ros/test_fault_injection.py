"""`wbc_faults` as users run it: the shipped Panda configuration, a robot we ship none for."""

from pathlib import Path
import subprocess

import pytest
import yaml

from wbc_control.model.example_robots import robots_directory
from wbc_control.ros.runtime import executable

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / 'config' / 'panda_controller.yaml'


def run(params_file: Path, *robot: str) -> tuple[int, list[str]]:
    robot = robot or ('--robot', 'panda')
    done = subprocess.run(
        [executable('wbc_faults'), '--params-file', str(params_file), *robot],
        capture_output=True,
        text=True,
        timeout=600,
    )
    rows = [line for line in done.stdout.splitlines() if line.count(' | ') == 3]
    assert rows, done.stdout + done.stderr
    return done.returncode, rows[1:]


@pytest.mark.slow
def test_every_fault_passes_on_the_shipped_panda_config():
    code, rows = run(CONFIG)
    failed = [row for row in rows if not row.endswith('PASS')]
    assert code == 0 and not failed and len(rows) >= 15, '\n'.join(rows)


@pytest.mark.slow
def test_a_config_without_error_clipping_fails_the_far_target(tmp_path):
    document = yaml.safe_load(CONFIG.read_text())
    document['/**']['ros__parameters']['tasks']['hand']['max_error'] = 0.0
    unclipped = tmp_path / 'unclipped.yaml'
    unclipped.write_text(yaml.safe_dump(document))
    code, rows = run(unclipped)
    assert code == 1
    (far,) = [row for row in rows if row.startswith('target 10 m away')]
    assert far.endswith('FAIL') and "clipping_tasks=''" in far
    assert all(row.endswith('PASS') for row in rows if row is not far)


@pytest.mark.slow
def test_every_fault_passes_on_an_arm_with_continuous_joints_we_ship_no_config_for(tmp_path):
    """example-robot-data's Kinova (four continuous joints), its hand's error clipped."""
    hand = {'type': 'frame_position', 'frame': 'j2s6s200_end_effector', 'kp': 100.0}
    tasks = {
        'hand': {**hand, 'target': [0.3, -0.2, 0.5], 'max_error': 0.1},
        'posture': {'type': 'joint_posture', 'priority': 1, 'kp': 25.0},
    }
    parameters = {'task_names': ['hand', 'posture'], 'tasks': tasks}
    params_file = tmp_path / 'kinova.yaml'
    params_file.write_text(yaml.safe_dump({'/**': {'ros__parameters': parameters}}))
    urdf = robots_directory() / 'kinova_description/robots/kinova.urdf'
    code, rows = run(params_file, '--urdf', str(urdf))
    failed = [row for row in rows if not row.endswith('PASS')]
    assert code == 0 and not failed and len(rows) >= 15, '\n'.join(rows)
