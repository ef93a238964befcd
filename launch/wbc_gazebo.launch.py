"""Gazebo Sim + gz_ros2_control with an effort controller, driven by wbc_controller.

    ros2 launch wbc_control wbc_gazebo.launch.py robot_description_file:=/path/robot.urdf.xacro

The robot description must carry a <ros2_control> block with an effort command interface per
joint and the gz_ros2_control plugin pointing at `ros2_control_params` (README, "Gazebo").
This starts Gazebo, spawns the robot, loads `joint_state_broadcaster` and `effort_controller`
(effort_controllers/JointGroupEffortController, whose topic effort_controller/commands is the one
wbc_controller publishes) and includes wbc_control.launch.py with use_sim_time.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

PACKAGE = 'wbc_control'


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments, Gazebo, the spawner nodes and the controller launch file."""
    config = PathJoinSubstitution([FindPackageShare(PACKAGE), 'config'])
    description = ParameterValue(
        Command(['xacro ', LaunchConfiguration('robot_description_file')]), value_type=str
    )
    arguments = [
        DeclareLaunchArgument(
            'robot_description_file', description='URDF or xacro with <ros2_control> tags'
        ),
        DeclareLaunchArgument(
            'controller_params',
            default_value=PathJoinSubstitution([config, 'panda_controller.yaml']),
        ),
        DeclareLaunchArgument(
            'ros2_control_params',
            default_value=PathJoinSubstitution([config, 'panda_ros2_control.yaml']),
            description='controller_manager parameters (the URDF plugin tag points here too)',
        ),
        DeclareLaunchArgument('world', default_value='empty.sdf'),
    ]
    gazebo = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(
            PathJoinSubstitution([FindPackageShare('ros_gz_sim'), 'launch', 'gz_sim.launch.py'])
        ),
        launch_arguments={'gz_args': ['-r ', LaunchConfiguration('world')]}.items(),
    )
    state_publisher = Node(
        package='robot_state_publisher',
        executable='robot_state_publisher',
        parameters=[{'robot_description': description, 'use_sim_time': True}],
    )
    spawn = Node(
        package='ros_gz_sim',
        executable='create',
        arguments=['-topic', 'robot_description', '-name', 'wbc_robot'],
    )
    clock_bridge = Node(
        package='ros_gz_bridge',
        executable='parameter_bridge',
        arguments=['/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock'],
    )
    spawners = [
        Node(
            package='controller_manager',
            executable='spawner',
            arguments=[name, '--param-file', LaunchConfiguration('ros2_control_params')],
        )
        for name in ('joint_state_broadcaster', 'effort_controller')
    ]
    wbc = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(
            PathJoinSubstitution([FindPackageShare(PACKAGE), 'launch', 'wbc_control.launch.py'])
        ),
        launch_arguments={
            'robot_description': description,
            'controller_params': LaunchConfiguration('controller_params'),
            'use_sim_time': 'true',
        }.items(),
    )
    return LaunchDescription(
        [*arguments, gazebo, state_publisher, spawn, clock_bridge, *spawners, wbc]
    )
