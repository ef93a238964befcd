"""Locate the URDFs shipped by `example-robot-data` (PyPI wheel or ROS package).

Used by the demo, the benchmark and the tests; the controller itself takes any URDF.
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


def robots_directory() -> Path:
    """The `robots` directory of example-robot-data.

    Looks in the pip wheel (cmeel prefix) first, then in every prefix of AMENT_PREFIX_PATH.

    Raises:
        ModelError: example-robot-data is not installed.
    """
    candidates = []
    try:
        distribution = metadata.distribution('example-robot-data')
        candidates.append(
            Path(distribution.locate_file('cmeel.prefix/share/example-robot-data/robots'))
        )
    except metadata.PackageNotFoundError:
        pass
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        if prefix:
            candidates.append(Path(prefix) / 'share' / 'example-robot-data' / 'robots')
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise ModelError(
        'example-robot-data is not installed (pip install example-robot-data, or the ROS '
        'package ros-$ROS_DISTRO-example-robot-data)'
    )


def example_robot_urdf(name: str) -> tuple[Path, bool]:
    """URDF path and floating-base flag of one of :data:`EXAMPLE_ROBOTS`."""
    if name not in EXAMPLE_ROBOTS:
        raise ModelError(
            f"unknown example robot '{name}'; known: {', '.join(sorted(EXAMPLE_ROBOTS))}"
        )
    relative, floating_base = EXAMPLE_ROBOTS[name]
    path = robots_directory() / relative
    if not path.is_file():
        raise ModelError(f"example-robot-data has no '{relative}'")
    return path, floating_base
