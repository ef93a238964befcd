"""`wbc_out_of_reach` as a user runs it: a target in reach ends at rest on it.

What targets out of reach do is asserted in test/sim/test_edges.py and measured in
docs/safety.md ("Measured behaviour").
"""

from pathlib import Path
import re
import subprocess
import sys

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The installed console script, next to this interpreter.
TOOL = Path(sys.executable).parent / 'wbc_out_of_reach'

pytestmark = pytest.mark.slow


def test_a_target_in_reach_ends_at_rest_on_it():
    done = subprocess.run(
        [str(TOOL), '--target', '0.6', '0', '0.5', '--seconds', '4'],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        cwd=ROOT,
    )
    row = re.search(
        r'^0\.6, 0, 0\.5 \| (\S+) / (\S+) \| (\S+) % \| (\S+) / (\S+)$', done.stdout, re.M
    )
    assert row, done.stdout
    mean_speed, max_speed, saturated, closest, final = map(float, row.groups())
    assert max_speed < 0.01, f'still moving at {max_speed} rad/s between 2 and 4 s'
    assert saturated == 0.0
    assert final < 1e-3, f'the hand ends {final} m from its target'
