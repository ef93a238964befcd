"""The damping band at speed: ε widened while a joint moves fast, narrowed again at rest.

Inside a level's band (sᵢ < ε s_max) Chiaverini's (1997) variable damping weighs a weak
direction's target with ρᵢ = 1 − (sᵢ / ε s_max)² (`level_kernel._damping`). ρᵢ rises from 0 to
1 while sᵢ crosses the band, in about ε s_max / |ṡᵢ| seconds, and |ṡᵢ| grows with the joints'
speed: an arm that meets its stretched singularity at its velocity limits has the damping come
in within a few ticks, and the torque that brakes it steps. Widening the band in proportion to
the fastest joint's speed |q̇|_max above `BAND_SPEED` keeps that crossing time from shrinking
with the speed; at rest the band is ε, so where the arm settles nothing changes.

The widening factor rises towards its target as a first-order filter with `BAND_RISE_TIME`
and falls as e^(−t / `BAND_FALL_TIME`) until it meets its target (from 3 to 1 in ln 3 ≈ 1.1 s):
it must not step with the speed (a humanoid's foot impact steps q̇) and must stay wide while
the arm brakes, which is when the weak directions come in. This rule and its constants are
ours, chosen by measurement on the arms of test_unconfigured_robots.py
(`dev/unconfigured_reach.py`), not a paper's.
"""

import math

#: v_ε (rad/s): above this speed of the fastest joint the band's factor tends to |q̇|_max / v_ε.
BAND_SPEED = 1.0
#: The largest factor (reached at |q̇|_max = 3 v_ε).
WIDEST_FACTOR = 3.0
#: The widest band speed may make (ε itself may be wider): a direction at 0.3 s_max is no
#: longer near a singularity, and a band past 1 would damp the level's strongest direction.
WIDEST_THRESHOLD = 0.3
#: Time constant (s) of the factor's rise towards a larger target.
BAND_RISE_TIME = 0.1
#: Time constant (s) of the factor's exponential fall, down to a smaller target.
BAND_FALL_TIME = 1.0


def widening(speed: float) -> float:
    """min(max(1, `speed` / v_ε), `WIDEST_FACTOR`): the factor the band tends to at a speed."""
    if speed <= BAND_SPEED:
        return 1.0
    return min(speed / BAND_SPEED, WIDEST_FACTOR)


class MovingBand:
    """The band from tick to tick (module docstring): ε times a filtered `widening`."""

    def __init__(self) -> None:
        self.factor = 1.0
        self._time_s: float | None = None

    def reset(self) -> None:
        """Start again from ε: after a stale period or a restart its past is not the robot's."""
        self.factor, self._time_s = 1.0, None

    def update(self, epsilon: float, speed: float, now_s: float | None) -> float:
        """The band at `now_s` for ε = `epsilon` and the fastest joint's speed `speed` (rad/s).

        The factor rises towards `widening` by 1 − e^(−Δt / `BAND_RISE_TIME`) of the gap and
        falls as e^(−Δt / `BAND_FALL_TIME`), never below `widening`; Δt is the time since the
        previous call. Without a time (`now_s` None, an untimed call) or when time did not
        advance, the factor is held; where time went back (a simulation reset) it starts again
        from 1. Kept as a factor of ε, a new ε takes effect at once. The band is at most
        max(ε, `WIDEST_THRESHOLD`).
        """
        previous, self._time_s = self._time_s, now_s
        if now_s is not None and previous is not None and now_s < previous:
            self.factor = 1.0
        elif now_s is not None and previous is not None and now_s > previous:
            elapsed, target, factor = now_s - previous, widening(speed), self.factor
            if target > factor:
                factor -= (target - factor) * math.expm1(-elapsed / BAND_RISE_TIME)
            else:
                factor = max(target, factor * math.exp(-elapsed / BAND_FALL_TIME))
            self.factor = factor
        if self.factor == 1.0:
            return epsilon
        return min(epsilon * self.factor, max(epsilon, WIDEST_THRESHOLD))
