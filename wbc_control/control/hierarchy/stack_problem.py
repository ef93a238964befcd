"""A stack's hierarchical least-squares problem at a tick: levels, hard constraints, metric.

`StackProblem` turns a tick's state and a stack's task rows into the cascade's inputs
(`wbc_control.control.hierarchy.cascade`): each level's rows, scaled per unit group and
weighted; the hard constraints (the command's torque range, the rigid contacts, the base rows
of the dynamics, friction pyramids, centres of pressure, joint bounds); the metric of the last
stage; the reference the weak directions are damped towards. It then solves the cascade, with
the joint bounds and then every inequality softened where the hard constraints conflict.
"""

import numpy as np
import pinocchio as pin

from wbc_control.control.constraints.centre_of_pressure import centre_of_pressure_rows
from wbc_control.control.constraints.friction import friction_rows
from wbc_control.control.contact.contacts import constraint_buffers, contact_acceleration
from wbc_control.control.contact.load_shares import LoadShares
from wbc_control.control.hierarchy.cascade import (
    CascadeResult,
    HardConstraints,
    LevelRows,
    solve_cascade,
)
from wbc_control.control.switching.task_activation import Stack
from wbc_control.exceptions import InvalidValue
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

#: K of the damped reference q̈_posture − K v (1/s), the regularisation's target.
REFERENCE_DAMPING = 100.0
#: Where M is singular, the row scales read (M + δI)⁻¹ with δ this fraction of its largest
#: diagonal entry (`mobility_inverse`).
MASSLESS_REGULARISATION = 1e-8


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
    ) -> None:
        self.robot = robot
        levels = stack.levels
        self._generic_ranks = stack.generic_ranks
        self._force_scale = 1.0 / max(pin.computeTotalMass(robot.model), 1e-9)
        self.working_sets: tuple = ()  # the last tick's, a warm start (`cascade.WorkingSets`)
        self.contact_buffers = constraint_buffers(stack.contacts, robot.nv)
        self.force_count = (
            sum(contact.dim for contact in stack.contacts) if robot.floating_base else 0
        )
        self.friction = (
            friction_rows(stack.contacts, friction_coefficient)
            if self.force_count
            else np.zeros((0, 0))
        )
        self._postures = [
            (level.rows, entry_rows, entry.task)
            for level in levels
            for entry, entry_rows in zip(level.entries, level.slices)
            if getattr(entry.task, 'TYPE', None) == 'joint_posture'
        ]
        self._actuated = np.asarray(robot.indices.v, dtype=np.int64)
        self._loads = LoadShares(stack.contacts) if self.force_count else None
        soles = self.force_count and sole_half_size is not None
        self._contacts = stack.contacts
        self._sole_half_size = sole_half_size if soles else None
        self._friction_coefficient = friction_coefficient
        self._contact_frames = [robot.frame_id(contact.frame) for contact in stack.contacts]
        sizes = [size for level in levels for e in level.entries for size in e.task.row_groups()]
        self._group_sizes = np.asarray(sizes, dtype=np.int64)
        self._group_starts = np.cumsum([0, *sizes[:-1]]).astype(np.int64)

    def solve(
        self, state: RobotState, rows, target, constraint, bounds, window, weights, shares, band
    ) -> CascadeResult:
        """X = (q̈, f) of the hierarchical least squares (`wbc_control.control.hierarchy.cascade`).

        `rows`: the stack's stacked task terms, `target` their ẍ* − J̇v; `weights` √w per row of
        each level; `shares` each contact row's load share; `band` ε. Where the joint bounds and
        the hard constraints have no common solution (a joint far beyond its wall, a torque
        range too narrow to brake it), the joint bounds become soft: violated as little as
        possible; where even the torque range and the friction pyramids have none (a robot the
        floor cannot hold), every inequality does. The contacts and the base rows stay exact.
        """
        levels = []
        scales = self.row_scales(rows.jacobian, mobility_inverse(state))
        for k, (root, rank) in enumerate(zip(weights, self._generic_ranks)):
            level = slice(int(rows.offsets[k]), int(rows.offsets[k + 1]))
            scale = root * scales[level]
            levels.append(
                LevelRows(scale[:, None] * rows.jacobian[level], scale * target[level], rank)
            )
        metric = self.metric(state, shares)
        reweigh = self.reweigh(shares)
        hard, joint_rows = self.hard_constraints(state, constraint, bounds, window)
        reference = self.reference(rows, state)
        result = solve_cascade(levels, hard, metric, reference, band, reweigh, self.working_sets)
        self.working_sets = result.working_sets
        if result.solution is not None:
            return result
        if bounds is not None:
            softened = solve_cascade(
                levels, hard._replace(soft=joint_rows), metric, reference, band
            )
            if softened.solution is not None:
                return softened._replace(status=f'{result.status}; joint limits softened')
        every = np.ones(hard.lower.shape[0], dtype=bool)
        relaxed = solve_cascade(
            levels, hard._replace(soft=every), metric, reference, band, reweigh
        )
        return relaxed._replace(status=f'{result.status}; every inequality softened')

    def row_scales(self, jacobian: np.ndarray, inverse_inertia: np.ndarray) -> np.ndarray:
        """E per stacked row: 1 / √(the largest mobility (J M⁻¹ Jᵀ)ⱼⱼ of its group).

        A group's rows (`Task.row_groups`: one unit) measured by its inverse task-space mass
        (the diagonal of Khatib 1987's Λ⁻¹ = J M⁻¹ Jᵀ), so that errors of different units weigh
        as the effort they cost: a hand's metre as its few kilograms, its radian as its small
        inertia. Rows without mobility (a blocked group) get 0.
        """
        mobility = np.einsum('ij,ij->i', jacobian.dot(inverse_inertia), jacobian)
        largest = np.maximum.reduceat(mobility, self._group_starts) if mobility.size else mobility
        largest = np.repeat(largest, self._group_sizes)
        floor = 1e-12 * (float(mobility.max()) if mobility.size else 0.0)
        return np.where(
            largest > floor, 1.0 / np.sqrt(np.where(largest > floor, largest, 1.0)), 0.0
        )

    def reference(self, rows, state: RobotState) -> np.ndarray:
        """q̈_ref = q̈_posture − K v: where a level can hardly move, the motion it is damped to.

        q̈_posture: the joint-posture tasks' desired accelerations (the lowest where several; 0
        without one). K = `REFERENCE_DAMPING` makes a weak direction behave as a strongly damped
        joint instead of one driven by the level with a gain of 1/σ, which is what brings an arm
        to rest at the edge of its workspace (the regularisation of Chiaverini 1997 taken
        towards this motion instead of towards 0).
        """
        reference = np.zeros(self.robot.nv)
        for level_rows, entry_rows, _ in self._postures:
            start = level_rows.start + entry_rows.start
            reference[self._actuated] = rows.desired_acceleration[
                start : start + len(self._actuated)
            ]
        reference -= REFERENCE_DAMPING * state.v
        return reference

    def metric(self, state: RobotState, row_shares: np.ndarray) -> np.ndarray:
        """H₀ = blockdiag(M, W_f / m): the kinetic energy and the weighted force norm."""
        nv, count = self.robot.nv, self.force_count
        metric = np.zeros((nv + count, nv + count))
        metric[:nv, :nv] = state.mass_matrix
        if count:
            shares = np.maximum(row_shares, 1e-6 * max(float(row_shares.max()), 1e-300))
            metric[nv:, nv:] = np.diag(self._force_scale / shares)
        return metric

    def _centre_of_pressure(self, state: RobotState, nv: int, nx: int):
        """The soles' centre-of-pressure rows C f ≤ 0 at this tick's foot rotations."""
        rotations = [state.frame_placement(frame).rotation for frame in self._contact_frames]
        rows = centre_of_pressure_rows(
            self._contacts, rotations, self._sole_half_size, self._friction_coefficient
        )
        block = np.zeros((rows.shape[0], nx))
        block[:, nv:] = rows
        zeros = np.zeros(rows.shape[0])
        return block, np.full(zeros.shape, -np.inf), zeros, False

    def reweigh(self, row_shares: np.ndarray):
        """The cascade's second force stage: its weights from the first stage's forces."""
        if self._loads is None:
            return None

        def weights(forces: np.ndarray) -> np.ndarray:
            shares = row_shares * self._loads.factors(forces)
            return self._force_scale / np.maximum(shares, 1e-6 * max(float(shares.max()), 1e-300))

        return weights

    def hard_constraints(self, state, constraint, bounds, window):
        """`cascade.HardConstraints` at this tick, and which of its rows are joint bounds."""
        nv, count = self.robot.nv, self.force_count
        nx = nv + count
        blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray, bool]] = []
        mass, bias = state.mass_matrix, state.nonlinear_effects
        actuated = self._actuated
        torque_rows = np.zeros((actuated.shape[0], nx))
        torque_rows[:, :nv] = mass[actuated]
        if count:
            torque_rows[:, nv:] = -constraint[:, actuated].T
        finite = np.isfinite(window[0]) | np.isfinite(window[1])
        if finite.any():
            blocks.append(
                (
                    torque_rows[finite],
                    window[0][finite] - bias[actuated][finite],
                    window[1][finite] - bias[actuated][finite],
                    False,
                )
            )
        if constraint is not None:
            drift = contact_acceleration(constraint, self.contact_buffers.drift, state.v)
            contact_rows = np.zeros((constraint.shape[0], nx))
            contact_rows[:, :nv] = constraint
            blocks.append((contact_rows, drift, drift, True))
            base_nv = self.robot.base_nv
            if count and base_nv:
                base_rows = np.zeros((base_nv, nx))
                base_rows[:, :nv] = mass[:base_nv]
                base_rows[:, nv:] = -constraint[:, :base_nv].T
                blocks.append((base_rows, -bias[:base_nv], -bias[:base_nv], True))
            if self.friction.shape[0]:
                friction = np.zeros((self.friction.shape[0], nx))
                friction[:, nv:] = self.friction
                zeros = np.zeros(self.friction.shape[0])
                blocks.append((friction, np.full(zeros.shape, -np.inf), zeros, False))
            if self._sole_half_size is not None:
                blocks.append(self._centre_of_pressure(state, nv, nx))
        if bounds is not None:
            limited = np.isfinite(bounds[0]) | np.isfinite(bounds[1])
            joint_rows = np.zeros((int(limited.sum()), nx))
            joint_rows[np.arange(joint_rows.shape[0]), actuated[limited]] = 1.0
            blocks.append((joint_rows, bounds[0][limited], bounds[1][limited], False))
        if not blocks:
            empty = np.zeros(0)
            none = np.zeros(0, dtype=bool)
            return HardConstraints(np.zeros((0, nx)), empty, empty, none), none
        sizes = [block[1].shape[0] for block in blocks]
        joints = np.zeros(sum(sizes), dtype=bool)
        if bounds is not None:
            joints[sum(sizes[:-1]) :] = True  # the joint bounds come last
        hard = HardConstraints(
            np.vstack([block[0] for block in blocks]),
            np.concatenate([block[1] for block in blocks]),
            np.concatenate([block[2] for block in blocks]),
            np.concatenate([np.full(size, block[3]) for size, block in zip(sizes, blocks)]),
        )
        return hard, joints


def mobility_inverse(state: RobotState) -> np.ndarray:
    """M⁻¹ for the row scales, or (M + δI)⁻¹ where M is singular.

    A massless link that a constraint holds makes M singular; δ = `MASSLESS_REGULARISATION`
    times M's largest diagonal entry makes its direction a very mobile one, whose rows weigh
    little within their level.
    """
    try:
        return state.inverse_mass_matrix
    except InvalidValue:
        mass = state.mass_matrix
        shift = MASSLESS_REGULARISATION * float(np.abs(np.diag(mass)).max(initial=1.0))
        return np.linalg.inv(mass + shift * np.eye(mass.shape[0]))
