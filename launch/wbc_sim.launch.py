"""The whole loop in the embedded MuJoCo simulator: wbc_sim + controller + diagnostics.

    ros2 launch wbc_control wbc_sim.launch.py robot:=panda

`robot` picks config/<robot>_controller.yaml, config/<robot>_sim.yaml, the floating base and,
unless `urdf_path` is given, the URDF of example-robot-data: the pip package
(``pip install example-robot-data``) or the `robots` directory named by $EXAMPLE_ROBOT_DATA_DIR.
`namespace:=/left_arm` runs all three nodes, and their topics, in that namespace. Your own
robot: `urdf_path`, `controller_params`, `sim_params` and `floating_base` replace what `robot`
picks::

    ros2 launch wbc_control wbc_sim.launch.py urdf_path:=/path/arm.urdf \
        controller_params:=arm_controller.yaml sim_params:=arm_sim.yaml floating_base:=false
"""

from pathlib import Path

from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import (
    PythonLaunchDescriptionSource,
    load_python_launch_file_as_module,
)
from launch.substitutions import LaunchConfiguration
from launch_ros.substitutions import FindPackageShare

from wbc_control.model.example_robots import EXAMPLE_ROBOTS, example_robot_urdf

HERE = Path(__file__).resolve().parent
WBC_CONTROL = HERE / 'wbc_control.launch.py'
#: Robots with a shipped config/<robot>_controller.yaml and config/<robot>_sim.yaml.
ROBOTS = ('panda', 'talos', 'solo12')


def urdf_and_floating_base(robot: str, urdf_path: str, floating_base: str) -> tuple[str, bool]:
    """The URDF to load (the user's, else example-robot-data's) and the robot's base type.

    `floating_base` is 'true', 'false' or '' (the base type of `robot`).

    Raises:
        FileNotFoundError: `urdf_path` names no file.
        ModelError: example-robot-data is not found (the message says what to do).
    """
    floating = EXAMPLE_ROBOTS[robot][1] if not floating_base else floating_base == 'true'
    if urdf_path:
        if not Path(urdf_path).is_file():
            raise FileNotFoundError(f'urdf_path:={urdf_path}: no such file')
        return urdf_path, floating
    path, _ = example_robot_urdf(robot)
    return str(path), floating


def params_file(context: LaunchContext, argument: str, shipped: Path) -> str:
    """The params file the launch argument names, else the shipped one.

    Raises:
        FileNotFoundError: the argument names no file.
    """
    given = LaunchConfiguration(argument).perform(context)
    if given and not Path(given).is_file():
        raise FileNotFoundError(f'{argument}:={given}: no such file')
    return given or str(shipped)


def launch_setup(context: LaunchContext) -> list:
    """The simulator node and the included controller launch file, for the resolved URDF."""
    robot = LaunchConfiguration('robot').perform(context)
    urdf_path, floating_base = urdf_and_floating_base(
        robot,
        LaunchConfiguration('urdf_path').perform(context),
        LaunchConfiguration('floating_base').perform(context),
    )
    config = Path(FindPackageShare('wbc_control').perform(context)) / 'config'
    sim_params = params_file(context, 'sim_params', config / f'{robot}_sim.yaml')
    controller_params = params_file(
        context, 'controller_params', config / f'{robot}_controller.yaml'
    )
    diagnostics_params = params_file(context, 'diagnostics_params', config / 'diagnostics.yaml')
    namespace = LaunchConfiguration('namespace').perform(context)
    overrides = {
        'urdf_path': urdf_path,
        'floating_base': floating_base,
        'real_time_factor': float(LaunchConfiguration('real_time_factor').perform(context)),
        'use_sim_time': True,
    }
    lockstep = LaunchConfiguration('lockstep').perform(context)
    if lockstep != 'config':  # else config/<robot>_sim.yaml decides
        overrides['lockstep'] = lockstep == 'true'
    sim = load_python_launch_file_as_module(str(WBC_CONTROL)).wbc_node(
        'wbc_sim', [sim_params, overrides], namespace=namespace
    )
    controller_and_diagnostics = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(WBC_CONTROL)),
        launch_arguments={
            'urdf_path': urdf_path,
            'floating_base': str(floating_base).lower(),
            'controller_params': controller_params,
            'diagnostics_params': diagnostics_params,
            'use_sim_time': 'true',
            'namespace': namespace,
            'autostart': LaunchConfiguration('autostart').perform(context),
            'rviz': LaunchConfiguration('rviz').perform(context),
        }.items(),
    )
    return [sim, controller_and_diagnostics]


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments; the nodes follow once the robot's URDF is found."""
    arguments = [
        DeclareLaunchArgument('robot', default_value='panda', choices=list(ROBOTS)),
        DeclareLaunchArgument(
            'urdf_path',
            default_value='',
            description='URDF file; empty: the robot of example-robot-data',
        ),
        DeclareLaunchArgument(
            'lockstep',
            default_value='config',
            choices=['true', 'false', 'config'],
            description='config: as config/<robot>_sim.yaml says (true for all three)',
        ),
        DeclareLaunchArgument('real_time_factor', default_value='1.0'),
        DeclareLaunchArgument(
            'floating_base',
            default_value='',
            choices=['', 'true', 'false'],
            description="empty: the robot's (panda: false, talos and solo12: true)",
        ),
        DeclareLaunchArgument(
            'controller_params',
            default_value='',
            description='wbc_controller parameters (empty: config/<robot>_controller.yaml)',
        ),
        DeclareLaunchArgument(
            'sim_params',
            default_value='',
            description='wbc_sim parameters (empty: config/<robot>_sim.yaml)',
        ),
        DeclareLaunchArgument(
            'diagnostics_params',
            default_value='',
            description='wbc_diagnostics parameters (empty: config/diagnostics.yaml)',
        ),
        DeclareLaunchArgument(
            'namespace', default_value='', description='namespace of the nodes and topics'
        ),
        DeclareLaunchArgument(
            'autostart',
            default_value='true',
            choices=['true', 'false'],
            description='configure and activate wbc_controller at start (false: unconfigured)',
        ),
        DeclareLaunchArgument(
            'rviz',
            default_value='false',
            choices=['true', 'false'],
            description='start RViz with config/wbc.rviz and robot_state_publisher',
        ),
    ]
    return LaunchDescription([*arguments, OpaqueFunction(function=launch_setup)])
