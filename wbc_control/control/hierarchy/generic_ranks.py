"""Generic ranks: the rank a stack of Jacobians has at almost every configuration.

A level with fewer directions than its generic rank has lost the difference to a singularity
(`wbc_control.control.hierarchy.cascade`); contacts whose stacked Jacobian has a
generic rank below its row count depend on each other everywhere, and the block matrix
[M Aᵀ; A 0] is singular (Johnson 2024, eq 32). Both are measured at a few random configurations,
which are not singular almost surely, outside the tick.
"""

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from wbc_control.control.contact.contacts import contact_jacobian
from wbc_control.exceptions import WbcError
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

#: Relative singular value below which a row-normalised stacked Jacobian has lost rank.
GENERIC_RANK_TOLERANCE = 1e-8


class GenericRanks(NamedTuple):
    """The generic ranks of one stack (`sampled_generic_ranks`)."""

    levels: tuple[int, ...]  # each level's, beyond the contacts' and the higher levels'
    contacts: int  # the stacked contact Jacobian A's (0 without contacts)


def cumulative_ranks(blocks: Sequence[np.ndarray]) -> np.ndarray:
    """The rank of [B₀; …; Bₖ] for each k, blocks `(mₖ, nv)` in order, `(len(blocks),)`.

    Evaluated at one configuration, this is the generic rank when that configuration is not
    singular, which holds almost surely for a random one; callers take the largest over a few.
    Rows are normalised before the SVD so that units do not matter; zero rows count for nothing.
    """
    stacked, ranks = [], []
    for block in blocks:
        stacked.append(block)
        rows = np.vstack(stacked)
        norms = np.linalg.norm(rows, axis=1)
        rows = rows[norms > 0.0] / norms[norms > 0.0, None]
        singular = np.linalg.svd(rows, compute_uv=False) if rows.size else np.zeros(0)
        largest = singular[0] if singular.size else 0.0
        ranks.append(int((singular > GENERIC_RANK_TOLERANCE * largest).sum()))
    return np.array(ranks, dtype=int)


def sampled_generic_ranks(
    robot: RobotModel, levels: Sequence, contacts: Sequence, samples: int = 3
) -> GenericRanks:
    """Generic ranks of the contacts and of each level below them (`cumulative_ranks`).

    Of [A; J₀; …; Jₖ] at `samples` random states, the largest of each.

    Level k's is rank [A; J₀ … Jₖ] − rank [A; J₀ … Jₖ₋₁]: the contact rows take their own rank
    first, which is not counted in the levels'. The contacts' own rank below A's row count
    means that their directions depend on each other at almost every configuration, where
    [M Aᵀ; A 0] is singular (Johnson 2024, eq 32).

    Args:
        robot: the model.
        levels: the controller's levels (`wbc_control.control.switching.stacks.Level`).
        contacts: the rigid contacts every level sits below.
        samples: how many random configurations to try.

    Returns:
        The ranks; a level whose tasks cannot be evaluated counts all its rows.
    """
    no_contacts = np.zeros((0, robot.nv))
    contact_rank, cumulative, evaluable = 0, np.zeros(len(levels), dtype=int), True
    for state in random_states(robot, samples):
        constraint = contact_jacobian(state, contacts)[0] if contacts else no_contacts
        jacobians = _level_jacobians(levels, state) if evaluable else None
        evaluable = jacobians is not None
        ranks = cumulative_ranks([constraint, *(jacobians or ())])
        contact_rank = max(contact_rank, int(ranks[0]))
        if evaluable:
            cumulative = np.maximum(cumulative, ranks[1:] - ranks[0])
    if not evaluable:
        return GenericRanks(tuple(level.dim for level in levels), contact_rank)
    return GenericRanks(tuple(np.diff(cumulative, prepend=0).tolist()), contact_rank)


def _level_jacobians(levels: Sequence, state: RobotState) -> list[np.ndarray] | None:
    """Each level's stacked Jacobian at `state`; None if a task cannot be evaluated there."""
    try:
        return [
            level.stack([entry.task.compute(state) for entry in level.entries])[0]
            for level in levels
        ]
    except WbcError:
        return None


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
