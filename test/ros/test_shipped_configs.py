"""The shipped parameter files apply to a namespaced or renamed node (they are keyed /**).

The real `wbc_controller` executable reads config/panda_controller.yaml unchanged; it must
command the arm after a joint state on its (remapped) joint_states topic.
"""

from pathlib import Path
import time

import numpy as np
import pytest
from ros_support import NodeProcess, RosProbe
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
import yaml

from wbc_control.model.example_robots import example_robot_urdf

CONFIG = Path(__file__).resolve().parents[2] / 'config'
READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]
JOINTS = [f'panda_joint{i}' for i in range(1, 8)] + ['panda_finger_joint1', 'panda_finger_joint2']


@pytest.mark.parametrize('path', sorted(CONFIG.glob('*.yaml')), ids=lambda path: path.name)
def test_every_shipped_file_is_keyed_for_any_node_name(path: Path) -> None:
    document = yaml.safe_load(path.read_text())
    for key in document:
        assert key == '/**' or key.startswith('/**/'), f'{path.name} is keyed {key!r}'


def joint_state(probe: RosProbe) -> JointState:
    message = JointState()
    message.header.stamp = probe.node.get_clock().now().to_msg()
    message.name = JOINTS
    message.position = READY
    message.velocity = [0.0] * len(JOINTS)
    return message


@pytest.mark.parametrize(
    ('remap', 'prefix'),
    [('__ns:=/left_arm', '/left_arm'), ('__node:=other', '')],
    ids=['namespace', 'renamed'],
)
def test_shipped_panda_config_commands_in_a_namespace_or_renamed(remap, prefix) -> None:
    urdf = example_robot_urdf('panda')[0]
    arguments = ['--params-file', str(CONFIG / 'panda_controller.yaml')]
    arguments += ['-p', f'urdf_path:={urdf}', '-r', remap]
    probe = RosProbe('shipped_config_probe')
    with NodeProcess('wbc_controller', extra_args=arguments) as node:
        try:
            commands = probe.subscribe(Float64MultiArray, f'{prefix}/effort_controller/commands')
            states = probe.publisher(JointState, f'{prefix}/joint_states')
            deadline = time.monotonic() + 40.0
            torques = []
            while not torques and node.alive() and time.monotonic() < deadline:
                states.publish(joint_state(probe))
                probe.spin_for(0.02)  # a stream: the soft start ramps up from the 2nd state
                torques = [m.data for m in commands if np.abs(np.array(m.data)).max() > 1e-9]
            assert torques, f'no task torque on {prefix}/effort_controller/commands:\n' + (
                node.output()
            )
            assert len(torques[0]) == 7 and np.isfinite(torques[0]).all()
        finally:
            probe.close()
        assert node.stop() == 0, node.output()
