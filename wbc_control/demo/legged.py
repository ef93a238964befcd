"""Legged demos: shift the COM, release a foot, lift it, put it down, close the contact again.

A :class:`LeggedScenario` is a script over simulated time, with no ROS dependency: minimum-jerk
moves (Flash & Hogan 1985) of the COM and of the lifted foot from where they start, and the
times at which the `contacts` parameter changes. The driver (:mod:`wbc_control.demo.legged_run`)
streams both references on the tasks' `~/<task>/target` topics and sets `contacts` with a
parameter call; the controller does the load transfer (`contact_transition_time`).

The target topics carry positions only, where the task law is
ẍ* = ẍ_ref + K_d (ẋ_ref − ẋ) + K_p (x_ref − x). Streaming the lead target
x_ref + (K_d ẋ_ref + ẍ_ref) / K_p gives a PD law exactly that command (:func:`lead_target`),
so the foot follows its path without the K_d ẋ / K_p lag of a plain position target.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
import math

import numpy as np


@dataclass(frozen=True)
class Move:
    """A minimum-jerk move by `offset` (m, world) over [start_s, start_s + duration_s]."""

    start_s: float
    duration_s: float
    offset: tuple[float, float, float]


def min_jerk(fraction: float) -> tuple[float, float, float]:
    """s, ds/dσ, d²s/dσ² of s = 10σ³ − 15σ⁴ + 6σ⁵ (Flash & Hogan 1985), σ clipped to [0, 1]."""
    sigma = min(max(fraction, 0.0), 1.0)
    s = sigma**3 * (10.0 - 15.0 * sigma + 6.0 * sigma**2)
    ds = 30.0 * sigma**2 * (1.0 - sigma) ** 2
    dds = 60.0 * sigma * (1.0 - sigma) * (1.0 - 2.0 * sigma)
    return s, ds, dds


def path(moves: Sequence[Move], t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Offset, velocity and acceleration `(3,)` each, at `t` of the sum of `moves`."""
    position, velocity, acceleration = np.zeros(3), np.zeros(3), np.zeros(3)
    for move in moves:
        s, ds, dds = min_jerk((t - move.start_s) / move.duration_s)
        offset = np.asarray(move.offset)
        position += s * offset
        if 0.0 < t - move.start_s < move.duration_s:
            velocity += ds / move.duration_s * offset
            acceleration += dds / move.duration_s**2 * offset
    return position, velocity, acceleration


def lead_target(
    start: np.ndarray, moves: Sequence[Move], t: float, kp: float, kd: float
) -> np.ndarray:
    """x_ref + (K_d ẋ_ref + ẍ_ref) / K_p: the position target whose PD law feeds forward."""
    position, velocity, acceleration = path(moves, t)
    return start + position + (kd * velocity + acceleration) / kp


@dataclass(frozen=True)
class LeggedScenario:
    """One legged demo.

    Attributes:
        robot: key of `wbc_control.model.example_robots.EXAMPLE_ROBOTS`.
        description: one line for the progress output and the report.
        controller: `wbc_controller` parameters (without the robot model).
        sim: `wbc_sim` parameters (without the robot model).
        duration_s: simulated time of the whole script.
        com_moves: the moves of the shifting task (`shift_task`, its COM or its frame) from
            where it stands at the first state.
        foot_task: the frame task on the lifted foot (frame_position or frame_pose).
        foot_moves: the foot's moves from where it stands at the first state.
        contacts: (time, contact frames) at which `contacts` is set.
        base_frame: the floating base's frame (its height and tilt are reported).
        shift_task: the task that moves the weight over the support (a com task, or a
            frame_position task on the pelvis).
    """

    robot: str
    description: str
    controller: dict
    sim: dict
    duration_s: float
    com_moves: tuple[Move, ...]
    foot_task: str
    foot_moves: tuple[Move, ...]
    contacts: tuple[tuple[float, tuple[str, ...]], ...]
    base_frame: str
    shift_task: str = 'com'
    diagnostics: dict = field(default_factory=lambda: {'exact_rate': 0.0, 'publish_rate': 2.0})

    @property
    def foot_frame(self) -> str:
        """The lifted foot's frame."""
        return self.controller['tasks'][self.foot_task]['frame']

    @property
    def lifted_foot(self) -> str:
        """The contact that the script releases."""
        (frame,) = set(self.contacts[0][1]) ^ set(self.controller['contacts'])
        return frame

    def gains(self, task: str) -> tuple[float, float]:
        """K_p and K_d (critical damping when unset) of a task with scalar gains."""
        parameters = self.controller['tasks'][task]
        kp = float(parameters['kp'])
        return kp, float(parameters.get('kd', 2.0 * math.sqrt(kp)))

    def contacts_at(self, t: float) -> tuple[str, ...]:
        """The contacts requested at `t`."""
        frames = tuple(self.controller['contacts'])
        for start_s, requested in self.contacts:
            if t >= start_s:
                frames = requested
        return frames

    def released(self, t: float) -> bool:
        """True while the lifted foot is not a contact (its release complete, not re-closed)."""
        transition = self.controller.get('contact_transition_time', 0.3)
        release_end = self.contacts[0][0] + transition
        return release_end <= t < self.contacts[1][0]
