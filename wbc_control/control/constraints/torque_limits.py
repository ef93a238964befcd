"""Torque saturation at effort limits and an optional torque-rate limit, always reported."""

from typing import NamedTuple

from numba import boolean, types
import numpy as np
import numpy.typing as npt

from wbc_control.exceptions import InvalidShape, InvalidValue
from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import VECTOR


class LimitedTorque(NamedTuple):
    """Torque after limiting, and which joints were limited."""

    torque: np.ndarray  # (n,) the command to send
    saturated: np.ndarray  # (n,) bool: clipped at the effort limit
    rate_limited: np.ndarray  # (n,) bool: clipped by the torque-rate limit


class TorqueLimiter:
    """Clip torques to ±effort limits and, optionally, their change to ±rate · dt.

    Limits of inf mean "no limit". The rate limit needs the previous command, which the limiter
    keeps; `reset()` forgets it (e.g. after a stale-input stop).
    """

    def __init__(
        self, effort_limits: npt.ArrayLike, rate_limits: npt.ArrayLike | None = None
    ) -> None:
        self.effort_limits = self._validated(effort_limits, 'effort limits')
        size = self.effort_limits.shape[0]
        rate = np.full(size, np.inf) if rate_limits is None else rate_limits
        self.rate_limits = self._validated(rate, 'torque rate limits', size)
        self._lower_limits = -self.effort_limits
        #: (lower, upper): ± the effort limits, `(n,)` each.
        self.bounds = (self._lower_limits, self.effort_limits)
        self._previous: np.ndarray | None = None
        self._none_rate_limited = np.zeros(size, dtype=bool)  # shared: read-only
        self._none_rate_limited.flags.writeable = False

    @staticmethod
    def _validated(values: npt.ArrayLike, what: str, size: int | None = None) -> np.ndarray:
        array = np.array(values, dtype=float)
        if array.ndim != 1 or (size is not None and array.shape[0] != size):
            raise InvalidShape(f'{what} need one value per joint ({size}), got {array.shape}')
        if np.isnan(array).any() or (array <= 0.0).any():
            raise InvalidValue(f'{what} must be positive (inf for none), got {array.tolist()}')
        return array

    def reset(self) -> None:
        """Forget the previous command (the next one is not rate limited)."""
        self._previous = None

    def window(self, dt: float | None) -> tuple[np.ndarray, np.ndarray] | None:
        """(lower, upper), the range `apply` lets the next command take `dt` s on, `(n,)` each.

        The effort limits narrowed by the rate limit around the previous command; None before
        a first command or without `dt` (then only the effort limits apply).
        """
        if self._previous is None or dt is None or dt <= 0.0:
            return None
        step = self.rate_limits * dt
        lower = np.maximum(self._lower_limits, self._previous - step)
        return lower, np.minimum(self.effort_limits, self._previous + step)

    def apply(self, torque: np.ndarray, dt: float | None = None) -> LimitedTorque:
        """Limit `torque`; `dt` (s) since the previous command enables the rate limit."""
        return LimitedTorque(*self.limit(torque, dt))

    def limit(
        self, torque: np.ndarray, dt: float | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`apply`'s fields as a plain tuple (what the controller's tick unpacks at once)."""
        # np.clip, without its wrapper's overhead on these short vectors.
        limited = np.minimum(torque, self.effort_limits)
        np.maximum(limited, self._lower_limits, out=limited)
        saturated = limited != torque
        rate_limited = self._none_rate_limited
        if self._previous is not None and dt is not None and dt > 0.0:
            step = self.rate_limits * dt
            low, high = self._previous - step, self._previous + step
            rate_limited = (limited < low) | (limited > high)
            # np.clip's result by its two ufuncs, without its Python wrapper (1 µs a tick).
            np.minimum(np.maximum(limited, low, out=limited), high, out=limited)
        self._previous = limited.copy()
        return limited, saturated, rate_limited


@kernel(boolean(VECTOR, VECTOR, VECTOR))
def fits(torque: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> bool:  # pragma: no cover
    """Whether lower ≤ τ ≤ upper on every joint (all `(n,)`); False for a NaN.

    Compiled: one call per tick where two comparisons and their reductions made five.
    """
    for i in range(torque.shape[0]):
        if not (lower[i] <= torque[i] <= upper[i]):
            return False
    return True


#: A torque within this fraction of 1 + |τ| of an edge of the command's range is at it.
RANGE_EDGE = 1e-9


@kernel(types.Array(boolean, 2, 'C')(VECTOR, VECTOR, VECTOR, VECTOR))
def range_flags(torque, lower, upper, effort_limits):  # pragma: no cover - runs compiled
    """Rows (saturated, rate_limited) `(2, n)`: the joints at an edge of [lower, upper].

    τᵢ is at an edge within `RANGE_EDGE` (1 + |τᵢ|); there it is saturated where |τᵢ| is that
    close to its effort limit too, else rate limited (the edge is the rate window's).
    Compiled: one call per tick where ten small numpy calls made the two flags.
    """
    flags = np.zeros((2, torque.shape[0]), np.bool_)
    for i in range(torque.shape[0]):
        edge = RANGE_EDGE * (1.0 + abs(torque[i]))
        if torque[i] <= lower[i] + edge or torque[i] >= upper[i] - edge:
            if abs(torque[i]) >= effort_limits[i] - edge:
                flags[0, i] = True
            else:
                flags[1, i] = True
    return flags
