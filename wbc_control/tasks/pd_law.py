"""The PD law of operational-space control that every task applies, with error clipping.

The desired task acceleration (Khatib 1987, eq 26)::

    ẍ* = ẍ_ref + K_d (ẋ_ref − ẋ) + K_p clip(e)

with per-axis gains and, with a maximum error `max_error` (0: none), the error clipped in its
direction per group of rows of one unit, e ← e · min(1, e_max / ‖e‖), as crisp_controllers'
`error_clip` does.
"""

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
import math

from numba import float64, int64, types
import numpy as np
import numpy.typing as npt

from wbc_control.exceptions import InvalidShape, InvalidValue
from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import VECTOR

# The ufuncs themselves: `ndarray.clip` and `ndarray.max` add a Python wrapper to each call.
_MINIMUM, _MAXIMUM, _MAX = np.minimum, np.maximum, np.maximum.reduce
_DIVIDE, _SQRT = np.divide, np.sqrt
#: The clipping plans of `pd_rows_clipped`: one group, every row its own group, groups of rows.
ONE_GROUP, ROW_GROUPS, GROUPS = 0, 1, 2


def as_axis_vector(value: npt.ArrayLike, size: int, what: str) -> np.ndarray:
    """Expand a scalar or validate a per-axis list of `size` finite values."""
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        array = np.full(size, float(array))
    if array.shape != (size,):
        raise InvalidShape(f'{what} needs a scalar or {size} values, got shape {array.shape}')
    if not np.isfinite(array).all():
        raise InvalidValue(f'{what} has non-finite values: {array.tolist()}')
    return array


@dataclass(frozen=True)
class PDGains:
    """Per-axis proportional and derivative gains (units: 1/s² and 1/s).

    The clipping plan (which rows form a group, and whether any clipping applies) is fixed
    when the gains are built, so that a tick pays one product for the norms of all groups and
    allocates nothing unless an error is actually clipped.
    """

    kp: np.ndarray
    kd: np.ndarray
    critically_damped: bool = False  # kd was not given: kd = 2 √kp, also after a new kp
    max_error: float = 0.0  # clip ‖e‖ of each group to this (0: no clipping)
    groups: tuple[int, ...] = ()  # sizes of the error's groups of one unit (): one group
    #: None: no clipping; () : one group (the whole error); 'rows': every row a group;
    #: else the (k, k) matrix whose product with e∘e gives each row its group's ‖e‖².
    _plan: object = field(default=None, init=False, repr=False, compare=False)
    #: `write_acceleration(desired, ẍ_ref, ẋ_ref, ẋ, e)`: without clipping the compiled law
    #: with these gains bound (`pd_rows`), one call in place of five array operations.
    write_acceleration: Callable[..., None] = field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        size = self.kp.shape[0]
        groups = self.groups if sum(self.groups) == size else (size,)
        plan: object
        if not 0.0 < self.max_error < math.inf:
            plan = None
        elif len(groups) == 1:
            plan = ()
        elif all(n == 1 for n in groups):
            plan = 'rows'
        else:
            members = np.repeat(np.arange(len(groups)), groups)
            plan = (members[:, np.newaxis] == members[np.newaxis, :]).astype(float)
            plan.flags.writeable = False
        object.__setattr__(self, '_plan', plan)
        unclipped = partial(pd_rows, self.kp, self.kd)
        write = unclipped if plan is None else self._write_clipped
        object.__setattr__(self, 'write_acceleration', write)

    @classmethod
    def create(
        cls,
        kp: npt.ArrayLike,
        kd: npt.ArrayLike | None,
        size: int,
        max_error: float = 0.0,
        groups: tuple[int, ...] = (),
    ) -> 'PDGains':
        """Validate gains; `kd=None` gives critical damping kd = 2 √kp.

        Raises:
            InvalidShape: wrong number of values.
            InvalidValue: negative or non-finite gains.
        """
        kp_vector = as_axis_vector(kp, size, 'kp')
        kd_vector = 2.0 * np.sqrt(np.abs(kp_vector)) if kd is None else kd
        kd_vector = as_axis_vector(kd_vector, size, 'kd')
        for name, vector in (('kp', kp_vector), ('kd', kd_vector)):
            if (vector < 0.0).any():
                raise InvalidValue(f'{name} must be non-negative, got {vector.tolist()}')
        kp_vector.flags.writeable = False
        kd_vector.flags.writeable = False
        return cls(kp_vector, kd_vector, kd is None, check_max_error(max_error), groups)

    def with_max_error(self, max_error: float) -> 'PDGains':
        """The same gains with another maximum error (0: none)."""
        return replace(self, max_error=check_max_error(max_error))

    def clipped(self, error: np.ndarray) -> np.ndarray:
        """The error scaled per group so that no group's norm exceeds `max_error`.

        `error` itself is returned when nothing is clipped, else a new array.
        """
        plan, limit = self._plan, self.max_error
        if plan is None:
            return error
        if type(plan) is tuple:  # one group
            squared = error.dot(error)
            return error * (limit / math.sqrt(squared)) if squared > limit * limit else error
        if type(plan) is str:  # a group of one row: its norm is |e|, the scaled row ±e_max
            return _MINIMUM(_MAXIMUM(error, -limit), limit)
        squared = plan.dot(error * error)  # each row: its group's ‖e‖²
        if not _MAX(squared, initial=0.0) > limit * limit:
            return error
        # e · e_max / ‖e‖ in the groups beyond the bound, e · e_max / e_max = e in the others
        norms = _SQRT(squared)
        return error * _DIVIDE(limit, _MAXIMUM(norms, limit, out=norms), out=norms)

    def clips(self, error: np.ndarray) -> bool:
        """Whether :meth:`clipped` changes `error`."""
        plan, limit = self._plan, self.max_error
        if plan is None:
            return False
        if type(plan) is tuple:
            return bool(error.dot(error) > limit * limit)
        if type(plan) is str:
            return bool(np.abs(error).max() > limit) if error.size else False
        return bool(_MAX(plan.dot(error * error), initial=0.0) > limit * limit)

    def acceleration(
        self, feed_forward: np.ndarray, velocity_error: np.ndarray, error: np.ndarray
    ) -> np.ndarray:
        """ẍ* = ẍ_ref + K_d (ẋ_ref − ẋ) + K_p clip(e), the desired acceleration of every task."""
        if self._plan is not None:
            error = self.clipped(error)
        return feed_forward + self.kd * velocity_error + self.kp * error

    def _write_clipped(
        self,
        desired: np.ndarray,
        feed_forward: np.ndarray,
        velocity_reference: np.ndarray,
        velocity: np.ndarray,
        error: np.ndarray,
    ) -> None:
        """`desired` ← ẍ_ref + K_d (ẋ_ref − ẋ) + K_p clip(e): :meth:`acceleration`, in place.

        The group norms come from the same products as in :meth:`clipped`, the rest from
        `pd_rows_clipped` (the same operations in the same order): the same numbers to the bit.
        """
        plan, rows, total = self._plan, error, 0.0
        if type(plan) is tuple:
            kind, total = ONE_GROUP, error.dot(error)
        elif type(plan) is str:
            kind = ROW_GROUPS
        else:
            kind, rows = GROUPS, plan.dot(error * error)
        pd_rows_clipped(
            self.kp, self.kd, desired, feed_forward, velocity_reference, velocity, error,
            rows, total, self.max_error, kind,
        )  # fmt: skip


@kernel(types.void(VECTOR, VECTOR, types.Array(float64, 1, 'A'), VECTOR, VECTOR, VECTOR, VECTOR))
def pd_rows(
    kp, kd, desired, feed_forward, velocity_reference, velocity, error
):  # pragma: no cover - runs compiled
    """`desired` ← ẍ_ref + K_d (ẋ_ref − ẋ) + K_p e row by row (Khatib 1987, eq 26), unclipped."""
    for i in range(desired.shape[0]):
        desired[i] = (
            (velocity_reference[i] - velocity[i]) * kd[i] + feed_forward[i] + kp[i] * error[i]
        )


@kernel(
    types.void(
        VECTOR, VECTOR, types.Array(float64, 1, 'A'), VECTOR, VECTOR, VECTOR, VECTOR, VECTOR,
        float64, float64, int64,
    )
)  # fmt: skip
def pd_rows_clipped(
    kp,
    kd,
    desired,
    feed_forward,
    velocity_reference,
    velocity,
    error,
    squared,
    total,
    limit,
    kind,
):  # pragma: no cover - runs compiled
    """`desired` ← ẍ_ref + K_d (ẋ_ref − ẋ) + K_p clip(e) row by row (Khatib 1987, eq 26).

    `kind` ONE_GROUP: e scaled by e_max / ‖e‖ when `total` = ‖e‖² > e_max²; ROW_GROUPS: every
    row clipped to ±e_max; GROUPS: `squared` holds each row's group ‖e‖², each group beyond
    e_max scaled by e_max / ‖e‖ (`PDGains.clipped`, the same operations).
    """
    size = desired.shape[0]
    largest = 0.0
    for i in range(size if kind == GROUPS else 0):
        largest = max(largest, squared[i])
    bound = limit * limit
    for i in range(size):
        clipped = error[i]
        if kind == ONE_GROUP and total > bound:
            clipped = error[i] * (limit / math.sqrt(total))
        elif kind == ROW_GROUPS:
            clipped = min(max(error[i], -limit), limit)
        elif kind == GROUPS and largest > bound:
            clipped = error[i] * (limit / max(math.sqrt(squared[i]), limit))
        desired[i] = (
            (velocity_reference[i] - velocity[i]) * kd[i] + feed_forward[i] + kp[i] * clipped
        )


def check_max_error(value: object) -> float:
    """A maximum error: a finite number >= 0 (0: no clipping).

    Raises:
        InvalidValue: negative, non-finite or not a number.
    """
    try:
        number = float(value)
    except (TypeError, ValueError) as error:
        raise InvalidValue(f'max_error must be a number, got {value!r}') from error
    if not (np.isfinite(number) and number >= 0.0):
        raise InvalidValue(f'max_error must be finite and >= 0 (0: none), got {value!r}')
    return number
