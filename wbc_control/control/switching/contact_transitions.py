"""Contacts and tasks that change at run time: the schedule of a switch and its load transfer.

A switch takes the controller from the stack in force (its contacts and active tasks) to the
requested one over a transition time T (`contact_transition_time` when the contacts change,
`task_transition_time` when only tasks do, the longer when both do). During it both stacks are
solved and their torques blended::

    τ = (1 − s) τ_from + s τ_to,     s = 3σ² − 2σ³,  σ = (t − t₀) / T

the smoothstep profile, C¹ in time, so the torque and its rate are continuous at both ends.

Load transfer (the contact-force ramp of TSID, Del Prete et al. 2016, whose contact removal
lowers the leaving contact's maximum normal force to zero over the transition; here without a
QP): the contact forces of each stack are the weighted minimum-norm distribution
min Σ ‖f_i‖² / w_i subject to A_bᵀ f = M_b q̈ + h_b
(:func:`wbc_control.control.contact.contacts.base_contact_forces`). A leaving contact keeps its
constraint in the `from` stack, with its load share w = 1 − s, so its force falls to zero while
the others take its load; an arriving contact enters the `to` stack with w = s. When s = 1 the
leaving contact's constraint is dropped (its frame is then an ordinary frame task's to move)
and the arriving one carries its full share.

Torque rate during a switch: with both stacks' torques continuous in the state, the step
between two ticks dt apart is the stacks' own change plus at most
max|ṡ| dt max_s ‖∂τ/∂s‖_∞ = 1.5 dt / T max_s ‖∂τ/∂s‖_∞, where ∂τ/∂s is τ_to − τ_from plus the
load shares' effect on each stack (on Solo12 releasing a foot: 1.12 times ‖τ_to − τ_from‖_∞,
so a 0.82 N m jump becomes steps of at most 0.009 N m at dt = 2 ms, T = 0.3 s). The largest
step of each switch is measured (:class:`TransitionReport`, on /diagnostics) and
`torque_rate_limit` clips what is sent. Requests made during a switch wait for it to end; the
next switch then goes straight to the newest request.
"""

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from wbc_control.control.contact.contacts import Contact, ContactForceReport, contact_force_reports
from wbc_control.control.results import TransitionReport
from wbc_control.exceptions import InvalidValue

#: Default duration (s) of a contact's load transfer and of a task's fade.
DEFAULT_CONTACT_TRANSITION_TIME = 0.3
DEFAULT_TASK_TRANSITION_TIME = 0.3


class StackKey(NamedTuple):
    """What a stack is made of: its contacts (in order) and the tasks switched off."""

    contacts: tuple[str, ...]
    inactive: frozenset[str]


class BlendPart(NamedTuple):
    """One stack of a tick's blend: its share of the torque and its contacts' load shares."""

    key: StackKey
    share: float  # in [0, 1]; the parts of a tick sum to 1
    load_shares: dict[str, float]  # frame -> w of the weighted force distribution (absent: 1)


def validate_transition_time(name: str, value: float) -> float:
    """A transition time must be finite and >= 0 (0: switch at once)."""
    value = float(value)
    if not (np.isfinite(value) and value >= 0.0):
        raise InvalidValue(f'{name} must be finite and >= 0, got {value}')
    return value


def smoothstep(fraction: float) -> float:
    """The share s = 3σ² − 2σ³ of σ clipped to [0, 1]: 0 and 1 with zero slope at both ends."""
    sigma = min(max(fraction, 0.0), 1.0)
    return sigma * sigma * (3.0 - 2.0 * sigma)


def describe(source: StackKey, target: StackKey) -> str:
    """What a switch changes, e.g. 'contacts -FL_FOOT; tasks +foot'."""
    parts = []
    removed = [f'-{frame}' for frame in source.contacts if frame not in target.contacts]
    added = [f'+{frame}' for frame in target.contacts if frame not in source.contacts]
    if removed or added:
        parts.append('contacts ' + ' '.join(removed + added))
    off = sorted(target.inactive - source.inactive)
    on = sorted(source.inactive - target.inactive)
    if off or on:
        changes = [f'-{name}' for name in off] + [f'+{name}' for name in on]
        parts.append('tasks ' + ' '.join(changes))
    return '; '.join(parts)


class _Switch(NamedTuple):
    source: StackKey
    target: StackKey
    duration: float
    start_s: float


class StackSwitcher:
    """Which stacks a tick solves and how it blends them; see the module docstring.

    Args:
        key: the stack in force at start.
        contact_time: `contact_transition_time` (s).
        task_time: `task_transition_time` (s).
    """

    def __init__(self, key: StackKey, contact_time: float, task_time: float) -> None:
        self.current = self.requested = key
        self.contact_time = validate_transition_time('contact_transition_time', contact_time)
        self.task_time = validate_transition_time('task_transition_time', task_time)
        self._switch: _Switch | None = None
        self._previous_torque: np.ndarray | None = None
        self.report = TransitionReport()  # the switching state after the last tick
        self._steady = (BlendPart(key, 1.0, {}),)  # the plan while no switch runs

    @property
    def keys(self) -> set[StackKey]:
        """Every stack in force, switched between or requested."""
        keys = {self.current, self.requested}
        if self._switch is not None:
            keys |= {self._switch.source, self._switch.target}
        return keys

    def request(self, key: StackKey) -> None:
        """Switch to `key` (after the switch under way, if any)."""
        self.requested = key

    def duration(self, source: StackKey, target: StackKey) -> float:
        """T of a switch: the contact time if contacts change, the task time if tasks do."""
        times = [0.0]
        if source.contacts != target.contacts:
            times.append(self.contact_time)
        if source.inactive != target.inactive:
            times.append(self.task_time)
        return max(times)

    def plan(self, now_s: float | None) -> tuple[BlendPart, ...]:
        """The stacks of the tick at `now_s` (None: no clock, switches are immediate)."""
        switch = self._switch
        if switch is not None and (now_s is None or now_s - switch.start_s >= switch.duration):
            self._finish()
            switch = None
        if switch is None and self.requested != self.current:
            duration = self.duration(self.current, self.requested)
            if now_s is None or duration <= 0.0:
                self.current = self.requested
                self.report = self.report._replace(transitions=self.report.transitions + 1)
            else:
                switch = self._switch = _Switch(self.current, self.requested, duration, now_s)
                self.report = TransitionReport(
                    describe(switch.source, switch.target), 0.0, 0.0, self.report.transitions
                )
        if switch is None:
            if self._steady[0].key != self.current:
                self._steady = (BlendPart(self.current, 1.0, {}),)
            return self._steady
        share = smoothstep((now_s - switch.start_s) / switch.duration)
        self.report = self.report._replace(progress=share)
        leaving = [f for f in switch.source.contacts if f not in switch.target.contacts]
        arriving = [f for f in switch.target.contacts if f not in switch.source.contacts]
        return (
            BlendPart(switch.source, 1.0 - share, dict.fromkeys(leaving, 1.0 - share)),
            BlendPart(switch.target, share, dict.fromkeys(arriving, share)),
        )

    def record(self, torque: np.ndarray) -> None:
        """The tick's torque (before limits): measures the largest step of a switch."""
        if self._switch is not None and self._previous_torque is not None:
            step = float(np.max(np.abs(torque - self._previous_torque), initial=0.0))
            if step > self.report.max_torque_step:
                self.report = self.report._replace(max_torque_step=step)
        self._previous_torque = torque.copy()

    def _finish(self) -> None:
        self.current = self._switch.target
        self._switch = None
        report = self.report
        self.report = TransitionReport('', 1.0, report.max_torque_step, report.transitions + 1)


def row_load_shares(
    contacts: Sequence[Contact], shares: dict[str, float], weights: np.ndarray
) -> np.ndarray:
    """Per constrained row, `weights` (`contact_row_weights`) times its contact's share."""
    if not shares:
        return weights
    return weights * np.concatenate([np.full(c.dim, shares.get(c.frame, 1.0)) for c in contacts])


def blended_contact_reports(
    parts: Sequence[tuple[float, Sequence[ContactForceReport]]],
    contacts: Mapping[str, Contact],
    friction_coefficient: float,
) -> tuple[ContactForceReport, ...]:
    """The blend Σ share · f of the stacks' contact forces, checked again.

    Args:
        parts: per stack, its share and its contact force reports.
        contacts: every contact by frame.
        friction_coefficient: μ of the friction-cone check.

    Returns:
        One report per contact of any stack (first stack's order, then the others' new
        ones), with zero force from a stack that lacks the contact.
    """
    forces: dict[str, np.ndarray] = {}
    for share, reports in parts:
        for report in reports:
            force = forces.setdefault(report.frame, np.zeros(report.force.shape[0]))
            force += share * report.force
    frames = tuple(forces)
    if not frames:  # a fixed-base robot, or no contact in any stack
        return ()
    stacked = np.concatenate([forces[frame] for frame in frames])
    return contact_force_reports(
        [contacts[frame] for frame in frames], stacked, friction_coefficient
    )
