"""Log lines throttled per key, decided before the logger is called.

rclpy's own throttle (`logger.warning(..., throttle_duration_sec=...)`) names its caller on
every call, printed or not: it walks the stack and reads the caller's source line, which costs
more than a tick. On a path that runs per message (a rejected joint state, a tick that fails) a
publisher sending bad data would spend much of a core on lines that are never printed.
`ThrottledLog` checks a monotonic clock first and calls the logger only for a line it prints;
the next printed line of a key says how many were held back since.
"""

from collections.abc import Callable
import time

from rclpy.impl.rcutils_logger import RcutilsLogger


class ThrottledLog:
    """At most one line per period for each key (a rejection reason, a failure kind).

    Keys are independent: a flood of one rejection does not hide another. The keys are the
    callers' fixed names, so the table stays as small as the set of reasons.

    Args:
        logger: the node's logger (`node.get_logger()`).
        period_s: the least time between two lines of one key (s), unless a call gives its
            own.
        clock: monotonic seconds; the wall clock would stall or burst when it is set.
    """

    def __init__(
        self, logger: RcutilsLogger, period_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._logger, self._period_s, self._clock = logger, period_s, clock
        self._next_s: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def info(self, key: str, message: str, period_s: float | None = None) -> None:
        """Log `message` at info level unless `key` printed a line within the period."""
        if self._due(key, period_s):
            self._logger.info(self._with_held(key, message))

    def warning(
        self, key: str, message: str, period_s: float | None = None, always: bool = False
    ) -> None:
        """Log `message` as a warning unless `key` printed a line within the period.

        `always` prints it in any case (a line that must not be lost) and starts the period.
        """
        if self._due(key, period_s, always):
            self._logger.warning(self._with_held(key, message))

    def error(self, key: str, message: str, period_s: float | None = None) -> None:
        """Log `message` as an error unless `key` printed a line within the period."""
        if self._due(key, period_s):
            self._logger.error(self._with_held(key, message))

    def _due(self, key: str, period_s: float | None, always: bool = False) -> bool:
        now_s = self._clock()
        if not always and now_s < self._next_s.get(key, now_s):
            self._held[key] = self._held.get(key, 0) + 1
            return False
        self._next_s[key] = now_s + (self._period_s if period_s is None else period_s)
        return True

    def _with_held(self, key: str, message: str) -> str:
        held = self._held.pop(key, 0)
        return f'{message} ({held} more not logged since the last such line)' if held else message
