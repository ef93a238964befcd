"""The core's defaults and choice lists are the parameter schemas' (one source per value)."""

from dataclasses import asdict

import pytest

from wbc_control.conditioning.monitor import DiagnosticsSettings
from wbc_control.config.schema import load_schema
from wbc_control.defaults import schema_default
from wbc_control.inputs.joint_states import DEFAULT_POSITION_MARGIN, DEFAULT_VELOCITY_FACTOR
from wbc_control.inputs.odometry import ODOM_PAIRINGS
from wbc_control.inputs.timing import DEFAULT_FUTURE_TOLERANCE_S
from wbc_control.tasks.integral import DEFAULT_MAX_INTEGRAL


@pytest.mark.parametrize(
    ('value', 'node', 'name'),
    [
        (DEFAULT_POSITION_MARGIN, 'wbc_controller', 'position_margin'),
        (DEFAULT_VELOCITY_FACTOR, 'wbc_controller', 'velocity_factor'),
        (DEFAULT_POSITION_MARGIN, 'wbc_diagnostics', 'position_margin'),
        (DEFAULT_VELOCITY_FACTOR, 'wbc_diagnostics', 'velocity_factor'),
        (DEFAULT_FUTURE_TOLERANCE_S, 'wbc_controller', 'future_stamp_tolerance'),
    ],
)
def test_core_defaults_are_the_schemas(value, node, name):
    assert value == load_schema(node)[name].default


def test_the_diagnostics_settings_default_to_the_schema():
    schema = load_schema('wbc_diagnostics')
    assert asdict(DiagnosticsSettings()) == {
        name: schema[name].default for name in asdict(DiagnosticsSettings())
    }


def test_the_odometry_pairings_are_the_schemas_choices():
    assert ODOM_PAIRINGS == tuple(
        load_schema('wbc_controller')['odom_pairing'].validation['one_of<>'][0]
    )


def test_a_missing_parameter_is_a_named_error():
    with pytest.raises(KeyError, match='no_such_parameter'):
        schema_default('wbc_controller', 'no_such_parameter')


def test_the_integral_bound_defaults_to_the_schema():
    field = load_schema('wbc_controller').maps['tasks'].fields['max_integral']
    assert DEFAULT_MAX_INTEGRAL == field.default
