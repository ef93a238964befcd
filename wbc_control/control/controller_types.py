"""What the prioritized controller takes (its task list) and what one tick gives back."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from wbc_control.control.contact_transitions import TransitionReport
from wbc_control.control.contacts import ContactForceReport
from wbc_control.exceptions import InvalidTaskConfig, InvalidValue
from wbc_control.tasks.task import Task, TaskTerms


@dataclass(frozen=True)
class TaskEntry:
    """A task in the controller's list: name, priority level (0 = highest), weight, active.

    `active` says whether it is on at start (see `PrioritizedController.set_active`).
    """

    name: str
    task: Task
    priority: int = 0
    weight: float = 1.0
    active: bool = True

    def __post_init__(self) -> None:
        if not self.name:
            raise InvalidTaskConfig('a task needs a non-empty name')
        if isinstance(self.priority, bool) or not isinstance(self.priority, int | np.integer):
            raise InvalidTaskConfig(f"task '{self.name}': priority must be an integer")
        if self.priority < 0:
            raise InvalidTaskConfig(f"task '{self.name}': priority must be >= 0")
        validate_weight(self.name, self.weight)


def validate_weight(name: str, weight: float) -> float:
    """A weight must be finite and positive."""
    weight = float(weight)
    if not np.isfinite(weight) or weight <= 0.0:
        raise InvalidValue(f"task '{name}': weight must be finite and > 0, got {weight}")
    return weight


class TaskReport(NamedTuple):
    """How one task fared this tick."""

    name: str
    priority: int
    error: np.ndarray  # (k,) e
    error_norm: float
    desired_acceleration: np.ndarray  # (k,) ẍ*
    achieved_acceleration: np.ndarray  # (k,) J q̈ + J̇v


class LevelReport(NamedTuple):
    """Health of one priority level's task-space inertia."""

    priority: int
    task_names: tuple[str, ...]
    condition_number: float
    rank: int  # directions inverted exactly
    damped_directions: int  # directions lost to a kinematic singularity or damped (> 0: singular)
    generic_rank: int = 0  # directions the level has at a non-singular configuration


class ControllerResult(NamedTuple):
    """Everything one tick of the controller produced."""

    torque: np.ndarray  # (n_act,) limited command, actuated-joint order
    torque_unlimited: np.ndarray  # (n_act,) before saturation / rate limiting
    saturated: np.ndarray  # (n_act,) bool
    rate_limited: np.ndarray  # (n_act,) bool
    acceleration: np.ndarray  # (nv,) q̈
    tasks: tuple[TaskReport, ...]
    levels: tuple[LevelReport, ...]
    contacts: tuple[ContactForceReport, ...] = ()
    base_wrench_residual: float = 0.0  # N / N m the contacts cannot balance (floating base)
    constraint_method: str = ''  # how the dagger terms were computed ('schur' / 'block_lu')
    joints_at_limit: tuple[str, ...] = ()  # joints held by the joint-limit level this tick
    task_scale: float = 1.0  # < 1: user tasks scaled down to fit joint or effort limits
    transition: TransitionReport = TransitionReport()  # contact and task switches


def validate_threshold(threshold: float) -> float:
    """The singular value threshold ε must lie in (0, 1)."""
    threshold = float(threshold)
    if not (0.0 < threshold < 1.0):
        raise InvalidValue(f'singular_value_threshold must be in (0, 1), got {threshold}')
    return threshold


class Level:
    """Tasks sharing one priority, with their stacked row layout and stacking buffers."""

    def __init__(self, priority: int, entries: Sequence[TaskEntry], nv: int) -> None:
        self.priority = priority
        self.entries = tuple(entries)
        self.names = tuple(entry.name for entry in entries)
        self.slices = []
        start = 0
        for entry in entries:
            self.slices.append(slice(start, start + entry.task.dim))
            start += entry.task.dim
        self.dim = start
        self._jacobian = np.empty((start, nv))
        self._drift = np.empty(start)

    def sqrt_weights(self, weights: dict[str, float]) -> np.ndarray:
        """√w per stacked row, `(dim,)`, from the weights by task name."""
        return np.concatenate(
            [np.full(entry.task.dim, np.sqrt(weights[entry.name])) for entry in self.entries]
        )

    def stack(self, terms: Sequence[TaskTerms]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Stacked Jacobian `(m, nv)`, drift J̇v `(m,)` and target ẍ* − J̇v `(m,)` of the level.

        A single task is used as it is; several are written into the level's buffers, which
        are overwritten on the next tick.
        """
        if len(terms) == 1:
            (term,) = terms
            return term.jacobian, term.drift, term.desired_acceleration - term.drift
        jacobian, drift = self._jacobian, self._drift
        target = np.empty(self.dim)
        for rows, term in zip(self.slices, terms):
            jacobian[rows] = term.jacobian
            drift[rows] = term.drift
            target[rows] = term.desired_acceleration
        target -= drift
        return jacobian, drift, target
