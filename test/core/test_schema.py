"""The schema loader: nested groups become dotted names; live arrays are checked as lists."""

from array import array

import pytest

from wbc_control.config.schema import load_schema
from wbc_control.exceptions import InvalidValue


def test_a_nested_group_is_named_with_dots_and_included_by_the_nodes():
    names = {'payload.frame', 'payload.mass', 'payload.center_of_mass', 'payload.inertia'}
    assert set(load_schema('payload').parameters) == names
    for node in ('wbc_controller', 'wbc_sim'):
        schema = load_schema(node)
        assert names <= set(schema.parameters)
        assert 'payload' not in schema.parameters
        assert schema.lookup('payload.mass').live
    # a map is not a group: tasks.<name>.* stays one map
    assert set(load_schema('wbc_controller').maps) == {'tasks'}


def test_an_array_parameter_set_live_is_checked_like_a_list():
    """A live double_array comes from rclpy as an array.array('d'), never as a list."""
    spec = load_schema('wbc_controller').lookup('tasks.hand.kp')
    assert spec.check(array('d', [1.0, 2.0, 3.0])) == array('d', [1.0, 2.0, 3.0])
    with pytest.raises(InvalidValue, match='tasks.hand.kp: must be >= 0.0'):
        spec.check(array('d', [1.0, -2.0, 3.0]), 'tasks.hand.kp')
    center = load_schema('payload')['payload.center_of_mass']
    assert center.check(array('d', [0.1, 0.2, 0.3])) is not None
    with pytest.raises(InvalidValue, match='payload.center_of_mass: must be a list'):
        center.check(0.1)
