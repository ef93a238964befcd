"""The damping band at speed: ε widened while the joints move fast, narrowed again at rest.

Inside a level's band (sᵢ < ε s_max) Chiaverini's (1997) variable damping weighs a weak
direction's target with ρᵢ = 1 − (sᵢ / ε s_max)² (`level_kernel._damping`). ρᵢ rises from 0 to
1 while sᵢ crosses the band, in about ε s_max / |ṡᵢ| seconds, and |ṡᵢ| grows with the joint
speed ‖q̇‖: an arm that meets its stretched singularity at its velocity limits has the damping
come in within a few ticks, a step of the command (an xArm7 reaching 1.2 m beyond its reach:
10 steps up to 11.7 N m, each above 5 % of its largest effort limit). Widening the band in
proportion to ‖q̇‖ above `BAND_SPEED` keeps that crossing time from shrinking with the speed;
at rest the band is ε, so where the arm settles nothing changes.

The width follows its target through a first-order filter, rising with `BAND_RISE_TIME` and
falling with `BAND_FALL_TIME`: it must not step with the speed (a humanoid's foot impact steps
‖q̇‖) and must stay wide while the arm brakes, which is when the weak directions come in.
This rule and its constants are ours, measured on the arms of test_unconfigured_robots.py
(`dev/unconfigured_reach.py`), not taken from a paper.
"""

import math

#: v_ε (rad/s): above this joint speed ‖q̇‖ the band's target widens as ε ‖q̇‖ / v_ε.
BAND_SPEED = 1.0
#: The widest band, as a multiple of ε (at ‖q̇‖ ≥ 3 v_ε).
WIDEST_BAND = 3.0
#: The widest band speed may make (ε itself may be wider): a direction at 0.3 s_max is no
#: longer near a singularity, and a band past 1 would damp the level's strongest direction.
WIDEST_THRESHOLD = 0.3
#: Time constant (s) with which the width rises towards a wider target.
BAND_RISE_TIME = 0.1
#: Time constant (s) with which the width falls back towards a narrower one.
BAND_FALL_TIME = 1.0


def widening(squared_speed: float) -> float:
    """min(max(1, ‖q̇‖ / v_ε), `WIDEST_BAND`): the factor the band tends to at this speed."""
    if squared_speed <= BAND_SPEED * BAND_SPEED:
        return 1.0
    return min(math.sqrt(squared_speed) / BAND_SPEED, WIDEST_BAND)


class MovingBand:
    """The band's width from tick to tick (module docstring): ε times a filtered `widening`."""

    def __init__(self) -> None:
        self._factor = 1.0
        self._time_s: float | None = None

    def update(self, band: float, squared_speed: float, now_s: float | None) -> float:
        """The band at `now_s` for ε = `band` and ‖q̇‖² = `squared_speed`: ε times the factor.

        The factor rises towards `widening` by 1 − e^(−Δt / `BAND_RISE_TIME`) of the gap and
        falls as e^(−Δt / `BAND_FALL_TIME`), never below `widening`; Δt is the time since the
        previous call. Without a time (`now_s` None, an untimed call) or when time did not
        advance, the factor is held. Kept as a factor of ε, a new ε takes effect at once. The
        band is at most max(ε, `WIDEST_THRESHOLD`).
        """
        previous, self._time_s = self._time_s, now_s
        if now_s is not None and previous is not None and now_s > previous:
            elapsed, target, factor = now_s - previous, widening(squared_speed), self._factor
            if target > factor:
                factor -= (target - factor) * math.expm1(-elapsed / BAND_RISE_TIME)
            else:
                factor = max(target, factor * math.exp(-elapsed / BAND_FALL_TIME))
            self._factor = factor
        if self._factor == 1.0:
            return band
        return min(band * self._factor, max(band, WIDEST_THRESHOLD))
