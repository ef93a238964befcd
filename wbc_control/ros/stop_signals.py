"""SIGINT and SIGTERM stop a node once, quietly, whatever it is doing when they arrive.

Installed by :func:`wbc_control.ros.runtime.run_node` before ``rclpy.init``, whose own handlers
shut the context down (which ends the spin) and then call these. A second signal is common:
Ctrl-C in a terminal reaches every process of the group and ``ros2 launch`` sends its own SIGINT
as well.
"""

import signal
import threading
import time
from types import FrameType

from wbc_control.ros import forced_exit


class StopSignals:
    """The first stop signal stops the node and arms the stop deadline; later ones do nothing."""

    def __init__(self) -> None:
        self.stopping = False
        #: time.monotonic() of the first stop signal (None before one).
        self.stopped_at: float | None = None
        #: Set once the executor spins: from then on rclpy's handlers end the spin.
        self.spinning = False
        self._deadline: threading.Timer | None = None
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, self._on_signal)

    def _on_signal(self, number: int, frame: FrameType | None) -> None:
        if self._deadline is None:  # a shutdown that hangs must not last until SIGKILL
            self.stopped_at = time.monotonic()
            self._deadline = forced_exit.arm_deadline()
        if self.stopping:
            return
        self.stopping = True
        # Spinning, a KeyboardInterrupt would be logged as a failed callback; inside a
        # finalizer Python prints it as ignored, with a traceback (test_stop_signals):
        # run_node checks `stopping` before it spins instead.
        if not self.spinning and not _in_finalizer(frame):  # abandon a start-up in progress
            raise KeyboardInterrupt


def _in_finalizer(frame: FrameType | None) -> bool:
    """Whether `frame` or a frame it was called from is a ``__del__``."""
    while frame is not None:
        if frame.f_code.co_name == '__del__':
            return True
        frame = frame.f_back
    return False
