"""Gazebo Sim + gz_ros2_control with a forward effort controller, driven by wbc_controller.

    ros2 launch wbc_control wbc_gazebo.launch.py robot:=panda
    ros2 launch wbc_control wbc_gazebo.launch.py robot_description_file:=/path/robot.urdf.xacro \
        controller_params:=/path/my_controller.yaml ros2_control_params:=/path/my_control.yaml

The URDF is `robot_description_file` (run through xacro) or, when that is empty, `robot` from
example-robot-data. Unless the URDF already has them, the <ros2_control> block (effort command,
position / velocity state interfaces for the joints of `effort_controller` in
`ros2_control_params`) and the gz_ros2_control plugin tag are added here. This starts Gazebo,
spawns the robot, loads `joint_state_broadcaster` and `effort_controller`
(forward_command_controller/ForwardCommandController on the effort interface, whose topic
effort_controller/commands is the one wbc_controller publishes) and includes
wbc_control.launch.py with use_sim_time.
"""

from pathlib import Path

from launch import LaunchContext, LaunchDescription
from launch.actions import (
    AppendEnvironmentVariable,
    DeclareLaunchArgument,
    IncludeLaunchDescription,
    OpaqueFunction,
)
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare
import yaml

from wbc_control.model.example_robots import example_robot_urdf, robots_directory
from wbc_control.model.ros2_control_xml import forward_controller_joints, with_gz_ros2_control

HERE = Path(__file__).resolve().parent
PACKAGE = 'wbc_control'


def robot_description(context: LaunchContext, control_params: Path, namespace: str) -> str:
    """The URDF (xacro expanded), with the ros2_control tags Gazebo needs added if missing."""
    given = LaunchConfiguration('robot_description_file').perform(context)
    if given:
        if not Path(given).is_file():
            raise FileNotFoundError(f'robot_description_file:={given}: no such file')
        urdf = Command(['xacro ', given]).perform(context)
    else:
        urdf = example_robot_urdf(LaunchConfiguration('robot').perform(context))[0].read_text()
    joints = forward_controller_joints(yaml.safe_load(control_params.read_text()))
    return with_gz_ros2_control(urdf, joints, [control_params], namespace)


def launch_setup(context: LaunchContext) -> list:
    """Gazebo, robot_state_publisher, the spawners and wbc_control.launch.py."""
    namespace = LaunchConfiguration('namespace').perform(context)
    control_params = Path(LaunchConfiguration('ros2_control_params').perform(context)).resolve()
    description = robot_description(context, control_params, namespace)
    actions = []
    if not LaunchConfiguration('robot_description_file').perform(context):
        # example-robot-data's meshes are package://example-robot-data/... URIs.
        actions.append(
            AppendEnvironmentVariable('GZ_SIM_RESOURCE_PATH', str(robots_directory().parents[1]))
        )
    actions.append(
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                PathJoinSubstitution(
                    [FindPackageShare('ros_gz_sim'), 'launch', 'gz_sim.launch.py']
                )
            ),
            launch_arguments={'gz_args': ['-r ', LaunchConfiguration('world')]}.items(),
        )
    )
    actions += [
        Node(
            package='robot_state_publisher',
            executable='robot_state_publisher',
            namespace=namespace,
            parameters=[
                {
                    'robot_description': ParameterValue(description, value_type=str),
                    'use_sim_time': True,
                }
            ],
        ),
        Node(
            package='ros_gz_sim',
            executable='create',
            namespace=namespace,
            arguments=['-topic', 'robot_description', '-name', 'wbc_robot'],
        ),
        Node(
            package='ros_gz_bridge',
            executable='parameter_bridge',
            arguments=['/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock'],
        ),
        *(
            Node(
                package='controller_manager',
                executable='spawner',
                namespace=namespace,
                arguments=[name, '--param-file', str(control_params)],
            )
            for name in ('joint_state_broadcaster', 'effort_controller')
        ),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(str(HERE / 'wbc_control.launch.py')),
            launch_arguments={
                'robot_description': description,
                'controller_params': LaunchConfiguration('controller_params'),
                'use_sim_time': 'true',
                'namespace': namespace,
                'autostart': LaunchConfiguration('autostart'),
                'rviz': LaunchConfiguration('rviz').perform(context),
                'state_publisher': 'false',  # the one above
            }.items(),
        ),
    ]
    return actions


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments; the rest follows once the URDF is read."""
    config = PathJoinSubstitution([FindPackageShare(PACKAGE), 'config'])
    arguments = [
        DeclareLaunchArgument(
            'robot',
            default_value='panda',
            description='example-robot-data robot, used when robot_description_file is empty',
        ),
        DeclareLaunchArgument(
            'robot_description_file',
            default_value='',
            description='URDF or xacro; <ros2_control> and the gz_ros2_control plugin are added '
            'when missing',
        ),
        DeclareLaunchArgument(
            'controller_params',
            default_value=PathJoinSubstitution([config, 'panda_controller.yaml']),
        ),
        DeclareLaunchArgument(
            'ros2_control_params',
            default_value=PathJoinSubstitution([config, 'panda_ros2_control.yaml']),
            description='controller_manager parameters; effort_controller.joints are the '
            'commanded joints',
        ),
        DeclareLaunchArgument('world', default_value='empty.sdf'),
        DeclareLaunchArgument(
            'namespace', default_value='', description='namespace of the robot and controllers'
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
            description='start RViz (config/wbc.rviz: the robot and the markers)',
        ),
    ]
    return LaunchDescription([*arguments, OpaqueFunction(function=launch_setup)])
