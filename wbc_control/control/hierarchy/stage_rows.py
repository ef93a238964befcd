"""The inequality rows each stage of the cascade solves against (`cascade.solve_cascade`).

The hard rows that are not equalities, their norms in the equalities' freedom, which of them
are soft and which yield below the first level, and the joint box.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from wbc_control.control.hierarchy.stage_qp import Inequalities, inequalities, no_rows

if TYPE_CHECKING:  # cascade imports this module
    from wbc_control.control.hierarchy.cascade import HardConstraints


def stage_inequalities(
    hard: HardConstraints, basis: np.ndarray, known: Inequalities | None = None
) -> Inequalities:
    """The hard rows that are not equalities, their norms in the equalities' freedom `basis`.

    Without equalities they are `hard`'s rows themselves (views) and the freedom all of x.
    `known`: these rows' `Inequalities` in a cascade with other rows soft, their norms reused
    (only `soft` is `hard`'s). The joint-bound rows (`hard.joint`) are `yielding`: soft in
    the stages below the first level that sets directions wherever the levels above left the
    point on or past one of their bounds (`stage_qp.solve_stage`), a slack each at
    `SOFT_WEIGHT` times the stage's curvature. Hard there, two such bounds nearly parallel in
    a level's freedom hold it at their vertex or let it slide along their wedge as the wedge
    opens one way or the other, which turns over with the state: a Unitree Z1's posture jumped
    42 rad/s² within a hundredth of a tick (shoulder and elbow bounds 10⁻⁵ rad apart), 97
    steps up to 7.8 N m out of reach (docs/safety.md). The bounds track the joint limits (the
    viability law), corrected at the next tick; the torque range and the friction cones,
    physical, never yield.
    """
    equal = hard.equality
    soft = no_rows(equal.shape[0]) if hard.soft is None else hard.soft
    if not np.logical_or.reduce(equal):
        if known is not None:
            return known._replace(soft=soft)
        return inequalities(
            hard.rows, hard.lower, hard.upper, soft, None, hard.degenerate, hard.joint
        )
    keep = ~equal
    if known is not None:
        return known._replace(soft=soft[keep])
    degenerate = None if hard.degenerate is None else hard.degenerate[keep]
    joint = None if hard.joint is None else hard.joint[keep]
    return inequalities(
        hard.rows[keep], hard.lower[keep], hard.upper[keep], soft[keep], basis, degenerate, joint
    )


@cache
def unbounded_box(nv: int) -> tuple[np.ndarray, np.ndarray]:
    """The joint box where no joint rows bound q̈: (−∞, +∞) per coordinate, read-only, shared."""
    lowest, highest = np.full(nv, -np.inf), np.full(nv, np.inf)
    lowest.flags.writeable = highest.flags.writeable = False
    return lowest, highest
