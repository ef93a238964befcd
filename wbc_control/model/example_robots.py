"""Locate the URDFs of `example-robot-data` (the pip package, or a directory the user names).

Used by the launch files, the demo, the benchmark and the tests; the controller itself takes any
URDF. example-robot-data is released on PyPI (``pip install example-robot-data``) and by
robotpkg / conda, but not as a ROS 2 package: no rosdep key installs it.
"""

from importlib import metadata
import os
from pathlib import Path

from wbc_control.exceptions import ModelError

#: name -> (URDF path below the robots directory, floating base)
EXAMPLE_ROBOTS: dict[str, tuple[str, bool]] = {
    'panda': ('panda_description/urdf/panda.urdf', False),
    'ur5': ('ur_description/urdf/ur5_robot.urdf', False),
    'talos': ('talos_data/robots/talos_reduced.urdf', True),
    'talos_left_arm': ('talos_data/robots/talos_left_arm.urdf', False),
    'g1': ('g1_description/urdf/g1_29dof_rev_1_0.urdf', True),
    'solo12': ('solo_description/robots/solo12.urdf', True),
}

#: Environment variable naming the `robots` directory of an example-robot-data copy.
ROBOTS_DIRECTORY_VARIABLE = 'EXAMPLE_ROBOT_DATA_DIR'

NOT_FOUND = (
    'example-robot-data not found: pip install example-robot-data, or set '
    f'{ROBOTS_DIRECTORY_VARIABLE} to its robots/ directory, or give a URDF path'
)


def _candidates() -> list[Path]:
    """Where example-robot-data's `robots` directory may be, most specific first."""
    candidates = []
    given = os.environ.get(ROBOTS_DIRECTORY_VARIABLE, '')
    if given:
        candidates.append(Path(given).expanduser())
    try:
        distribution = metadata.distribution('example-robot-data')
        candidates.append(
            Path(distribution.locate_file('cmeel.prefix/share/example-robot-data/robots'))
        )
    except metadata.PackageNotFoundError:
        pass
    # A source build in a colcon workspace, robotpkg (/opt/openrobots) or conda prefixes.
    prefixes = os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)
    prefixes += os.environ.get('CMAKE_PREFIX_PATH', '').split(os.pathsep)
    for prefix in prefixes:
        if prefix:
            candidates.append(Path(prefix) / 'share' / 'example-robot-data' / 'robots')
    return candidates


def robots_directory() -> Path:
    """The `robots` directory of example-robot-data.

    Looks in ``$EXAMPLE_ROBOT_DATA_DIR`` first, then in the pip wheel (cmeel prefix), then in
    every prefix of AMENT_PREFIX_PATH and CMAKE_PREFIX_PATH.

    Raises:
        ModelError: none of them holds it (the message says what to do, on one line).
    """
    given = os.environ.get(ROBOTS_DIRECTORY_VARIABLE, '')
    if given and not Path(given).expanduser().is_dir():
        raise ModelError(f'{ROBOTS_DIRECTORY_VARIABLE}={given} is not a directory')
    for candidate in _candidates():
        if candidate.is_dir():
            return candidate
    raise ModelError(NOT_FOUND)


def example_robot_urdf(name: str) -> tuple[Path, bool]:
    """URDF path and floating-base flag of one of :data:`EXAMPLE_ROBOTS`.

    Raises:
        ModelError: unknown name, example-robot-data missing, or its copy lacks the URDF.
    """
    if name not in EXAMPLE_ROBOTS:
        raise ModelError(
            f"unknown example robot '{name}'; known: {', '.join(sorted(EXAMPLE_ROBOTS))}"
        )
    relative, floating_base = EXAMPLE_ROBOTS[name]
    directory = robots_directory()
    path = directory / relative
    if not path.is_file():
        raise ModelError(f"example-robot-data at {directory} has no '{relative}'")
    return path, floating_base
