"""A process exit at a set time that needs no Python thread to run: POSIX timers, in C.

rclpy holds the GIL through every call into rcl, including the middleware's deletion of a
node's entities, and Fast DDS can hold such a call for seconds once peers are gone (Jazzy: the
graph update published for each deleted entity waits for the participant's send lock, held by a
thread that closes a shared-memory port and waits for the transport's watchdog, itself waiting
for a port lock in shared memory). No Python thread can end that wait: none can run. A timer
created with ``timer_create(CLOCK_MONOTONIC, SIGEV_THREAD)`` calls a C function on a thread of
its own when it expires, without the GIL: here ``system`` (the message, through ``/bin/sh``, to
the inherited standard error) and then ``_exit`` (the exit code), each with its one argument as
the timer's ``sigval``.

Linux with glibc (the platform of the ROS 2 wheels); elsewhere :meth:`HardExit.arm` returns False
and nothing is armed.
"""

import ctypes
import ctypes.util
import shlex
import time

_CLOCK_MONOTONIC = 1  # the clock of time.monotonic() on Linux
_SIGEV_THREAD = 2
_TIMER_ABSTIME = 1
#: After the message, so that it is out before the process ends (s).
EXIT_AFTER_MESSAGE_S = 0.1


class _SigEvent(ctypes.Structure):
    """glibc's ``struct sigevent`` (64 bytes) as SIGEV_THREAD uses it."""

    _fields_ = [
        ('sigev_value', ctypes.c_void_p),  # union sigval: the argument of the function
        ('sigev_signo', ctypes.c_int),
        ('sigev_notify', ctypes.c_int),
        ('sigev_notify_function', ctypes.c_void_p),
        ('sigev_notify_attributes', ctypes.c_void_p),
        ('_pad', ctypes.c_byte * 32),
    ]


class _TimeSpec(ctypes.Structure):
    _fields_ = [('tv_sec', ctypes.c_long), ('tv_nsec', ctypes.c_long)]


class _ITimerSpec(ctypes.Structure):
    _fields_ = [('it_interval', _TimeSpec), ('it_value', _TimeSpec)]


def _libc() -> ctypes.CDLL | None:
    """The C library, with timer_create (librt before glibc 2.34)."""
    for name in (None, ctypes.util.find_library('rt')):
        try:
            library = ctypes.CDLL(name, use_errno=True)
            for symbol in ('timer_create', 'timer_settime', 'timer_delete', 'system', '_exit'):
                getattr(library, symbol)
        except (OSError, AttributeError):
            continue
        return library
    return None


class HardExit:
    """At `at_s` on the monotonic clock: `message` on standard error, then exit with `code`.

    Args:
        at_s: when, in time.monotonic() seconds.
        code: the exit code.
        message: one line for standard error.
    """

    def __init__(self, at_s: float, code: int, message: str) -> None:
        self.at_s, self.code = at_s, code
        # The timers' threads read it after Python may have moved on: kept alive here.
        self._command = ctypes.create_string_buffer(
            f'printf "%s\\n" {shlex.quote(message)} >&2'.encode()
        )
        self._timers: list[ctypes.c_void_p] = []
        self._libc = _libc()

    def arm(self) -> bool:
        """Start both timers; False where this C library has none (nothing armed then)."""
        libc = self._libc
        if libc is None:
            return False
        message = ctypes.cast(self._command, ctypes.c_void_p).value
        calls = (
            (libc.system, message, self.at_s),
            (libc._exit, self.code, self.at_s + EXIT_AFTER_MESSAGE_S),
        )
        for function, argument, at_s in calls:
            if not self._start(function, argument, at_s):
                self.cancel()
                return False
        return True

    def cancel(self) -> None:
        """Delete the timers that were started (before they expire: nothing happens)."""
        while self._timers:
            self._libc.timer_delete(self._timers.pop())

    def _start(self, function: ctypes._CFuncPtr, argument: int, at_s: float) -> bool:
        libc = self._libc
        event = _SigEvent()
        event.sigev_notify = _SIGEV_THREAD
        event.sigev_value = argument
        event.sigev_notify_function = ctypes.cast(function, ctypes.c_void_p).value
        timer = ctypes.c_void_p()
        if libc.timer_create(_CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(timer)) != 0:
            return False
        self._timers.append(timer)
        at_s = max(at_s, time.monotonic() + 1e-3)  # an absolute 0 would disarm the timer
        seconds = int(at_s)
        expiry = _ITimerSpec(it_value=_TimeSpec(seconds, int((at_s - seconds) * 1e9)))
        return libc.timer_settime(timer, _TIMER_ABSTIME, ctypes.byref(expiry), None) == 0
