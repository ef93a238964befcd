"""Time rules for stamped inputs and the watchdog that replaces a stale state, independent of ROS.

Every stamped input (joint states, odometry) goes through one :class:`StampRules`, which judges
a stamp against the node's clock `now` (ROS time: simulated time under use_sim_time):

- 0 means "unstamped" (publishers that never set the header) and is always admitted;
- a stamp more than `future_tolerance_s` ahead of `now` is rejected ('future') and never
  becomes the reference of the order check, so one bad stamp cannot lock the input out;
- a stamp more than `timeout_s` behind `now` is rejected ('stale'), the first one included;
- otherwise the stamp must be later than the last admitted one ('out_of_order').

Two events restart the rules (the verdict says so, so that the caller also restarts its
watchdog and soft start): the node's clock jumping backwards (a simulator reset under
use_sim_time), and a stamp more than `timeout_s` older than the last admitted one (a restarted
publisher whose stamps start again).

A stale or future stamp that reads another kind of clock than the node's (:func:`other_clock`:
simulated time or a clock counting from boot against wall-clock time, or the reverse) is most
likely a configuration mistake, not a late message: the first such rejection carries a hint
naming the cause and the fix (:class:`ClockCheck`), and the hint stays readable for
diagnostics until a stamp is admitted again.

:class:`Watchdog` decides when the safe command must replace the task torques. It runs on both
the node's clock and the monotonic wall clock, so a stopped or rewound simulated clock still
expires it.
"""

import math
from typing import NamedTuple

import numpy as np

from wbc_control.defaults import schema_default
from wbc_control.exceptions import InvalidValue, WbcError

#: Default tolerance (s) for stamps ahead of the node's clock (clock skew between hosts).
DEFAULT_FUTURE_TOLERANCE_S = float(schema_default('wbc_controller', 'future_stamp_tolerance'))
#: A time earlier than this (s since 1970, in September 2001) is not a reading of the wall clock:
#: it is simulated time, or a clock counting from a computer's or a driver's start.
WALL_CLOCK_EPOCH_S = 1e9


def _positive(value: float, what: str) -> float:
    value = float(value)
    if not value > 0.0:
        raise InvalidValue(f'{what} must be > 0 (inf for none), got {value}')
    return value


def other_clock(stamp_s: float, now_s: float) -> str:
    """The likely cause and fix when a stamp and the node's clock read different clocks.

    Empty when both read the same kind of clock (both wall-clock time, or both not), whatever
    their difference, for stamp 0 (unstamped), and when they differ by no more than a plausible
    skew (:data:`DEFAULT_FUTURE_TOLERANCE_S`: a simulator's state can arrive just before the
    /clock of its step). A node on simulated time whose clock still reads 0 has received no
    /clock at all.
    """
    if stamp_s == 0.0 or abs(stamp_s - now_s) <= DEFAULT_FUTURE_TOLERANCE_S:
        return ''
    if now_s == 0.0:
        return (
            "this node's clock reads 0: it runs on simulated time (use_sim_time:=true) and no "
            '/clock has arrived; start the simulator that publishes /clock, or, for a robot or '
            'a driver stamping with the wall clock, set use_sim_time:=false'
        )
    stamp_wall, clock_wall = stamp_s >= WALL_CLOCK_EPOCH_S, now_s >= WALL_CLOCK_EPOCH_S
    if clock_wall and not stamp_wall:
        return (
            'the stamps are not wall-clock time (simulated time, or a driver clock counting '
            'from its start) while this node runs on the wall clock: with a simulator that '
            'publishes /clock (wbc_sim does), start this node with use_sim_time:=true; with a '
            'driver, have it stamp its states with the ROS clock'
        )
    if stamp_wall and not clock_wall:
        return (
            'the stamps are wall-clock time while this node runs on simulated time '
            '(use_sim_time:=true): for a robot or a driver stamping with the wall clock, set '
            'use_sim_time:=false; a simulator must stamp its states with the time it '
            'publishes on /clock'
        )
    return ''


class ClockCheck:
    """Tells once when stamps and the node's clock read different clocks (:func:`other_clock`).

    :meth:`check` returns the hint the first time it holds, and empty again until it changed
    or a stamp was found on the node's clock (:meth:`clear`) in between; :attr:`hint` holds the
    current one.
    """

    def __init__(self) -> None:
        self.hint = ''

    def check(self, stamp_s: float, now_s: float) -> str:
        """The hint for this stamp if it is new (to report), else empty."""
        hint = other_clock(stamp_s, now_s)
        new = hint if hint != self.hint else ''
        self.hint = hint
        return new

    def clear(self) -> None:
        """A stamp agreed with the node's clock: a later disagreement is new again."""
        self.hint = ''


class InputRejected(WbcError):
    """An input sample was rejected; `reason` is a short machine-friendly key.

    `hint` names the likely cause and fix when the stamp reads another clock than the node's
    (set on the first such rejection only, so that it is reported once).
    """

    def __init__(self, reason: str, detail: str, restarted: bool = False, hint: str = '') -> None:
        self.reason = reason
        self.restarted = restarted  # the time rules restarted before rejecting
        self.hint = hint
        super().__init__(f'{reason}: {detail}')


class StampVerdict(NamedTuple):
    """Whether a stamp is admitted, why not, and whether the rules restarted first."""

    reason: str | None  # None: admitted; else 'future' | 'stale' | 'out_of_order'
    detail: str
    restarted: bool  # the clock or the publisher jumped back: reset watchdogs and ramps
    hint: str = ''  # a new other-clock hint (see ClockCheck), to report once


class StampRules:
    """The time rules of the module docstring for one input stream.

    Args:
        timeout_s: a stamp older than `now` by more than this is stale (s).
        future_tolerance_s: a stamp ahead of `now` by more than this is rejected (s).
    """

    def __init__(
        self, timeout_s: float, future_tolerance_s: float = DEFAULT_FUTURE_TOLERANCE_S
    ) -> None:
        self.timeout_s = _positive(timeout_s, 'timeout')
        self.future_tolerance_s = _positive(future_tolerance_s, 'future tolerance')
        self._last_stamp_s = -np.inf
        self._last_now_s = -np.inf
        self.clock_check = ClockCheck()

    @property
    def clock_hint(self) -> str:
        """Why the stamps are rejected, while they read another clock than the node's."""
        return self.clock_check.hint

    def reset(self) -> None:
        """Forget the last admitted stamp and clock reading."""
        self._last_stamp_s = -np.inf
        self._last_now_s = -np.inf

    def admit(self, stamp_s: float, now_s: float | None) -> StampVerdict:
        """Judge `stamp_s` at node time `now_s`; an admitted stamp becomes the order reference.

        `now_s` None checks the order only (no clock to compare with).
        """
        restarted = now_s is not None and now_s < self._last_now_s
        if restarted:
            self.reset()
        if now_s is None:
            now_s = stamp_s
        else:
            self._last_now_s = now_s
        if stamp_s == 0.0:
            return StampVerdict(None, '', restarted)
        if stamp_s > now_s + self.future_tolerance_s:
            detail = f'stamp {stamp_s:.6f} s is {stamp_s - now_s:.3f} s ahead of the clock'
            return StampVerdict(
                'future', detail, restarted, self.clock_check.check(stamp_s, now_s)
            )
        if stamp_s < now_s - self.timeout_s:
            detail = f'stamp {stamp_s:.6f} s is {now_s - stamp_s:.3f} s behind the clock'
            return StampVerdict('stale', detail, restarted, self.clock_check.check(stamp_s, now_s))
        if self.clock_check.hint:
            self.clock_check.clear()
        if stamp_s < self._last_stamp_s - self.timeout_s:
            self._last_stamp_s = -np.inf
            restarted = True
        if stamp_s <= self._last_stamp_s:
            detail = (
                f'stamp {stamp_s:.6f} s is not after the last accepted {self._last_stamp_s:.6f} s'
            )
            return StampVerdict('out_of_order', detail, restarted)
        self._last_stamp_s = stamp_s
        return StampVerdict(None, '', restarted)


def check_period(timeout_s: float, max_period_s: float) -> float:
    """The watchdog's check period: the longest at most `max_period_s` that divides `timeout_s`.

    The checks restart from each state (the node resets its timer on every tick), so the
    ceil(timeout / max_period)-th check after the last state falls on the timeout itself: the
    safe command goes out when the state turns stale, not up to a period later.
    """
    return timeout_s / max(1, math.ceil(timeout_s / max_period_s - 1e-9))


class Watchdog:
    """Expires after `timeout_s` of node time or `wall_timeout_s` of wall time without a state.

    Feed it node time (ROS clock, s) and a monotonic wall clock (s, e.g. time.monotonic()).
    A node clock that went backwards since the last feed counts as expired, as does one that
    stopped while the wall clock runs on.

    A check that comes more than the wall timeout after the previous check or state means this
    process stalled (the checks run every fraction of the timeout, postponed by each state:
    :func:`check_period`), not its input: a state may be
    queued behind the check, still in the middleware's buffers, and a lock-stepped simulator
    would take the safe command for an answer and step with it. The wall clock then restarts
    at the stall's end: the input gets a whole wall timeout to show up. Once per state (a
    second stall before the next state grants nothing), and never for a state already stale;
    the node clock's criterion still applies (on a robot, where node time is wall time, a stall
    of more than `timeout_s` still sends the safe command at once).

    Before the first state the same holds for the start: the safe command goes out once no
    state came for a wall timeout since the first check (the node's spin start), not at once,
    which a lock-stepped simulator would take for the answer to its first state. After
    :meth:`reset` (a clock jump) it is expired at once.

    Args:
        timeout_s: node-time limit (s).
        wall_timeout_s: wall-time limit (s); default `timeout_s`.
    """

    def __init__(self, timeout_s: float, wall_timeout_s: float | None = None) -> None:
        self.timeout_s = _positive(timeout_s, 'timeout')
        wall = timeout_s if wall_timeout_s is None else wall_timeout_s
        self.wall_timeout_s = _positive(wall, 'wall timeout')
        self.rearm()

    def rearm(self) -> None:
        """Start over as if just built: the first check opens the start's wall-timeout grace.

        For a controller that starts commanding again (a managed node's activation): its old
        state no longer counts, and a new one gets the grace a first state gets.
        """
        self._fed: tuple[float, float] | None = None
        self._last_check_s: float | None = None  # wall time of the previous check
        self._stale = True  # the previous check's verdict
        self._grace_from_s = -np.inf  # wall time the last stall ended (the wall age's origin)
        self._started_s: float | None = None  # wall time of the first check; -inf after reset

    def feed(self, node_s: float, wall_s: float) -> None:
        """A good state ticked at these times (the process ran then: it counts as a check)."""
        self._fed, self._stale, self._last_check_s = (node_s, wall_s), False, wall_s

    def reset(self) -> None:
        """Forget the last feed (after a clock jump): expired until the next good state."""
        self._fed, self._started_s = None, -np.inf

    def age(self, node_s: float, wall_s: float) -> float | None:
        """Seconds since the last feed, the larger of node and wall age; None before the first."""
        if self._fed is None:
            return None
        return max(node_s - self._fed[0], wall_s - self._fed[1])

    def expired(self, node_s: float, wall_s: float) -> bool:
        """True when the safe command must go out."""
        last_check_s, self._last_check_s = self._last_check_s, wall_s
        was_stale, self._stale = self._stale, True
        if self._fed is None:
            if self._started_s is None:
                self._started_s = wall_s
            self._stale = wall_s - self._started_s > self.wall_timeout_s
            return self._stale
        node_age = node_s - self._fed[0]
        if node_age < 0.0 or node_age > self.timeout_s:
            return True
        fed_wall_s = self._fed[1]
        stalled = last_check_s is not None and wall_s - last_check_s > self.wall_timeout_s
        if stalled and not was_stale and fed_wall_s > self._grace_from_s:
            self._grace_from_s = wall_s
        self._stale = wall_s - max(fed_wall_s, self._grace_from_s) > self.wall_timeout_s
        return self._stale
