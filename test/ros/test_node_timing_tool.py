"""dev/time_node_callback.py runs the real node's callback in process: its three modes work.

What it prints is timing, which no test judges; these check that every mode runs the states it
says (warm and waking from idle through the whole callback, rejected ones counted by reason).
"""

import importlib.util
from pathlib import Path
import re
import subprocess
import sys

import pytest

TOOL = Path(__file__).resolve().parents[2] / 'dev' / 'time_node_callback.py'
STATES = 40


def tool_warmup() -> int:
    """The tool's own warm-up (states before the timed ones), read from the tool itself."""
    spec = importlib.util.spec_from_file_location('time_node_callback', TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WARMUP


def run_tool(*options: str) -> str:
    done = subprocess.run(
        [sys.executable, str(TOOL), '--robot', 'panda', '--states', str(STATES), *options],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return done.stdout


def percentiles(output: str, row: str) -> list[float]:
    match = re.search(rf'^\s+{row}\s+p50\s+(\S+)\s+p90\s+(\S+)\s+p99\s+(\S+)$', output, re.M)
    assert match, output
    return [float(value) for value in match.groups()]


@pytest.mark.parametrize('mode', [(), ('--idle',), ('--cold',)], ids=['warm', 'idle', 'cold'])
def test_the_callback_and_the_tick_are_timed(mode):
    output = run_tool(*mode)
    assert f'panda: {STATES} states in process' in output
    assert ('0.9 ms idle before each state' in output) == ('--idle' in mode)
    for row in ('callback', 'tick'):
        p50, p90, p99 = percentiles(output, row)
        assert 0.0 < p50 <= p90 <= p99
    assert re.search(r'the node beside the tick \(p50\): -?\d+\.\d', output)


def test_rejected_states_are_counted_by_reason_and_never_ticked():
    output = run_tool('--rejected')
    assert f'panda: {STATES} rejected states in process' in output
    assert f"{{'joint_states.non_finite': {tool_warmup() + STATES}}}" in output
