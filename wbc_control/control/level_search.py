"""The priority recursion advanced one level at a time, for the multi-task SNS search.

The multi-task SNS (Flacco, De Luca & Khatib 2012, Algorithm 2) settles the levels in turn,
highest first: for level k it tries saturated sets one after another, each needing q̈ with level
k left out (scale 0) and in full (scale 1), the levels above fixed. Everything above level k is
the same for every set tried, so the recursion's state after level k − 1 (q̈ and N) is kept and
each try costs one held-rows step and one level step (`level_step`), not two recursions from
the top. With scale 0 the level step adds nothing, so q̈ with level k left out is the state just
before it. The q̈ and N of each try and of each settled level are those the full recursion
(`PrioritizedController._recursion`) computes, operation for operation.
"""

from collections.abc import Sequence

import numpy as np

from wbc_control.control.joint_limit_kernel import search_level, settle_level
from wbc_control.control.joint_limits import (
    BOUND_TOLERANCE,
    LEVEL_TOLERANCE,
    JointLimitLevel,
    JointLimits,
    hold,
)
from wbc_control.control.level_kernel import BLOCKING, KEEP, LAW, level_step

#: A joint-limit level: the joints saturated just above a task level, and the level's scale.
Limit = tuple[JointLimitLevel | None, float]


class LevelSearch:
    """q̈ and N after the settled levels; tries of the next level's saturated set.

    Two ways to use one: `saturate_levels`, the whole search compiled level by level (what the
    controller runs), or `try_set` and `settle`, one try and one level at a time (what the
    readable reference `JointLimits.saturate_levels` drives). Either way `acceleration` ends
    as q̈ with every level settled.

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

    def saturate_levels(self, limits: JointLimits, bounds: tuple[np.ndarray, np.ndarray]) -> Limit:
        """Multi-task SNS, every level settled: all the saturated joints and the least scale.

        `JointLimits.saturate_levels` run through `try_set` and `settle`, each level's search
        and settling one compiled call each (`joint_limit_kernel.search_level` and
        `settle_level`); the same sets and scales. Each level's set and scale are kept in
        `level_active` `(levels, n_act)`, `level_values` (a row per level) and `level_scales`.
        """
        joints, (lower, upper) = limits.velocity_indices, bounds
        count, size = len(self._levels), joints.shape[0]
        # Every row is written by `search_level` (its values where active) and `settle_level`.
        self.level_active = np.empty((count, size), dtype=bool)
        *self.level_values, values = np.empty((count + 1, size))  # rows: each level's, all
        self.level_scales = [1.0] * count
        held = np.zeros(size, dtype=bool)
        tolerances, threshold = (BOUND_TOLERANCE, LEVEL_TOLERANCE), self._threshold
        null_space, inverse_inertia = self._null_space, self._inverse_inertia
        first, least = True, 1.0
        for index, (_, jacobian, _, target) in enumerate(self._levels):
            active, level_values = self.level_active[index], self.level_values[index]
            weights = self._sqrt_weights[index]
            scale = search_level(
                inverse_inertia, self.acceleration, null_space, first, jacobian, target,
                weights, threshold, LAW, joints, lower, upper, held, index == 0, tolerances,
                active, level_values,
            )  # fmt: skip
            update = BLOCKING if index < count - 1 else KEEP
            first = settle_level(
                inverse_inertia, self.acceleration, null_space, first, joints, active,
                level_values, jacobian, target, weights, threshold, scale, update, LAW,
                self.stats[index],
            )  # fmt: skip
            self.level_scales[index] = scale
            least = scale if scale < least else least
            # A joint is saturated at one level at most: those held above are not free below.
            values[active] = level_values[active]
            held |= active
        return limits.saturated(held, values), least

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
