"""The `payload.*` parameters -> a validated :class:`~wbc_control.model.payload.Payload`.

Shared by the controller (which ramps the payload into its model) and the simulator (which
attaches it in MuJoCo); the schema is ``payload_parameters.yaml``, which both include.
"""

from collections.abc import Mapping

from wbc_control.config._coerce import parameter_errors
from wbc_control.config.schema import load_schema
from wbc_control.model.payload import (
    Payload,
    check_center_of_mass,
    check_frame,
    check_inertia,
    check_mass,
)
from wbc_control.model.robot_model import RobotModel

_SCHEMA = load_schema('payload')
#: Every payload parameter's name.
PAYLOAD_PARAMETERS = tuple(_SCHEMA.parameters)


def parse_payload(robot: RobotModel, values: Mapping[str, object]) -> Payload:
    """The payload of the `payload.*` values (missing ones: their defaults).

    Raises:
        InvalidValue, InvalidShape, FrameNotFound: the message starts with the parameter.
    """
    given = {name: values[name] for name in PAYLOAD_PARAMETERS if values.get(name) is not None}
    for name, value in given.items():
        _SCHEMA[name].check(value)
    merged = {name: _SCHEMA[name].default for name in PAYLOAD_PARAMETERS} | given
    with parameter_errors('payload.mass'):
        mass = check_mass(merged['payload.mass'])
    with parameter_errors('payload.center_of_mass'):
        center_of_mass = check_center_of_mass(merged['payload.center_of_mass'])
    with parameter_errors('payload.inertia'):
        inertia = check_inertia(merged['payload.inertia'], mass)
    with parameter_errors('payload.frame'):
        frame = check_frame(robot, merged['payload.frame'], mass)
    return Payload(frame, mass, center_of_mass, inertia)


def payload_values(payload: Payload) -> dict[str, object]:
    """The parameter values of `payload` (what :func:`parse_payload` reads back)."""
    return {
        'payload.frame': payload.frame,
        'payload.mass': payload.mass,
        'payload.center_of_mass': payload.center_of_mass.tolist(),
        'payload.inertia': payload.inertia.tolist(),
    }
