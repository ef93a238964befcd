"""The simulator's settings from parameter values, checked against the robot (no ROS)."""

import numpy as np
import pytest
from robots import robot

from wbc_control.config.schema import load_schema
from wbc_control.exceptions import InvalidValue
from wbc_control.sim.settings import sim_settings


def defaults(**overrides) -> dict:
    """The schema's defaults of wbc_sim, with `overrides`."""
    values = {spec.name: spec.default for spec in load_schema('wbc_sim')}
    values.update(overrides)
    return values


def test_the_schema_defaults_make_valid_settings():
    panda = robot('panda')
    settings = sim_settings(defaults(), panda)
    assert (settings.control_steps, settings.publish_steps) == (1, 2)  # 1 ms; 500 Hz of 1 ms
    np.testing.assert_array_equal(settings.command_index, np.arange(panda.n_actuated))
    np.testing.assert_array_equal(settings.initial_positions, np.zeros(panda.n_actuated))
    assert settings.initial_base_pose is None
    assert settings.options.ground_plane and not settings.options.floating_base
    assert settings.options.gravity_m_s2 == (0.0, 0.0, -9.81)
    assert (settings.odom_frame, settings.base_frame) == ('odom', '')
    assert (
        settings.describe(0.001)
        == 'paced at real_time_factor 1.0, state every 2 step(s) of 0.001 s'
    )


def test_integers_are_accepted_where_seconds_are_expected():
    settings = sim_settings(
        defaults(timestep=0.002, control_period=0.004, command_timeout=1), robot('panda')
    )
    assert settings.control_steps == 2 and settings.command_timeout_s == 1.0


def test_named_initial_positions_override_the_model_order_ones():
    panda = robot('panda')
    values = defaults(
        initial_positions=[0.1] * panda.n_actuated,
        initial_joint_names=['panda_joint4'],
        initial_joint_positions=[-2.0],
    )
    positions = sim_settings(values, panda).initial_positions
    assert positions[panda.joint_index(['panda_joint4'])[0]] == -2.0
    assert np.count_nonzero(positions == 0.1) == panda.n_actuated - 1


def test_command_joints_give_the_actuated_index_of_each_entry():
    panda = robot('panda')
    values = defaults(command_joints=['panda_joint2', 'panda_joint1'])
    np.testing.assert_array_equal(sim_settings(values, panda).command_index, [1, 0])


@pytest.mark.parametrize(
    ('overrides', 'named'),
    [
        ({'control_period': 0.0015}, 'control_period'),
        ({'publish_rate': float('inf')}, 'publish_rate'),
        ({'gravity': [0.0, -9.81]}, 'gravity'),
        ({'initial_positions': [0.0, 1.0]}, 'initial_positions'),
        ({'initial_joint_names': ['panda_joint1'], 'initial_joint_positions': []}, 'differ'),
        ({'initial_joint_names': ['nope'], 'initial_joint_positions': [1.0]}, 'initial_joint'),
        ({'command_joints': ['panda_joint1', 'panda_joint1']}, 'duplicate'),
        ({'command_joints': ['nope']}, 'command_joints'),
        ({'initial_base_pose': [0, 0, 1, 0, 0, 0, 1]}, 'floating base'),
        ({'timestep': float('nan')}, 'timestep'),
    ],
)
def test_bad_values_are_refused_naming_the_parameter(overrides, named):
    with pytest.raises(InvalidValue, match=named):
        sim_settings(defaults(**overrides), robot('panda'))


def test_a_floating_base_takes_an_initial_pose():
    solo = robot('solo12')
    pose = [0.0, 0.0, 0.3, 0.0, 0.0, 0.0, 1.0]
    settings = sim_settings(defaults(initial_base_pose=pose), solo)
    np.testing.assert_array_equal(settings.initial_base_pose, pose)
    assert settings.options.floating_base
