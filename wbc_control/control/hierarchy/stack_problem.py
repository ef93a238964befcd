"""A stack's hierarchical least-squares problem at a tick: levels, hard constraints, metric.

`StackProblem` turns a tick's state and a stack's task rows into the cascade's inputs
(`wbc_control.control.hierarchy.cascade`): each level's rows, scaled per unit group and
weighted; the hard constraints (the command's torque range, the rigid contacts, the base rows
of the dynamics, friction pyramids, centres of pressure, joint bounds); the metric of the last
stage; the reference the weak directions are damped towards. It then solves the cascade, with
the joint bounds and then every inequality softened where the hard constraints conflict.
"""

from typing import NamedTuple

import numpy as np
import pinocchio as pin

from wbc_control.control.constraints.centre_of_pressure import ROWS_PER_SOLE, SoleRows
from wbc_control.control.constraints.closed_cones import closed
from wbc_control.control.constraints.friction import ROWS_PER_CONTACT, friction_rows
from wbc_control.control.contact.contacts import (
    ContactType,
    constraint_buffers,
    contact_acceleration,
)
from wbc_control.control.contact.load_shares import LoadShares
from wbc_control.control.hierarchy.cascade import (
    CascadeResult,
    Freedom,
    HardConstraints,
    LevelRows,
    equality_freedom,
    solve_cascade,
)
from wbc_control.control.hierarchy.level_kernel import reference_damping, weak_stiffness
from wbc_control.control.hierarchy.problem_kernel import (
    mobility_inverse,
    torque_and_joint_rows,
    weighted_rows,
)
from wbc_control.control.hierarchy.stage_qp import degenerate_ratios
from wbc_control.control.switching.task_activation import Stack
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState
from wbc_control.numerics import einsum
from wbc_control.tasks.task import as_slice


class StackProblem:
    """A stack's cascade at each tick: its levels, hard constraints, metric and reference.

    Built once per stack (buffers and the constant structure of its constraints); `solve`
    builds the cascade's inputs from a tick's state and solves it.
    """

    def __init__(
        self,
        robot: RobotModel,
        stack: Stack,
        friction_coefficient: float,
        sole_half_size: np.ndarray | None,
        walled: np.ndarray | None = None,
    ) -> None:
        self.robot = robot
        self._walled = walled  # `(n_act,)` joints with holding walls (`gravity_holding`)
        levels = stack.levels
        self._generic_ranks = stack.generic_ranks
        self._force_scale = 1.0 / max(pin.computeTotalMass(robot.model), 1e-9)
        self.working_sets: tuple = ()  # the last tick's, a warm start (`cascade.WorkingSets`)
        self.contact_buffers = constraint_buffers(stack.contacts, robot.nv)
        self.force_count = (
            sum(contact.dim for contact in stack.contacts) if robot.floating_base else 0
        )
        rows = friction_rows(stack.contacts, friction_coefficient) if self.force_count else None
        self.friction = np.zeros((0, 0)) if rows is None else rows
        self._actuated = np.asarray(robot.indices.v, dtype=np.int64)
        actuated = self._actuated.shape[0]
        #: The stacked rows of each joint-posture task's ẍ*, lowest level last (`reference`).
        starts = [
            level.rows.start + entry_rows.start
            for level in levels
            for entry, entry_rows in zip(level.entries, level.slices)
            if getattr(entry.task, 'TYPE', None) == 'joint_posture'
        ]
        self._postures = [slice(start, start + actuated) for start in starts]
        self._actuated_v = as_slice(self._actuated)  # a slice where contiguous: a view
        #: Whether `reference` must clear entries no posture writes (the base's, or all).
        self._reference_gaps = not self._postures or actuated < robot.nv
        self._loads = LoadShares(stack.contacts) if self.force_count else None
        soles = self.force_count and sole_half_size is not None
        self._contacts = stack.contacts
        self._soles = (
            SoleRows(stack.contacts, sole_half_size, friction_coefficient) if soles else None
        )
        self._contact_frames = [robot.frame_id(contact.frame) for contact in stack.contacts]
        sizes = [size for level in levels for e in level.entries for size in e.task.row_groups()]
        self._group_sizes = np.asarray(sizes, dtype=np.int64)
        self._group_starts = np.cumsum([0, *sizes[:-1]]).astype(np.int64)
        self._layout: HardLayout | None = None  # `hard_constraints`' buffers
        self._weighted: WeightedRows | None = None  # `levels`' buffers
        self._weights: tuple | None = None  # the √w per level `_roots` concatenates
        self._roots = np.zeros(0)
        self._reference = np.zeros(robot.nv)  # `reference`'s buffer
        self._damping = np.zeros(robot.nv)  # K v, `reference`'s
        nx = robot.nv + self.force_count
        self._metric = np.zeros((nx, nx)) if self.force_count else None  # `metric`'s buffer

    def solve(
        self, state: RobotState, rows, target, constraint, bounds, window, weights, shares, band,
        rate_share,
    ) -> CascadeResult:  # fmt: skip
        """X = (q̈, f) of the hierarchical least squares (`wbc_control.control.hierarchy.cascade`).

        `rows`: the stack's stacked task terms, `target` their ẍ* − J̇v; `weights` √w per row of
        each level; `shares` each contact row's load share; `band` ε (as widened at speed,
        `moving_band`); `rate_share` how much the rate limit holds the command (`rate_hold`).
        Where the joint bounds and the hard constraints have no common solution (a joint far
        beyond its wall, a torque range too narrow to brake it), the joint bounds become soft:
        violated as little as possible; where even the torque range and the friction pyramids
        have none (a robot the floor cannot hold), every inequality does. The contacts and the
        base rows stay exact.
        """
        levels = self.levels(state, rows, target, weights)
        if self.force_count:
            metric, reweigh = self.metric(state, shares), self.reweigh(shares)
        else:  # H₀ = M (`metric`), one force stage (`reweigh`): nothing to build or call
            metric, reweigh = state.mass_matrix, None
        hard, joint_rows = self.hard_constraints(state, constraint, bounds, window)
        speeds = state.v[self._actuated_v]
        squared_speed = speeds.dot(speeds)
        reference = self.reference(rows, state, reference_damping(squared_speed))
        stiffness = weak_stiffness(squared_speed, rate_share)
        freedom = self._layout.freedom or equality_freedom(hard, self.robot.nv)
        warm = self.working_sets
        result = solve_cascade(
            levels, hard, metric, reference, band, reweigh, warm, freedom, (), stiffness
        )
        self.working_sets = result.working_sets
        if result.solution is not None or freedom is None:
            return result
        built = result.leading  # the levels' problems, whichever rows are soft
        if bounds is not None:
            joints = hard._replace(soft=joint_rows)
            softened = solve_cascade(
                levels, joints, metric, reference, band, None, (), freedom, built, stiffness
            )
            if softened.solution is not None:
                return softened._replace(status=f'{result.status}; joint limits softened')
        every = hard._replace(soft=np.ones(hard.lower.shape[0], dtype=bool))
        relaxed = solve_cascade(
            levels, every, metric, reference, band, reweigh, (), freedom, built, stiffness
        )
        return relaxed._replace(status=f'{result.status}; every inequality softened')

    def levels(self, state: RobotState, rows, target, weights) -> list[LevelRows]:
        """Each level's rows R = diag(√w E) J and target T = √w E (ẍ* − J̇v) at this tick.

        E per stacked row: 1 / √(the mean mobility (J M⁻¹ Jᵀ)ⱼⱼ of its group). A group's
        rows (`Task.row_groups`: one unit) measured by its inverse task-space mass (the
        diagonal of Khatib 1987's Λ⁻¹ = J M⁻¹ Jᵀ), so that errors of different units weigh as
        the effort they cost: a hand's metre as its few kilograms, its radian as its small
        inertia. Rows without mobility (a blocked group) get 0. Written by one compiled call
        (`problem_kernel.weighted_rows`) into buffers the levels' rows are views of.
        """
        jacobian = rows.jacobian
        mobility = einsum('ij,ij->i', jacobian.dot(mobility_inverse(state)), jacobian)
        if self._weighted is None or self._weighted.rows is not rows:
            self._weighted = self._weighted_buffers(rows)
        if weights is not self._weights:
            self._weights, self._roots = weights, np.concatenate([np.zeros(0), *weights])
        buffers = self._weighted
        weighted_rows(
            mobility, self._group_starts, self._group_sizes, self._roots, jacobian, target,
            buffers.jacobian, buffers.target,
        )  # fmt: skip
        return buffers.levels

    def _weighted_buffers(self, rows) -> 'WeightedRows':
        """The buffers `levels` writes for the stacked rows `rows`, and each level's views."""
        jacobian, target = np.zeros(rows.jacobian.shape), np.zeros(rows.jacobian.shape[0])
        levels = []
        for k, rank in enumerate(self._generic_ranks):
            level = slice(int(rows.offsets[k]), int(rows.offsets[k + 1]))
            levels.append(LevelRows(jacobian[level], target[level], rank))
        return WeightedRows(rows, jacobian, target, levels)

    def reference(self, rows, state: RobotState, damping: float) -> np.ndarray:
        """q̈_ref = q̈_posture − K v: where a level can hardly move, the motion it is damped to.

        q̈_posture: the joint-posture tasks' desired accelerations (the lowest where several; 0
        without one). K = `damping` (`level_kernel.reference_damping`) makes a weak direction
        behave as a strongly damped joint instead of one driven by the level with a gain of
        1/σ, which is what brings an arm to rest at the edge of its workspace (the
        regularisation of Chiaverini 1997 taken towards this motion instead of towards 0).
        """
        reference = self._reference
        if self._reference_gaps:
            reference[:] = 0.0
        for posture in self._postures:
            reference[self._actuated_v] = rows.desired_acceleration[posture]
        reference -= np.multiply(state.v, damping, out=self._damping)
        return reference

    def metric(self, state: RobotState, row_shares: np.ndarray) -> np.ndarray:
        """H₀ = blockdiag(M, W_f / m): the kinetic energy and the weighted force norm.

        For a stack with contact forces (without them `solve` takes H₀ = M itself, the state's:
        the cascade only reads it): a buffer of this stack's, whose force block off the diagonal
        stays 0.
        """
        nv, count = self.robot.nv, self.force_count
        metric = self._metric
        metric[:nv, :nv] = state.mass_matrix
        largest = float(np.maximum.reduce(row_shares))
        shares = np.maximum(row_shares, 1e-6 * max(largest, 1e-300))
        metric[nv:, nv:].flat[:: count + 1] = self._force_scale / shares
        return metric

    def reweigh(self, row_shares: np.ndarray):
        """The cascade's second force stage: its weights from the first stage's forces.

        For a stack with contact forces (without them `solve` passes None: no force stage).
        """

        def weights(forces: np.ndarray) -> np.ndarray:
            shares = row_shares * self._loads.factors(forces)
            largest = float(np.maximum.reduce(shares))
            return self._force_scale / np.maximum(shares, 1e-6 * max(largest, 1e-300))

        return weights

    def hard_constraints(self, state, constraint, bounds, window):
        """`cascade.HardConstraints` at this tick, and which of its rows are joint bounds.

        The rows in order: the torque range where finite, the contacts, the base rows, the
        friction pyramids, the centres of pressure, the joint bounds where finite. Written
        into buffers laid out once for each choice of those rows (`HardLayout`).
        """
        nv = self.robot.nv
        layout = self._layout
        if not self._torque_and_joint_rows(layout, state, constraint, bounds, window):
            finite = np.isfinite(window[0]) | np.isfinite(window[1])
            limited = None if bounds is None else np.isfinite(bounds[0]) | np.isfinite(bounds[1])
            key = (
                finite.tobytes(),
                None if limited is None else limited.tobytes(),
                constraint is None,
            )
            layout = self._layout = self._hard_layout(key, finite, limited, constraint is not None)
            self._torque_and_joint_rows(layout, state, constraint, bounds, window)
        if constraint is None:  # no contacts (nor forces): the rows above are all there is
            return layout.hard, layout.joint_flags
        rows, lower, upper = layout.hard.rows, layout.hard.lower, layout.hard.upper
        mass, bias = state.mass_matrix, state.nonlinear_effects
        if self.force_count:
            rows[layout.torque, nv:] = -constraint[:, layout.torque_columns].T
        drift = contact_acceleration(constraint, self.contact_buffers.drift, state.v)
        rows[layout.contacts, :nv] = constraint
        lower[layout.contacts] = upper[layout.contacts] = drift
        base = layout.base
        if base.stop > base.start:
            rows[base, :nv] = mass[: self.robot.base_nv]
            rows[base, nv:] = -constraint[:, : self.robot.base_nv].T
            lower[base] = upper[base] = -bias[: self.robot.base_nv]
        if layout.pressure.stop > layout.pressure.start:
            frames = self._contact_frames  # the soles' rows at their rotations
            rotations = [state.frame_placement(frame).rotation for frame in frames]
            self._soles.write(rotations, rows[layout.pressure, nv:])
        self._close_cones(layout)
        return layout.hard, layout.joint_flags

    def _torque_and_joint_rows(self, layout, state, constraint, bounds, window) -> bool:
        """Write the torque-range rows' q̈ part and the joint-bound rows of `layout` at this tick.

        False, nothing written, where the layout is not this tick's: none yet, or other
        contacts, or another choice of finite torque ranges or joint bounds.
        """
        if layout is None or layout.key[2] != (constraint is None):
            return False
        if (bounds is None) != (layout.key[1] is None):
            return False
        lowest, highest = layout.hard.box if layout.hard.box is not None else (_NONE, _NONE)
        hard = layout.hard
        return torque_and_joint_rows(
            state.mass_matrix, state.nonlinear_effects, window[0], window[1], layout.finite,
            _NONE if bounds is None else bounds[0], _NONE if bounds is None else bounds[1],
            layout.limited, self._actuated, layout.torque.start, layout.joints.start, hard.rows,
            hard.lower, hard.upper, lowest, highest,
        )  # fmt: skip

    def _close_cones(self, layout: 'HardLayout') -> None:
        """Each contact's cone rows as equalities C f = 0 where they admit no other force.

        A cone closed to f = 0 (`closed_cones`) as inequalities is a vertex of more active rows
        than unknowns, which the stage QPs take for an infeasible problem; as equalities it is
        the same set, eliminated exactly with the contacts.
        """
        hard = layout.hard
        for cone, columns in layout.cones:
            shut = closed(hard.rows[cone, columns])
            hard.equality[cone] = shut
            hard.lower[cone] = 0.0 if shut else -np.inf

    def _hard_layout(self, key, finite, limited, contacts: bool) -> 'HardLayout':
        """The buffers of `hard_constraints` for one choice of rows, their constant parts set."""
        nv, count = self.robot.nv, self.force_count
        nx = nv + count
        sizes = [int(finite.sum()), 0, 0, 0, 0, 0]  # torque, contacts, base, friction, CoP, joints
        if contacts:
            sizes[1] = self.contact_buffers.drift.shape[0]
            sizes[2] = self.robot.base_nv if count else 0
            sizes[3] = self.friction.shape[0]
            if self._soles is not None:
                sizes[4] = self._soles.shape[0]
        if limited is not None:
            sizes[5] = int(limited.sum())
        starts = np.cumsum([0, *sizes])
        torque, contact, base, friction, pressure, joints = (
            slice(int(starts[k]), int(starts[k + 1])) for k in range(6)
        )
        total = int(starts[-1])
        rows, lower, upper = np.zeros((total, nx)), np.empty(total), np.empty(total)
        equality = np.zeros(total, dtype=bool)
        equality[contact] = equality[base] = True
        if sizes[3]:
            rows[friction, nv:] = self.friction
        lower[friction] = lower[pressure] = -np.inf
        upper[friction] = upper[pressure] = 0.0
        joint_flags, physical = np.zeros(total, dtype=bool), np.zeros(total, dtype=bool)
        box, joint_columns = None, self._actuated[:0]
        if limited is not None:
            joint_columns = self._actuated[limited]
            rows[joints][np.arange(sizes[5]), joint_columns] = 1.0
            joint_flags[joints] = True
            physical[joints] = False if self._walled is None else self._walled[limited]
            box = (np.full(nv, -np.inf), np.full(nv, np.inf))
        ratios = degenerate_ratios(joint_flags & ~physical)  # a tracking law's, or physical
        hard = HardConstraints(rows, lower, upper, equality, None, box, ratios, joint_flags)
        cones = self._cone_rows(friction.start, pressure.start) if contacts else ()
        free = None if equality.any() else _all_free(hard, nv)
        return HardLayout(
            key, hard, joint_flags, torque, self._actuated[finite], contact, base, pressure,
            joints, joint_columns, cones, free, finite, _NO_FLAGS if limited is None else limited,
        )  # fmt: skip

    def _cone_rows(self, friction: int, pressure: int) -> tuple:
        """(rows, columns) per contact with cone rows: its pyramid's and sole's, its forces."""
        cones, start = [], self.robot.nv
        for contact in self._contacts:
            rows = []
            if contact.kind is not ContactType.ALONG and self.friction.shape[0]:
                rows.extend(range(friction, friction + ROWS_PER_CONTACT))
                friction += ROWS_PER_CONTACT
            if contact.kind is ContactType.SURFACE and self._soles is not None:
                rows.extend(range(pressure, pressure + ROWS_PER_SOLE))
                pressure += ROWS_PER_SOLE
            if rows:
                cones.append((np.asarray(rows), slice(start, start + contact.dim)))
            start += contact.dim
        return tuple(cones)


class WeightedRows(NamedTuple):
    """The buffers of `StackProblem.levels` for one stack's stacked rows."""

    rows: object  # the `StackedRows` they are written from
    jacobian: np.ndarray  # (R, nv) diag(√w E) J
    target: np.ndarray  # (R,) √w E (ẍ* − J̇v)
    levels: list  # LevelRows per level, views of the two


class HardLayout(NamedTuple):
    """Where `StackProblem.hard_constraints` writes each block of its rows at each tick."""

    key: tuple  # the choice of rows: finite torque range, finite joint bounds, contacts
    hard: HardConstraints  # the buffers
    joint_flags: np.ndarray  # (r,) bool, the joint-bound rows
    torque: slice
    torque_columns: np.ndarray  # the actuated joints whose torque range is finite
    contacts: slice
    base: slice
    pressure: slice
    joints: slice
    joint_columns: np.ndarray  # the q̈ coordinate of each joint-bound row
    cones: tuple  # (rows, force columns) of each contact's cone rows (`_close_cones`)
    #: Where no row is an equality, what they leave free (all of x, the same at every tick);
    #: else None: the contacts' freedom is found at each tick.
    freedom: Freedom | None = None
    finite: np.ndarray = np.zeros(0, dtype=bool)  # (n_act,) the torque ranges' rows
    limited: np.ndarray = np.zeros(0, dtype=bool)  # (n_act,) the joint bounds' rows; () none


#: An empty vector and empty flags: no bounds, no box, no joint-bound rows.
_NONE = np.zeros(0)
_NO_FLAGS = np.zeros(0, dtype=bool)


def _all_free(hard: HardConstraints, nv: int) -> Freedom:
    """`equality_freedom` of rows without equalities, read-only: it is kept for every tick."""
    freedom = equality_freedom(hard, nv)
    freedom.point.flags.writeable = freedom.basis.flags.writeable = False
    return freedom
