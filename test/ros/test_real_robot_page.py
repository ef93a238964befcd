"""docs/on_a_real_robot.md works as written.

Its parameter files (```yaml blocks whose first line is ``# <name>.yaml``) drive the real
`wbc_controller` (the FR3 one on Panda's URDF with FR3 joint and link names, the generic one on
example-robot-data's UR5), its ros2_control files forward to the joints the controller commands,
and each of its ``ros2 launch`` commands runs through the real launch machinery, in a directory
holding those files, with stub executables.
"""

from pathlib import Path
import re
import shlex
import time

from launch_support import install_prefix, launch_command, launch_sources, run_to_end
import numpy as np
import pytest
from ros_support import NodeProcess, RosProbe
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
import yaml

from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.ros2_control_xml import forward_controller_joints

PAGE = Path(__file__).resolve().parents[2] / 'docs' / 'on_a_real_robot.md'
FILE_BLOCK = re.compile(r'^```yaml\n# (\S+\.yaml)\n(.*?)^```', re.S | re.M)
BASH_BLOCK = re.compile(r'^```bash\n(.*?)^```', re.S | re.M)


def page_files() -> dict[str, str]:
    return {name: body for name, body in FILE_BLOCK.findall(PAGE.read_text())}


def launch_lines() -> list[list[str]]:
    lines = []
    for block in BASH_BLOCK.findall(PAGE.read_text()):
        for line in block.replace('\\\n', ' ').splitlines():
            words = shlex.split(line)
            if words[:3] == ['ros2', 'launch', 'wbc_control']:
                lines.append(words[3:])
    return lines


def write_page_files(directory: Path) -> None:
    for name, body in page_files().items():
        (directory / name).write_text(body)
    (directory / 'arm.urdf').write_text(example_robot_urdf('ur5')[0].read_text())


def fr3_urdf() -> str:
    """Panda's URDF with the FR3's names (fr3_joint1..7, fr3_hand, ...)."""
    return example_robot_urdf('panda')[0].read_text().replace('panda_', 'fr3_')


def controller_parameters(name: str) -> dict:
    return yaml.safe_load(page_files()[name])['/**']['ros__parameters']


def test_the_page_has_its_files_and_commands() -> None:
    assert set(page_files()) == {
        'fr3_controller.yaml',
        'fr3_ros2_control.yaml',
        'arm_controller.yaml',
        'arm_ros2_control.yaml',
    }
    assert len(launch_lines()) >= 5


@pytest.mark.parametrize('robot', ['fr3', 'arm'])
def test_the_forward_controller_gets_the_commanded_joints(robot: str) -> None:
    control = yaml.safe_load(page_files()[f'{robot}_ros2_control.yaml'])
    joints = forward_controller_joints(control)
    assert joints == controller_parameters(f'{robot}_controller.yaml')['command_joints']
    manager = control['/**/controller_manager']['ros__parameters']
    assert manager['effort_controller']['type'] == (
        'forward_command_controller/ForwardCommandController'
    )
    assert control['/**/effort_controller']['ros__parameters']['interface_name'] == 'effort'


def test_fr3_lets_the_robot_compensate_gravity() -> None:
    assert controller_parameters('fr3_controller.yaml')['robot_compensates_gravity'] is True
    assert 'robot_compensates_gravity' not in controller_parameters('arm_controller.yaml')


@pytest.mark.parametrize(
    ('robot', 'count'),
    [('fr3', 7), ('arm', 6)],
)
def test_the_controller_files_command_the_robot(robot: str, count: int, tmp_path: Path) -> None:
    write_page_files(tmp_path)
    urdf = tmp_path / f'{robot}.urdf'
    if robot == 'fr3':
        urdf.write_text(fr3_urdf())
    names = re.findall(r'<joint name="(\w+)" type="(?:revolute|prismatic)"', urdf.read_text())
    params = tmp_path / f'{robot}_controller.yaml'
    # Away from the posture target: at rest on it, tau - g(q) is zero.
    posture = controller_parameters(params.name)['tasks']['posture']['target']
    posture = [posture[0] + 0.2, *posture[1:]]
    arguments = ['--params-file', str(params), '-p', f'urdf_path:={urdf}']
    probe = RosProbe(f'{robot}_page_probe')
    with NodeProcess('wbc_controller', extra_args=arguments) as node:
        try:
            commands = probe.subscribe(Float64MultiArray, '/effort_controller/commands')
            states = probe.publisher(JointState, '/joint_states')
            deadline = time.monotonic() + 120.0  # start-up included: generous under load
            torques = []
            while not torques and node.alive() and time.monotonic() < deadline:
                message = JointState(name=names, position=posture, velocity=[0.0] * len(names))
                message.header.stamp = probe.node.get_clock().now().to_msg()
                states.publish(message)
                probe.spin_for(0.02)  # a stream: the soft start ramps up from the 2nd state
                torques = [m.data for m in commands if np.abs(np.array(m.data)).max() > 1e-9]
            assert torques, f'no torque from {params.name}:\n{node.output()}'
            assert len(torques[0]) == count and np.isfinite(torques[0]).all()
        finally:
            probe.close()
        assert node.stop() == 0, node.output()


@pytest.mark.slow
@pytest.mark.parametrize('distro', launch_sources()[-1:])
def test_every_launch_command_of_the_page_runs(distro, tmp_path: Path) -> None:
    write_page_files(tmp_path)
    prefix = install_prefix(tmp_path / 'install', stub_log=tmp_path / 'stub_log')
    for words in launch_lines():
        code, output = run_to_end(launch_command(distro, prefix, *words), cwd=tmp_path)
        assert code == 0 and 'LAUNCH RC 0' in output, f'{shlex.join(words)}:\n{output}'
