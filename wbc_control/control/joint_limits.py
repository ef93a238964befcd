"""Joint position limits as task levels, by saturation in the null space.

Method: the multi-task SNS, saturation in the null space (Flacco, De Luca & Khatib 2012,
"Prioritized multi-task motion control of redundant robots under hard joint constraints"),
with a task scale per priority level. Each joint has acceleration bounds [aᵢ⁻, aᵢ⁺] (below). If
the prioritized recursion's q̈ is within them nothing else happens. Otherwise the levels are
taken in turn, highest first, those above fixed with their saturated joints and scales: with
level k left out (q̈₀, for k = 0 gravity and the contacts' own acceleration alone) and in full
(q̈₁), q̈(sₖ) = q̈₀ + sₖ (q̈₁ − q̈₀) is affine in its scale sₖ. The joint that limits sₖ the most is
saturated, i.e. fixed at the bound it reaches by rows eᵢᵀ placed just above level k, within
what the levels above leave free, and level k runs again in what the saturated joints leave;
this repeats while sₖ < 1, at most once per joint, and the saturated set with the largest sₖ
that keeps every joint within its bounds is used, level k scaled by sₖ. Its null space still
goes to the levels below, which may be scaled to 0; a level above is never scaled or deprived
of a joint for a level below. Scaling keeps every task's direction when the bounds cannot give
it all (the joints are never left to run at a bound while the task has no authority left), as
Flacco et al. argue. The reported scale is the smallest sₖ.

q̈₀ leaves the user tasks out entirely rather than asking them for ẍ* = 0: with ẍ* = 0 a task
still asks J q̈ = −J̇v, which near a singularity (a stretched elbow at its velocity limits) needs
accelerations beyond every joint's bounds, and then no scale of the tasks is within them.

The bounds keep each joint's velocity below a ceiling that falls to zero at a wall `margin`
inside each URDF limit, and below the URDF velocity limit everywhere (the viability idea of
Flacco, De Luca & Khatib 2012: never move faster than one can still stop before the limit):

    v⁺(d) = min(ω d, √(2 A d), v_max)        d = distance to the upper wall (< 0 beyond it)
    aᵢ⁺ = kd (v⁺(dᵢ) − q̇ᵢ),    and symmetrically aᵢ⁻ for the lower wall,

with ω = kp / kd (so that near the wall it is the PD wall kp d − kd q̇, kd = 2 √kp) and A
`deceleration`, what the joint can be asked to brake with. Beyond a wall (d < 0) the ceiling
turns negative: the joint is pulled back inside at up to ω |d|.

A joint that the tasks drive into its limit therefore settles at the wall without overshoot; one
already beyond it (an arm that fell while the controller was down) is pulled back inside at
the wall's rate, and the tasks carry on with the remaining joints.

Such bounds hold only if the torque they need is sent: on a fully actuated fixed base a q̈
whose torque leaves the command's range is fitted to it (`wbc_control.control.torque_fit`);
with contacts the controller lowers s until the torque fits (`torque_limits.task_scale`).

Why SNS rather than the activation thresholds of Mansard, Khatib & Kheddar (2009): a joint
enters the saturated set exactly when its unconstrained acceleration reaches its bound, so the
command is continuous at activation without a buffer zone of partial priority. A partially
active row in a strict hierarchy leaves the levels below a thin slice of that direction,
which they invert with a large gain (the same effect the singular damping has to block); the
continuous inverse that Mansard et al. introduce against it costs a sum over subsets of the
active rows. SNS costs one more recursion per saturated joint, and nothing while no joint is
near a limit.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from wbc_control.control.held_joints import JointLimitLevel
from wbc_control.control.joint_limit_kernel import acceleration_bounds, within_bounds
from wbc_control.exceptions import InvalidValue
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

if TYPE_CHECKING:
    from wbc_control.control.level_search import LevelSearch

#: Default distance (rad, or m for prismatic joints) of the wall inside each URDF limit.
DEFAULT_JOINT_LIMIT_MARGIN = 0.05
#: Default stiffness of the wall (1/s²); its damping is critical, kd = 2 √kp.
DEFAULT_JOINT_LIMIT_GAIN = 400.0
#: Default braking the approach to a wall may ask (rad/s², m/s² for prismatic joints).
DEFAULT_JOINT_LIMIT_DECELERATION = 5.0
#: A bound counts as crossed beyond this (rad/s²): rounding must not flip joints in and out.
BOUND_TOLERANCE = 1e-9
#: A level's saturated set counts only if no joint ends further (rad/s²) past its bounds.
LEVEL_TOLERANCE = 1e-6


class JointLimits:
    """Acceleration bounds that keep the actuated joints inside their position limits.

    Args:
        robot: the model; joints without finite limits (continuous) are never bounded.
        margin: how far inside each URDF limit the wall stands (rad or m); a joint whose range
            is narrower than 4 margins gets a wall a quarter of its range inside each limit.
        kp: the wall's stiffness (1/s²).
        deceleration: A, the braking an approach may ask (rad/s² or m/s²).
    """

    def __init__(
        self,
        robot: RobotModel,
        margin: float = DEFAULT_JOINT_LIMIT_MARGIN,
        kp: float = DEFAULT_JOINT_LIMIT_GAIN,
        deceleration: float = DEFAULT_JOINT_LIMIT_DECELERATION,
    ) -> None:
        margin, kp, deceleration = float(margin), float(kp), float(deceleration)
        if not (np.isfinite(margin) and margin >= 0.0):
            raise InvalidValue(f'joint limit margin must be finite and >= 0, got {margin}')
        for name, value in (('gain', kp), ('deceleration', deceleration)):
            if not (np.isfinite(value) and value > 0.0):
                raise InvalidValue(f'joint limit {name} must be finite and > 0, got {value}')
        self.robot = robot
        self.margin, self.kp, self.kd = margin, kp, 2.0 * np.sqrt(kp)
        self.deceleration = deceleration
        velocity = np.asarray(robot.model.velocityLimit, dtype=float)[robot.indices.v]
        self.max_speed = np.where(np.isfinite(velocity) & (velocity > 0.0), velocity, np.inf)
        lower, upper = robot.position_limits
        inset = np.minimum(margin, 0.25 * (upper - lower))
        self.lower_wall = lower + inset  # (n_act,) -inf for continuous joints
        self.upper_wall = upper - inset
        self.joint_names = tuple(robot.joint_names)
        self._name_array = np.array(self.joint_names, dtype=object)
        #: Each actuated joint's velocity index, `(n_act,)` int64.
        self.velocity_indices = np.asarray(robot.indices.v, dtype=np.int64)
        # Each joint's entry of q: its position; for a continuous joint (no walls: its
        # distance to them is inf at any finite position) the cosine, a finite stand-in.
        self._q_positions = _position_entries(robot)
        self._rows = np.zeros((robot.n_actuated, robot.nv))  # (n_act, nv) eᵢᵀ
        self._rows[np.arange(robot.n_actuated), self.velocity_indices] = 1.0

    def bounds(
        self, state: RobotState, out: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(a⁻, a⁺), the acceleration bounds of every actuated joint, `(n_act,)` each.

        aᵢ⁺ = kd (v⁺(dᵢ) − q̇ᵢ) and symmetrically aᵢ⁻ (the module docstring), computed by the
        compiled `joint_limit_kernel.acceleration_bounds`; written into the rows of `out`
        `(2, n_act)` if given.
        """
        size = self.velocity_indices.shape[0]
        lower, upper = np.empty((2, size)) if out is None else out  # one allocation
        acceleration_bounds(
            state.q,
            state.v,
            self._q_positions,
            self.velocity_indices,
            self.lower_wall,
            self.upper_wall,
            self.max_speed,
            self.kp,
            self.kd,
            self.deceleration,
            lower,
            upper,
        )
        return lower, upper

    def within(
        self,
        acceleration: np.ndarray,
        bounds: tuple[np.ndarray, np.ndarray],
        tolerance: float = BOUND_TOLERANCE,
    ) -> bool:
        """Whether q̈ `(nv,)` keeps every joint within its bounds (then SNS has nothing to do)."""
        lower, upper = bounds
        return within_bounds(acceleration, self.velocity_indices, lower, upper, tolerance)

    def plan(
        self,
        unforced: np.ndarray,
        full: np.ndarray,
        bounds: tuple[np.ndarray, np.ndarray],
        level: JointLimitLevel | None,
        held: JointLimitLevel | None = None,
    ) -> tuple[float | None, JointLimitLevel | None]:
        """One SNS step: the task scale this saturated set allows, and the next set to try.

        With the joints of `level` saturated, q̈(s) = q̈₀ + s (q̈₁ − q̈₀) is affine in the scale
        s of the user tasks (q̈₀: without them, `unforced`; q̈₁: as they are, `full`).
        Returns the largest s ∈ [0, 1] that keeps the free joints within their bounds, and
        `level` with the joint that limits s added at the bound it reaches (None when s = 1
        or every joint is saturated). Free joints that even q̈₀ drives out of bounds are
        added at once; the scale is then None: no s keeps this set within the bounds. Joints
        `held` by higher levels are not free either.
        """
        lower, upper = bounds
        free = np.ones(len(self.joint_names), dtype=bool)
        for taken in (level, held):
            if taken is not None:
                free &= ~taken.active
        joints = self.velocity_indices
        base, change = unforced[joints], full[joints] - unforced[joints]
        outside = free & ((base > upper + BOUND_TOLERANCE) | (base < lower - BOUND_TOLERANCE))
        if outside.any():
            return None, self._with(level, outside, np.clip(base, lower, upper))
        with np.errstate(divide='ignore', invalid='ignore'):
            room = np.where(change > 0.0, upper - base, lower - base) / change
        room = np.where(free & (np.abs(change) > BOUND_TOLERANCE), room, np.inf)
        critical = int(np.argmin(room))
        scale = float(min(max(room[critical], 0.0), 1.0))
        if scale >= 1.0 or not free.any():
            return scale, None
        chosen = np.zeros(len(self.joint_names), dtype=bool)
        chosen[critical] = True
        bound = upper if change[critical] > 0.0 else lower
        return scale, self._with(level, chosen, bound)

    def saturate(
        self,
        bounds: tuple[np.ndarray, np.ndarray],
        recursion: Callable[[JointLimitLevel | None], tuple[np.ndarray, object]],
        unforced: Callable[[JointLimitLevel | None], np.ndarray],
        full: tuple[np.ndarray, object],
    ) -> tuple[JointLimitLevel | None, np.ndarray, np.ndarray, object, float]:
        """SNS with one scale for all tasks: the stack without task levels (q̈₀ alone).

        Args:
            bounds: (a⁻, a⁺) of `bounds`.
            recursion: level ↦ (q̈₁, level reports) with the joints of `level` saturated.
            unforced: level ↦ q̈₀ with the joints of `level` saturated.
            full: recursion(None), already computed.

        Returns the saturated joints, q̈₀, q̈₁, the level reports and the scale: of the sets
        that keep every joint within its bounds, the one with the largest scale; the last set
        tried, at scale 0, if none does.
        """
        level, best = None, None
        acceleration, reports = full
        for _ in range(len(self.joint_names) + 1):
            base = unforced(level)
            scale, following = self.plan(base, acceleration, bounds, level)
            tried = (level, base, acceleration, reports, 0.0 if scale is None else scale)
            if scale is not None and (best is None or scale > best[-1]):
                best = tried
            if following is None or (scale is not None and scale >= 1.0):
                break
            level = following
            acceleration, reports = recursion(level)
        return best or tried

    def saturate_levels(
        self, bounds: tuple[np.ndarray, np.ndarray], search: 'LevelSearch', count: int
    ) -> list[tuple[JointLimitLevel | None, float]]:
        """Multi-task SNS (Flacco, De Luca & Khatib 2012, Algorithm 2): a scale per level.

        The readable reference: the controller runs the same search with each level's loop
        compiled, the whole stack in one call (`stack_kernel.solve_stack`);
        test/core/test_joint_limit_kernel.py holds them equal.

        Level k, highest first, with the saturated sets and scales of the levels above fixed:
        q̈ₖ(s) = q̈ₖ₋₁ + s Δₖ is affine in its own scale, so `plan` finds the set, saturated
        within what the levels above leave free, with the largest sₖ. A level scaled below 1
        still leaves its null space to the levels below; they may be scaled to 0.

        Args:
            bounds: (a⁻, a⁺) of `bounds`.
            search: the recursion advanced level by level
                (`wbc_control.control.level_search.LevelSearch`): `try_set(level)` gives
                (q̈₀, q̈₁) of the next level with the joints of `level` held, `settle(level,
                scale)` fixes it; its q̈ is the result once every level is settled.
            count: the number of levels.

        Returns limits[k] = (the joints saturated just above level k, sₖ).
        """
        limits: list[tuple[JointLimitLevel | None, float]] = []
        for _ in range(count):
            held, level, best = self.combined(limits)[0], None, None
            for _ in range(len(self.joint_names) + 1):
                base, full = search.try_set(level)
                scale, following = self.plan(base, full, bounds, level, held)
                tried = (level, 0.0 if scale is None else scale)
                if scale is not None and (best is None or scale > best[1]):
                    # Rows held in what the levels above leave may not all be reachable there.
                    if self.within(base + scale * (full - base), bounds, LEVEL_TOLERANCE):
                        best = tried
                if following is None or (scale is not None and scale >= 1.0):
                    break
                level = following
            # Below level 0, leaving level k out keeps the bounds the levels above kept.
            limits.append(best or ((None, 0.0) if limits else tried))
            search.settle(*limits[-1])
        return limits

    def combined(
        self, limits: list[tuple[JointLimitLevel | None, float]]
    ) -> tuple[JointLimitLevel | None, float]:
        """All the joints saturated at any level, and the smallest level scale."""
        scale = min((level_scale for _, level_scale in limits), default=1.0)
        levels = [level for level, _ in limits if level is not None]
        if not levels:
            return None, scale
        target, active = np.zeros(len(self.joint_names)), np.zeros(len(self.joint_names), bool)
        for level in levels:
            target[level.active], active = level.target, active | level.active
        return JointLimitLevel(self._rows[active], target[active], active), scale

    def saturated(self, active: np.ndarray, values: np.ndarray) -> JointLimitLevel | None:
        """The joints `active` `(n_act,)` held at `values` `(n_act,)`; None if there are none."""
        if True not in active:  # one call, where `active.any()` makes three
            return None
        return JointLimitLevel(self._rows[active], values[active], active.copy())

    def _with(
        self, level: JointLimitLevel | None, added: np.ndarray, values: np.ndarray
    ) -> JointLimitLevel:
        """`level` with the joints `added` saturated at `values` `(n_act,)`."""
        target = np.zeros(len(self.joint_names))
        active = added.copy()
        if level is not None:
            target[level.active] = level.target
            active |= level.active
        target[added] = values[added]
        return JointLimitLevel(self._rows[active], target[active], active)

    def names(self, active: np.ndarray) -> tuple[str, ...]:
        """Names of the joints `active` `(n_act,)` bool, in actuated order."""
        return tuple(self._name_array[active])


def _position_entries(robot: RobotModel) -> np.ndarray:
    """Each actuated joint's index in q `(n_act,)`: its position, or its cosine if continuous."""
    entries = np.empty(robot.n_actuated, dtype=np.int64)
    tables = robot.indices
    entries[tables.linear_joints] = tables.q_linear
    entries[tables.continuous_joints] = tables.q_cos
    return entries
