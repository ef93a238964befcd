"""The executor that spins the nodes: rclpy's EventsExecutor where it exists and is faster.

rclpy's `EventsExecutor` (`rclpy.experimental`, in the Jazzy and Kilted wheels) dispatches each
ready subscription from an event queue filled by the middleware's callbacks, instead of
rebuilding a wait set and scanning every entity on each turn as `SingleThreadedExecutor` does.
Its own `spin()` is not usable in these wheels: it blocks in C++ without running the
subscriptions' callbacks or Python's signal handlers. Its `spin_once(timeout_sec)` works, so
the executor returned here spins by calling that in a loop, waking at least every
:data:`SPIN_WAKE_S` seconds so that a stop signal is handled. A stop signal's KeyboardInterrupt
that lands inside a callback would be logged by the EventsExecutor as a fatal callback error
with a traceback (it still propagates); callbacks are therefore guarded so that the interrupt
is raised from the loop, between callbacks, as `SingleThreadedExecutor` raises it.
(`runtime.run_node` raises none once the spin runs: rclpy's own handler shuts the context down,
and a callback that then finds its publisher's context invalid ends quietly here.)

`WBC_EXECUTOR=single` (or `events`) in the environment overrides the choice, for measuring
one against the other (`wbc_bench`'s DDS runs; docs/performance.md); an unknown value is named
in a warning.

A node whose timers are its product pins `SingleThreadedExecutor` (its class attribute
`EXECUTOR`): the diagnostics sidecar, whose status must keep its rate while joint states
flood it. The events executor queues every event in one FIFO, so a node slower than its input
sees its timers wait behind the backlog (test/ros/test_sim_time_timers.py).
"""

from collections.abc import Callable
import inspect
import os
import time

import rclpy
from rclpy.context import Context
from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation

RCLError = rclpy_implementation.RCLError
EXECUTOR_VARIABLE = 'WBC_EXECUTOR'
EXECUTORS = ('events', 'single')
#: The default where rclpy has both (the one wbc_bench measured faster).
DEFAULT_EXECUTOR = 'events'
#: Longest wait inside one `spin_once` of the events executor (s): the stop-signal latency.
SPIN_WAKE_S = 0.1
#: How often the loop looks for callbacks created after the spin started (s).
GUARD_PERIOD_S = 1.0


def executor_kind(pinned: str | None = None) -> str:
    """The node's `pinned` kind, else the environment's, else the default ('events' if any)."""
    requested = _requested()
    kind = pinned or (requested if requested in EXECUTORS else DEFAULT_EXECUTOR)
    return 'events' if kind == 'events' and _events_executor() is not None else 'single'


def executor_note(pinned: str | None = None) -> str | None:
    """Why the environment's executor choice is not followed (None when it is)."""
    requested = _requested()
    if requested and requested not in EXECUTORS:
        choices = ', '.join(EXECUTORS)
        return f'{EXECUTOR_VARIABLE}={requested!r} is not one of {choices}: ignored'
    if requested and pinned and requested != pinned:
        return f'{EXECUTOR_VARIABLE}={requested} ignored: this node always spins {pinned!r}'
    if requested == 'events' and _events_executor() is None:
        return f'{EXECUTOR_VARIABLE}=events ignored: this rclpy has no EventsExecutor'
    return None


def create_executor(context: Context | None = None, pinned: str | None = None) -> Executor:
    """A new executor of :func:`executor_kind` in `context` (default: the global one)."""
    if executor_kind(pinned) == 'events':
        return SpinOnceLoop(_events_executor()(context=context), context)
    return SingleThreadedExecutor(context=context)


class SpinOnceLoop:
    """An executor whose `spin()` is its `spin_once` in a loop; all else is delegated.

    Args:
        executor: the executor (an `EventsExecutor`).
        context: its context (None: the global one); the loop ends when it shuts down.
    """

    def __init__(self, executor: Executor, context: Context | None = None) -> None:
        self._executor = executor
        self._context = rclpy.get_default_context() if context is None else context
        self._nodes: list = []
        self._interrupted = False

    def add_node(self, node: object) -> bool:
        """Add `node` (its callbacks are guarded when the spin starts)."""
        self._nodes.append(node)
        return self._executor.add_node(node)

    def spin(self) -> None:
        """Execute callbacks until the context shuts down (KeyboardInterrupt on a stop)."""
        spin_once, ok, clock = self._executor.spin_once, self._context.ok, time.monotonic
        guarded_at = -GUARD_PERIOD_S
        while ok():
            if clock() - guarded_at >= GUARD_PERIOD_S:  # entities created since
                self._guard_callbacks()
                guarded_at = clock()
            spin_once(timeout_sec=SPIN_WAKE_S)
            if self._interrupted:
                self._interrupted = False
                raise KeyboardInterrupt

    def __getattr__(self, name: str) -> object:
        return getattr(self._executor, name)

    def _guard_callbacks(self) -> None:
        for node in self._nodes:
            for entity in (*node.subscriptions, *node.timers, *node.services):
                callback = entity.callback
                if not getattr(callback, '_wbc_guarded', False):
                    entity.callback = self._guarded(callback)

    def _guarded(self, callback: Callable) -> Callable:
        """`callback` with the same arguments, keeping a KeyboardInterrupt for the loop."""

        def guarded(*args: object) -> object:
            try:
                return callback(*args)
            except KeyboardInterrupt:
                self._interrupted = True
                return None
            except RCLError:
                if self._context.ok():
                    raise
                return None  # rclpy's stop signal handler invalidated the context meanwhile

        def guarded_no_arguments() -> object:
            return guarded()

        takes_arguments = bool(inspect.signature(callback).parameters)
        wrapper = guarded if takes_arguments else guarded_no_arguments
        wrapper._wbc_guarded = True
        return wrapper


def _requested() -> str:
    """The environment's executor choice, normalised ('' when unset)."""
    return os.environ.get(EXECUTOR_VARIABLE, '').strip().lower()


def _events_executor():
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return None
    return EventsExecutor
