"""Controller and diagnostics sidecar for a real robot or Gazebo.

    ros2 launch wbc_control wbc_control.launch.py urdf_path:=/path/robot.urdf \
        controller_params:=/path/my_controller.yaml

The robot model comes from `robot_description` (URDF XML, e.g. from xacro), `urdf_path`, or
`robot_description_topic` (e.g. /robot_description, published by robot_state_publisher).
wbc_controller is a managed node, configured and activated at start; `autostart:=false` leaves
it unconfigured for a lifecycle manager (or ``ros2 lifecycle set``) to bring up.
Both nodes publish on relative topics, so `namespace:=` and remappings work as usual; the
shipped parameter files are keyed ``/**`` and apply in any namespace.

wbc_sim.launch.py and wbc_gazebo.launch.py include this file and reuse :func:`wbc_node`.
"""

from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.events.process import ProcessExited
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

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
    return LaunchDescription([*arguments, *nodes])
