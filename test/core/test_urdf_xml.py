"""One URDF reader: every module that reads URDF XML refuses a non-URDF with the same error."""

from pathlib import Path

import pytest
from robots import example_urdf

from wbc_control.config.settings import root_link
from wbc_control.exceptions import ModelError
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.ros2_control_xml import with_gz_ros2_control
from wbc_control.model.urdf_xml import parse_urdf, root_link_name


def mujoco_rewrite(text: str) -> object:
    urdf_to_mujoco = pytest.importorskip('wbc_control.sim.urdf_to_mujoco')
    return urdf_to_mujoco.prepare_urdf(text, Path('.'))


READERS = {
    'parse_urdf': parse_urdf,
    'RobotModel': RobotModel.from_urdf_string,
    'ros2_control': lambda text: with_gz_ros2_control(text, ['joint1'], []),
    'mujoco': mujoco_rewrite,
}


@pytest.mark.parametrize('reader', READERS.values(), ids=READERS)
@pytest.mark.parametrize(
    ('text', 'message'),
    [
        ('', 'the robot description is empty'),
        ('  \n', 'the robot description is empty'),
        (
            '<robot name="r"><link name="a"></robot>',
            'the robot description is not a URDF: invalid XML',
        ),
        (
            '<sdf version="1.9"/>',
            'the robot description is not a URDF: its root is <sdf>, not <robot>',
        ),
    ],
)
def test_a_description_that_is_not_a_urdf_is_one_error(reader, text, message):
    with pytest.raises(ModelError) as error:
        reader(text)
    assert str(error.value).startswith(message)


def test_a_urdf_is_its_robot_element():
    root = parse_urdf('<robot name="r"><link name="base"/></robot>')
    assert root.tag == 'robot' and root.get('name') == 'r'
    assert [link.get('name') for link in root.iter('link')] == ['base']


@pytest.mark.parametrize('name', ['panda', 'talos', 'solo12'])
def test_the_root_link_is_the_one_pinocchio_hangs_on_the_world(name):
    path, floating_base = example_urdf(name)
    model = RobotModel.from_urdf_path(path, floating_base)
    assert root_link_name(path.read_text()) == root_link(model)


def test_a_urdf_with_two_trees_names_its_roots():
    two = '<robot name="two"><link name="a"/><link name="b"/></robot>'
    with pytest.raises(ModelError, match='2 root links'):
        root_link_name(two)
