"""How `run_node`'s stop-signal handler ends a start-up, in process.

A stop signal during start-up abandons it by a KeyboardInterrupt; raised inside a finalizer
(a ``__del__``, e.g. of a logger freed while a start-up error unwinds, when ``ros2 launch``
stops a node because another failed to start) Python would print the interrupt as ignored,
with a traceback, and go on: the handler keeps the stop for `run_node` to act on instead.
Once the executor spins the handler raises nothing (rclpy's own handler ends the spin). A
shutdown that hangs is ended by the handler's deadline, which says where each thread was, or,
when the middleware holds up the node's teardown, that it did.
"""

from collections.abc import Iterator
import faulthandler
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from wbc_control.ros import forced_exit, stop_signals


@pytest.fixture
def signals() -> Iterator[stop_signals.StopSignals]:
    """A handler installed for the test; the process's handlers and timers restored after."""
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    handler = stop_signals.StopSignals()
    yield handler
    if handler._deadline is not None:  # its forced exit must not end the test process
        handler._deadline.cancel()
    faulthandler.cancel_dump_traceback_later()
    for number, previous_handler in previous.items():
        signal.signal(number, previous_handler)


def test_a_stop_during_start_up_abandons_it(signals):
    with pytest.raises(KeyboardInterrupt):
        signals._on_signal(signal.SIGINT, sys._getframe())
    assert signals.stopping
    signals._on_signal(signal.SIGTERM, sys._getframe())  # a second signal is ignored


def test_a_stop_inside_a_finalizer_is_kept_not_raised(signals):
    class Finalized:
        def __del__(self) -> None:
            signals._on_signal(signal.SIGINT, sys._getframe())

    try:
        Finalized().__del__()  # a frame named __del__, called so that an exception would show
    except KeyboardInterrupt:
        pytest.fail('the stop was raised inside a finalizer')
    assert signals.stopping and not signals.spinning


def test_a_stop_while_spinning_raises_nothing(signals):
    signals.spinning = True
    signals._on_signal(signal.SIGINT, sys._getframe())
    assert signals.stopping


HANGING_SHUTDOWN = textwrap.dedent(
    """
    import os, signal, time
    from wbc_control.ros import stop_signals

    def a_shutdown_that_hangs():
        time.sleep(30.0)

    signals = stop_signals.StopSignals()
    signals.spinning = True
    os.kill(os.getpid(), signal.SIGINT)
    a_shutdown_that_hangs()
    """
)


def test_a_hanging_shutdown_is_ended_at_the_deadline_with_every_threads_stack():
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, '-c', HANGING_SHUTDOWN],
        capture_output=True,
        text=True,
        timeout=30.0,
        env={**os.environ, 'PYTHONFAULTHANDLER': ''},
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr  # the forced exit is a requested stop
    assert 'forcing the exit' in done.stderr
    assert 'a_shutdown_that_hangs' in done.stderr, done.stderr  # where it hung
    assert forced_exit.STOP_DEADLINE_S <= elapsed < forced_exit.STOP_DEADLINE_S + 20.0


SLOW_TEARDOWN = textwrap.dedent(
    """
    import ctypes, os, signal, sys, time
    from rclpy.node import Node
    from wbc_control.ros import runtime

    def wait_in_the_middleware():
        if sys.argv[1] == 'holding-the-gil':
            ctypes.PyDLL(None).sleep(30)  # as rclpy's call into Fast DDS: the GIL stays taken
        else:
            time.sleep(30.0)

    class SlowToRelease(Node):
        def __init__(self):
            super().__init__('slow_to_release')
            self.create_timer(0.2, self.stop)

        def stop(self):
            print(time.monotonic(), flush=True)
            os.kill(os.getpid(), signal.SIGINT)

        def destroy_node(self):
            wait_in_the_middleware()  # as Fast DDS deleting an entity whose peers just exited

    runtime.run_node(SlowToRelease, 'slow_to_release', [])
    print('run_node returned')
    """
)


@pytest.mark.parametrize('wait', ['releasing-the-gil', 'holding-the-gil'])
def test_a_middleware_slow_to_release_the_node_is_left_at_the_deadline_and_named(wait):
    """Whether or not the held call lets Python threads run, the stop ends at the deadline."""
    done = subprocess.run(
        [sys.executable, '-c', SLOW_TEARDOWN, wait], capture_output=True, text=True, timeout=60.0
    )
    ended = time.monotonic()
    assert done.returncode == 0, done.stderr
    message = 'the middleware had not released the node 3 s after the stop signal'
    assert done.stderr.count(message) == 1, done.stderr
    assert 'forcing the exit' not in done.stderr, done.stderr  # not a hang of ours: no stacks
    assert 'Timeout' not in done.stderr, done.stderr  # nor faulthandler's
    assert 'run_node returned' not in done.stdout
    stopped = float(done.stdout.split()[0])  # CLOCK_MONOTONIC: one clock for both processes
    # Left at the deadline, not after the 30 s teardown; the margin is the exit's on a loaded
    # machine, as for the hanging shutdown above.
    assert forced_exit.STOP_DEADLINE_S <= ended - stopped < forced_exit.STOP_DEADLINE_S + 20.0
