"""Strictly prioritized operational-space control with Khatib's dynamically consistent inverse.

The law is a hierarchical least-squares problem on x = (q̈, f) (joint accelerations and, on a
floating base, contact forces): hard constraints (rigid contacts, the base rows of the
dynamics, the command's torque range, joint-limit bounds, friction pyramids), then each
priority level's task-acceleration residual, then the least kinetic energy; near a singularity
a level is regularised towards the motion of the levels below, in a band of its singular values
that widens while the joints move fast (`wbc_control.control.hierarchy.cascade`, `moving_band`;
Kanoun, Lamiraux & Wieber 2011; Escande, Mansard & Wieber 2014). Where no inequality binds and
no level is weak, its solution is the recursion of Khatib (1987) and Sentis & Khatib (2005)
with the dynamically consistent inverse J̄ (Khatib 1987, eq 30)::

    N = I ; q̈ = q̈₀                           (q̈₀ = −A†ᵀ(Ȧq̇ + K A q̇) under contacts, Johnson
                                             2024, eq 22, with Baumgarte's damping K)
    for each level k:
        Jp   = J_k N                         # what the higher levels leave free
        Λ    = (Jp M⁻¹ Jpᵀ)⁺                 # in the level's weighted residual metric
        J̄    = M⁻¹ Jpᵀ Λ                     # dynamically consistent inverse
        q̈   += J̄ (ẍ*_k − J̇_k v − J_k q̈)
        N   −= J̄ Jp
    τ = S (M q̈ + h − Aᵀ f)

(docs/theory.md shows the equality; the tests hold the two equal). The torque of a floating
base comes with the contact forces of the same problem, inside their friction pyramids.

Contacts (`set_contacts`) and tasks (`set_active`) switch at run time: a tick during a switch
solves the stack before and the stack after it and blends their torques, with a load transfer
between the contacts (:mod:`wbc_control.control.switching.contact_transitions`,
:mod:`wbc_control.control.switching.task_activation`).
"""

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from wbc_control.control.constraints.centre_of_pressure import sole_half_size
from wbc_control.control.constraints.friction import validated_friction
from wbc_control.control.constraints.joint_limits import JointLimits, held_joints
from wbc_control.control.constraints.torque_limits import TorqueLimiter, range_flags
from wbc_control.control.contact.contacts import (
    Contact,
    base_contact_forces,
    contact_jacobian,
)
from wbc_control.control.hierarchy.moving_band import MovingBand
from wbc_control.control.hierarchy.rate_hold import RateHold
from wbc_control.control.hierarchy.stack_problem import StackProblem
from wbc_control.control.results import ContactReports, ControllerResult, LazyReports, level_health
from wbc_control.control.switching.contact_transitions import (
    DEFAULT_CONTACT_TRANSITION_TIME,
    DEFAULT_TASK_TRANSITION_TIME,
    BlendPart,
    StackSwitcher,
    row_load_shares,
)
from wbc_control.control.switching.stacks import TaskEntry, validate_weight
from wbc_control.control.switching.task_activation import (
    Stack,
    Stacks,
    blend_results,
    task_reports,
)
from wbc_control.exceptions import InvalidTaskConfig, InvalidValue, ModelError, SingularConstraint
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.tasks.task import Task, as_slice

__all__ = [
    'ControllerResult',
    'PrioritizedController',
    'TaskEntry',
    'validate_weight',
]

DEFAULT_SINGULAR_VALUE_THRESHOLD = 0.03
DEFAULT_FRICTION_COEFFICIENT = 0.7


def validate_threshold(threshold: float) -> float:
    """The singular value threshold ε must lie in (0, 1)."""
    threshold = float(threshold)
    if not (0.0 < threshold < 1.0):
        raise InvalidValue(f'singular_value_threshold must be in (0, 1), got {threshold}')
    return threshold


class PrioritizedController:
    """Computes joint torques from a prioritized task list, under optional rigid contacts.

    Args:
        robot: the robot model (a floating base needs at least one contact).
        entries: the tasks; names must be unique.
        singular_value_threshold: ε, the ratio of singular values below which a level's
            direction is weak and regularised (`wbc_control.control.hierarchy.cascade`).
        effort_limits: per actuated joint; defaults to the URDF's.
        torque_rate_limits: per actuated joint (N m/s); default none.
        contacts: frames in rigid contact, the top priority.
        friction_coefficient: μ of the contacts' friction pyramids.
        joint_limits: the joints' acceleration bounds (`control.constraints.joint_limits`);
            None: position and velocity limits are not enforced.
        contact_transition_time: load transfer of a contact switch (s).
        task_transition_time: fade of a task switched on or off (s).
        sole_size: (length, width) of every surface contact's sole, centred on its frame (m):
            its centre of pressure stays inside (`centre_of_pressure`); None: unconstrained.
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
        sole_size: npt.ArrayLike | None = None,
    ) -> None:
        if robot.floating_base and not contacts:
            raise ModelError(
                'a floating-base robot needs at least one contact: its base is not actuated'
            )
        names = [entry.name for entry in entries]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise InvalidTaskConfig(f'duplicate task names: {", ".join(duplicates)}')
        self.robot = robot
        self.entries = tuple(entries)
        self.singular_value_threshold = validate_threshold(singular_value_threshold)
        self.friction_coefficient = validated_friction(friction_coefficient)
        self._sole_half_size = sole_half_size(sole_size)
        self.stacks = Stacks(
            robot, self.entries, contacts, (contact_transition_time, task_transition_time)
        )
        limits = robot.effort_limits if effort_limits is None else effort_limits
        self.limiter = TorqueLimiter(limits, torque_rate_limits)
        self.joint_limits = joint_limits
        self._actuated = as_slice(robot.indices.v)
        self._per_stack: dict = {}
        self._held: np.ndarray | None = None  # the tick's joints held at their limits
        self._band = MovingBand()  # ε widened at speed (`moving_band`)
        self._rate = RateHold()  # how much the rate limit holds the command (`rate_hold`)
        self._speeds = np.zeros(robot.n_actuated)  # |q̇| of the actuated joints, `compute`'s
        #: The last tick's singularity band: ε, or wider while a joint moves fast.
        self.damping_band = self.singular_value_threshold
        self._use(self.stacks.current, {})

    def restart(self) -> None:
        """Forget the joints' past speed and rate limiting (`moving_band`, `rate_hold`)."""
        self._band.reset()
        self._rate.reset()

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

    def hold_off(self, names: frozenset[str]) -> None:
        """Hold these tasks off whatever `set_active` said (homing; empty: none), faded as it.

        A task held off has its integral term reset.
        """
        self.stacks.hold_off(names)
        for name in names:
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

    def set_friction_coefficient(self, friction_coefficient: float) -> None:
        """μ of the friction pyramids from the next tick (validated; on error nothing changes)."""
        self.friction_coefficient = validated_friction(friction_coefficient)
        self._per_stack = {}
        self._use(self.stacks.stack(self._key), self._load_shares)

    def _use(self, stack: Stack, load_shares: dict[str, float]) -> None:
        """Make `stack` the one the tick solves, its contacts loaded by `load_shares`."""
        self._key, self._load_shares = stack.key, load_shares
        self.contacts, self.levels = stack.contacts, stack.levels
        self._generic_ranks, self._cone_check = stack.generic_ranks, stack.cone_check
        self._use_weights(stack.key)
        self._row_shares = row_load_shares(stack.contacts, load_shares, stack.row_weights)
        if stack.key not in self._per_stack:
            self._per_stack[stack.key] = StackProblem(
                self.robot, stack, self.friction_coefficient, self._sole_half_size,
                None if self.joint_limits is None else self.joint_limits.walled,
            )  # fmt: skip
        self._problem = self._per_stack[stack.key]
        # Each tick every task writes its rows of the stacked arrays, then the targets are set.
        self._writers = [writer for level in stack.levels for writer in level.writers]
        self._integrals = [
            (entry.task.integral, terms)
            for level in stack.levels
            for entry, terms in zip(level.entries, level.terms)
        ]
        self._rows = stack.rows

    def _use_weights(self, key) -> None:
        """√w per row of each level of the stack of `key`."""
        self._sqrt_weights = self.stacks.sqrt_weights(key)

    def compute(
        self,
        state: RobotState,
        dt: float | None = None,
        now_s: float | None = None,
        torque_window: tuple[np.ndarray, np.ndarray] | None = None,
        task_ramp: float = 1.0,
    ) -> ControllerResult:
        """One tick: q̈ (and f) of the hierarchy, τ, then the torque limits.

        Args:
            state: kinematics and dynamics already updated for this tick.
            dt: time since the previous command (s), for the torque-rate limit.
            now_s: the tick's time (s), which times contact and task switches and the band's
                widening at speed (`moving_band`); None: switches happen at once and the band
                keeps its width.
            torque_window: the range (lower, upper) the command may take this tick `(n_act,)`
                each; None: ± the effort limits.
            task_ramp: α in [0, 1] scaling every task's ẍ* (a soft start).
        """
        window = self.limiter.bounds if torque_window is None else torque_window
        speeds = np.absolute(state.v[self._actuated], out=self._speeds)
        fastest = np.maximum.reduce(speeds, initial=0.0)  # |q̇|_max, without `max`'s wrappers
        band = self.damping_band = self._band.update(self.singular_value_threshold, fastest, now_s)
        switching = self.stacks.switching
        parts = switching.plan(now_s)
        if len(parts) == 1 and parts[0].key == self._key:
            result = self._solve(state, window, task_ramp, band)
        else:
            results = [self._solve_part(state, part, window, task_ramp, band) for part in parts]
            self._use(self.stacks.current, {})
            shares = [part.share for part in parts]
            contacts, mu = self.stacks.known_contacts, self.friction_coefficient
            blended = len(parts) > 1
            result = blend_results(shares, results, contacts, mu) if blended else results[0]
        unlimited = result.torque_unlimited
        self._rate.update(result.rate_limited, now_s)
        switching.record(unlimited)
        torque, saturated, rate_limited = self.limiter.limit(unlimited, dt)
        # `result._replace` of the five fields, without its two Python calls.
        return ControllerResult(
            torque, unlimited, saturated | result.saturated, rate_limited | result.rate_limited,
            result.acceleration, result.tasks, result.levels, result.contacts,
            result.base_wrench_residual, result.joints_at_limit, result.solver, switching.report,
        )  # fmt: skip

    def _solve_part(
        self, state: RobotState, part: BlendPart, window, task_ramp: float, band: float
    ) -> ControllerResult:
        self._use(self.stacks.stack(part.key), part.load_shares)
        return self._solve(state, window, task_ramp, band)

    def _solve(self, state: RobotState, window, task_ramp: float, band: float) -> ControllerResult:
        """The stack in force solved with the damping band `band`; its torque not yet limited."""
        problem = self._problem
        constraint = None
        if self.contacts:
            constraint, _ = contact_jacobian(state, self.contacts, problem.contact_buffers)
        for write, buffers in self._writers:
            write(state, buffers)
        for integral, task_terms in self._integrals:  # ẍ* += z (`wbc_control.tasks.integral`)
            if integral.enabled:
                desired = task_terms.desired_acceleration
                np.add(desired, integral.term, out=desired)
        rows = self._rows
        target = np.subtract(rows.desired_acceleration, rows.drift, out=rows.target)  # ẍ* − J̇v
        if task_ramp < 1.0:  # ẍ* − J̇v → α ẍ* − J̇v
            target = task_ramp * rows.desired_acceleration - rows.drift
        bounds = None if self.joint_limits is None else self.joint_limits.bounds(state)
        result = problem.solve(
            state, rows, target, constraint, bounds, window, self._sqrt_weights,
            self._row_shares, band, self._rate.share,
        )  # fmt: skip
        if result.solution is None:
            raise SingularConstraint(
                f'no joint accelerations meet the hard constraints: {result.status}'
            )
        acceleration = result.solution[: self.robot.nv]
        torque, forces = self._torque(state, acceleration, constraint, result.solution)
        # At an effort limit: saturated; at the rate window's edge inside it: rate limited.
        flags = range_flags(torque, window[0], window[1], self.limiter.effort_limits)
        saturated, rate_limited = flags[0], flags[1]  # (unpacking iterates: slower)
        at_limit = None  # which joints sit on a bound `(n_act,)`, None without joint limits
        if bounds is not None:
            found, held = held_joints(acceleration[self._actuated], bounds[0], bounds[1])
            at_limit = held if found else None
        contact_reports, residual = (), 0.0
        if forces is not None:
            contact_reports = ContactReports(
                self.contacts, forces.forces, self.friction_coefficient, self._cone_check
            )
            residual = forces.base_residual
        # J q̈ + J̇v now: the stacked Jacobian and drift are buffers the next tick overwrites.
        achieved = rows.jacobian.dot(acceleration) + rows.drift
        self._held = at_limit
        # α ẍ*; at α = 1 ẍ* itself (x · 1 = x in IEEE arithmetic), without a new array.
        desired = rows.desired_acceleration
        commanded = desired if task_ramp == 1.0 else desired * task_ramp
        return ControllerResult(
            torque,
            torque,
            saturated,
            rate_limited,
            acceleration,
            LazyReports(task_reports, self.levels, achieved),
            LazyReports(
                level_health,
                self.levels,
                self._generic_ranks,
                result.levels,
                achieved - commanded,
                rows.offsets,
            ),  # fmt: skip
            contact_reports,
            residual,
            () if at_limit is None else LazyReports(self.joint_limits.names, at_limit),
            result.status or 'solved',
        )

    def _torque(self, state: RobotState, acceleration: np.ndarray, constraint, solution=None):
        """τ = S (M q̈ + h − Aᵀf) `(n_act,)` and the contact forces (None without contacts).

        f from `solution` (the cascade's x = (q̈, f)) on a floating base, else the weighted
        minimum-norm forces that balance the base rows (`contacts.base_contact_forces`).
        """
        generalized_force = state.mass_matrix.dot(acceleration) + state.nonlinear_effects
        forces = None
        if constraint is not None:
            base_nv = self.robot.base_nv
            if base_nv:
                values = solution[self.robot.nv :]
                base = constraint[:, :base_nv].T.dot(values) - generalized_force[:base_nv]
                forces = _Forces(values, float(np.sqrt(base.dot(base))))
            else:
                forces = base_contact_forces(
                    constraint, generalized_force, base_nv, self._row_shares
                )
            generalized_force -= constraint.T.dot(forces.forces)
        return generalized_force[self._actuated], forces


class _Forces:
    """Contact forces of the cascade, shaped like `contacts.ContactForces`."""

    __slots__ = ('forces', 'base_residual')

    def __init__(self, forces: np.ndarray, base_residual: float) -> None:
        self.forces, self.base_residual = forces, base_residual
