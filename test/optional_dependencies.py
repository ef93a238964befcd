"""Skip, with the reason, the test modules whose optional dependencies are not installed.

A stock ROS 2 installation (``colcon test``) has rclpy, numpy, scipy and Pinocchio but neither
MuJoCo, matplotlib, hypothesis nor example-robot-data. A module that imports one of them, or asks
example-robot-data for a URDF at import time, is reported as skipped with what to install,
instead of failing the whole collection. test/conftest.py registers the hook.
"""

from pathlib import Path

import pytest

from wbc_control.exceptions import ModelError
from wbc_control.model.example_robots import NOT_FOUND

#: top-level module -> how to get it
OPTIONAL = {
    'mujoco': 'pip install mujoco',
    'matplotlib': 'pip install matplotlib (or apt python3-matplotlib)',
    'hypothesis': 'pip install hypothesis (or apt python3-hypothesis)',
    'example_robot_data': 'pip install example-robot-data',
}


class OptionalDependencyModule(pytest.Module):
    """A test module that is skipped when an optional dependency is missing."""

    def _getobj(self):
        try:
            return super()._getobj()
        except ModuleNotFoundError as error:
            top = (error.name or '').split('.')[0]
            if top not in OPTIONAL:
                raise
            pytest.skip(f'needs {top}: {OPTIONAL[top]}', allow_module_level=True)
        except pytest.Collector.CollectError as error:
            # pytest wraps import errors of test modules; find the missing module in the text.
            for top, how in OPTIONAL.items():
                if f"No module named '{top}" in str(error):
                    pytest.skip(f'needs {top}: {how}', allow_module_level=True)
            raise
        except ModelError as error:
            if str(error) != NOT_FOUND:
                raise
            pytest.skip(str(error), allow_module_level=True)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path, parent):
    """Collect test_*.py files as :class:`OptionalDependencyModule`."""
    if module_path.name.startswith('test_') and module_path.name != '__init__.py':
        return OptionalDependencyModule.from_parent(parent, path=module_path)
    return None


def _skip_without_example_robot_data():
    """Run a test phase; a missing example-robot-data skips the test instead of failing it."""
    try:
        return (yield)
    except ModelError as error:
        if str(error) != NOT_FOUND:
            raise
        pytest.skip(str(error))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    """Set-up (fixtures) of one test, skipped when it needs example-robot-data."""
    return (yield from _skip_without_example_robot_data())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """One test, skipped when it needs example-robot-data."""
    return (yield from _skip_without_example_robot_data())
