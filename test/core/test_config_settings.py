"""Controller settings and rigid contacts from parameter values (config/settings.py)."""

import numpy as np
import numpy.testing as npt
import pytest
from robots import robot

from wbc_control.config.settings import (
    default_settings,
    parse_contacts,
    parse_controller_settings,
    root_link,
    update_settings,
)
from wbc_control.control.contact.contacts import ContactType
from wbc_control.exceptions import (
    InvalidShape,
    InvalidTaskConfig,
    InvalidValue,
    JointNotFound,
    ModelError,
)
from wbc_control.model.robot_model import RobotModel


def panda() -> RobotModel:
    return robot('panda')


# Controller settings ------------------------------------------------------------------------


def test_default_settings():
    settings = parse_controller_settings(panda(), {})
    assert settings.command_joints == panda().joint_names
    npt.assert_array_equal(settings.effort_limits, panda().effort_limits)
    assert np.isinf(settings.torque_rate_limits).all()
    assert settings.world_frame == 'panda_link0' == default_settings(panda())['world_frame']
    assert (settings.stale_command, settings.joint_state_timeout) == ('zero', 0.1)
    assert settings.singular_value_threshold == 0.03


def test_world_frame_defaults_to_the_urdf_root_link():
    assert root_link(robot('ur5')) == 'world'
    assert root_link(robot('talos_left_arm')) == 'arm_left_1_link'


def test_overrides_apply_to_command_joints_in_their_order():
    settings = parse_controller_settings(
        panda(),
        {
            'command_joints': ['panda_joint7', 'panda_joint1'],
            'effort_limits': [5.0, 50],
            'torque_rate_limit': [100.0, 0.0],
        },
    )
    npt.assert_array_equal(settings.command_index, [6, 0])
    expected = panda().effort_limits
    expected[[6, 0]] = [5.0, 50.0]
    npt.assert_array_equal(settings.effort_limits, expected)
    rates = np.full(9, np.inf)
    rates[6] = 100.0
    npt.assert_array_equal(settings.torque_rate_limits, rates)
    scalar = parse_controller_settings(panda(), {'torque_rate_limit': 200})
    npt.assert_array_equal(scalar.torque_rate_limits, np.full(9, 200.0))


def test_cpu_dma_latency_is_off_by_default_and_takes_any_latency():
    assert parse_controller_settings(panda(), {}).cpu_dma_latency == -1
    for microseconds in (0, 100, 2_000_000_000):
        settings = parse_controller_settings(panda(), {'cpu_dma_latency': microseconds})
        assert settings.cpu_dma_latency == microseconds


@pytest.mark.parametrize(
    'values, error, words',
    [
        ({'command_joints': ['panda_joint1', 'gripper']}, JointNotFound, ["'gripper'"]),
        ({'command_joints': []}, InvalidValue, ['command_joints', 'non-empty']),
        ({'command_joints': ['panda_joint1'] * 2}, InvalidValue, ['duplicate']),
        ({'effort_limits': [1.0, 2.0]}, InvalidShape, ['effort_limits', 'one value per']),
        ({'effort_limits': -1.0}, InvalidValue, ['effort_limits', '> 0']),
        ({'torque_rate_limit': -5.0}, InvalidValue, ['torque_rate_limit', '>= 0']),
        ({'torque_rate_limit': [1.0] * 3}, InvalidShape, ['torque_rate_limit']),
        ({'joint_state_timeout': 0.0}, InvalidValue, ['joint_state_timeout', '> 0']),
        ({'joint_state_timeout': 'soon'}, InvalidValue, ['joint_state_timeout', 'number']),
        ({'diagnostics_rate': -1.0}, InvalidValue, ['diagnostics_rate']),
        ({'world_frame': ''}, InvalidValue, ['world_frame']),
        ({'stale_command': 'hold'}, InvalidValue, ['stale_command', 'zero, gravity']),
        ({'singular_value_threshold': 1.5}, InvalidValue, ['singular_value_threshold']),
        ({'friction_coefficient': 0.0}, InvalidValue, ['friction_coefficient', '> 0']),
        ({'friction_coefficient': 'ice'}, InvalidValue, ['friction_coefficient', 'number']),
        ({'odom_pairing': 'nearest'}, InvalidValue, ['odom_pairing', 'latest, stamp']),
        ({'base_frame': ''}, InvalidValue, ['base_frame']),
        ({'cpu_dma_latency': -2}, InvalidValue, ['cpu_dma_latency', '>= -1']),
        ({'cpu_dma_latency': 0.5}, InvalidValue, ['cpu_dma_latency']),
        ({'task_transition_time': 11.0}, InvalidValue, ['task_transition_time', '<= 10']),
    ],
)
def test_setting_errors_name_the_parameter(values, error, words):
    with pytest.raises(error) as raised:
        parse_controller_settings(panda(), values)
    for word in words:
        assert word in str(raised.value)


def test_live_settings_update_and_refusals():
    settings = parse_controller_settings(panda(), {})
    changed = update_settings(
        settings, {'stale_command': 'gravity', 'singular_value_threshold': 0.01}
    )
    assert (changed.stale_command, changed.singular_value_threshold) == ('gravity', 0.01)
    assert settings.stale_command == 'zero'
    with pytest.raises(InvalidTaskConfig, match='joint_state_timeout: read-only'):
        update_settings(settings, {'joint_state_timeout': 1.0})
    with pytest.raises(InvalidValue, match='singular_value_threshold'):
        update_settings(settings, {'stale_command': 'gravity', 'singular_value_threshold': 0.0})


def test_friction_coefficient_is_live():
    settings = parse_controller_settings(panda(), {})
    assert settings.friction_coefficient == 0.7
    assert update_settings(settings, {'friction_coefficient': 1}).friction_coefficient == 1.0
    with pytest.raises(InvalidValue, match='friction_coefficient'):
        update_settings(settings, {'friction_coefficient': float('inf')})
    with pytest.raises(InvalidTaskConfig, match='odom_pairing: read-only'):
        update_settings(settings, {'odom_pairing': 'stamp'})


def test_a_floating_base_defaults_to_the_odom_frame_and_its_root_link():
    settings = parse_controller_settings(robot('solo12'), {})
    assert (settings.world_frame, settings.base_frame) == ('odom', 'base_link')
    assert settings.odom_pairing == 'latest'
    assert root_link(robot('talos')) == 'base_link'


# Contacts -----------------------------------------------------------------------------------

FEET = ['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT']


def test_contacts_take_one_type_each_or_none_for_surface():
    solo = robot('solo12')
    points = parse_contacts(solo, FEET, ['point'] * 4)
    assert [c.frame for c in points] == FEET
    assert {c.kind for c in points} == {ContactType.POINT} and points[0].dim == 3
    surfaces = parse_contacts(robot('talos'), ['left_sole_link', 'right_sole_link'], [])
    assert [(c.kind, c.dim) for c in surfaces] == [(ContactType.SURFACE, 6)] * 2
    # A fixed base may have contacts too (a closed chain), and needs none.
    assert parse_contacts(panda(), ['panda_hand'], None)[0].dim == 6
    assert parse_contacts(panda(), None, None) == ()


@pytest.mark.parametrize(
    'frames, types, error, words',
    [
        (None, None, ModelError, ['floating_base: true needs contacts']),
        (['FL_FOOT', 'toe', 'heel'], [], InvalidTaskConfig, ['contacts:', "'toe', 'heel'"]),
        (FEET, ['point', 'edge', 'point', 'ball'], InvalidTaskConfig, ["FR_FOOT: 'edge'", 'HR']),
        (FEET, ['point'], InvalidShape, ['contact_types:', '1 types for 4 contacts']),
        (['FL_FOOT', 'FL_FOOT'], [], InvalidTaskConfig, ['contacts:', 'duplicate', 'FL_FOOT']),
        ('FL_FOOT', [], InvalidValue, ['contacts', 'list of strings']),
        (FEET, ['along'] * 4, InvalidTaskConfig, ['surface, point']),
    ],
)
def test_contact_errors_name_the_bad_frames_and_types(frames, types, error, words):
    with pytest.raises(error) as raised:
        parse_contacts(robot('solo12'), frames, types)
    for word in words:
        assert word in str(raised.value)
