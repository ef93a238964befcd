import xml.etree.ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pinocchio as pin
import pytest
from robots import MIXED_JOINTS_URDF, robot

from wbc_control.exceptions import (
    FrameNotFound,
    InvalidShape,
    JointNotFound,
    MissingJoints,
    ModelError,
)
from wbc_control.model.example_robots import example_robot_urdf, robots_directory
from wbc_control.model.mimic_joints import MimicJoint
from wbc_control.model.robot_model import JointStateMapping, RobotModel


def test_panda_joint_names_and_sizes():
    panda = robot('panda')
    assert panda.nq == panda.nv == panda.n_actuated == 9
    assert panda.joint_names[0] == 'panda_joint1'
    assert panda.joint_names[-1] == 'panda_finger_joint2'


def test_effort_limits_match_the_urdf_text():
    path, _ = example_robot_urdf('panda')
    root = ET.parse(path).getroot()
    efforts = {
        joint.get('name'): float(joint.find('limit').get('effort'))
        for joint in root.iter('joint')
        if joint.find('limit') is not None
    }
    panda = robot('panda')
    expected = [efforts[name] for name in panda.joint_names]
    np.testing.assert_array_equal(panda.effort_limits, expected)


def test_continuous_joint_is_exchanged_as_an_angle():
    model = RobotModel.from_urdf_string(MIXED_JOINTS_URDF)
    assert (model.nq, model.nv) == (4, 3)
    q = model.configuration([0.3, 2.5, 0.05])
    np.testing.assert_allclose(q, [0.3, np.cos(2.5), np.sin(2.5), 0.05])
    lower, upper = model.position_limits
    assert np.isinf(lower[1]) and np.isinf(upper[1])
    assert (lower[0], upper[0]) == (-2.0, 2.0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-3.1, 3.1), min_size=3, max_size=3))
def test_configuration_round_trip(angles):
    model = RobotModel.from_urdf_string(MIXED_JOINTS_URDF)
    q = model.configuration(angles)
    assert pin.isNormalized(model.model, q)
    np.testing.assert_allclose(model.joint_positions(q), angles, atol=1e-12)


def test_joint_state_mapping_any_order_and_extra_joints():
    panda = robot('panda')
    rng = np.random.default_rng(0)
    names = list(panda.joint_names) + ['gripper_extra', 'camera_pan']
    order = rng.permutation(len(names))
    shuffled = [names[i] for i in order]
    values = np.arange(len(names), dtype=float)[order]
    index, mimics = JointStateMapping(panda).message_indices(shuffled)
    np.testing.assert_array_equal(values[index], np.arange(panda.n_actuated))
    assert mimics is None


def test_joint_state_mapping_reports_missing_and_duplicate_joints():
    panda = robot('panda')
    mapping = JointStateMapping(panda)
    with pytest.raises(MissingJoints, match='panda_joint3'):
        mapping.message_indices([n for n in panda.joint_names if n != 'panda_joint3'])
    with pytest.raises(InvalidShape, match='duplicate'):
        mapping.message_indices(list(panda.joint_names) + ['panda_joint1'])


def test_unknown_names_raise_typed_errors_with_the_alternatives():
    panda = robot('panda')
    with pytest.raises(FrameNotFound, match='panda_hand') as error:
        panda.frame_id('hand_typo')
    assert error.value.name == 'hand_typo'
    with pytest.raises(JointNotFound, match='elbow'):
        panda.joint_index(['panda_joint1', 'elbow'])


#: A link and the fixed joint that attaches it share a name, as in example-robot-data's Z1.
SHARED_NAME_URDF = """<robot name="shared"><link name="base"/>
  <link name="arm"><inertial><mass value="1"/><origin xyz="0.1 0 0"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="tool"><inertial><mass value="0.1"/>
    <inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="tool" type="fixed"><parent link="arm"/><child link="tool"/>
    <origin xyz="0.3 0 0"/></joint></robot>"""


def test_a_link_sharing_its_name_with_a_joint_is_the_frame_meant():
    model = RobotModel.from_urdf_string(SHARED_NAME_URDF)
    frames = [frame.type for frame in model.model.frames if frame.name == 'tool']
    assert len(frames) == 2  # Pinocchio refuses the bare name: model.getFrameId('tool') raises
    frame = model.model.frames[model.frame_id('tool')]
    assert frame.type == pin.FrameType.BODY and frame.name == 'tool'
    assert model.model.frames[model.frame_id('hinge')].type == pin.FrameType.JOINT


def test_bad_models_raise_model_error(tmp_path):
    with pytest.raises(ModelError, match='empty'):
        RobotModel.from_urdf_string('  ')
    with pytest.raises(ModelError, match='does not exist'):
        RobotModel.from_urdf_path(tmp_path / 'missing.urdf')
    with pytest.raises(ModelError):
        RobotModel.from_urdf_string('<robot name="broken"><link name="a"></robot>')


def test_wrong_sizes_raise_invalid_shape():
    panda = robot('panda')
    with pytest.raises(InvalidShape):
        panda.configuration(np.zeros(3))
    with pytest.raises(InvalidShape):
        panda.velocity(np.zeros(10))


def test_floating_base_layout():
    talos = robot('talos')
    assert talos.floating_base
    assert talos.nq == 7 + talos.n_actuated
    assert talos.nv == 6 + talos.n_actuated
    pose = [0.1, 0.2, 1.0, 0.0, 0.0, np.sin(0.25), np.cos(0.25)]
    q = talos.configuration(np.zeros(talos.n_actuated), base_pose=pose)
    np.testing.assert_allclose(q[:7], pose)
    assert talos.indices.v.min() == 6


#: example-robot-data's double pendulum, as the SolidWorks URDF exporter writes joints without
#: limits: lower="0" upper="0" effort="0" velocity="0".
DOUBLE_PENDULUM = 'double_pendulum_description/urdf/double_pendulum.urdf'


def test_equal_lower_and_upper_limits_are_taken_as_none():
    """A zero range would pin the joint; MuJoCo ignores such limits too."""
    model = RobotModel.from_urdf_path(robots_directory() / DOUBLE_PENDULUM)
    assert model.zero_range_joints == ('joint1', 'joint2')
    lower, upper = model.position_limits
    assert np.all(lower == -np.inf) and np.all(upper == np.inf)
    assert np.all(model.effort_limits == np.inf)
    # Pinocchio's own convention for a joint without limits, which randomConfiguration takes.
    clipped = np.clip(model.model.lowerPositionLimit, -3.0, 3.0)
    assert np.all(clipped == -3.0)
    pin.randomConfiguration(model.model, clipped, -clipped)
    panda = robot('panda')
    assert panda.zero_range_joints == ()
    assert np.isfinite(panda.position_limits[0]).all()


def test_only_the_joints_with_equal_limits_lose_them():
    text = (robots_directory() / DOUBLE_PENDULUM).read_text()
    root = ET.fromstring(text)
    limit = root.find("joint[@name='joint2']/limit")
    limit.set('lower', '-1.5')
    limit.set('upper', '2.0')
    model = RobotModel.from_urdf_string(ET.tostring(root, encoding='unicode'))
    assert model.zero_range_joints == ('joint1',)
    lower, upper = model.position_limits
    np.testing.assert_array_equal(lower, [-np.inf, -1.5])
    np.testing.assert_array_equal(upper, [np.inf, 2.0])


def panda_with_finger_mimic(multiplier: str, offset: str) -> RobotModel:
    """The Panda, its second finger following the first as q2 = multiplier q1 + offset."""
    path, _ = example_robot_urdf('panda')
    root = ET.fromstring(path.read_text())
    mimic = root.find("joint[@name='panda_finger_joint2']/mimic")
    mimic.set('multiplier', multiplier)
    mimic.set('offset', offset)
    return RobotModel.from_urdf_string(ET.tostring(root, encoding='unicode'))


def test_a_mimic_joint_left_out_of_a_joint_state_follows_its_master():
    """URDF semantics, as robot_state_publisher applies them: q = m q_master + o, q̇ = m q̇."""
    panda = robot('panda')
    assert panda.mimic_joints == (MimicJoint('panda_finger_joint2', 'panda_finger_joint1'),)
    model = panda_with_finger_mimic('-2.0', '0.01')
    names = [name for name in model.joint_names if name != 'panda_finger_joint2']
    positions = np.arange(1.0, 9.0) / 10.0
    velocities = -np.arange(1.0, 9.0)
    index, mimics = JointStateMapping(model).message_indices(names)
    gathered, rates = positions[index], velocities[index]
    mimics.apply(gathered, rates)
    np.testing.assert_allclose(gathered, [*positions, -2.0 * 0.8 + 0.01])
    np.testing.assert_allclose(rates, [*velocities, -2.0 * -8.0])


def test_a_missing_master_is_named_and_a_mimic_joint_sent_is_used():
    panda = robot('panda')
    mapping = JointStateMapping(panda)
    without_master = [name for name in panda.joint_names if name != 'panda_finger_joint1']
    with pytest.raises(MissingJoints, match='panda_finger_joint1'):
        mapping.message_indices(without_master)
    with pytest.raises(MissingJoints, match="'panda_finger_joint1', 'panda_finger_joint2'"):
        mapping.message_indices(list(panda.joint_names[:7]))
    index, mimics = mapping.message_indices(list(reversed(panda.joint_names)))
    assert mimics is None
    np.testing.assert_array_equal(index, np.arange(panda.n_actuated)[::-1])
