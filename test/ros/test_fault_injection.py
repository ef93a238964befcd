"""`wbc_faults` against the shipped Panda configuration, as a user runs it."""

from pathlib import Path
import subprocess

import pytest
import yaml

from wbc_control.ros.runtime import executable

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / 'config' / 'panda_controller.yaml'


def run(params_file: Path) -> tuple[int, list[str]]:
    done = subprocess.run(
        [executable('wbc_faults'), '--params-file', str(params_file), '--robot', 'panda'],
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
