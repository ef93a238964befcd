"""The diagnostics sidecar's parameter values -> validated :class:`DiagnosticsSettings`.

The schema (``wbc_diagnostics_parameters.yaml``) checks each value's type and range, for
start-up and live values alike; this adds what one rule of the schema cannot say: every number
finite, and warn_condition below error_condition.
"""

from collections.abc import Mapping
from dataclasses import fields
import math

from wbc_control.conditioning.monitor import DiagnosticsSettings
from wbc_control.config.schema import load_schema
from wbc_control.exceptions import InvalidValue

_SCHEMA = load_schema('wbc_diagnostics')
#: The parameters DiagnosticsSettings is made of.
SETTINGS = tuple(field.name for field in fields(DiagnosticsSettings))


def diagnostics_settings(values: Mapping[str, object]) -> DiagnosticsSettings:
    """Validate the values of :data:`SETTINGS` (name -> value) into settings.

    Integers are accepted for the real-valued parameters, since ``-p warn_condition:=1000`` and
    ``ros2 param set`` pass them as integers.

    Raises:
        InvalidValue: a value has the wrong type or range, or warn_condition >= error_condition;
            the message names the parameter.
    """
    settings = {}
    for name in SETTINGS:
        value = _SCHEMA[name].check(values[name], name)
        if value is None:
            raise InvalidValue(f'{name}: must be set')
        if _SCHEMA[name].type == 'double':
            value = float(value)
            if not math.isfinite(value):
                raise InvalidValue(f'{name}: must be finite, got {value!r}')
        settings[name] = value
    if settings['warn_condition'] >= settings['error_condition']:
        raise InvalidValue(
            f'warn_condition ({settings["warn_condition"]:g}) must be below '
            f'error_condition ({settings["error_condition"]:g})'
        )
    return DiagnosticsSettings(**settings)
