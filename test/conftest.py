"""Shared pytest set-up: an isolated DDS domain per test session, on loopback only."""

import fcntl
import logging
import os
from pathlib import Path
import tempfile
from typing import IO

#: Held (locked) for the life of this pytest process: the DDS domain it has reserved.
_DOMAIN_LOCK: IO | None = None


def _reserve_domain() -> int:
    """A ROS domain no other pytest process on this machine is using, reserved until exit.

    Each test process takes an exclusive lock on a per-domain file, so that parallel runs (two
    distributions, several developers, a CI job beside a developer) never see each other's
    topics; a random pick collided often enough with five runs at once to fail closed loops.
    """
    global _DOMAIN_LOCK
    directory = Path(tempfile.gettempdir())
    start = os.getpid() % 100
    for offset in range(100):
        domain = 1 + (start + offset) % 100
        lock = (directory / f'wbc_control_test_domain_{domain}.lock').open('w')
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue
        _DOMAIN_LOCK = lock
        return domain
    raise RuntimeError('every ROS domain 1..100 is taken by another test run on this machine')


if 'ROS_DOMAIN_ID' not in os.environ:
    os.environ['ROS_DOMAIN_ID'] = str(_reserve_domain())
os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')

# MuJoCo's warnings into the log pytest captures (shown with a failing test's output), not into
# MUJOCO_LOG.TXT in the working directory, from where a commit picks it up.
try:
    from wbc_control.sim.mujoco_warnings import route_warnings
except ImportError:  # mujoco, an optional dependency, is not installed
    pass
else:
    route_warnings(logging.getLogger('mujoco').warning)

# Property tests draw the same examples on every run (a profile per test name), so that a red CI
# is a change's and never a draw's; HYPOTHESIS_PROFILE=explore draws afresh (docs/testing.md).
try:
    from hypothesis import settings
except ImportError:  # a stock install's packaging test runs without it
    pass
else:
    settings.register_profile('repeatable', derandomize=True)
    settings.register_profile('explore', derandomize=False)
    settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'repeatable'))

# Tests whose optional dependencies are missing are skipped with the reason.
from optional_dependencies import (  # noqa: E402, F401
    pytest_pycollect_makemodule,
    pytest_runtest_call,
    pytest_runtest_setup,
)
