"""What one tick of the prioritized controller gives back: its result and its reports.

The task, level and contact reports are kept as the tick's raw numbers and built only when they
are read (`LazyReports`); read them before the controller's next tick, which overwrites the
buffers they come from.
"""

from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from wbc_control.control.contact.contacts import (
    Contact,
    ContactForceReport,
    contact_force_reports,
    may_leave_friction_cone,
)


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
    levels: Sequence,
    generic_ranks: Sequence[int],
    inertias: Sequence,
    residuals: Sequence[float] | None = None,
):
    """Each level's (`switching.stacks.Level`) health from its conditioning and its residual.

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


class LevelHealth(NamedTuple):
    """A level's conditioning as the cascade saw it (`level_reports` reads it)."""

    condition_number: float
    rank: int
    damped: int


def level_health(
    levels: Sequence,
    generic_ranks: Sequence[int],
    weights: Sequence,
    residual: np.ndarray,
    offsets: np.ndarray,
) -> tuple:
    """Level reports from the cascade's per-level weights and the stack's residual.

    `weights` hold `hierarchy.cascade.LevelWeights`' fields (a level the cascade did not reach
    has none);
    `residual` `(R,)` is the achieved minus commanded task acceleration, level k's rows
    `offsets[k]:offsets[k + 1]`.
    """
    healths = [
        LevelHealth(condition, directions - weak, weak)
        for directions, weak, condition, _ in weights
    ]
    healths += [LevelHealth(np.inf, 0, 0)] * (len(levels) - len(healths))
    norms = [
        float(np.linalg.norm(residual[offsets[k] : offsets[k + 1]])) for k in range(len(levels))
    ]
    return level_reports(levels, generic_ranks, healths, norms)


class TransitionReport(NamedTuple):
    """The state of switching, for /diagnostics.

    Attributes:
        switching: what changes in the switch under way ('' when none), e.g.
            'contacts -FL_FOOT; tasks +foot'.
        progress: s of the switch under way in [0, 1] (1 when none).
        max_torque_step: largest |Δτ| (N m or N, any joint) between two ticks of the switch
            under way, or of the last one when none is.
        transitions: switches completed since start.
    """

    switching: str = ''
    progress: float = 1.0
    max_torque_step: float = 0.0
    transitions: int = 0


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
