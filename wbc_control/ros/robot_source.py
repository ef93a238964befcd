"""The robot-model parameters every node shares: the model from a URDF string, file or topic."""

from pathlib import Path
import time
from typing import NamedTuple

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.wait_for_message import wait_for_message
from std_msgs.msg import String

from wbc_control.config.schema import ParameterSchema, load_schema
from wbc_control.exceptions import ModelError, StartupError
from wbc_control.model.robot_model import RobotModel
from wbc_control.ros.parameters import check_overrides, declare, declare_all


class RobotSource(NamedTuple):
    """The robot model a node runs and the URDF it came from."""

    robot: RobotModel
    urdf_xml: str  # the URDF text
    directory: Path  # where relative mesh paths resolve: the URDF's folder, else the cwd


def load_robot_model(node: Node) -> RobotSource:
    """Robot model from `robot_description` (URDF XML) or `urdf_path`, plus `floating_base`.

    Declares the robot-model parameters of the schema (``robot_model_parameters.yaml``). With
    `robot_description` and `urdf_path` empty and `robot_description_topic` set, the URDF is
    read from that topic (std_msgs/String, transient local: what robot_state_publisher
    publishes), waiting up to `robot_description_timeout` s.

    Raises:
        StartupError: no model source is set, or the model cannot be built.
    """
    values = declare_all(node, load_schema('robot_model'))
    description, path = values['robot_description'], values['urdf_path']
    topic = values['robot_description_topic']
    if not description and not path and topic:
        description = _wait_for_description(
            node, topic, float(values['robot_description_timeout'])
        )
    floating_base = values['floating_base']
    try:
        if description:
            robot = RobotModel.from_urdf_string(description, floating_base)
            return RobotSource(robot, description, Path.cwd())
        if path:
            robot = RobotModel.from_urdf_path(path, floating_base)
            return RobotSource(robot, Path(path).read_text(), Path(path).resolve().parent)
    except (ModelError, OSError) as error:
        raise StartupError(f'cannot load the robot model: {error}') from error
    raise StartupError(
        "no robot model: set parameter 'robot_description' (URDF XML) or 'urdf_path' (a URDF file)"
        ' (or robot_description_topic)'
    )


def declare_node_parameters(node: Node, schema: ParameterSchema) -> dict[str, object]:
    """Declare what `schema` adds to the robot-model parameters; refuse unknown given names.

    Call after :func:`load_robot_model`, which declares the robot-model parameters the schema
    includes.

    Returns:
        Name -> value of the parameters declared here.

    Raises:
        StartupError: a value breaks its rule, or a given parameter is not in the schema.
    """
    values = {
        spec.name: declare(node, spec) for spec in schema if not node.has_parameter(spec.name)
    }
    check_overrides(node, schema)
    return values


def _wait_for_description(node: Node, topic: str, timeout_s: float) -> str:
    """The first URDF published on `topic`, e.g. robot_state_publisher's robot_description.

    Waits on a wait set of its own (rclpy's `wait_for_message`), not by spinning the node: a
    managed node is configured from inside its executor's callback, and spinning it elsewhere
    would take it out of that executor. A stop signal ends the wait at once.
    """
    qos = QoSProfile(
        depth=1,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )
    deadline = time.monotonic() + timeout_s
    while node.context.ok():
        remaining = deadline - time.monotonic()
        if remaining <= 0.0:
            break
        received, message = wait_for_message(
            String, node, topic, qos_profile=qos, time_to_wait=remaining
        )
        if received:
            return message.data
    raise StartupError(
        f"no URDF on '{topic}' within {timeout_s:g} s (parameter robot_description_topic)"
    )
