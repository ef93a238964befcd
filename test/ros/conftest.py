"""Fixtures the ROS tests share."""

from collections.abc import Iterator
from pathlib import Path

from launch_support import install_prefix
import pytest
from robots import example_urdf
from ros_support import RosProbe, named_probe


@pytest.fixture(scope='module')
def probe(request: pytest.FixtureRequest) -> Iterator[RosProbe]:
    """One probe node for a test module (a module whose tests need a fresh one overrides it)."""
    yield from named_probe(request)


@pytest.fixture(scope='module')
def real_prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package with its real executables; wbc_sim needs MuJoCo and the example robots."""
    pytest.importorskip('mujoco', reason='wbc_sim needs mujoco (pip install mujoco)')
    example_urdf('panda')
    return install_prefix(tmp_path_factory.mktemp('install_real'))
