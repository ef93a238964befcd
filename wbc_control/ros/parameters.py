"""Declare a node's parameters from its schema, refuse names it does not declare.

The schema (:mod:`wbc_control.config.schema`) is the one place a parameter is defined; this
module only turns its entries into rclpy declarations and its checks into start-up errors and
refused live sets. Nodes are created with ``allow_undeclared_parameters=True`` so that a live
set of an unknown name reaches :func:`refuse_unknown` (which names it and the closest declared
parameter) instead of rclpy's anonymous "undeclared parameter(s)" error; at start-up,
:func:`check_overrides` turns every unknown name in the parameter files or on the command line
into a one-line error.
"""

from collections.abc import Iterable, Mapping

from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.parameter import Parameter

from wbc_control.config.schema import (
    ParameterSchema,
    ParameterSpec,
    unknown_parameter_message,
)
from wbc_control.exceptions import StartupError, WbcError

#: Parameters rclpy itself declares or reads; never reported as unknown.
ROS_PARAMETERS = ('use_sim_time', 'start_type_description_service')
ROS_PARAMETER_PREFIXES = ('qos_overrides.',)

_UNSET_TYPES = {
    'bool': Parameter.Type.BOOL,
    'int': Parameter.Type.INTEGER,
    'double': Parameter.Type.DOUBLE,
    'string': Parameter.Type.STRING,
    'bool_array': Parameter.Type.BOOL_ARRAY,
    'int_array': Parameter.Type.INTEGER_ARRAY,
    'double_array': Parameter.Type.DOUBLE_ARRAY,
    'string_array': Parameter.Type.STRING_ARRAY,
}


def declare(
    node: Node, spec: ParameterSpec, name: str | None = None, default: object = None
) -> object:
    """Declare one parameter as its spec says and return its value, checked by the spec.

    Numeric parameters are declared with dynamic typing so that ``kp: 100`` (an integer in
    YAML or on the command line) is accepted where a double is expected; the spec's check then
    refuses anything that is not a number. A parameter declared before (a managed node
    configured again after a cleanup) keeps its value, checked again.

    Raises:
        StartupError: the value has the wrong type or breaks a validation rule.
    """
    name = name or spec.name
    default = spec.default if default is None else default
    dynamic = spec.dynamic_typing or spec.type in ('double', 'double_array')
    if default is None or (default == [] and not dynamic):
        default = _UNSET_TYPES[spec.type] if not dynamic else None
    descriptor = ParameterDescriptor(
        description=spec.description, read_only=spec.read_only, dynamic_typing=dynamic
    )
    try:
        if node.has_parameter(name):  # None while declared by type and not set
            return spec.check(node.get_parameter_or(name).value, name)
        value = node.declare_parameter(name, default, descriptor).value
        return spec.check(value, name)
    except WbcError as error:  # the schema's check names the parameter itself
        raise StartupError(str(error)) from error
    except (ParameterException, TypeError, ValueError) as error:
        raise StartupError(f"parameter '{name}': {error}") from error


def declare_all(
    node: Node, schema: ParameterSchema, defaults: Mapping[str, object] | None = None
) -> dict[str, object]:
    """Declare every plain (unmapped) parameter of `schema`; returns name -> value.

    `defaults` override the schema's defaults where they depend on the robot (e.g. all joints).
    """
    defaults = defaults or {}
    return {spec.name: declare(node, spec, default=defaults.get(spec.name)) for spec in schema}


def declare_group(
    node: Node, schema: ParameterSchema, group: str, key: str, fields: Iterable[str]
) -> dict[str, object]:
    """Declare `fields` of one key of a mapped group (``tasks.<key>.<field>``); field -> value."""
    mapped = schema.maps[group]
    return {
        field: declare(node, mapped.fields[field], mapped.parameter(key, field))
        for field in fields
    }


def given_parameters(node: Node) -> list[str]:
    """Names of the parameters the user gave (parameter files and command line) for this node."""
    return sorted(getattr(node, '_parameter_overrides', {}))


def check_overrides(node: Node, schema: ParameterSchema) -> None:
    """Refuse start-up when a given parameter is not one the node declared.

    Raises:
        StartupError: one line naming the first unknown parameter and the closest declared one.
    """
    declared = [name for name in node._parameters if not _is_ros_parameter(name)]
    for name in given_parameters(node):
        if _is_ros_parameter(name) or node.has_parameter(name):
            continue
        raise StartupError(unknown_parameter_message(name, schema.closest(name, declared)))


def refuse_unknown(
    node: Node, schema: ParameterSchema, parameters: Iterable[Parameter]
) -> SetParametersResult | None:
    """A refusal naming the first live-set parameter the node does not declare, else None."""
    declared = [name for name in node._parameters if not _is_ros_parameter(name)]
    for parameter in parameters:
        if parameter.name in declared or _is_ros_parameter(parameter.name):
            continue
        reason = unknown_parameter_message(
            parameter.name, schema.closest(parameter.name, declared)
        )
        return SetParametersResult(successful=False, reason=reason)
    return None


def _is_ros_parameter(name: str) -> bool:
    return name in ROS_PARAMETERS or name.startswith(ROS_PARAMETER_PREFIXES)
