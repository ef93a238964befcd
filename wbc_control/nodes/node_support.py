"""What every wbc_control node shares: the robot-model parameters and the main() wrapper."""

from collections.abc import Callable
from pathlib import Path
import shutil
import sys

from rcl_interfaces.msg import ParameterDescriptor
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation
from rclpy.node import Node

from wbc_control.exceptions import ModelError, WbcError
from wbc_control.robot_model import RobotModel


class StartupError(WbcError):
    """A node cannot start with the parameters it was given."""


def declare_read_only(node: Node, name: str, default, description: str):
    """Declare a structural parameter (read-only at runtime) and return its value."""
    descriptor = ParameterDescriptor(description=description, read_only=True)
    return node.declare_parameter(name, default, descriptor).value


def load_robot_model(node: Node) -> RobotModel:
    """Robot model from `robot_description` (URDF XML) or `urdf_path`, plus `floating_base`.

    Raises:
        StartupError: neither parameter is set, or the model cannot be built.
    """
    description = declare_read_only(
        node, 'robot_description', '', 'URDF XML of the robot (the ROS convention)'
    )
    path = declare_read_only(
        node, 'urdf_path', '', 'URDF file, used when robot_description is empty'
    )
    floating_base = declare_read_only(
        node, 'floating_base', False, 'true: the root link is a free-flyer (legged robots)'
    )
    try:
        if description:
            return RobotModel.from_urdf_string(description, floating_base)
        if path:
            return RobotModel.from_urdf_path(path, floating_base)
    except ModelError as error:
        raise StartupError(f'cannot load the robot model: {error}') from error
    raise StartupError(
        "no robot model: set parameter 'robot_description' (URDF XML) or 'urdf_path' (a URDF file)"
    )


def run_node(factory: Callable[[], Node], name: str, args: list[str] | None = None) -> int:
    """Init rclpy, build the node, spin until Ctrl-C / SIGTERM, shut down cleanly.

    Returns the process exit code: 0 after a normal shutdown, 1 when the node could not start
    (the reason is logged, without a traceback).
    """
    try:
        rclpy.init(args=args)
    except (rclpy_implementation.RCLError, ValueError) as error:
        # Malformed --ros-args or parameter files are reported by rcl itself.
        print(f'{name}: cannot start: {error}', file=sys.stderr)
        return 1
    node = None
    try:
        node = factory()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        executor.spin()
    except WbcError as error:
        rclpy.logging.get_logger(name).fatal(str(error))
        return 1
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except rclpy_implementation.RCLError:
        # A signal can invalidate the context while the node is still being built or a
        # callback still runs; only an error raised while rclpy is still up is a failure.
        if rclpy.ok():
            raise
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


def exit_with(code: int) -> None:
    """sys.exit for console-script entry points."""
    sys.exit(code)


def executable(name: str) -> str:
    """Path of an installed console script: next to this interpreter first, then on PATH.

    Raises:
        StartupError: the script is not installed.
    """
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise StartupError(f'{name} is not installed (pip install -e . or colcon build)')
    return found
