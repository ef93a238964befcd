"""Build script for wbc_control: a ROS 2 ament_python package that also installs with pip."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE_NAME = 'wbc_control'

# Executables, one 'name = module:function' string per line. Each is added by the change that
# makes its node work, never as a stub; test/test_packaging.py checks that every entry imports.
CONSOLE_SCRIPTS = [
    'wbc_controller = wbc_control.ros.entry_points:controller',
    'wbc_sim = wbc_control.ros.entry_points:sim',
    'wbc_diagnostics = wbc_control.ros.entry_points:diagnostics',
    'wbc_demo = wbc_control.demo.main:main',
    'wbc_bench = wbc_control.benchmark:main',
    'wbc_faults = wbc_control.faults.injection:main',
    'wbc_out_of_reach = wbc_control.sim.out_of_reach:main',
]

# The ROS 2 client libraries of one distribution, as PyPI wheels. The ros-<distro>-* names are
# meta-packages that pin the matching ros-* wheels, so a newer distribution published under the
# unprefixed names can never slip into an environment that asked for an older one.
ROS_WHEELS = [
    'rclpy',
    'rcl-interfaces',
    'std-msgs',
    'sensor-msgs',
    'geometry-msgs',
    'nav-msgs',
    'trajectory-msgs',
    'diagnostic-msgs',
    'visualization-msgs',
    'rosgraph-msgs',
    # wbc_controller is a managed node: rclpy.lifecycle's state machine and its services.
    'rcl-lifecycle',
    'lifecycle-msgs',
    'rmw-fastrtps-cpp',
]


def ros_distribution(distro: str) -> list[str]:
    """PyPI requirements for the ROS 2 wheels of `distro`."""
    return [f'ros-{distro}-{name}' for name in ROS_WHEELS]


setup(
    name=PACKAGE_NAME,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    # The parameter schemas (one YAML file per node) are read at run time.
    package_data={PACKAGE_NAME: ['config/*.yaml', 'config/*.xml']},
    data_files=[
        ('share/ament_index/resource_index/packages', [f'resource/{PACKAGE_NAME}']),
        (f'share/{PACKAGE_NAME}', ['package.xml']),
        (f'share/{PACKAGE_NAME}/launch', sorted(glob('launch/*.launch.py'))),
        (f'share/{PACKAGE_NAME}/config', sorted(glob('config/*.yaml') + glob('config/*.rviz'))),
    ],
    # A ROS 2 workspace gets numpy, scipy, numba and Pinocchio from rosdep (package.xml), and
    # rosdep's Pinocchio carries no pip metadata: requiring 'pin' here would break installs
    # there. The pip route asks for them through the extras below. numba compiles the few
    # kernels of the tick (joint-limit bounds, contact forces, the PD law) once, into its
    # cache; DAQP and quadprog solve the hierarchy's QPs where an inequality binds.
    install_requires=['setuptools'],
    extras_require={
        'core': ['numpy', 'scipy', 'numba==0.68.0', 'pin', 'pyyaml', 'daqp', 'quadprog'],
        'kilted': ros_distribution('kilted'),
        'jazzy': ros_distribution('jazzy'),
        'sim': ['mujoco>=4', 'matplotlib', 'example-robot-data'],
        'test': [
            'pytest',
            # `--count N` repeats tests, to hunt flaky ones.
            'pytest-repeat',
            'hypothesis',
            'pyyaml',
            'ruff',
            'example-robot-data',
            'colcon-common-extensions',
        ],
    },
    python_requires='>=3.10',
    maintainer='wbc_control maintainers',
    maintainer_email='maintainers@wbc-control.invalid',
    description='Whole-body torque control with strictly prioritized operational-space tasks.',
    license='Apache-2.0',
    entry_points={'console_scripts': CONSOLE_SCRIPTS},
)
