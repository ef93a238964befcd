"""The priority recursion advanced one level at a time, for the multi-task SNS search.

The multi-task SNS (Flacco, De Luca & Khatib 2012, Algorithm 2) settles the levels in turn,
highest first: for level k it tries saturated sets one after another, each needing q̈ with level
k left out (scale 0) and in full (scale 1), the levels above fixed. Everything above level k is
the same for every set tried, so the recursion's state after level k − 1 (q̈ and N) is kept and
each try costs one held-rows step and one level step (`level_step`), not two recursions from
the top. With scale 0 the level step adds nothing, so q̈ with level k left out is the state just
before it. The q̈ and N of each try and of each settled level are those the full recursion
(`stack_kernel.solve_stack`) computes, operation for operation.
"""

from collections.abc import Sequence

import numpy as np

from wbc_control.control.held_joints import JointLimitLevel, hold
from wbc_control.control.level_kernel import BLOCKING, KEEP, level_step
from wbc_control.control.task_inertia_kernel import LAW


class LevelSearch:
    """q̈ and N after the settled levels; tries of the next level's saturated set.

    `try_set` and `settle`, one try and one level at a time, are what the readable reference
    `JointLimits.saturate_levels` drives; the controller runs the same search compiled, the
    whole stack in one call (`stack_kernel.solve_stack`). Once every level is settled,
    `acceleration` is q̈.

    Args:
        inverse_inertia: M⁻¹ (M† under contacts) `(nv, nv)`.
        start: q̈ before the first level `(nv,)`.
        level_terms: per level (terms, J, J̇v, ẍ* − J̇v), as the controller holds them.
        sqrt_weights: per level, √w per row.
        threshold: ε of the task inertia.
        stats: `(levels, 3)`, written with each settled level's (condition, rank, damped).
    """

    def __init__(
        self,
        inverse_inertia: np.ndarray,
        start: np.ndarray,
        level_terms: Sequence[tuple],
        sqrt_weights: Sequence[np.ndarray],
        threshold: float,
        stats: np.ndarray,
    ) -> None:
        self._inverse_inertia, self._threshold = inverse_inertia, threshold
        self._levels = level_terms  # (terms, J, J̇v, ẍ* − J̇v) per level
        self._sqrt_weights, self.stats = sqrt_weights, stats
        nv = inverse_inertia.shape[0]
        self.acceleration, self._null_space = start.copy(), np.empty((nv, nv))
        self._try_buffers: tuple | None = None  # q̈, N and stats of `try_set`, made on first use
        self._first, self._index = True, 0  # N = I while no level is settled

    def try_set(self, saturated: JointLimitLevel | None) -> tuple[np.ndarray, np.ndarray]:
        """(q̈₀, q̈₁): the next level left out and in full, with the joints `saturated` held."""
        if self._try_buffers is None:
            nv = self.acceleration.shape[0]
            self._try_buffers = (np.empty(nv), np.empty((nv, nv)), np.empty(3))
        acceleration, null_space, scratch = self._try_buffers
        acceleration[:] = self.acceleration
        first = self._first
        if not first:
            null_space[:] = self._null_space
        if saturated is not None:
            first = hold(
                self._inverse_inertia, acceleration, null_space, first, saturated, self._threshold
            )
        unforced = acceleration.copy()
        self._step(acceleration, null_space, first, 1.0, KEEP, scratch)
        return unforced, acceleration.copy()

    def settle(self, saturated: JointLimitLevel | None, scale: float) -> None:
        """Fix the next level with the joints `saturated` held, scaled by `scale`."""
        if saturated is not None:
            self._first = hold(
                self._inverse_inertia,
                self.acceleration,
                self._null_space,
                self._first,
                saturated,
                self._threshold,
            )
        index = self._index
        update = BLOCKING if index < len(self._levels) - 1 else KEEP
        stats = self.stats[index]
        self._step(self.acceleration, self._null_space, self._first, scale, update, stats)
        self._first, self._index = False, self._index + 1

    def _step(self, acceleration, null_space, first, scale, update, stats) -> None:
        _, jacobian, _, target = self._levels[self._index]
        level_step(
            jacobian,
            target,
            self._sqrt_weights[self._index],
            self._inverse_inertia,
            null_space,
            first,
            self._threshold,
            scale,
            True,
            update,
            LAW,
            acceleration,
            stats,
        )
