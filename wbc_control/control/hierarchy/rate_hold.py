"""How much the torque-rate limit holds the command: a filtered share of ticks at its edge.

A command that the rate limit holds tick after tick lags what the hierarchy asks for. Where a
weak direction's push (`level_kernel.weak_stiffness`) turns faster than the limit lets the
command follow, the lag drives the arm into a limit cycle through the singularity: a UR10
reaching out of reach at 1000 N m/s (its shoulders' 330 N m in 0.33 s) cycled through its
stretched elbow at 1.3-1.9 rad/s, its command on the rate window's edge in 72 % of the ticks of
the last second, while every run that came to rest had none there. The share s of recent ticks
at which some joint's torque sat on that edge (`torque_limits.range_flags`), filtered with the
time constant `RATE_HOLD_TIME`, softens the push to k / (1 + g s) (`level_kernel`); a command
the limit never holds (no rate limit, or one fast for the arm) keeps s = 0 and its stiffness.
This rule is ours, chosen by measurement (`dev/unconfigured_reach.py`), not a paper's.
"""

import math

import numpy as np

#: Time constant (s) of the share's filter: a few periods of the cycles it is to catch.
RATE_HOLD_TIME = 0.1


class RateHold:
    """The filtered share s in [0, 1] of ticks whose command the rate limit held (docstring)."""

    __slots__ = ('share', '_time_s')

    def __init__(self) -> None:
        self.share = 0.0
        self._time_s: float | None = None

    def reset(self) -> None:
        """Start again from 0: after a stale period or a restart its past is not the robot's."""
        self.share, self._time_s = 0.0, None

    def update(self, rate_limited: np.ndarray, now_s: float | None) -> float:
        """The share after a tick at `now_s` whose joints `rate_limited` `(n_act,)` were held.

        s moves by 1 − e^(−Δt / `RATE_HOLD_TIME`) of the way to 1 (some joint held) or to 0
        (none), Δt the time since the previous tick. Without a time (`now_s` None), at the
        first tick and where time did not advance it is held; where time went back (a
        simulation reset) it starts again from 0.
        """
        if now_s is None:
            return self.share
        previous, self._time_s = self._time_s, now_s
        if previous is None or now_s == previous:
            return self.share
        if now_s < previous:
            self.share = 0.0
            return self.share
        held = 1.0 if rate_limited.any() else 0.0
        if held or self.share:
            step = 1.0 - math.exp(-(now_s - previous) / RATE_HOLD_TIME)
            self.share += step * (held - self.share)
        return self.share
