"""`rviz:=true` in the launch files: RViz with config/wbc.rviz and robot_state_publisher.

Through the real launch machinery with the package laid out as colcon installs it; rviz2,
robot_state_publisher and the wbc nodes are stubs that record how they were started. Where
rviz2 is not installed the launch says so and runs on.
"""

from pathlib import Path

from launch_support import (
    add_stub,
    install_prefix,
    launch_command,
    launch_sources,
    node_parameters,
    run_to_end,
    stub_records,
)
import pytest

from wbc_control.model.example_robots import example_robot_urdf

SOURCES = launch_sources()


@pytest.fixture
def stub_prefix(tmp_path) -> tuple[Path, Path]:
    """The package and stubs, robot_state_publisher among them, without rviz2."""
    log = tmp_path / 'stub_log'
    return install_prefix(tmp_path / 'install_stub', stub_log=log), log


@pytest.fixture
def rviz_prefix(stub_prefix) -> tuple[Path, Path]:
    """The same with an rviz2 stub."""
    prefix, log = stub_prefix
    add_stub(prefix, log, 'rviz2', 'rviz2')
    return prefix, log


def launched(distro, prefix: Path, launch_file: str, *arguments: str) -> str:
    code, output = run_to_end(launch_command(distro, prefix, launch_file, *arguments))
    assert code == 0 and 'LAUNCH RC 0' in output, output
    return output


@pytest.mark.parametrize('distro', SOURCES)
def test_rviz_starts_with_the_shipped_config_in_the_world_frame_and_the_robot(distro, rviz_prefix):
    prefix, log = rviz_prefix
    urdf = example_robot_urdf('panda')[0]
    arguments = (f'urdf_path:={urdf}', 'rviz:=true', 'namespace:=/arm')
    launched(distro, prefix, 'wbc_control.launch.py', *arguments)
    [(args, params)] = stub_records(log, 'rviz2')
    config = prefix / 'share' / 'wbc_control' / 'config' / 'wbc.rviz'
    assert f'-d {config} -f panda_link0' in args and '__ns:=/arm' in args, args
    assert config.read_text() == (Path(__file__).parents[2] / 'config' / 'wbc.rviz').read_text()
    [(args, params)] = stub_records(log, 'robot_state_publisher')
    assert '__ns:=/arm' in args
    assert node_parameters(params)['robot_description'] == urdf.read_text()


@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_without_rviz2_the_launch_says_so_and_runs_the_controller(distro, stub_prefix):
    prefix, log = stub_prefix
    urdf = example_robot_urdf('panda')[0]
    output = launched(distro, prefix, 'wbc_control.launch.py', f'urdf_path:={urdf}', 'rviz:=true')
    assert 'rviz2 is not installed' in output and '/wbc_controller/markers' in output, output
    assert stub_records(log, 'rviz2') == [] and len(stub_records(log, 'wbc_controller')) == 1


@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_without_rviz_true_neither_rviz_nor_a_state_publisher_starts(distro, rviz_prefix):
    prefix, log = rviz_prefix
    urdf = example_robot_urdf('panda')[0]
    launched(distro, prefix, 'wbc_control.launch.py', f'urdf_path:={urdf}')
    assert stub_records(log, 'rviz2') == stub_records(log, 'robot_state_publisher') == []


@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_a_floating_base_is_shown_in_odom_from_the_sim_launch(distro, rviz_prefix):
    prefix, log = rviz_prefix
    launched(distro, prefix, 'wbc_sim.launch.py', 'robot:=talos', 'rviz:=true')
    [(args, _)] = stub_records(log, 'rviz2')
    assert '-f odom' in args, args


@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_a_world_frame_in_the_params_file_is_rvizs_fixed_frame(distro, rviz_prefix, tmp_path):
    prefix, log = rviz_prefix
    shipped = Path(__file__).parents[2] / 'config' / 'panda_controller.yaml'
    params = tmp_path / 'arm.yaml'
    params.write_text(
        shipped.read_text().replace(
            'ros__parameters:', 'ros__parameters:\n    world_frame: base', 1
        )
    )
    urdf = example_robot_urdf('panda')[0]
    arguments = (f'urdf_path:={urdf}', f'controller_params:={params}', 'rviz:=true')
    launched(distro, prefix, 'wbc_control.launch.py', *arguments)
    [(args, _)] = stub_records(log, 'rviz2')
    assert '-f base' in args, args


@pytest.mark.parametrize('distro', SOURCES[-1:])
def test_gazebo_keeps_its_one_state_publisher_under_rviz(distro, rviz_prefix):
    prefix, log = rviz_prefix
    launched(distro, prefix, 'wbc_gazebo.launch.py', 'rviz:=true')
    assert len(stub_records(log, 'robot_state_publisher')) == 1
    [(args, _)] = stub_records(log, 'rviz2')
    assert '-f panda_link0' in args, args
