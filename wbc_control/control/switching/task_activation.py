"""Tasks switched on and off at run time: the stacks the controller switches between.

A task's `active` flag (and the live contact set) selects a *stack*: the priority levels made
of the active tasks, below the contacts in force. Switching a task off or on fades its effect
out or in over `task_transition_time` by an activation-weighted blend of two strictly
prioritized solutions, the stack with the task and the stack without it
(:mod:`wbc_control.control.switching.contact_transitions` schedules it)::

    q̈ = (1 − s) q̈_from + s q̈_to,    τ = (1 − s) τ_from + s τ_to

This is the simple alternative to the intermediate-value inverse of Mansard, Remazeilles &
Chaumette (2009, "Continuity of varying-feature-set control laws"), which proves that the
classical hierarchical law jumps when a task enters or leaves the stack, and smooths the
inverse itself. The blend is what they call the naive smoothing of two control laws; what it
guarantees here:

- continuity: τ is continuous in time (s is C¹) and the step between two ticks is bounded by
  the two stacks' own change plus 1.5 dt / T ‖τ_to − τ_from‖_∞ (the abrupt switch's jump);
- exactness outside the fade: s = 0 and s = 1 give exactly the stack with and the stack
  without the task, with its strict priorities;
- during the fade, every level above the fading task keeps its task acceleration exactly
  (both stacks share those levels, and a lower level never changes a higher one's: Sentis &
  Khatib 2005), and the contacts hold exactly (both solutions satisfy A q̈ = −Ȧq̇, and so
  does any affine blend); the fading task and the levels below it get the blend of two strict
  solutions, so priorities among them are not strict during the fade.

With a contact switch the two stacks differ in their contacts: a contact common to both is
held exactly throughout; the leaving (arriving) one is released (closed) with the load transfer
of :mod:`~wbc_control.control.switching.contact_transitions`.
"""

from collections.abc import Mapping, Sequence
import math
from typing import NamedTuple

import numpy as np

from wbc_control.control.contact.contacts import (
    Contact,
    ContactType,
    cone_check_terms,
    contact_row_weights,
)
from wbc_control.control.hierarchy.generic_ranks import sampled_generic_ranks
from wbc_control.control.results import ControllerResult, TaskReport
from wbc_control.control.switching.contact_transitions import (
    StackKey,
    StackSwitcher,
    blended_contact_reports,
)
from wbc_control.control.switching.stacks import Level, StackedRows, TaskEntry, validate_weight
from wbc_control.exceptions import InvalidTaskConfig, ModelError
from wbc_control.model.robot_model import RobotModel


class Stack(NamedTuple):
    """Contacts and priority levels of one combination of contacts and active tasks."""

    key: StackKey
    contacts: tuple[Contact, ...]
    levels: tuple[Level, ...]
    rows: StackedRows  # the levels' rows, stacked
    generic_ranks: tuple[int, ...]
    row_weights: np.ndarray  # (m,) of the force distribution, `contact_row_weights`
    cone_check: tuple[np.ndarray, np.ndarray]  # `cone_check_terms` of the contacts


def held_by_contact(entry: TaskEntry, contacts: Sequence[Contact]) -> bool:
    """Whether a contact fixes every direction of a frame task.

    That is a surface contact on its frame, or a point contact on the frame of a position task.
    Such a task has nothing left to move (its projected Jacobian is zero up to rounding, which
    its regularized inverse must not amplify), so it sits out of the stack while the contact
    holds; once the contact is released it moves the frame, faded in with the release.
    """
    frame = getattr(entry.task, 'frame', None)
    for contact in contacts:
        if contact.frame == frame:
            surface = contact.kind is ContactType.SURFACE
            position = entry.task.TYPE == 'frame_position'
            return surface or (contact.kind is ContactType.POINT and position)
    return False


def build_stack(
    robot: RobotModel,
    entries: Sequence[TaskEntry],
    known_contacts: Mapping[str, Contact],
    key: StackKey,
) -> Stack:
    """The levels of the active tasks (one per priority in use) below the contacts of `key`.

    A task that a contact holds completely (:func:`held_by_contact`) sits out while it does.

    Built outside the tick: the generic ranks are sampled at random configurations
    (:func:`~wbc_control.control.hierarchy.generic_ranks.sampled_generic_ranks`).
    """
    unknown = sorted(key.inactive - {entry.name for entry in entries})
    if unknown:
        raise InvalidTaskConfig(f'no task named {", ".join(unknown)}')
    contacts = tuple(known_contacts[frame] for frame in key.contacts)
    active = [
        entry
        for entry in entries
        if entry.name not in key.inactive and not held_by_contact(entry, contacts)
    ]
    priorities = sorted({entry.priority for entry in active})
    grouped = [[entry for entry in active if entry.priority == p] for p in priorities]
    rows = StackedRows([sum(entry.task.dim for entry in group) for group in grouped], robot.nv)
    levels = tuple(
        Level(p, group, robot.nv, rows.level(k))
        for k, (p, group) in enumerate(zip(priorities, grouped))
    )
    ranks = sampled_generic_ranks(robot, levels, contacts)
    require_independent(contacts, ranks.contacts)
    weights = contact_row_weights(contacts) if contacts else np.zeros(0)
    return Stack(key, contacts, levels, rows, ranks.levels, weights, cone_check_terms(contacts))


def require_independent(contacts: Sequence[Contact], rank: int) -> None:
    """Refuse contacts whose directions depend on each other at almost every configuration.

    Args:
        contacts: the contact set.
        rank: the generic rank of their stacked Jacobian A (`sampled_generic_ranks`).

    Raises:
        InvalidTaskConfig: A has fewer independent rows than rows: every tick would raise
            SingularConstraint.
    """
    rows = sum(contact.dim for contact in contacts)
    if rank < rows:
        frames = ', '.join(f'{contact.frame} ({contact.kind.value})' for contact in contacts)
        raise InvalidTaskConfig(
            f'contacts {frames} fix {rows} directions of which only {rank} are independent '
            'at random configurations: the robot cannot move them separately, and the '
            'block matrix [M Aᵀ; A 0] would be singular on every tick (Johnson 2024, eq 32). '
            'Use fewer contacts or contact types that fix fewer directions '
            '(docs/floating_base.md, "Dependent contacts")'
        )


class Stacks:
    """The stacks in force, switched between or requested, built once each outside the tick.

    Args:
        robot: the model.
        entries: every task, active or not.
        contacts: the contacts at start.
        transition_times: `contact_transition_time` and `task_transition_time` (s).
    """

    def __init__(
        self,
        robot: RobotModel,
        entries: Sequence[TaskEntry],
        contacts: Sequence[Contact],
        transition_times: tuple[float, float],
    ) -> None:
        self.robot, self.entries = robot, tuple(entries)
        self.weights = {entry.name: float(entry.weight) for entry in entries}
        self.known_contacts = {contact.frame: contact for contact in contacts}
        inactive = frozenset(entry.name for entry in entries if not entry.active)
        self._switched_off = inactive  # by `set_active`
        self._held_off: frozenset[str] = frozenset()  # by `hold_off` (homing)
        key = StackKey(tuple(self.known_contacts), inactive)
        self.switching = StackSwitcher(key, *transition_times)
        self._stacks: dict[StackKey, tuple[Stack, tuple[np.ndarray, ...]]] = {}
        self.stack(key)

    @property
    def current(self) -> Stack:
        """The stack in force (before a switch under way)."""
        return self.stack(self.switching.current)

    def stack(self, key: StackKey) -> Stack:
        """The stack of `key`, built on first use."""
        if key not in self._stacks:
            stack = build_stack(self.robot, self.entries, self.known_contacts, key)
            self._stacks[key] = (stack, self._sqrt_weights(stack, self.weights))
        return self._stacks[key][0]

    def sqrt_weights(self, key: StackKey) -> tuple[np.ndarray, ...]:
        """√w per stacked row of each level of the stack of `key`."""
        return self._stacks[key][1]

    def set_weight(self, name: str, weight: float) -> None:
        """A task's weight within its level (validated; on error nothing changes)."""
        if name not in self.weights:
            raise KeyError(name)
        weights = dict(self.weights)
        weights[name] = validate_weight(name, weight)
        self._stacks = {
            key: (stack, self._sqrt_weights(stack, weights))
            for key, (stack, _) in self._stacks.items()
        }
        self.weights = weights

    def active(self, name: str) -> bool:
        """Whether task `name` is on, or being switched on (KeyError if unknown)."""
        if name not in self.weights:
            raise KeyError(name)
        return name not in self._switched_off

    def set_active(self, name: str, active: bool) -> None:
        """Request task `name` on or off (KeyError if unknown)."""
        if name not in self.weights:
            raise KeyError(name)
        off = self._switched_off
        self._switched_off = off - {name} if active else off | {name}
        self._request_inactive()

    def hold_off(self, names: frozenset[str]) -> None:
        """Hold these tasks off whatever their `active` flags (homing); empty: none.

        Each fades out or back in as `set_active` would switch it; `active` keeps reporting
        the flags, which take effect again once a task is no longer held off.
        """
        unknown = sorted(names - set(self.weights))
        if unknown:
            raise KeyError(', '.join(unknown))
        self._held_off = frozenset(names)
        self._request_inactive()

    def _request_inactive(self) -> None:
        inactive = self._switched_off | self._held_off
        self._request(self.switching.requested._replace(inactive=inactive))

    def set_contacts(self, contacts: Sequence[Contact]) -> None:
        """Request these contacts (in this order).

        Raises:
            ModelError: no contact on a floating base.
            InvalidTaskConfig: a frame twice.
        """
        frames = tuple(contact.frame for contact in contacts)
        if self.robot.floating_base and not frames:
            raise ModelError('a floating-base robot needs at least one contact')
        if len(set(frames)) != len(frames):
            raise InvalidTaskConfig(f'duplicate contacts: {", ".join(frames)}')
        self.known_contacts = self.known_contacts | {c.frame: c for c in contacts}
        self._request(self.switching.requested._replace(contacts=frames))

    def _request(self, key: StackKey) -> None:
        self.stack(key)
        self.switching.request(key)
        for stale in set(self._stacks) - self.switching.keys:
            del self._stacks[stale]

    @staticmethod
    def _sqrt_weights(stack: Stack, weights: dict[str, float]) -> tuple[np.ndarray, ...]:
        return tuple(level.sqrt_weights(weights) for level in stack.levels)


def task_reports(levels: Sequence[Level], achieved: np.ndarray) -> tuple[TaskReport, ...]:
    """Per-task error and achieved acceleration, from the stack's J q̈ + J̇v `achieved` `(R,)`.

    The reports own copies of the terms, which are buffers the controller's next tick overwrites.
    """
    reports = []
    for level in levels:
        level_achieved = achieved[level.rows]
        for entry, rows, term in zip(level.entries, level.slices, level.terms):
            error = term.error.copy()
            reports.append(
                TaskReport(
                    entry.name,
                    entry.priority,
                    error,
                    math.sqrt(error.dot(error)),
                    term.desired_acceleration.copy(),
                    level_achieved[rows],
                )
            )
    return tuple(reports)


def blend_results(
    shares: Sequence[float],
    results: Sequence[ControllerResult],
    contacts: Mapping[str, Contact],
    friction_coefficient: float,
) -> ControllerResult:
    """Σ share · (τ, q̈, f) of the stacks' unlimited results (module docstring).

    Task and level reports are those of the stack with the larger share; a task's achieved
    acceleration is then that of the blend.
    """
    torque = sum(share * result.torque_unlimited for share, result in zip(shares, results))
    acceleration = sum(share * result.acceleration for share, result in zip(shares, results))
    main = results[int(np.argmax(shares))]
    reports = tuple(
        report._replace(achieved_acceleration=_blend_achieved(report.name, shares, results))
        for report in main.tasks
    )
    contact_reports = blended_contact_reports(
        [(share, result.contacts) for share, result in zip(shares, results)],
        contacts,
        friction_coefficient,
    )
    residual = sum(share * result.base_wrench_residual for share, result in zip(shares, results))
    return main._replace(
        torque=torque,
        torque_unlimited=torque,
        acceleration=acceleration,
        tasks=reports,
        contacts=contact_reports,
        base_wrench_residual=residual,
    )


def _blend_achieved(name: str, shares: Sequence[float], results: Sequence[ControllerResult]):
    """A task's achieved acceleration in the blend (a stack without the task contributes none)."""
    achieved = None
    for share, result in zip(shares, results):
        for report in result.tasks:
            if report.name == name:
                term = share * report.achieved_acceleration
                achieved = term if achieved is None else achieved + term
    return achieved
