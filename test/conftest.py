"""Shared pytest set-up: an isolated DDS domain per test session, on loopback only."""

import os
import random

# Each pytest process gets its own ROS domain so that parallel runs on one machine (two
# distributions, several developers) never see each other's topics.
os.environ.setdefault('ROS_DOMAIN_ID', str(random.Random(os.getpid()).randint(1, 100)))
os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')

# Tests whose optional dependencies are missing are skipped with the reason.
from optional_dependencies import (  # noqa: E402, F401
    pytest_pycollect_makemodule,
    pytest_runtest_call,
    pytest_runtest_setup,
)
