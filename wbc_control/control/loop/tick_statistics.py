"""Counters and timings of the controller's ticks, for its /diagnostics (no ROS needed).

Totals run since start; sums and flags over one diagnostics period are cleared by
:meth:`TickStatistics.start_period`.
"""

from collections import Counter

import numpy as np

from wbc_control.control.prioritized_controller import ControllerResult


class TickStatistics:
    """What the ticks did: rejected inputs, failures, compute times, limited joints, contacts."""

    def __init__(self, n_actuated: int, now: float) -> None:
        self.rejected: Counter[str] = Counter()
        self.non_finite_torques = 0
        self.compute_errors = 0
        self.last_error = ''
        self.result: ControllerResult | None = None
        self.commands = 0
        self._n = n_actuated
        self.start_period(now)

    def start_period(self, now: float) -> None:
        """Forget the per-period sums; `now` is a monotonic time in seconds."""
        self.period_start = now
        self.rejected_in_period: Counter[str] = Counter()
        self.failures_in_period = 0
        self.ticks_in_period = 0
        self.compute_last_s = self.compute_total_s = self.compute_max_s = 0.0
        self.saturated = np.zeros(self._n, dtype=bool)
        self.rate_limited = np.zeros(self._n, dtype=bool)
        self.pulling: set[str] = set()
        self.outside_friction_cone: set[str] = set()

    def reject(self, key: str) -> None:
        """Count one rejected input under `key` (`<input>.<reason>`)."""
        self.rejected[key] += 1
        self.rejected_in_period[key] += 1

    def tick(
        self,
        result: ControllerResult | None,
        saturated: np.ndarray,
        rate_limited: np.ndarray,
        seconds: float,
    ) -> None:
        """One accepted state: the controller's result, the limited joints, the compute time."""
        self.ticks_in_period += 1
        self.compute_last_s = seconds
        self.compute_total_s += seconds
        self.compute_max_s = max(self.compute_max_s, seconds)
        self.saturated |= saturated
        self.rate_limited |= rate_limited
        if result is None:
            return
        self.result = result
        contacts = result.contacts
        # Reports built only on ticks whose forces may pull or leave the cone (ContactReports).
        check = getattr(contacts, 'may_leave_friction_cone', None)
        if check is not None and not check():
            return
        for contact in contacts:
            if contact.pulling:
                self.pulling.add(contact.frame)
            if contact.outside_friction_cone:
                self.outside_friction_cone.add(contact.frame)

    def fail(self, kind: str, message: str) -> None:
        """A tick whose torque could not be used (the safe command went out instead)."""
        if kind == 'non_finite':
            self.non_finite_torques += 1
        else:
            self.compute_errors += 1
        self.failures_in_period += 1
        self.last_error = message

    def command(self) -> None:
        """Count one published command."""
        self.commands += 1

    def rate_hz(self, now: float) -> float:
        """Ticks per second over the period so far."""
        return self.ticks_in_period / max(now - self.period_start, 1e-9)

    def compute_mean_s(self) -> float:
        """Mean compute time of the period's ticks."""
        return self.compute_total_s / max(self.ticks_in_period, 1)
