"""What the prioritized controller takes (its task list) and what one tick gives back."""

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from wbc_control.control.contact.contacts import (
    Contact,
    ContactForceReport,
    contact_force_reports,
    may_leave_friction_cone,
)
from wbc_control.control.switching.contact_transitions import TransitionReport
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
    residual: float = 0.0  # ‖achieved − commanded task acceleration‖ over the level's rows


class LazyReports(Sequence):
    """A tick's reports, built on first access from the raw numbers the tick kept.

    Most ticks' reports are never read (a node reads them at its diagnostics rate), so the
    tick stores `build`'s arguments (one call) instead of building a report per task, level or
    contact. Read them before the next tick of the same controller: like the task terms they
    come from, the kept arrays may be views of buffers that tick overwrites.
    """

    __slots__ = ('_build', '_arguments', '_reports')

    def __init__(self, build: Callable[..., tuple], *arguments: Any) -> None:
        self._build, self._arguments, self._reports = build, arguments, None

    def _get(self) -> tuple:
        if self._reports is None:
            self._reports = tuple(self._build(*self._arguments))
            self._arguments = None
        return self._reports

    def __getitem__(self, index):
        return self._get()[index]

    def __len__(self) -> int:
        return len(self._get())

    def __iter__(self) -> Iterator:
        return iter(self._get())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyReports):
            other = other._get()
        return self._get() == other

    __hash__ = None

    def __repr__(self) -> str:
        return repr(self._get())


class ContactReports(LazyReports):
    """Contact force reports built on first access, and a cheap test for trouble every tick.

    `may_leave_friction_cone()` (a few array operations for all contacts) is False when no
    report would say pulling or outside the friction cone, so a caller that only needs those
    flags each tick builds the reports only on the ticks where it returns True.
    """

    __slots__ = ('_check',)

    def __init__(
        self,
        contacts: Sequence[Contact],
        forces: np.ndarray,
        friction_coefficient: float,
        check_terms: tuple[np.ndarray, np.ndarray],
    ) -> None:
        self._build, self._reports = contact_force_reports, None
        self._arguments = (contacts, forces, friction_coefficient)
        self._check = check_terms

    def may_leave_friction_cone(self) -> bool:
        """False: no contact pulls or leaves the friction cone (see the class docstring)."""
        if self._reports is not None:
            return any(c.pulling or c.outside_friction_cone for c in self._reports)
        _, forces, friction_coefficient = self._arguments
        return may_leave_friction_cone(self._check, forces, friction_coefficient)


def level_reports(
    levels: Sequence['Level'],
    generic_ranks: Sequence[int],
    inertias: Sequence,
    residuals: Sequence[float] | None = None,
):
    """Each level's health from its conditioning and its residual.

    Lost directions are counted against the level's generic rank (or the weak ones, if more).
    """
    reports = []
    residuals = residuals or [0.0] * len(levels)
    for level, generic_rank, inertia, residual in zip(levels, generic_ranks, inertias, residuals):
        lost = generic_rank - inertia.rank
        reports.append(
            LevelReport(
                level.priority,
                level.names,
                inertia.condition_number,
                inertia.rank,
                max(lost, inertia.damped),
                generic_rank,
                residual,
            )
        )
    return tuple(reports)


class ControllerResult(NamedTuple):
    """Everything one tick of the controller produced."""

    torque: np.ndarray  # (n_act,) limited command, actuated-joint order
    torque_unlimited: np.ndarray  # (n_act,) before saturation / rate limiting
    saturated: np.ndarray  # (n_act,) bool
    rate_limited: np.ndarray  # (n_act,) bool
    acceleration: np.ndarray  # (nv,) q̈
    # Reports: tuples, or LazyReports built on first access (read them before the next tick).
    tasks: Sequence[TaskReport]
    levels: Sequence[LevelReport]
    contacts: Sequence[ContactForceReport] = ()
    base_wrench_residual: float = 0.0  # N / N m the contacts cannot balance (floating base)
    joints_at_limit: Sequence[str] = ()  # joints held at a joint-limit bound this tick
    solver: str = 'recursion'  # 'recursion', 'cascade', or why the cascade failed
    transition: TransitionReport = TransitionReport()  # contact and task switches


def validate_threshold(threshold: float) -> float:
    """The singular value threshold ε must lie in (0, 1)."""
    threshold = float(threshold)
    if not (0.0 < threshold < 1.0):
        raise InvalidValue(f'singular_value_threshold must be in (0, 1), got {threshold}')
    return threshold


class StackedRows:
    """The rows of every level of a stack, stacked highest level first, which the tasks write.

    Stacked Jacobian `(R, nv)`; drift J̇v, error, velocity, desired acceleration ẍ* and target
    ẍ* − J̇v `(R,)` (`vectors`, `(5, R)`); level k's rows are `offsets[k]:offsets[k + 1]`.
    """

    def __init__(self, dims: Sequence[int], nv: int) -> None:
        self.offsets = np.cumsum([0, *dims], dtype=np.int64)
        total = int(self.offsets[-1])
        self.jacobian = np.zeros((total, nv))
        self.vectors = np.zeros((5, total))
        vectors = self.vectors
        self.drift, self.error, self.velocity, self.desired_acceleration, self.target = vectors

    def level(self, index: int) -> tuple[slice, np.ndarray, np.ndarray]:
        """Level `index`'s rows: their slice, Jacobian `(m, nv)` and vectors `(5, m)` (views)."""
        rows = slice(int(self.offsets[index]), int(self.offsets[index + 1]))
        return rows, self.jacobian[rows], self.vectors[:, rows]


class Level:
    """Tasks sharing one priority: their stacked rows, which the tasks write in place.

    The level's stacked Jacobian `(m, nv)`, drift J̇v, error, velocity, desired acceleration
    ẍ* and target ẍ* − J̇v `(m,)` are its rows `rows` of the stack's `StackedRows` (or its own,
    when built alone); `terms[i]` are the rows of task i (views), and `writers[i]` what the
    controller calls each tick to fill them (the task's `write_terms` and what its
    `prepare_terms` made of its rows), before it sets the target. Every tick overwrites them.
    """

    def __init__(
        self,
        priority: int,
        entries: Sequence[TaskEntry],
        nv: int,
        stacked: tuple[slice, np.ndarray, np.ndarray] | None = None,
    ) -> None:
        self.priority = priority
        self.entries = tuple(entries)
        self.names = tuple(entry.name for entry in entries)
        self.slices = []
        start = 0
        for entry in entries:
            self.slices.append(slice(start, start + entry.task.dim))
            start += entry.task.dim
        self.dim = start
        self.rows, self.jacobian, vectors = stacked or StackedRows([start], nv).level(0)
        self.drift, self.error, self.velocity, self.desired_acceleration, self.target = vectors
        self.terms = tuple(
            TaskTerms(
                self.jacobian[rows],
                self.drift[rows],
                self.error[rows],
                self.velocity[rows],
                self.desired_acceleration[rows],
            )
            for rows in self.slices
        )
        self.writers = tuple(
            (entry.task.write_terms, entry.task.prepare_terms(terms))
            for entry, terms in zip(self.entries, self.terms)
        )

    def sqrt_weights(self, weights: dict[str, float]) -> np.ndarray:
        """√w per stacked row, `(dim,)`, from the weights by task name."""
        return np.concatenate(
            [np.full(entry.task.dim, np.sqrt(weights[entry.name])) for entry in self.entries]
        )

    def stack(self, terms: Sequence[TaskTerms]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Stacked Jacobian `(m, nv)`, drift J̇v `(m,)` and target ẍ* − J̇v `(m,)` of `terms`.

        For terms computed apart (`Task.compute`), e.g. at sampled configurations: new arrays
        (a single task's are used as they are), not the level's.
        """
        if len(terms) == 1:
            (term,) = terms
            return term.jacobian, term.drift, term.desired_acceleration - term.drift
        jacobian = np.vstack([term.jacobian for term in terms])
        drift = np.concatenate([term.drift for term in terms])
        desired = np.concatenate([term.desired_acceleration for term in terms])
        return jacobian, drift, desired - drift
