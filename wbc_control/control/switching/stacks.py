"""What a stack is built from: the task list's entries and the priority levels' stacked rows.

`task_activation.build_stack` groups the active entries by priority into the `Level`s of a
stack, whose rows one `StackedRows` holds; the tasks write them every tick.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

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
