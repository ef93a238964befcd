"""Fixtures the ROS tests share."""

from collections.abc import Iterator

import pytest
from ros_support import RosProbe, named_probe


@pytest.fixture(scope='module')
def probe(request: pytest.FixtureRequest) -> Iterator[RosProbe]:
    """One probe node for a test module (a module whose tests need a fresh one overrides it)."""
    yield from named_probe(request)
