"""Holding walls: where a joint's effort limit can no longer hold its arm up against gravity.

A revolute joint i whose effort limit τ̄ᵢ is below the largest gravity torque its subtree can
put on it (a light shoulder, a payload beyond capacity) cannot hold the arm in every pose:
driven there, it saturates with nothing left to brake with, and the arm swings at the limit.
The holding walls keep such a joint where a share β = `HOLDING_SHARE` of τ̄ᵢ holds it, the
rest being left to brake and to move it, as walls of its viability bounds
(`joint_limits`: the joint brakes towards them as towards its URDF walls, and is pulled
back from beyond them).

With the other joints where they are, turning joint i by δ turns its subtree rigidly about the
joint's axis a, so the gravity torque on it is a sinusoid of δ. For a subtree of mass m, centre
of mass r from the axis and F = m g⃗, a · (R(δ) r × F) = a · (r⊥ × F) cos δ + a · ((a × r⊥) × F)
sin δ (Rodrigues' rotation formula; the part of r along a gives no torque), and its value and
slope at δ = 0 are gᵢ(q) and Gᵢᵢ = ∂gᵢ/∂qᵢ (Carpentier & Mansard 2018's derivatives of the
generalized gravity, computed by Pinocchio):

    gᵢ(q + δ eᵢ) = gᵢ cos δ + Gᵢᵢ sin δ = A cos(δ − φ),   A = √(gᵢ² + Gᵢᵢ²),  φ = atan2(Gᵢᵢ, gᵢ).

Where A ≤ β τ̄ᵢ the joint holds in any pose of its own: no wall. Else |gᵢ| > β τ̄ᵢ on the arcs
|δ − φ − k π| < α, α = arccos(β τ̄ᵢ / A), and with ψ = −φ mod π (where the joint is, measured
from the last peak of |gᵢ|, ψ ∈ [0, π)) the walls stand at

    d⁺ = π − α − ψ   above the joint,   d⁻ = ψ − α   below it,

each negative beyond its wall (inside an arc the joint cannot hold: the nearer way out is the
one whose distance is negative). Recomputed at every tick: moving the other joints moves the
walls. Fixed-base robots only: on a floating base the stance legs' load is the contact
forces', not gᵢ.

One Pinocchio call computes them (the derivatives, which leave g(q) in its data), and none at
all on an arm whose joints hold it in any pose. For a subtree of mass m whose centre of mass
lies r⊥ off the axis, A = |g⃗⊥| m |r⊥| (g⃗⊥: gravity across the axis), so over every pose
A ≤ Âᵢ = |g⃗| Σ_b m_b (ρ_b + |c_b|) (`peak_bounds`; the triangle inequality, as
`model.reach`), summed over the subtree's bodies: ρ_b the lengths of the joint placements from
joint i to the body's joint plus the travel of the prismatic joints on the way, c_b the body's
centre of mass in its own frame. Where Âᵢ ≤ β τ̄ᵢ for every joint no wall is
ever needed (the Panda's Âᵢ are at most 0.83 of its limits).
"""

import math

from numba import float64, types
import numpy as np
import pinocchio as pin

from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import INDEX, MATRIX, VECTOR
from wbc_control.model.reach import prismatic_travel
from wbc_control.model.robot_model import RobotModel

#: β: the share of a joint's effort limit the static gravity torque may take at its holding
#: walls; the rest brakes and moves it.
HOLDING_SHARE = 0.85


class HoldingWalls:
    """The holding walls (module docstring) of a fixed-base robot's revolute actuated joints.

    Args:
        robot: the model; a floating base, or no revolute joint whose effort limit is finite and
            below its `peak_bounds`, gives no walls (`distances` returns infinities).
        effort_limits: τ̄ per actuated joint (N m, inf for none).
    """

    def __init__(self, robot: RobotModel, effort_limits: np.ndarray) -> None:
        size, model = robot.n_actuated, robot.model
        limits = np.asarray(effort_limits, dtype=float)
        ids = [model.getJointId(name) for name in robot.joint_names]
        revolute = np.array([_is_revolute(model, joint) for joint in ids], dtype=bool)
        self.joints = np.flatnonzero(revolute & np.isfinite(limits)).astype(np.int64)
        self.columns = np.asarray(robot.indices.v, dtype=np.int64)[self.joints]  # their v index
        self.held = HOLDING_SHARE * limits[self.joints]  # β τ̄ᵢ
        #: `(n_act,)` which joints get walls: their bounds are the effort limits' (physical).
        self.walled = np.zeros(size, dtype=bool)
        if not robot.floating_base:  # on a floating base the stance legs' load is the contacts'
            peaks = peak_bounds(model)[[ids[joint] for joint in self.joints]]
            self.walled[self.joints] = peaks > self.held
        self.active = bool(self.walled.any())
        self.model, self._data = model, model.createData()
        #: d⁺, d⁻ `(2, n_act)` as `distances` last wrote them; all inf while not `active`.
        self.walls = np.full((2, size), np.inf)

    def distances(self, q: np.ndarray) -> np.ndarray:
        """(d⁺, d⁻) per actuated joint at configuration `q`, a `(2, n_act)` buffer; inf: none.

        Rewritten by the next call.
        """
        if self.active:
            slopes = pin.computeGeneralizedGravityDerivatives(self.model, self._data, q)
            holding_walls(self._data.g, slopes, self.joints, self.columns, self.held, self.walls)
        return self.walls


def _is_revolute(model: pin.Model, joint: int) -> bool:
    """Whether joint `joint` of `model` turns about one axis (bounded or continuous)."""
    name = model.joints[joint].shortname()
    return name.startswith(('JointModelR', 'JointModelRevolute'))


def peak_bounds(model: pin.Model) -> np.ndarray:
    """Âⱼ per joint of `model` `(njoints,)`: the module docstring's bound of A over all poses.

    |g⃗| Σ over the joint's subtree of m_b (ρ_b + |c_b|), ρ_b the sum of the lengths of the
    joint placements from joint j (exclusive) to body b's joint (inclusive) and of the travels
    of the prismatic joints among them (`model.reach.prismatic_travel`; inf if unbounded).
    """
    gravity = float(np.linalg.norm(model.gravity.linear))
    peaks = np.zeros(model.njoints)
    for joint in range(1, model.njoints):
        reach = {joint: 0.0}
        total = 0.0
        for body in model.subtrees[joint]:  # depth first: a parent before its children
            if body != joint:
                placement = float(np.linalg.norm(model.jointPlacements[body].translation))
                travel = prismatic_travel(model, body)
                reach[body] = reach[model.parents[body]] + placement + travel
            inertia = model.inertias[body]
            total += inertia.mass * (reach[body] + float(np.linalg.norm(inertia.lever)))
        peaks[joint] = gravity * total
    return peaks


@kernel(types.void(VECTOR, MATRIX, INDEX, INDEX, VECTOR, float64[:, ::1]))
def holding_walls(gravity, slopes, joints, columns, held, walls):  # pragma: no cover - compiled
    """Write d⁺ (`walls[0]`) and d⁻ (`walls[1]`) of the module docstring for `joints`.

    Joint `joints[k]` (actuated order) has gᵢ = gravity[columns[k]], Gᵢᵢ = slopes[c, c] for
    c = columns[k], β τ̄ᵢ = held[k]; the other entries of `walls` stay inf.
    """
    for k in range(joints.shape[0]):
        column, joint = columns[k], joints[k]
        value, slope = gravity[column], slopes[column, column]
        amplitude = math.hypot(value, slope)
        if amplitude <= held[k]:
            walls[0, joint] = walls[1, joint] = math.inf
            continue
        half_arc = math.acos(held[k] / amplitude)
        phase = -math.atan2(slope, value) % math.pi
        walls[0, joint] = math.pi - half_arc - phase
        walls[1, joint] = phase - half_arc
