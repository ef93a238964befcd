"""Controller and diagnostics sidecar for a real robot or Gazebo.

    ros2 launch wbc_control wbc_control.launch.py urdf_path:=/path/robot.urdf \
        controller_params:=/path/my_controller.yaml

The robot model comes from `robot_description` (URDF XML, e.g. from xacro), `urdf_path`, or
`robot_description_topic` (e.g. /robot_description, published by robot_state_publisher).
wbc_controller is a managed node, configured and activated at start; `autostart:=false` leaves
it unconfigured for a lifecycle manager (or ``ros2 lifecycle set``) to bring up.
Both nodes publish on relative topics, so `namespace:=` and remappings work as usual; the
shipped parameter files are keyed ``/**`` and apply in any namespace.

`rviz:=true` adds RViz with config/wbc.rviz (the robot, the controller's `~/markers`), its
fixed frame the controller's world frame, and robot_state_publisher for the robot model; each
only where it is installed, else a log line says what is missing.

wbc_sim.launch.py and wbc_gazebo.launch.py include this file and reuse :func:`wbc_node`.
"""

import os
from pathlib import Path

from ament_index_python.packages import PackageNotFoundError, get_package_prefix
from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction
from launch.events.process import ProcessExited
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare
import yaml

from wbc_control.model.urdf_xml import root_link_name

PACKAGE = 'wbc_control'


def stop_on_failure(event: ProcessExited, _context: LaunchContext) -> None:
    """Stop the launch with a non-zero exit code when a node exits with one.

    The node has logged why (e.g. a URDF without the commanded joints); without this, launch
    would keep the other nodes running and return 0.
    """
    if event.returncode != 0:
        raise RuntimeError(f'{event.process_name} exited with code {event.returncode}')


def wbc_node(executable: str, parameters: list, namespace=None) -> Node:
    """One wbc_control node, named after its executable, stopping the launch if it fails."""
    return Node(
        package=PACKAGE,
        executable=executable,
        name=executable,
        namespace=LaunchConfiguration('namespace') if namespace is None else namespace,
        parameters=parameters,
        output='screen',
        emulate_tty=True,
        on_exit=stop_on_failure,
    )


def installed(package: str, executable: str) -> bool:
    """Whether `executable` of ROS package `package` is installed (in the ament index)."""
    try:
        prefix = get_package_prefix(package)
    except PackageNotFoundError:
        return False
    return os.access(Path(prefix) / 'lib' / package / executable, os.X_OK)


def world_frame(params_file: str, floating_base: bool, urdf: str) -> str:
    """The controller's world frame: `world_frame` in its params file, else its default.

    The default is odom with a floating base, else the URDF's root link ('' if unknown).
    """
    for section in (yaml.safe_load(Path(params_file).read_text()) or {}).values():
        frame = (section or {}).get('ros__parameters', {}).get('world_frame')
        if frame:
            return frame
    if floating_base:
        return 'odom'
    return root_link_name(urdf) if urdf else ''


def state_publisher(urdf: str, namespace: str, sim_time: bool) -> list:
    """robot_state_publisher for `urdf` (the TF of the links), or why there is none."""
    if not urdf:
        return [
            LogInfo(
                msg='rviz:=true: the URDF comes from robot_description_topic, whose publisher '
                'is expected to publish the TF of the links'
            )
        ]
    if not installed('robot_state_publisher', 'robot_state_publisher'):
        return [
            LogInfo(
                msg='rviz:=true: robot_state_publisher is not installed (e.g. apt install '
                'ros-$ROS_DISTRO-robot-state-publisher): RViz shows the markers without the '
                'robot model'
            )
        ]
    description = {
        'robot_description': ParameterValue(urdf, value_type=str),
        'use_sim_time': sim_time,
    }
    return [
        Node(
            package='robot_state_publisher',
            executable='robot_state_publisher',
            namespace=namespace,
            parameters=[description],
            output='screen',
        )
    ]


def rviz_setup(context: LaunchContext) -> list:
    """With rviz:=true, RViz and robot_state_publisher where installed (else say so)."""
    if LaunchConfiguration('rviz').perform(context) != 'true':
        return []
    urdf = LaunchConfiguration('robot_description').perform(context)
    path = LaunchConfiguration('urdf_path').perform(context)
    if not urdf and path:
        urdf = Path(path).read_text()
    namespace = LaunchConfiguration('namespace').perform(context)
    sim_time = LaunchConfiguration('use_sim_time').perform(context) == 'true'
    actions = []
    # false under wbc_gazebo.launch.py, which runs its own
    if LaunchConfiguration('state_publisher').perform(context) == 'true':
        actions += state_publisher(urdf, namespace, sim_time)
    if not installed('rviz2', 'rviz2'):
        markers = f'{namespace.rstrip("/")}/wbc_controller/markers'
        actions.append(
            LogInfo(
                msg=f'rviz:=true: rviz2 is not installed (e.g. apt install '
                f'ros-$ROS_DISTRO-rviz2); the markers are on {markers}'
            )
        )
        return actions
    config = Path(FindPackageShare(PACKAGE).perform(context)) / 'config' / 'wbc.rviz'
    floating = LaunchConfiguration('floating_base').perform(context) == 'true'
    frame = world_frame(LaunchConfiguration('controller_params').perform(context), floating, urdf)
    arguments = ['-d', str(config), *(['-f', frame] if frame else [])]
    actions.append(
        Node(
            package='rviz2',
            executable='rviz2',
            namespace=namespace,
            arguments=arguments,
            parameters=[{'use_sim_time': sim_time}],
            output='screen',
        )
    )
    return actions


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments and the two nodes."""
    config = PathJoinSubstitution([FindPackageShare(PACKAGE), 'config'])
    arguments = [
        DeclareLaunchArgument('urdf_path', default_value='', description='URDF file'),
        DeclareLaunchArgument(
            'robot_description', default_value='', description='URDF XML (overrides urdf_path)'
        ),
        DeclareLaunchArgument(
            'robot_description_topic',
            default_value='',
            description='with urdf_path and robot_description empty: read the URDF from this '
            'topic, e.g. /robot_description of robot_state_publisher',
        ),
        DeclareLaunchArgument('floating_base', default_value='false'),
        DeclareLaunchArgument(
            'controller_params',
            default_value=PathJoinSubstitution([config, 'panda_controller.yaml']),
            description='wbc_controller parameters (tasks, gains, targets)',
        ),
        DeclareLaunchArgument(
            'diagnostics_params',
            default_value=PathJoinSubstitution([config, 'diagnostics.yaml']),
            description='wbc_diagnostics parameters (thresholds, rates)',
        ),
        DeclareLaunchArgument('use_sim_time', default_value='false'),
        DeclareLaunchArgument(
            'namespace', default_value='', description='namespace of both nodes and topics'
        ),
        DeclareLaunchArgument(
            'autostart',
            default_value='true',
            choices=['true', 'false'],
            description='configure and activate wbc_controller at start; false: it waits '
            'unconfigured for the lifecycle transitions (ros2 lifecycle set)',
        ),
        DeclareLaunchArgument(
            'rviz',
            default_value='false',
            choices=['true', 'false'],
            description='start RViz with config/wbc.rviz and robot_state_publisher',
        ),
        DeclareLaunchArgument(
            'state_publisher',
            default_value='true',
            choices=['true', 'false'],
            description='with rviz:=true, start robot_state_publisher (false: one runs already)',
        ),
    ]
    model = {
        'urdf_path': LaunchConfiguration('urdf_path'),
        'robot_description': ParameterValue(
            LaunchConfiguration('robot_description'), value_type=str
        ),
        'robot_description_topic': LaunchConfiguration('robot_description_topic'),
        'floating_base': ParameterValue(LaunchConfiguration('floating_base'), value_type=bool),
        'use_sim_time': ParameterValue(LaunchConfiguration('use_sim_time'), value_type=bool),
    }
    # The node's own `autostart` parameter rather than launch_ros's LifecycleNode: Jazzy's
    # launch_ros has no autostart, and the parameter works the same from ros2 run and wbc_demo.
    autostart = {'autostart': ParameterValue(LaunchConfiguration('autostart'), value_type=bool)}
    nodes = [
        wbc_node('wbc_controller', [LaunchConfiguration('controller_params'), model, autostart]),
        wbc_node('wbc_diagnostics', [LaunchConfiguration('diagnostics_params'), model]),
    ]
    return LaunchDescription([*arguments, *nodes, OpaqueFunction(function=rviz_setup)])
