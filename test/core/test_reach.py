"""The reach bound of wbc_control.model.reach against forward kinematics of real robots."""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pinocchio as pin
import pytest
from robots import robot

from wbc_control.model.example_robots import robots_directory
from wbc_control.model.reach import frame_reach
from wbc_control.model.robot_model import RobotModel

#: A 1 m slider carrying a 0.1 m arm: its travel is most of the reach.
SLIDER_URDF = """<robot name="slider"><link name="base"/>
  <link name="carriage"><inertial><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="arm"><inertial><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="tool"/>
  <joint name="slide" type="prismatic"><parent link="base"/><child link="carriage"/>
    <axis xyz="0 0 1"/><limit lower="-1.0" upper="0.5" effort="10" velocity="1"/></joint>
  <joint name="turn" type="revolute"><parent link="carriage"/><child link="arm"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="1"/></joint>
  <joint name="fixed_tool" type="fixed"><parent link="arm"/><child link="tool"/>
    <origin xyz="0.1 0 0"/></joint>
</robot>"""

#: (model, frame): revolute chains (Panda, UR5), continuous joints (Kinova Jaco), a prismatic
#: torso below the arm (TIAGo), a slider whose travel dominates.
CHAINS = {
    'slider': (lambda: RobotModel.from_urdf_string(SLIDER_URDF), 'tool'),
    'panda': (lambda: robot('panda'), 'panda_hand'),
    'ur5': (lambda: robot('ur5'), 'tool0'),
    'kinova': (
        lambda: RobotModel.from_urdf_path(
            robots_directory() / 'kinova_description/robots/kinova.urdf'
        ),
        'j2s6s200_end_effector',
    ),
    'tiago': (
        lambda: RobotModel.from_urdf_path(
            robots_directory() / 'tiago_description/robots/tiago_no_hand.urdf'
        ),
        'arm_tool_link',
    ),
}


@pytest.mark.parametrize('name', CHAINS)
@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_no_configuration_puts_the_frame_beyond_its_reach(name, seed):
    make, frame = CHAINS[name]
    model = make()
    frame_id = model.frame_id(frame)
    reach = frame_reach(model, frame_id)
    pin.seed(seed)
    lower = np.clip(model.model.lowerPositionLimit, -4.0, 4.0)
    q = pin.randomConfiguration(model.model, lower, np.clip(model.model.upperPositionLimit, -4, 4))
    data = model.model.createData()
    pin.framesForwardKinematics(model.model, data, q)
    assert reach.beyond(data.oMf[frame_id].translation) <= 1e-12


def test_the_panda_bound_is_the_sum_of_its_offsets():
    """Joint 1 at 0.333 m; then 0.316, 0.0825, √(0.0825² + 0.384²), 0.088 and the hand 0.107."""
    panda = robot('panda')
    reach = frame_reach(panda, panda.frame_id('panda_hand'))
    np.testing.assert_allclose(reach.anchor, [0.0, 0.0, 0.333])
    expected = 0.316 + 0.0825 + np.hypot(0.0825, 0.384) + 0.088 + 0.107
    assert reach.radius == pytest.approx(expected, abs=1e-3)
    assert reach.joint == 'panda_joint1'


def test_a_sliders_travel_counts_and_an_unbounded_one_gives_no_bound():
    slider = RobotModel.from_urdf_string(SLIDER_URDF)
    assert frame_reach(slider, slider.frame_id('tool')).radius == pytest.approx(1.1)
    free = RobotModel.from_urdf_string(SLIDER_URDF.replace('lower="-1.0" upper="0.5"', ''))
    assert frame_reach(free, free.frame_id('tool')) is None


def test_no_bound_on_a_floating_base_or_for_a_frame_no_joint_moves():
    talos = robot('talos')
    assert frame_reach(talos, talos.frame_id('gripper_left_joint')) is None
    panda = robot('panda')
    assert frame_reach(panda, panda.frame_id('panda_link0')) is None
