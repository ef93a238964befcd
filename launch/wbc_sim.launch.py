"""The whole loop in the embedded MuJoCo simulator: wbc_sim + controller + diagnostics.

    ros2 launch wbc_control wbc_sim.launch.py robot:=panda

`robot` picks config/<robot>_controller.yaml and config/<robot>_sim.yaml and, unless `urdf_path`
is given, the URDF of example-robot-data (ROS package `example-robot-data`).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import (
    LaunchConfiguration,
    PathJoinSubstitution,
    PythonExpression,
)
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

PACKAGE = 'wbc_control'

#: robot -> (URDF below example-robot-data's robots/, floating base)
ROBOTS = {
    'panda': ('panda_description/urdf/panda.urdf', 'false'),
    'talos': ('talos_data/robots/talos_reduced.urdf', 'true'),
    'solo12': ('solo_description/robots/solo12.urdf', 'true'),
}


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments, the simulator and the included controller launch file."""
    robot = LaunchConfiguration('robot')
    config = PathJoinSubstitution([FindPackageShare(PACKAGE), 'config'])
    default_urdf = PathJoinSubstitution(
        [
            FindPackageShare('example-robot-data'),
            'robots',
            PythonExpression([repr({k: v[0] for k, v in ROBOTS.items()}), "['", robot, "']"]),
        ]
    )
    floating_base = PythonExpression(
        [repr({k: v[1] for k, v in ROBOTS.items()}), "['", robot, "']"]
    )
    arguments = [
        DeclareLaunchArgument('robot', default_value='panda', choices=list(ROBOTS)),
        DeclareLaunchArgument('urdf_path', default_value=default_urdf),
        DeclareLaunchArgument('lockstep', default_value='false'),
        DeclareLaunchArgument('real_time_factor', default_value='1.0'),
    ]
    sim = Node(
        package=PACKAGE,
        executable='wbc_sim',
        name='wbc_sim',
        parameters=[
            PathJoinSubstitution([config, [robot, '_sim.yaml']]),
            {
                'urdf_path': LaunchConfiguration('urdf_path'),
                'floating_base': ParameterValue(floating_base, value_type=bool),
                'lockstep': ParameterValue(LaunchConfiguration('lockstep'), value_type=bool),
                'real_time_factor': ParameterValue(
                    LaunchConfiguration('real_time_factor'), value_type=float
                ),
                'use_sim_time': True,
            },
        ],
        output='screen',
        emulate_tty=True,
    )
    controller_and_diagnostics = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(
            PathJoinSubstitution([FindPackageShare(PACKAGE), 'launch', 'wbc_control.launch.py'])
        ),
        launch_arguments={
            'urdf_path': LaunchConfiguration('urdf_path'),
            'floating_base': floating_base,
            'controller_params': PathJoinSubstitution([config, [robot, '_controller.yaml']]),
            'diagnostics_params': PathJoinSubstitution([config, 'diagnostics.yaml']),
            'use_sim_time': 'true',
        }.items(),
    )
    return LaunchDescription([*arguments, sim, controller_and_diagnostics])
