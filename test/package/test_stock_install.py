"""`colcon test` on a stock ROS 2 install: optional parts skip with a reason, nothing errors.

A stock Jazzy install has rclpy, numpy, scipy, Pinocchio, PyYAML, pytest and hypothesis from
rosdep, but neither MuJoCo, matplotlib, ruff nor example-robot-data (no rosdep key installs
them). The suite is collected here with those hidden from the interpreter.
"""

import os
from pathlib import Path
import subprocess
import sys
import textwrap

REPO = Path(__file__).resolve().parents[2]

# A pytest plugin that hides the optional packages, as on a stock install.
HIDE_OPTIONAL = textwrap.dedent(
    """
    import importlib.abc
    from importlib import metadata
    import sys

    HIDDEN = {'mujoco', 'matplotlib', 'ruff', 'example_robot_data'}


    class Hide(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0] in HIDDEN:
                raise ModuleNotFoundError(f"No module named '{name}'", name=name)
            return None


    sys.meta_path.insert(0, Hide())
    _distribution = metadata.distribution


    def distribution(name):
        if name == 'example-robot-data':
            raise metadata.PackageNotFoundError(name)
        return _distribution(name)


    metadata.distribution = distribution
    """
)


def test_collection_without_the_optional_packages_skips_and_never_errors(tmp_path) -> None:
    (tmp_path / 'hide_optional.py').write_text(HIDE_OPTIONAL)
    environment = {'PYTHONPATH': str(tmp_path), 'EXAMPLE_ROBOT_DATA_DIR': ''}
    for name in ('AMENT_PREFIX_PATH', 'CMAKE_PREFIX_PATH'):
        environment[name] = ''
    result = subprocess.run(
        [sys.executable, '-m', 'pytest', '-p', 'hide_optional', '--collect-only', '-q', '-rs']
        + ['-p', 'no:randomly', '-p', 'no:cacheprovider', 'test'],
        cwd=REPO,
        env={**os.environ, **environment},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert 'error' not in output.split('short test summary info')[-1].lower(), output
    assert 'needs mujoco: pip install mujoco' in output, output
    assert 'example-robot-data not found: pip install example-robot-data' in output, output
