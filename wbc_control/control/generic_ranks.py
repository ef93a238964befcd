"""Generic ranks: the rank a stack of Jacobians has at almost every configuration.

A level that inverts fewer directions exactly than its generic rank has lost the difference to
a singularity (`wbc_control.control.task_inertia`); contacts whose stacked Jacobian has a
generic rank below its row count depend on each other everywhere, and the block matrix
[M Aᵀ; A 0] is singular (Johnson 2024, eq 32). Both are measured at a few random configurations,
which are not singular almost surely, outside the tick.
"""

from collections.abc import Sequence

import numpy as np
import pinocchio as pin

from wbc_control.control.contacts import contact_jacobian
from wbc_control.exceptions import WbcError
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

#: Relative singular value below which a row-normalised stacked Jacobian has lost rank.
GENERIC_RANK_TOLERANCE = 1e-8


def generic_level_ranks(jacobians: Sequence[np.ndarray], higher: np.ndarray | None = None):
    """Structural rank of each level: rank [A; J₀; …; Jₖ] − rank [A; J₀; …; Jₖ₋₁].

    The contact rows A take their own rank first: it is not counted in the levels'.

    Evaluated at one configuration, this is the generic rank when that configuration is not
    singular, which holds almost surely for a random one; callers take the largest over a few.
    Rows are normalised before the SVD so that units do not matter.

    Args:
        jacobians: each level's stacked Jacobian, highest priority first, `(mₖ, nv)`.
        higher: rows every level sits below (the contact Jacobian A), `(c, nv)`, or None.

    Returns:
        The cumulative ranks above rank A, one per level, `(levels,)`.
    """
    stacked, ranks = [], []
    for jacobian in ([] if higher is None else [higher]) + list(jacobians):
        stacked.append(jacobian)
        rows = np.vstack(stacked)
        norms = np.linalg.norm(rows, axis=1)
        rows = rows[norms > 0.0] / norms[norms > 0.0, None]
        singular = np.linalg.svd(rows, compute_uv=False) if rows.size else np.zeros(0)
        largest = singular[0] if singular.size else 0.0
        ranks.append(int((singular > GENERIC_RANK_TOLERANCE * largest).sum()))
    ranks = np.array(ranks)
    return ranks if higher is None else ranks[1:] - ranks[0]


def sampled_generic_ranks(
    robot: RobotModel, levels: Sequence, contacts: Sequence, samples: int = 3
):
    """Each level's generic rank (`generic_level_ranks`), the largest over random states.

    Args:
        robot: the model.
        levels: the controller's levels (`wbc_control.control.controller_types.Level`).
        contacts: the rigid contacts every level sits below.
        samples: how many random configurations to try.

    Returns:
        One rank per level; a level whose tasks cannot be evaluated counts all its rows.
    """
    cumulative = np.zeros(len(levels), dtype=int)
    for state in random_states(robot, samples):
        try:
            jacobians = [
                level.stack([entry.task.compute(state) for entry in level.entries])[0]
                for level in levels
            ]
        except WbcError:
            return tuple(level.dim for level in levels)
        constraint = contact_jacobian(state, contacts)[0] if contacts else None
        cumulative = np.maximum(cumulative, generic_level_ranks(jacobians, constraint))
    return tuple(np.diff(cumulative, prepend=0).tolist())


def generic_contact_rank(robot: RobotModel, contacts: Sequence, samples: int = 3) -> int:
    """The rank of the stacked contact Jacobian A, the largest over random states.

    Rows are normalised as in `generic_level_ranks`. Below A's row count, the contacts' directions
    depend on each other at almost every configuration, and [M Aᵀ; A 0] is singular there
    (Johnson 2024, eq 32).
    """
    return max(
        int(generic_level_ranks([contact_jacobian(state, contacts)[0]])[0])
        for state in random_states(robot, samples)
    )


def random_states(robot: RobotModel, samples: int):
    """`samples` states at random configurations (joints within ±3 rad or m), one buffer.

    The same seeded sequence on every call; each state is valid until the next is yielded.
    """
    model = robot.model
    lower = np.clip(model.lowerPositionLimit, -3.0, 3.0)
    upper = np.clip(model.upperPositionLimit, -3.0, 3.0)
    state = RobotState(robot)
    rng = np.random.default_rng(0)
    for _ in range(samples):
        state.update(pin.randomConfiguration(model, lower, upper), rng.standard_normal(robot.nv))
        yield state
