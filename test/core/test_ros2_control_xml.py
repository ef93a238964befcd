"""The <ros2_control> block and gz_ros2_control plugin tag added to a plain URDF.

Checked against what the readers take from it: ros2_control's hardware component parser
(``<ros2_control name type="system">``, ``<hardware><plugin>``, ``<joint name>``,
``<command_interface name>``, ``<state_interface name>`` with ``<param name="initial_value">``
read as a number) and gz_ros2_control's system plugin (``filename="gz_ros2_control-system"``,
``name="gz_ros2_control::GazeboSimROS2ControlPlugin"``, one ``<parameters>`` file per child,
``<ros><namespace>`` absolute) and its GazeboSimSystem, which registers the interfaces named
position, velocity and effort.
"""

from pathlib import Path
import xml.etree.ElementTree as ET

import pytest
from robots import MIXED_JOINTS_URDF
import yaml

from wbc_control.exceptions import ModelError
from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.ros2_control_xml import forward_controller_joints, with_gz_ros2_control

REPO = Path(__file__).resolve().parents[2]
CONTROL_PARAMS = REPO / 'config' / 'panda_ros2_control.yaml'
PANDA_JOINTS = [f'panda_joint{i}' for i in range(1, 8)]


def panda_urdf() -> str:
    return example_robot_urdf('panda')[0].read_text()


def interfaces(joint: ET.Element, kind: str) -> list[str]:
    return [element.get('name') for element in joint.findall(kind)]


def test_shipped_ros2_control_params_name_the_panda_arm() -> None:
    document = yaml.safe_load(CONTROL_PARAMS.read_text())
    assert forward_controller_joints(document) == PANDA_JOINTS
    manager = document['/**/controller_manager']['ros__parameters']
    assert manager['effort_controller']['type'] == (
        'forward_command_controller/ForwardCommandController'
    )
    assert document['/**/effort_controller']['ros__parameters']['interface_name'] == 'effort'


def test_panda_gets_a_gazebo_system_for_the_commanded_joints() -> None:
    root = ET.fromstring(with_gz_ros2_control(panda_urdf(), PANDA_JOINTS, [CONTROL_PARAMS]))
    [system] = root.findall('ros2_control')
    assert system.get('type') == 'system' and system.get('name')
    assert system.findtext('hardware/plugin') == 'gz_ros2_control/GazeboSimSystem'
    joints = system.findall('joint')
    assert [joint.get('name') for joint in joints] == PANDA_JOINTS
    for joint in joints:
        assert interfaces(joint, 'command_interface') == ['effort']
        assert interfaces(joint, 'state_interface') == ['position', 'velocity']
        [initial] = joint.findall("state_interface[@name='position']/param[@name='initial_value']")
        float(initial.text)
    # Joint 4's range is [-3.07, -0.07]: zero would start it outside its limits.
    joint4 = joints[3].find("state_interface/param[@name='initial_value']")
    assert float(joint4.text) == pytest.approx(-0.0698)


def test_panda_gets_the_plugin_pointing_at_the_parameter_file() -> None:
    root = ET.fromstring(with_gz_ros2_control(panda_urdf(), PANDA_JOINTS, [CONTROL_PARAMS]))
    [plugin] = root.findall('gazebo/plugin')
    assert plugin.get('filename') == 'gz_ros2_control-system'
    assert plugin.get('name') == 'gz_ros2_control::GazeboSimROS2ControlPlugin'
    [parameters] = plugin.findall('parameters')
    assert Path(parameters.text).is_absolute() and Path(parameters.text).is_file()
    assert plugin.find('ros') is None


def test_a_namespace_goes_to_the_plugin_as_an_absolute_name() -> None:
    urdf = with_gz_ros2_control(panda_urdf(), PANDA_JOINTS, [CONTROL_PARAMS], 'left_arm')
    assert ET.fromstring(urdf).findtext('gazebo/plugin/ros/namespace') == '/left_arm'


def test_the_model_is_unchanged_for_the_controller() -> None:
    before = RobotModel.from_urdf_string(panda_urdf())
    after = RobotModel.from_urdf_string(
        with_gz_ros2_control(panda_urdf(), PANDA_JOINTS, [CONTROL_PARAMS])
    )
    assert list(after.model.names) == list(before.model.names)
    assert after.nv == before.nv


def test_any_urdf_and_continuous_joints() -> None:
    urdf = with_gz_ros2_control(MIXED_JOINTS_URDF, ['shoulder', 'wrist'], [CONTROL_PARAMS])
    system = ET.fromstring(urdf).find('ros2_control')
    assert [joint.get('name') for joint in system.findall('joint')] == ['shoulder', 'wrist']


def test_a_urdf_that_has_both_comes_back_unchanged() -> None:
    urdf = with_gz_ros2_control(panda_urdf(), PANDA_JOINTS, [CONTROL_PARAMS])
    assert with_gz_ros2_control(urdf, ['other'], ['/elsewhere.yaml']) == urdf


def test_only_the_missing_part_is_added() -> None:
    root = ET.fromstring(panda_urdf())
    root.append(ET.Element('ros2_control', name='Mine', type='system'))
    urdf = with_gz_ros2_control(ET.tostring(root, encoding='unicode'), PANDA_JOINTS, [])
    result = ET.fromstring(urdf)
    assert [system.get('name') for system in result.findall('ros2_control')] == ['Mine']
    assert result.find('gazebo/plugin') is not None


@pytest.mark.parametrize(
    ('joints', 'message'),
    [
        (['panda_joint1', 'nope'], 'no movable joint nope'),
        (['panda_hand_joint'], 'no movable joint panda_hand_joint'),  # fixed
    ],
)
def test_a_joint_the_urdf_lacks_is_one_clear_error(joints, message) -> None:
    with pytest.raises(ModelError, match=message):
        with_gz_ros2_control(panda_urdf(), joints, [CONTROL_PARAMS])


@pytest.mark.parametrize('text', ['not xml', '<sdf version="1.9"/>'])
def test_not_a_urdf(text) -> None:
    with pytest.raises(ModelError, match='not'):
        with_gz_ros2_control(text, PANDA_JOINTS, [CONTROL_PARAMS])


@pytest.mark.parametrize(
    'document',
    [
        {'effort_controller': {'ros__parameters': {'joints': ['a']}}},
        {'/effort_controller': {'ros__parameters': {'joints': ['a']}}},
        {'/**/effort_controller': {'ros__parameters': {'joints': ['a']}}},
        {'/**': {'effort_controller': {'ros__parameters': {'joints': ['a']}}}},
    ],
)
def test_forward_controller_joints_reads_the_keys_the_spawner_reads(document) -> None:
    assert forward_controller_joints(document) == ['a']


def test_forward_controller_joints_missing() -> None:
    with pytest.raises(ModelError, match="no joints for 'effort_controller'"):
        forward_controller_joints({'controller_manager': {'ros__parameters': {}}})
