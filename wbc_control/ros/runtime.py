"""The main() of every wbc_control node: run_node, a quick end_process, and executable lookup.

Stop signals are :mod:`wbc_control.ros.stop_signals`', the stop deadline and the node's
teardown :mod:`wbc_control.ros.forced_exit`'s, the robot-model parameters
:mod:`wbc_control.ros.robot_source`'s.
"""

import atexit
from collections.abc import Callable
import gc
import os
from pathlib import Path
import shutil
import sys
from typing import NoReturn

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.impl.implementation_singleton import rclpy_implementation
from rclpy.node import Node

from wbc_control.exceptions import StartupError, WbcError
from wbc_control.ros.executors import create_executor, executor_note
from wbc_control.ros.forced_exit import shut_down
from wbc_control.ros.stop_signals import StopSignals


def run_node(factory: Callable[[], Node], name: str, args: list[str] | None = None) -> int:
    """Init rclpy, build the node, spin until Ctrl-C / SIGTERM, shut down cleanly.

    Meant as the body of a console script's main(): it takes over SIGINT and SIGTERM
    (:class:`~wbc_control.ros.stop_signals.StopSignals`) and ends within the stop deadline
    (:mod:`wbc_control.ros.forced_exit`).

    Returns the process exit code: 0 after a normal shutdown, 1 when the node could not start
    (the reason is logged, without a traceback).
    """
    signals = StopSignals()
    try:
        rclpy.init(args=args)
    except (rclpy_implementation.RCLError, ValueError) as error:
        # Malformed --ros-args or parameter files: rcl's own message, no traceback.
        print(f'{name}: cannot start: {error}', file=sys.stderr)
        return 1
    node = executor = None
    code = 0
    try:
        # Outer try: a stop while a start-up error is reported would print a traceback.
        try:
            node = factory()
            pinned = getattr(node, 'EXECUTOR', None)  # a node may need one kind
            executor = create_executor(pinned=pinned)
            note = executor_note(pinned)
            if note is not None:
                node.get_logger().warning(note)
            executor.add_node(node)
            # What lives as long as the node stays out of the collector's passes, so that a
            # collection during a tick walks only what the tick allocated.
            gc.collect()
            gc.freeze()
            if signals.stopping:  # a stop kept, not raised, by a finalizer (test_stop_signals)
                raise KeyboardInterrupt
            signals.spinning = True
            executor.spin()
        except WbcError as error:
            code = 1
            rclpy.logging.get_logger(name).fatal(str(error))
        except rclpy_implementation.RCLError:
            # A signal invalidating the context mid-start-up raises RCLError: a stop, no error.
            if rclpy.ok():
                raise
        except RuntimeError:
            # A stop's KeyboardInterrupt inside rclpy's C++ surfaces as pybind11's RuntimeError.
            if not signals.stopping:
                raise
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        signals.stopping = True
        try:
            if executor is not None:
                # Else Fast DDS held entity deletions past the stop deadline (test_launch_run).
                executor.shutdown(timeout_sec=0)
        finally:  # the node's teardown whatever the executor did
            shut_down(node, code, signals.stopped_at)
    return code


def end_process(code: int | str | None) -> NoReturn:
    """End a console script that ran :func:`run_node` with `code`, skipping the teardown.

    The interpreter's teardown of numpy, scipy, Pinocchio and MuJoCo took the nodes past the 1 s
    they have to stop after SIGINT (test_shutdown); the node is gone and rclpy shut down, so
    only the exit handlers (logging) and a flush of the output still matter.
    """
    atexit._run_exitfuncs()
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code or 0)


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
