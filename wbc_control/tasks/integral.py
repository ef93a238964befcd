"""Integral action of a task: the PD law plus a bounded integral of the error.

A model error the PD law cannot see (joint friction, an unmodelled mass) leaves a steady offset
e_ss = K_p⁻¹ (what the model misses, in task acceleration). With integral action the task law
becomes

    ẍ* = ẍ_ref + K_d (ẋ_ref − ẋ) + K_p e + z,    z ← clamp(z + K_i e Δt, −z_max, z_max)

with z the integral term in the task's acceleration units (m/s², rad/s²), accumulated
after each tick (forward Euler) and applied from the next. Anti-windup (Åström & Hägglund 2006,
section 3.5):

- z is clamped to ±`max_integral` per row, as control_toolbox's PID clamps its integral term;
- it is frozen, neither integrating nor forgetting, while the controller gives way to a
  constraint (a saturated or rate-limited torque, a joint held at its limit, the tasks scaled
  to fit the limits, a soft start or a switch of tasks or contacts under way): there the
  error is not the model's to correct, and integrating it would wind up;
- it is reset to zero when the task gets a new set-point (its offset was for the old one) and
  when it is switched off.

The integral term is stored, not the integral of the error, so a live change of K_i changes
only what is added from then on (bumpless); K_i = 0 resets it.
"""

import numpy as np

from wbc_control.defaults import schema_default

#: Default bound of the integral term per row (m/s² or rad/s²): the schema's.
DEFAULT_MAX_INTEGRAL = float(
    schema_default('wbc_controller', 'tasks.__map_task_names.max_integral')
)


class IntegralAction:
    """The integral term z of one task, `(dim,)`; see the module docstring.

    Args:
        dim: the task's rows.
    """

    def __init__(self, dim: int) -> None:
        self.term = np.zeros(dim)
        self.ki = np.zeros(dim)
        self.bound = np.full(dim, DEFAULT_MAX_INTEGRAL)
        #: Whether K_i ≠ 0 (else z = 0 and nothing is added).
        self.enabled = False

    def set_gains(self, ki: np.ndarray, bound: np.ndarray) -> None:
        """Per-row K_i (1/s³) and bound (task acceleration units); K_i = 0 resets z."""
        self.ki, self.bound = ki.copy(), bound.copy()
        self.enabled = bool(self.ki.any())
        if not self.enabled:
            self.reset()
        np.clip(self.term, -self.bound, self.bound, out=self.term)

    def integrate(self, error: np.ndarray, dt: float, frozen: bool) -> None:
        """Add K_i e dt to z and clamp it, unless `frozen` (the one input that holds z still)."""
        if frozen or not self.enabled:
            return
        self.term += self.ki * error * dt
        np.clip(self.term, -self.bound, self.bound, out=self.term)

    def reset(self) -> None:
        """Set z to 0 (a new set-point, a task switched off)."""
        self.term[:] = 0.0
