"""The joints the joint-limit level saturates, as a task level of their own, and holding them.

A saturated joint i is held at its target acceleration by a row eᵢᵀ placed above the level it
was saturated for (Flacco, De Luca & Khatib 2012, the multi-task SNS): the rows form a level
of the priority recursion, solved with Khatib (1987)'s dynamically consistent inverse for
Jp = E N within what the levels above leave free (`hold`).
"""

from typing import NamedTuple

import numpy as np

from wbc_control.control.level_kernel import EXACT, level_step
from wbc_control.control.task_inertia_kernel import LAW


class JointLimitLevel(NamedTuple):
    """The saturated joints of one tick: rows `(k, nv)` and their target accelerations `(k,)`."""

    jacobian: np.ndarray
    target: np.ndarray
    active: np.ndarray  # (n_act,) bool


def hold(
    inverse_inertia: np.ndarray,
    acceleration: np.ndarray,
    null_space: np.ndarray,
    first: bool,
    saturated: JointLimitLevel,
    threshold: float,
) -> bool:
    """q̈ `(nv,)` moved, in place, to hold the `saturated` joints within N.

    The saturated rows are a task level of their own (Khatib 1987's J̄ for Jp = E N), solved
    by the compiled `level_step`; N `(nv, nv)` loses what they take, J̄ Jp, in place (`first`:
    N = I above them, and N is written). Returns False: N is no longer the identity.
    """
    rows = saturated.jacobian
    level_step(
        rows,
        saturated.target,
        np.ones(rows.shape[0]),
        inverse_inertia,
        null_space,
        first,
        threshold,
        1.0,
        False,
        EXACT,
        LAW,
        acceleration,
        np.empty(3),
    )
    return False
