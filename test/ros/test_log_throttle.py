"""`ThrottledLog`: one line per key and period, printed by a real rclpy (rcutils) logger.

rcutils writes the lines to the process's stderr, which `capfd` reads; the clock is a list
the test moves, so no test waits on the wall clock.
"""

import ast
from pathlib import Path
import re

import pytest
from rclpy.logging import get_logger

from wbc_control.ros.log_throttle import ThrottledLog

PACKAGE = Path(__file__).resolve().parents[2] / 'wbc_control'


@pytest.fixture
def throttled():
    """A ThrottledLog of period 1 s on an rclpy logger, and its clock `[now_s]`."""
    now = [100.0]
    return ThrottledLog(get_logger('log_throttle_test'), 1.0, clock=lambda: now[0]), now


def lines(capfd, text: str) -> list[str]:
    """The lines printed to stderr since the last call that contain `text`."""
    return [line for line in capfd.readouterr().err.splitlines() if text in line]


def test_one_line_per_period_and_the_next_says_how_many_were_held_back(throttled, capfd):
    log, now = throttled
    for _ in range(5):
        log.warning('joint_states.non_finite', 'joint_states rejected: NaN')
    printed = lines(capfd, 'joint_states rejected')
    assert len(printed) == 1 and printed[0].startswith('[WARN]')
    assert printed[0].endswith('joint_states rejected: NaN')
    now[0] += 0.999
    log.warning('joint_states.non_finite', 'joint_states rejected: NaN')
    assert lines(capfd, 'joint_states rejected') == []
    now[0] += 0.001
    log.warning('joint_states.non_finite', 'joint_states rejected: NaN')
    (line,) = lines(capfd, 'joint_states rejected')
    assert line.endswith('NaN (5 more not logged since the last such line)')
    now[0] += 1.0
    log.warning('joint_states.non_finite', 'joint_states rejected: NaN')
    (line,) = lines(capfd, 'joint_states rejected')
    assert line.endswith('NaN'), 'the count restarts after each printed line'


def test_a_line_that_must_not_be_lost_is_printed_and_starts_the_period(throttled, capfd):
    log, now = throttled
    log.warning('joint_states.stale', 'stale')
    log.warning('joint_states.stale', 'stale')
    log.warning('joint_states.stale', 'stale; likely cause: the other clock', always=True)
    log.warning('joint_states.stale', 'stale')
    printed = lines(capfd, 'stale')
    assert len(printed) == 2
    assert printed[1].endswith('the other clock (1 more not logged since the last such line)')
    now[0] += 1.0
    log.warning('joint_states.stale', 'stale')
    (line,) = lines(capfd, 'stale')
    assert line.endswith('stale (1 more not logged since the last such line)')


def test_keys_are_independent_and_levels_and_periods_are_kept(throttled, capfd):
    log, now = throttled
    log.warning('joint_states.non_finite', 'first reason')
    log.warning('joint_states.names', 'second reason')
    log.error('tick', 'a failed tick')
    log.info('waiting', 'waiting for subscribers', 5.0)
    printed = capfd.readouterr().err
    assert re.search(r'^\[WARN\].*first reason$', printed, re.M)
    assert re.search(r'^\[WARN\].*second reason$', printed, re.M)
    assert re.search(r'^\[ERROR\].*a failed tick$', printed, re.M)
    assert re.search(r'^\[INFO\].*waiting for subscribers$', printed, re.M)
    now[0] += 1.0  # the default period is over, not the 5 s the last call asked for
    for key in ('joint_states.non_finite', 'joint_states.names', 'tick'):
        log.warning(key, f'{key} again')
    log.info('waiting', 'waiting again', 5.0)
    printed = capfd.readouterr().err
    assert printed.count('again') == 3 and 'waiting again' not in printed
    now[0] += 4.0
    log.info('waiting', 'waiting again', 5.0)
    (line,) = lines(capfd, 'waiting again')
    assert line.endswith('(1 more not logged since the last such line)')


def test_no_node_logs_through_rclpys_own_throttle():
    """The nodes never call rclpy's throttle: it inspects the stack on every call."""
    offenders = [
        f'{path.relative_to(PACKAGE)}:{node.lineno}'
        for path in sorted(PACKAGE.rglob('*.py'))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and any(keyword.arg == 'throttle_duration_sec' for keyword in node.keywords)
    ]
    assert offenders == []
