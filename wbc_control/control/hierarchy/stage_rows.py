"""The inequality rows each stage of the cascade solves against (`cascade.solve_cascade`).

The hard rows that are not equalities, their norms in the equalities' freedom, which of them
are soft, and the joint box; the same rows with the joint bounds soft for the levels after
the first (`soft_below_first`).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from wbc_control.control.hierarchy.stage_qp import Inequalities, inequalities

if TYPE_CHECKING:  # cascade imports this module
    from wbc_control.control.hierarchy.cascade import HardConstraints


def stage_inequalities(
    hard: HardConstraints, basis: np.ndarray, known: Inequalities | None = None
) -> Inequalities:
    """The hard rows that are not equalities, their norms in the equalities' freedom `basis`.

    Without equalities they are `hard`'s rows themselves (views) and the freedom all of x.
    `known`: these rows' `Inequalities` in a cascade with other rows soft, their norms reused
    (only `soft` is `hard`'s).
    """
    equal = hard.equality
    soft = _none_soft(equal.shape[0]) if hard.soft is None else hard.soft
    if not np.logical_or.reduce(equal):
        if known is not None:
            return known._replace(soft=soft)
        return inequalities(hard.rows, hard.lower, hard.upper, soft, None, hard.degenerate)
    keep = ~equal
    if known is not None:
        return known._replace(soft=soft[keep])
    degenerate = None if hard.degenerate is None else hard.degenerate[keep]
    return inequalities(
        hard.rows[keep], hard.lower[keep], hard.upper[keep], soft[keep], basis, degenerate
    )


def soft_below_first(inequality: Inequalities, hard: HardConstraints) -> Inequalities:
    """`inequality` as the levels after the first and the least-energy stages see it.

    Its joint-bound rows (`hard.joint`) are soft there, a slack each at `SOFT_WEIGHT` times
    the stage's curvature (`stage_kernel.stage_problem`). Hard, two bounds the levels above
    left the point on, nearly parallel in a level's freedom, hold it at their vertex or let it
    slide along their wedge as the wedge opens one way or the other, which turns over with the
    state: a Unitree Z1's posture jumped 42 rad/s² within a hundredth of a tick (shoulder and
    elbow bounds 10⁻⁵ rad apart), 97 steps up to 7.8 N m out of reach (docs/safety.md). The
    bounds track the joint limits (the viability law), corrected at the next tick; the torque
    range and the friction cones, physical, stay hard.
    """
    joint = hard.joint
    if joint is None:
        return inequality
    if np.logical_or.reduce(hard.equality):
        joint = joint[~hard.equality]
    return inequality._replace(soft=inequality.soft | joint)


@cache
def _none_soft(rows: int) -> np.ndarray:
    """No row soft: `rows` False flags, read-only, shared."""
    flags = np.zeros(rows, dtype=bool)
    flags.flags.writeable = False
    return flags


@cache
def unbounded_box(nv: int) -> tuple[np.ndarray, np.ndarray]:
    """The joint box where no joint rows bound q̈: (−∞, +∞) per coordinate, read-only, shared."""
    lowest, highest = np.full(nv, -np.inf), np.full(nv, np.inf)
    lowest.flags.writeable = highest.flags.writeable = False
    return lowest, highest
