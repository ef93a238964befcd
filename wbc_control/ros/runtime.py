"""What every wbc_control node shares: the robot-model parameters and the main() wrapper."""

import atexit
from collections.abc import Callable
import faulthandler
import gc
import os
from pathlib import Path
import shutil
import signal
import sys
import threading
import time
from types import FrameType
from typing import NamedTuple, NoReturn

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.impl.implementation_singleton import rclpy_implementation
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.wait_for_message import wait_for_message
from std_msgs.msg import String

from wbc_control.config.schema import ParameterSchema, load_schema
from wbc_control.exceptions import ModelError, StartupError, WbcError
from wbc_control.model.robot_model import RobotModel
from wbc_control.ros.executors import create_executor, executor_note
from wbc_control.ros.hard_exit import HardExit
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


def run_node(factory: Callable[[], Node], name: str, args: list[str] | None = None) -> int:
    """Init rclpy, build the node, spin until Ctrl-C / SIGTERM, shut down cleanly.

    Meant as the body of a console script's main(): it takes over SIGINT and SIGTERM (see
    :class:`_StopSignals`) and, once rclpy is shut down, readies the process for a quick exit.

    Returns the process exit code: 0 after a normal shutdown, 1 when the node could not start
    (the reason is logged, without a traceback).
    """
    signals = _StopSignals()
    try:
        rclpy.init(args=args)
    except (rclpy_implementation.RCLError, ValueError) as error:
        # Malformed --ros-args or parameter files are reported by rcl itself.
        print(f'{name}: cannot start: {error}', file=sys.stderr)
        return 1
    node = executor = None
    code = 0
    try:
        # The outer try catches a stop signal that arrives while a start-up error is being
        # reported (ros2 launch stops the other nodes when one fails to start): no traceback.
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
            if signals.stopping:  # a stop signal arrived while a finalizer ran (`_on_signal`)
                raise KeyboardInterrupt
            signals.spinning = True
            executor.spin()
        except WbcError as error:
            code = 1
            rclpy.logging.get_logger(name).fatal(str(error))
        except rclpy_implementation.RCLError:
            # A signal can invalidate the context while the node is still being built or a
            # callback still runs; only an error raised while rclpy is still up is a failure.
            if rclpy.ok():
                raise
        except RuntimeError:
            # The stop signal's KeyboardInterrupt raised inside rclpy's C++ (taking a message)
            # comes out as pybind11's RuntimeError: a requested stop, not a failure.
            if not signals.stopping:
                raise
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        signals.stopping = True
        try:
            if executor is not None:
                # Before the node's entities go: otherwise Fast DDS can hold an entity's
                # deletion past the stop deadline (test_launch_run: Ctrl-C ends with exit 0).
                executor.shutdown(timeout_sec=0)
        finally:  # the node's teardown whatever the executor did
            _shut_down(node, code, signals.stopped_at)
            signals.ignore()
    return code


#: Seconds after a stop signal by which the process has ended, forced if need be (ros2 launch
#: escalates to SIGTERM after 5 s).
STOP_DEADLINE_S = 3.0
#: How much later than the deadline's thread the GIL-free exit of a held teardown acts (s): the
#: thread, when it can run, ends the process first, and the message is given once.
HELD_TEARDOWN_GRACE_S = 0.2


#: Set while the node's middleware entities are being deleted (:func:`_shut_down`).
_TEARING_DOWN = threading.Event()


def _force_exit() -> None:
    """End the process, saying why; where every thread was unless the middleware held it up."""
    if _TEARING_DOWN.is_set():
        # Fast DDS can take seconds to delete an entity right after its peers have exited
        # (test_stop_signals: the middleware slow to release the node is left and named).
        sys.stderr.write(_held_teardown_message(STOP_DEADLINE_S, signalled=True) + '\n')
        sys.stderr.flush()
        os._exit(0)
    sys.stderr.write(
        f'did not stop within {STOP_DEADLINE_S:g} s of the stop signal: forcing the exit; '
        'where each thread was:\n'
    )
    sys.stderr.flush()
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    sys.stderr.flush()
    os._exit(0)


class _StopSignals:
    """SIGINT and SIGTERM stop the node once; later ones are ignored.

    Installed before ``rclpy.init``, whose own handlers shut the context down (which ends the
    spin) and then call these. The first signal also interrupts a start-up in progress. A
    second one is common: Ctrl-C in a terminal reaches every process of the group and
    ``ros2 launch`` sends its own SIGINT as well. Raised as KeyboardInterrupt in the middle of
    the shutdown, or delivered during the interpreter's finalization, it would end the process
    with -SIGINT instead of 0.
    """

    def __init__(self) -> None:
        self.stopping = False
        #: time.monotonic() of the first stop signal (None before one).
        self.stopped_at: float | None = None
        #: Set once the executor spins: rclpy's own handlers (installed by ``rclpy.init``,
        #: which call these after theirs) shut the context down, which ends the spin.
        self.spinning = False
        self._deadline: threading.Timer | None = None
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, self._on_signal)

    def ignore(self) -> None:
        """Ignore both signals from now on, in the OS (rclpy is shut down).

        Python's finalization puts SIG_DFL back for the signals it handles, so a signal arriving
        then would kill the process; SIG_IGN is left in place.
        """
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, signal.SIG_IGN)

    def _on_signal(self, number: int, frame: FrameType | None) -> None:
        self._arm_deadline()
        if self.stopping:
            return
        self.stopping = True
        # Spinning: no KeyboardInterrupt in the middle of a callback (the executor would log it
        # as a failed callback); the context rclpy's handler shut down ends the spin. Inside a
        # finalizer (a __del__, e.g. of a logger freed while a start-up error unwinds) Python
        # would print the interrupt as ignored, with a traceback: `run_node` checks `stopping`
        # before it spins instead, and a failed start-up ends anyway.
        if not self.spinning and not _in_finalizer(frame):  # a start-up in progress
            raise KeyboardInterrupt

    def _arm_deadline(self) -> None:
        """A stop signal must end the process even if the shutdown hangs.

        Later signals are ignored (above), so a hang in the shutdown would otherwise last until
        SIGKILL; a daemon thread ends the process after :data:`STOP_DEADLINE_S` instead, saying
        so and printing every thread's stack (a slow middleware it names without the stacks,
        :func:`_force_exit`). That thread needs the GIL: should a call of ours hold it through
        the deadline, faulthandler's own thread, which needs no GIL, prints every thread's stack
        0.5 s later and ends the process with exit code 1; a middleware call that holds it
        through the node's teardown is ended by :func:`_shut_down` (test_stop_signals).
        """
        if self._deadline is None:
            self.stopped_at = time.monotonic()
            self._deadline = threading.Timer(STOP_DEADLINE_S, _force_exit)
            self._deadline.daemon = True
            self._deadline.start()
            faulthandler.dump_traceback_later(STOP_DEADLINE_S + 0.5, exit=True)


def _in_finalizer(frame: FrameType | None) -> bool:
    """Whether `frame` or a frame it was called from is a ``__del__``."""
    while frame is not None:
        if frame.f_code.co_name == '__del__':
            return True
        frame = frame.f_back
    return False


def _shut_down(node: Node | None, code: int, stopped_at: float | None) -> None:
    """Destroy the node, shut rclpy down and release the DDS participant, within a deadline.

    Tolerates a signal handler that got there first: on Jazzy, SIGINT / SIGTERM shut the context
    down from the signal handler; `try_shutdown` can then race it and raise "rcl_shutdown
    already called". Destroying the context deletes the DDS participant (and its shared-memory
    segments) now, not in the interpreter's teardown, which :func:`end_process` skips.

    Fast DDS can hold one of those calls for seconds after the peers exited, and rclpy keeps the
    GIL through it, so no Python thread can end the wait (:mod:`wbc_control.ros.hard_exit`).
    A teardown still held at the stop deadline (:data:`STOP_DEADLINE_S` after the stop signal,
    else after the teardown began) is left: the process ends there, saying so, with exit code 0
    after a stop signal and `code` otherwise. The peers then drop this participant when its
    lease runs out.
    """
    signalled = stopped_at is not None
    deadline_s = (stopped_at if signalled else time.monotonic()) + STOP_DEADLINE_S
    held = HardExit(
        deadline_s + HELD_TEARDOWN_GRACE_S,
        0 if signalled else code,
        _held_teardown_message(STOP_DEADLINE_S, signalled),
    )
    if held.arm():
        # The wait is the middleware's: `held` ends it without the stacks of our threads.
        faulthandler.cancel_dump_traceback_later()
    _TEARING_DOWN.set()
    try:
        try:
            if node is not None:
                node.destroy_node()
            rclpy.try_shutdown()
        except rclpy_implementation.RCLError:
            if rclpy.ok():
                raise
        rclpy.get_default_context().destroy()
    finally:
        held.cancel()
        _TEARING_DOWN.clear()


def _held_teardown_message(waited_s: float, signalled: bool) -> str:
    since = 'after the stop signal' if signalled else 'into its teardown'
    return (
        f'the middleware had not released the node {waited_s:g} s {since}: ending without '
        'waiting for it'
    )


def end_process(code: int | str | None) -> NoReturn:
    """End a console script that ran :func:`run_node` with `code`, skipping the teardown.

    The interpreter's teardown deallocates every module numpy, scipy, Pinocchio and MuJoCo
    loaded: 0.3 to 1.5 s on a loaded machine, after the node is gone, and past the 1 s a node
    has to stop after SIGINT. By then the node is destroyed and rclpy shut down, so only the
    exit handlers (logging) and a flush of the output still matter.
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
