"""The task interface: what every operational-space task gives the controller.

A task is a small object with a dimension and a `compute(state)` that returns its Jacobian J,
drift J̇v, error e and desired task acceleration (design.md, "The control law")::

    ẍ* = ẍ_ref + K_d (ẋ_ref − J v) + K_p e

Priority and weight are not part of a task; they belong to the controller's task list.
Gains and references are replaced as whole immutable objects, so a reader never sees half of
an update.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from wbc_control.exceptions import InvalidShape, InvalidValue
from wbc_control.model.robot_state import RobotState


class TaskTerms(NamedTuple):
    """One task's quantities at the current tick (task coordinates, world axes)."""

    jacobian: np.ndarray  # (k, nv)
    drift: np.ndarray  # (k,) J̇ v
    error: np.ndarray  # (k,) e, target minus current
    velocity: np.ndarray  # (k,) J v
    desired_acceleration: np.ndarray  # (k,) ẍ*


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


def as_slice(indices: np.ndarray) -> slice | np.ndarray:
    """A contiguous ascending index array as the equivalent slice, else the array itself.

    Basic (slice) indexing costs a fraction of fancy indexing on the small per-tick vectors.
    """
    if indices.size and np.array_equal(indices, np.arange(indices[0], indices[0] + indices.size)):
        return slice(int(indices[0]), int(indices[0]) + indices.size)
    return indices


@dataclass(frozen=True)
class PDGains:
    """Per-axis proportional and derivative gains (units: 1/s² and 1/s)."""

    kp: np.ndarray
    kd: np.ndarray

    @classmethod
    def create(cls, kp: npt.ArrayLike, kd: npt.ArrayLike | None, size: int) -> 'PDGains':
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
        return cls(kp_vector, kd_vector)

    def acceleration(
        self, feed_forward: np.ndarray, velocity_error: np.ndarray, error: np.ndarray
    ) -> np.ndarray:
        """ẍ* = ẍ_ref + K_d (ẋ_ref − ẋ) + K_p e, the desired task acceleration of every task."""
        return feed_forward + self.kd * velocity_error + self.kp * error


class Task(ABC):
    """An operational-space task of fixed dimension."""

    def __init__(self, dim: int, gains: PDGains) -> None:
        self.dim = dim
        self._gains = gains

    @property
    def gains(self) -> PDGains:
        """The gains in force."""
        return self._gains

    def set_gains(self, kp: npt.ArrayLike, kd: npt.ArrayLike | None = None) -> None:
        """Replace both gains at once; on error the old gains stay."""
        self._gains = PDGains.create(kp, kd, self.gains_size)

    @property
    def gains_size(self) -> int:
        """Number of per-axis gain values this task takes."""
        return self.dim

    @abstractmethod
    def compute(self, state: RobotState) -> TaskTerms:
        """Jacobian, drift, error, velocity and desired acceleration at the current tick."""
