"""What the simulator does with torque commands and the wall clock (no ROS, no MuJoCo).

:class:`TorqueCommandInput` validates commands (one value per ``command_joints`` entry, finite)
and holds them in actuated-joint order, with zero torque once they are older than the timeout;
:class:`RealTimePacer` says how many publish periods the simulation owes the wall clock (paced
mode), or how long a lock-stepped state must wait for its wall time.
"""

from collections import Counter
from collections.abc import Callable
import math
import time

import numpy as np

from wbc_control.exceptions import WbcError

#: Pacing never runs more than this many publish periods in one call; beyond that the simulation
#: drops the backlog (it is slower than the requested real-time factor).
MAX_CATCH_UP_PERIODS = 10


class CommandRejected(WbcError):
    """A torque command was not applied; `reason` is a short key used for counting."""

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        super().__init__(f'{reason}: {detail}')


class TorqueCommandInput:
    """Validates commands in `command_joints` order and holds them in actuated-joint order.

    Joints outside `command_joints` get zero torque. In paced mode a command older than
    `timeout_s` of simulated time (or none at all) means zero torque on every joint; before the
    first command the input is stale (zero torque) even without a timeout (`timeout_s` 0).
    """

    def __init__(self, n_actuated: int, command_index: np.ndarray, timeout_s: float) -> None:
        self._index = command_index  # (n_cmd,) actuated position of each command entry
        self._timeout_s = timeout_s
        self._torque = np.zeros(n_actuated)
        self._received_s = -math.inf
        self.rejected: Counter[str] = Counter()

    def accept(self, values: np.ndarray, now_s: float) -> np.ndarray:
        """Store one command (raises CommandRejected); returns the torque in actuated order."""
        if values.shape != self._index.shape:
            self._reject(
                'length',
                f'{values.shape[0]} values, expected {self._index.shape[0]} '
                '(one per command_joints entry)',
            )
        if not np.isfinite(values).all():
            self._reject('non_finite', 'NaN or Inf in the command')
        self._torque[:] = 0.0
        self._torque[self._index] = values
        self._received_s = now_s
        return self._torque

    def torque_at(self, now_s: float) -> tuple[np.ndarray, bool]:
        """The torque to apply at simulated time `now_s`, and whether the input is stale."""
        never = self._received_s == -math.inf  # stale whatever the timeout: nothing to apply
        stale = never or (self._timeout_s > 0.0 and now_s - self._received_s > self._timeout_s)
        return (np.zeros_like(self._torque) if stale else self._torque), stale

    def _reject(self, reason: str, detail: str) -> None:
        self.rejected[reason] += 1
        raise CommandRejected(reason, detail)


class RealTimePacer:
    """How many publish periods the simulation owes the wall clock at each timer callback.

    The wall clock starts at the first call, so start-up time is not counted as a backlog.

    Args:
        real_time_factor: simulated seconds per wall second; 0 runs as fast as possible.
        period_s: simulated time of one publish period.
        clock: the wall clock in seconds (monotonic).
    """

    def __init__(
        self,
        real_time_factor: float,
        period_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._factor = real_time_factor
        self._period_s = period_s
        self._clock = clock
        self._start_wall_s: float | None = None
        self._start_sim_s = 0.0
        self.dropped_backlog = False

    def periods_due(self, sim_time_s: float) -> int:
        """Whole publish periods to run now (1 when running as fast as possible)."""
        self.dropped_backlog = False
        if self._factor == 0.0:
            return 1
        now_s = self._now(sim_time_s)
        target_s = self._start_sim_s + self._factor * (now_s - self._start_wall_s)
        due = math.floor((target_s - sim_time_s) / self._period_s + 1e-9)
        if due > MAX_CATCH_UP_PERIODS:
            self.dropped_backlog = True
            self._start_wall_s = now_s
            self._start_sim_s = sim_time_s + MAX_CATCH_UP_PERIODS * self._period_s
            return MAX_CATCH_UP_PERIODS
        return max(due, 0)

    def wait_s(self, sim_time_s: float) -> float:
        """Lock-step: wall seconds until the state at `sim_time_s` is due (≤ 0: publish now).

        The state at simulated time t goes out no earlier than t / `real_time_factor` of wall
        time after the first one; 0 when running as fast as possible. More than
        MAX_CATCH_UP_PERIODS behind, the wall clock restarts (no burst to catch up).
        """
        self.dropped_backlog = False
        if self._factor == 0.0:
            return 0.0
        now_s = self._now(sim_time_s)
        due_s = self._start_wall_s + (sim_time_s - self._start_sim_s) / self._factor
        if now_s - due_s > MAX_CATCH_UP_PERIODS * self._period_s / self._factor:
            self.dropped_backlog = True
            self._start_wall_s, self._start_sim_s = now_s, sim_time_s
            return 0.0
        return due_s - now_s

    def _now(self, sim_time_s: float) -> float:
        """The wall clock; its first reading, with `sim_time_s`, is the pacing's origin."""
        now_s = self._clock()
        if self._start_wall_s is None:
            self._start_wall_s, self._start_sim_s = now_s, sim_time_s
        return now_s
