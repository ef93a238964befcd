"""How `run_node`'s stop-signal handler ends a start-up, in process.

A stop signal during start-up abandons it by a KeyboardInterrupt; raised inside a finalizer
(a ``__del__``, e.g. of a logger freed while a start-up error unwinds, when ``ros2 launch``
stops a node because another failed to start) Python would print the interrupt as ignored,
with a traceback, and go on: the handler keeps the stop for `run_node` to act on instead.
Once the executor spins the handler raises nothing (rclpy's own handler ends the spin).
"""

from collections.abc import Iterator
import faulthandler
import signal
import sys

import pytest

from wbc_control.ros import runtime


@pytest.fixture
def signals() -> Iterator[runtime._StopSignals]:
    """A handler installed for the test; the process's handlers and timers restored after."""
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    handler = runtime._StopSignals()
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
