"""Strictly prioritized operational-space control with Khatib's dynamically consistent inverse.

The recursion of Khatib (1987) and Sentis & Khatib (2005), with the dynamically consistent
generalized inverse J̄ of Khatib (1987, eq 30), for priority levels k = 0, 1, ... (0 = highest;
tasks of a level are stacked)::

    N = I ; q̈ = 0
    for each level k:
        Jp   = J_k N                         # what the higher levels leave free
        Λ    = (Jp M⁻¹ Jpᵀ)⁻¹                # regularized, see wbc_control.control.task_inertia
        J̄    = M⁻¹ Jpᵀ Λ                     # dynamically consistent inverse
        q̈   += J̄ (ẍ*_k − J̇_k v − J_k q̈)
        N   −= M⁻¹ Jpᵀ Λ_N Jp                # = J̄ Jp away from singularities
    τ = M q̈ + h

With rigid contacts (Mistry & Righetti 2011; Aghili 2005) the contacts are the top level: q̈
starts at −A†ᵀȦq̇ and every task level uses the constrained inverse inertia
M† = M⁻¹ − M⁻¹Aᵀ(AM⁻¹Aᵀ)⁻¹AM⁻¹ (Johnson 2024, eq 6) in place of M⁻¹: by that Schur complement from
the tick's Cholesky factor of M when M and AM⁻¹Aᵀ are provably well conditioned
(`schur_dagger_terms`), else from the block matrix [M Aᵀ; A 0], so that it exists where M is
singular. Then A J̄ = A M† Jpᵀ Λ = 0: no task can violate a contact. The torque
is the actuated part of M q̈ + h − Aᵀf, with f the contact forces of `wbc_control.control.contacts`
(they balance the unactuated base rows).

Without contacts, M⁻¹ is formed once per tick from the Cholesky factor of M
(`RobotState.inverse_mass_matrix`) and every level applies it by one product: Λ = (Jp M⁻¹Jpᵀ)⁻¹
and J̄ = M⁻¹Jpᵀ Λ need only M⁻¹Jpᵀ (Khatib 1987). Because J̄ = M⁻¹Jpᵀ Λ and Jp = J N, a lower
level's contribution J̄_k(·) satisfies J_i J̄_k = 0 for every higher level i whose Λ is exact,
so it cannot change a higher level's task acceleration.

Contacts (`set_contacts`) and tasks (`set_active`) switch at run time: a tick during a switch
solves the stack before and the stack after it and blends their torques, with a load transfer
between the contacts (:mod:`wbc_control.control.contact_transitions`,
:mod:`wbc_control.control.task_activation`).

The levels' rows are stacked and the whole stack, the joint-limit search included, is one
compiled call (`stack_kernel.solve_stack`); the few products left here are `A.dot(B)`, cheaper
per call than numpy's `@` (a generalized ufunc) on these small arrays.
"""

from collections.abc import Sequence
from functools import partial

import numpy as np
import numpy.typing as npt

from wbc_control.control.constrained_dynamics import schur_dagger_terms
from wbc_control.control.contact_transitions import (
    DEFAULT_CONTACT_TRANSITION_TIME,
    DEFAULT_TASK_TRANSITION_TIME,
    BlendPart,
    StackSwitcher,
    row_load_shares,
)
from wbc_control.control.contacts import (
    Contact,
    base_contact_forces,
    constraint_buffers,
    contact_dynamics,
)
from wbc_control.control.controller_types import (
    ContactReports,
    ControllerResult,
    LazyReports,
    TaskEntry,
    validate_threshold,
    validate_weight,
)
from wbc_control.control.held_joints import JointLimitLevel, hold
from wbc_control.control.joint_limits import BOUND_TOLERANCE, LEVEL_TOLERANCE, JointLimits
from wbc_control.control.stack_kernel import solve_stack
from wbc_control.control.task_activation import (
    Stack,
    Stacks,
    blend_results,
    task_reports,
)
from wbc_control.control.task_inertia_kernel import LAW
from wbc_control.control.tick_reports import level_health
from wbc_control.control.torque_fit import fit_torque
from wbc_control.control.torque_limits import TorqueLimiter, fits, task_scale
from wbc_control.exceptions import InvalidTaskConfig, InvalidValue, ModelError
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks.task import Task, as_slice

__all__ = [
    'ControllerResult',
    'PrioritizedController',
    'TaskEntry',
    'schur_dagger_terms',
    'validate_weight',
]

DEFAULT_SINGULAR_VALUE_THRESHOLD = 1e-3
DEFAULT_FRICTION_COEFFICIENT = 0.7
#: A fitted torque this close (N m) to the edge of its range counts as held there.
FIT_EDGE = 1e-9
#: `solve_stack`'s (bound tolerance, level tolerance) of the joint-limit search.
SEARCH_TOLERANCES = (BOUND_TOLERANCE, LEVEL_TOLERANCE)


class PrioritizedController:
    """Computes joint torques from a prioritized task list, under optional rigid contacts.

    Args:
        robot: the robot model (a floating base needs at least one contact).
        entries: the tasks; names must be unique.
        singular_value_threshold: ε of `wbc_control.control.task_inertia` (dimensionless).
        effort_limits: per actuated joint; defaults to the URDF's.
        torque_rate_limits: per actuated joint (N m/s); default none.
        contacts: frames in rigid contact, the top priority.
        friction_coefficient: μ for the friction-cone check of contact forces.
        joint_limits: the joint-limit level above all tasks
            (`wbc_control.control.joint_limits`); None: position limits are not enforced.
        contact_transition_time: load transfer of a contact switch (s).
        task_transition_time: fade of a task switched on or off (s).
    """

    def __init__(
        self,
        robot: RobotModel,
        entries: Sequence[TaskEntry],
        singular_value_threshold: float = DEFAULT_SINGULAR_VALUE_THRESHOLD,
        effort_limits: npt.ArrayLike | None = None,
        torque_rate_limits: npt.ArrayLike | None = None,
        contacts: Sequence[Contact] = (),
        friction_coefficient: float = DEFAULT_FRICTION_COEFFICIENT,
        joint_limits: JointLimits | None = None,
        contact_transition_time: float = DEFAULT_CONTACT_TRANSITION_TIME,
        task_transition_time: float = DEFAULT_TASK_TRANSITION_TIME,
    ) -> None:
        if robot.floating_base and not contacts:
            raise ModelError(
                'a floating-base robot needs at least one contact: its base is not actuated'
            )
        friction_coefficient = float(friction_coefficient)
        if not (np.isfinite(friction_coefficient) and friction_coefficient > 0.0):
            raise InvalidValue(f'friction_coefficient must be > 0, got {friction_coefficient}')
        self.friction_coefficient = friction_coefficient
        names = [entry.name for entry in entries]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise InvalidTaskConfig(f'duplicate task names: {", ".join(duplicates)}')
        self.robot = robot
        self.entries = tuple(entries)
        self.singular_value_threshold = validate_threshold(singular_value_threshold)
        self.stacks = Stacks(
            robot, self.entries, contacts, (contact_transition_time, task_transition_time)
        )
        limits = robot.effort_limits if effort_limits is None else effort_limits
        self.limiter = TorqueLimiter(limits, torque_rate_limits)
        self._null_space = np.eye(robot.nv)
        # What `solve_stack` gets for the joints' bounds when position limits are not enforced.
        self._no_joints, self._unbounded = np.zeros(0, dtype=np.int64), (np.zeros(0), np.zeros(0))
        self._contact_rows: dict = {}
        self._zero_acceleration = np.zeros(robot.nv)
        self._zero_acceleration.flags.writeable = False
        self._none_limited = np.zeros(robot.n_actuated, dtype=bool)
        self._none_limited.flags.writeable = False
        self._actuated = as_slice(robot.indices.v)
        self.joint_limits = joint_limits
        self._bounds = np.empty((2, robot.n_actuated))  # the tick's (a⁻, a⁺)
        # A fully actuated fixed base: τ = M q̈ + h, which `fit_torque` needs.
        self._torque_affine = not robot.floating_base and robot.n_actuated == robot.nv
        # Per tick: a soft start's α scaling every ẍ*, the command's range (None: ± limits).
        self.task_ramp, self.torque_bounds = 1.0, None
        self._held: np.ndarray | None = None  # the tick's joints held at their limits
        self._use(self.stacks.current, {})

    def task(self, name: str) -> Task:
        """The task called `name` (KeyError if unknown)."""
        for entry in self.entries:
            if entry.name == name:
                return entry.task
        raise KeyError(name)

    def weight(self, name: str) -> float:
        """Weight of task `name` within its level."""
        return self.stacks.weights[name]

    def set_weight(self, name: str, weight: float) -> None:
        """Change a task's weight within its level (validated; on error nothing changes)."""
        self.stacks.set_weight(name, weight)
        self._use_weights(self._key)

    @property
    def switching(self) -> StackSwitcher:
        """The schedule of contact and task switches."""
        return self.stacks.switching

    def active(self, name: str) -> bool:
        """Whether task `name` is (being switched) on."""
        return self.stacks.active(name)

    def set_active(self, name: str, active: bool) -> None:
        """Switch a task on or off, faded over `task_transition_time` from the next tick.

        Switched off, a task's integral term is reset (`wbc_control.tasks.integral`).
        """
        self.stacks.set_active(name, active)
        if not active:
            self.task(name).integral.reset()

    @property
    def integrating(self) -> bool:
        """Whether a task has integral action (K_i ≠ 0)."""
        return any(entry.task.integral.enabled for entry in self.entries)

    def integrate(self, dt: float, frozen: bool) -> None:
        """Add this tick's errors, over `dt` s, to the integral terms of the tasks in force.

        `frozen`: the tick gave way to a constraint (`wbc_control.tasks.integral`); the terms
        stay as they are. A task that moves a joint the joint-limit level held this tick is
        frozen too. Call after :meth:`compute`, whose errors and Jacobians it reads.
        """
        held = self._held
        columns = None if held is None else self.robot.indices.v[held]
        for integral, terms in self._integrals:
            moves_held = columns is not None and bool(terms.jacobian[:, columns].any())
            integral.integrate(terms.error, dt, frozen or moves_held)

    def set_contacts(self, contacts: Sequence[Contact]) -> None:
        """Release and establish contacts with a load transfer over `contact_transition_time`."""
        self.stacks.set_contacts(contacts)

    def _use(self, stack: Stack, load_shares: dict[str, float]) -> None:
        """Make `stack` the one the recursion solves, its contacts loaded by `load_shares`."""
        self._key = stack.key
        self.contacts, self.levels = stack.contacts, stack.levels
        self._generic_ranks, self._cone_check = stack.generic_ranks, stack.cone_check
        self._use_weights(stack.key)
        self._row_shares = row_load_shares(stack.contacts, load_shares, stack.row_weights)
        if stack.key not in self._contact_rows:  # A and Ȧq̇ of the stack, rewritten each tick
            self._contact_rows[stack.key] = constraint_buffers(stack.contacts, self.robot.nv)
        self._level_count = len(stack.levels)
        # Each tick every task writes its rows of the stacked arrays, then the targets are set.
        self._writers = [writer for level in stack.levels for writer in level.writers]
        self._integrals = [
            (entry.task.integral, terms)
            for level in stack.levels
            for entry, terms in zip(level.entries, level.terms)
        ]
        self._rows = stack.rows
        count, joints = len(stack.levels), self.robot.n_actuated
        self._unsolved = np.full((count, 3), np.nan)  # each level's stats row
        # The search's per-level sets, scales: read within the tick (`JointLimits.saturated`).
        self._search = (
            np.empty((count + 1, joints), dtype=bool),
            np.empty((count + 1, joints)),
            np.empty(count),
        )

    def _use_weights(self, key) -> None:
        """√w per row of each level of the stack of `key`, and the same stacked for the kernel."""
        self._sqrt_weights = self.stacks.sqrt_weights(key)
        self._stacked_weights = np.concatenate((np.zeros(0), *self._sqrt_weights))

    def compute(
        self, state: RobotState, dt: float | None = None, now_s: float | None = None
    ) -> ControllerResult:
        """One tick: q̈ from the prioritized recursion, τ = M q̈ + h, then torque limits.

        Args:
            state: kinematics and dynamics already updated for this tick.
            dt: time since the previous command (s), for the torque-rate limit.
            now_s: the tick's time (s), which times contact and task switches; None: they
                happen at once.
        """
        switching = self.stacks.switching
        parts = switching.plan(now_s)
        part, *others = parts
        if not others and part.key == self._key:  # no switch: the stack in force, fully loaded
            result = self._solve(state)  # the fields as a plain tuple: one result built a tick
        else:
            results = [self._solve_part(state, part) for part in parts]
            self._use(self.stacks.current, {})
            shares = [part.share for part in parts]
            contacts, mu = self.stacks.known_contacts, self.friction_coefficient
            result = results[0] if not others else blend_results(shares, results, contacts, mu)
        unlimited = result[1]
        switching.record(unlimited)
        torque, saturated, rate_limited = self.limiter.limit(unlimited, dt)
        # result[4:12] are the fields between the limiter's and the transition report.
        saturated |= result[2]  # the joints the controller itself held at the torque range
        rate_limited = rate_limited | result[3]
        return ControllerResult(
            torque, unlimited, saturated, rate_limited, *result[4:12], switching.report
        )

    def _solve_part(self, state: RobotState, part: BlendPart) -> ControllerResult:
        self._use(self.stacks.stack(part.key), part.load_shares)
        return ControllerResult(*self._solve(state))

    def _solve(self, state: RobotState) -> tuple:
        """The stack in force solved, its torque not yet limited (`torque` = unlimited).

        The fields of :class:`ControllerResult` but the transition report, as a plain tuple.
        """
        if self.contacts:
            terms = contact_dynamics(state, self.contacts, self._contact_rows[self._key])
            inverse_inertia, constraint, method, start = terms
        else:  # M⁻¹, formed once per tick, and q̈ = 0
            inverse_inertia, constraint, method = state.inverse_mass_matrix, None, ''
            start = self._zero_acceleration
        for write, buffers in self._writers:
            write(state, buffers)
        for integral, terms in self._integrals:  # ẍ* += z (`wbc_control.tasks.integral`)
            if integral.enabled:
                desired = terms.desired_acceleration
                np.add(desired, integral.term, out=desired)
        rows, limits = self._rows, self.joint_limits
        target = np.subtract(rows.desired_acceleration, rows.drift, out=rows.target)  # ẍ* − J̇v
        held, scale, ramp, fitted, final = None, 1.0, self.task_ramp, None, None
        if limits is not None and ramp < 1.0:  # ẍ* − J̇v → α ẍ* − J̇v
            target = ramp * target - (1.0 - ramp) * rows.drift
        acceleration, stats = np.empty(self.robot.nv), self._unsolved.copy()
        bounds = self._unbounded if limits is None else limits.bounds(state, self._bounds)
        searched = limits is not None and self._level_count > 0
        scale, saturated_count = solve_stack(
            inverse_inertia, start, rows.jacobian, target, self._stacked_weights, rows.offsets,
            self.singular_value_threshold, LAW, searched,
            self._no_joints if limits is None else limits.velocity_indices, *bounds,
            SEARCH_TOLERANCES, acceleration, self._null_space, *self._search, stats,
        )  # fmt: skip
        level_reports = LazyReports(level_health, self.levels, self._generic_ranks, stats)
        if saturated_count:  # the saturated joints, a mask (the buffer is the next tick's)
            held = self._search[0][-1].copy()
        if limits is not None:
            unforced, base = partial(self._unforced, inverse_inertia, start), None
            if not searched and not limits.within(acceleration, bounds):  # no tasks: q̈₀ alone
                recursion = partial(self._limits_alone, inverse_inertia, start)
                limit_level, base, acceleration, level_reports, scale = limits.saturate(
                    bounds, recursion, unforced, (acceleration, level_reports)
                )
                held = None if limit_level is None else limit_level.active
            scaled = acceleration if base is None else base + scale * (acceleration - base)
            lower, upper = self.torque_bounds or self.limiter.bounds
            final = self._torque(state, scaled, constraint)
            if not fits(final[0], lower, upper):
                final = None
                if constraint is None and self._torque_affine:  # τ = M q̈ + h: fit it
                    fitted = (lower, upper)
                    scaled = fit_torque(state, scaled, held, fitted, bounds, scaled)
                else:
                    base = unforced(self._searched_level(searched)) if base is None else base
                    full_torque = self._torque(state, acceleration, constraint)[0]
                    base_torque = self._torque(state, base, constraint)[0]
                    scale = min(scale, task_scale(base_torque, full_torque, upper, lower))
                    scaled = base + scale * (acceleration - base)
            acceleration = scaled
        torque, forces = final or self._torque(state, acceleration, constraint)
        contact_reports, residual = (), 0.0
        if forces is not None:
            mu, check = self.friction_coefficient, self._cone_check
            contact_reports = ContactReports(self.contacts, forces.forces, mu, check)
            residual = forces.base_residual
        # J q̈ + J̇v now: the stacked Jacobian and drift are buffers the next tick overwrites.
        achieved = rows.jacobian.dot(acceleration) + rows.drift
        saturated = rate_limited = self._none_limited
        self._held = None if held is None or not held.any() else held
        if fitted is not None:  # joints the fit holds at the range: reported as limited
            at_range = (torque <= fitted[0] + FIT_EDGE) | (torque >= fitted[1] - FIT_EDGE)
            saturated = at_range & (np.abs(torque) >= self.limiter.effort_limits - FIT_EDGE)
            rate_limited = at_range & ~saturated
        return (
            torque,
            torque,
            saturated,
            rate_limited,
            acceleration,
            LazyReports(task_reports, self.levels, achieved),
            level_reports,
            contact_reports,
            residual,
            method,
            () if held is None else LazyReports(limits.names, held),  # named when read
            scale,
        )

    def _searched_level(self, searched: bool) -> JointLimitLevel | None:
        """The joints `solve_stack`'s search saturated, as rows and targets (None: none)."""
        level_active, level_values, _ = self._search
        return (
            self.joint_limits.saturated(level_active[-1], level_values[-1]) if searched else None
        )

    def _unforced(self, inverse_inertia, start, limit_level) -> np.ndarray:
        """q̈₀: the recursion without the user tasks (the saturated joints alone), `(nv,)`."""
        return self._limits_alone(inverse_inertia, start, limit_level)[0]

    def _limits_alone(
        self, inverse_inertia, start, limit_level: JointLimitLevel | None
    ) -> tuple[np.ndarray, LazyReports]:
        """q̈ of a stack without task levels, the joints of `limit_level` held, and no reports."""
        acceleration = start.copy()
        if limit_level is not None:
            threshold = self.singular_value_threshold
            hold(inverse_inertia, acceleration, self._null_space, True, limit_level, threshold)
        return acceleration, LazyReports(level_health, (), (), self._unsolved[:0])

    def _torque(self, state: RobotState, acceleration: np.ndarray, constraint):
        """τ = S (M q̈ + h − Aᵀf) `(n_act,)`, and the contact forces (None without contacts)."""
        generalized_force = state.mass_matrix.dot(acceleration) + state.nonlinear_effects
        forces = None
        if constraint is not None:
            forces = base_contact_forces(
                constraint, generalized_force, self.robot.base_nv, self._row_shares
            )
            generalized_force -= constraint.T.dot(forces.forces)
        return generalized_force[self._actuated], forces
