"""The stop deadline: a stopped process ends within STOP_DEADLINE_S, forced if need be.

Two ways a shutdown can hang, and what ends each:

- a call of ours or of rclpy that lets Python threads run: a daemon thread started by the stop
  signal (:func:`force_exit`) ends the process, printing every thread's stack;
- the middleware's deletion of the node's entities, which rclpy makes holding the GIL: a
  :class:`~wbc_control.ros.hard_exit.HardExit` armed by :func:`shut_down` ends it, in C.

Either way the exit code is 0 after a stop signal (the stop was asked for).
"""

import faulthandler
import os
import sys
import threading
import time

import rclpy
from rclpy.impl.implementation_singleton import rclpy_implementation
from rclpy.node import Node

from wbc_control.ros.hard_exit import HardExit

#: Seconds after a stop signal by which the process has ended (ros2 launch escalates to
#: SIGTERM after 5 s).
STOP_DEADLINE_S = 3.0
#: How much later than the deadline's thread the GIL-free exit of a held teardown acts (s): the
#: thread, when it can run, ends the process first, and the message is given once.
HELD_TEARDOWN_GRACE_S = 0.2
#: After the deadline's thread, faulthandler's (which needs no GIL) dumps the stacks and ends
#: the process with exit code 1 (s).
FAULTHANDLER_GRACE_S = 0.5

#: Set while the node's middleware entities are being deleted (:func:`shut_down`).
_TEARING_DOWN = threading.Event()


def arm_deadline() -> threading.Timer:
    """Start the deadline's thread and faulthandler's GIL-free fallback; returns the thread."""
    deadline = threading.Timer(STOP_DEADLINE_S, force_exit)
    deadline.daemon = True
    deadline.start()
    # A call holding the GIL keeps the deadline's thread from running: this one needs none.
    faulthandler.dump_traceback_later(STOP_DEADLINE_S + FAULTHANDLER_GRACE_S, exit=True)
    return deadline


def force_exit() -> None:
    """End the process, saying why; where every thread was unless the middleware held it up."""
    if _TEARING_DOWN.is_set():
        # The middleware's slow release of the node is named, without stacks (test_stop_signals).
        sys.stderr.write(held_teardown_message(STOP_DEADLINE_S, signalled=True) + '\n')
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


def shut_down(node: Node | None, code: int, stopped_at: float | None) -> None:
    """Destroy the node, shut rclpy down and release the DDS participant, within the deadline.

    The deadline is :data:`STOP_DEADLINE_S` after the stop signal (`stopped_at`, monotonic), else
    after the teardown began. A teardown the middleware still holds then is left: the process
    ends, saying so, with exit code 0 after a stop signal and `code` otherwise, and the peers
    drop this participant when its lease runs out.
    """
    signalled = stopped_at is not None
    deadline_s = (stopped_at if signalled else time.monotonic()) + STOP_DEADLINE_S
    held = HardExit(
        deadline_s + HELD_TEARDOWN_GRACE_S,
        0 if signalled else code,
        held_teardown_message(STOP_DEADLINE_S, signalled),
    )
    # Fast DDS holds rclpy (and the GIL) in an entity's deletion after its peers exited
    # (test_stop_signals, holding-the-gil): HardExit ends that, not faulthandler's exit 1.
    if held.arm():
        faulthandler.cancel_dump_traceback_later()
    _TEARING_DOWN.set()
    try:
        try:
            if node is not None:
                node.destroy_node()
            rclpy.try_shutdown()
        except rclpy_implementation.RCLError:
            # Jazzy's signal handler may have shut the context down first: "already called".
            if rclpy.ok():
                raise
        # The DDS participant and its shared memory go now: end_process skips the teardown.
        rclpy.get_default_context().destroy()
    finally:
        held.cancel()
        _TEARING_DOWN.clear()


def held_teardown_message(waited_s: float, signalled: bool) -> str:
    """The line that says the middleware held the node's teardown past the deadline."""
    since = 'after the stop signal' if signalled else 'into its teardown'
    return (
        f'the middleware had not released the node {waited_s:g} s {since}: ending without '
        'waiting for it'
    )
