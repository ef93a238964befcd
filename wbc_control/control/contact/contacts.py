"""Rigid contacts: constraint Jacobian, base-consistent contact forces and their health.

A contact fixes some directions of a frame's motion, A q̇ = 0 with A = P J (LOCAL_WORLD_ALIGNED,
P selects rows): a `surface` contact (a foot sole) fixes all 6, a `point` contact (a ball foot)
the 3 linear ones, and a contact `along` an axis the single linear direction of that axis.
Its acceleration constraint is A q̈ + Ȧq̇ = 0 (Johnson 2024, eq 19), which the controller
holds with a Baumgarte damping of the contact velocity (`contact_acceleration`).

Contact forces f (the environment's wrench on the robot, world axes, at the frame origin) enter
M q̈ + h = Sᵀτ + Aᵀf. For a floating base the 6 unactuated rows decide them::

    A_bᵀ f = M_b q̈ + h_b      (the base rows; A_b = the base columns of A)

Rule: f is the minimum-norm solution (least squares if A_b has rank < 6, with the residual
reported) of ‖f_lin‖² + ‖m / L‖² with the moments measured at the arm L = `MOMENT_ARM_M`
(forces and moments have different units: without L, a COM moved over one foot would be
carried by equal forces and large ankle moments, whose centre of pressure leaves the other
sole), weighted by each contact's load share during a contact switch. For a fixed base
f = 0: the torque alone produces the constraint-consistent q̈. A force that pulls (normal
component < 0 along world z, i.e. flat horizontal ground) or leaves the friction cone
‖f_t‖ > μ f_n is reported, never hidden.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from wbc_control import lapack
from wbc_control.control.contact.contact_kernel import base_forces
from wbc_control.exceptions import InvalidTaskConfig, InvalidValue
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

_WORLD_UP = np.array([0.0, 0.0, 1.0])
#: K of the contact rows A q̈ = −Ȧq̇ − K A q̇ (1/s): a contact velocity decays in about 1/K s.
CONTACT_VELOCITY_DAMPING = 10.0
#: A normal force below −this (N) pulls: within it, a zero force rounded.
PULL_TOLERANCE = 1e-6
#: Arm (m) at which contact moments are weighed against forces in the force distribution:
#: a fraction of a sole's half-width, so that a lightly loaded sole gets no large moment.
MOMENT_ARM_M = 0.02
#: Relative excess of the friction ratio over μ that is rounding, not a force outside the
#: cone: the inscribed pyramid's corners reach μ exactly, and the solver's solution reaches
#: them to its tolerance.
CONE_TOLERANCE = 1e-9

#: Largest κ₂(A_b A_bᵀ) bound for which the contact forces come from the normal equations
#: (rounding grows with it: about 1e-8 relative at the bound); above it, `lstsq`.
NORMAL_EQUATIONS_MAX_CONDITION = 1e8
_IDENTITY_6 = np.eye(6)
_IDENTITY_6.flags.writeable = False


class ContactType(Enum):
    """How many directions of the frame's motion a contact fixes."""

    SURFACE = 'surface'
    POINT = 'point'
    ALONG = 'along'


@dataclass(frozen=True)
class Contact:
    """A frame in rigid contact; `rows` selects the constrained rows of its 6D Jacobian."""

    frame: str
    frame_id: int
    kind: ContactType
    rows: np.ndarray  # (k, 6)

    @property
    def dim(self) -> int:
        """Number of constrained directions."""
        return self.rows.shape[0]

    @property
    def row_weights(self) -> np.ndarray:
        """Weight per constrained row in the force distribution: 1 (force), L² (moment)."""
        angular = np.abs(self.rows[:, 3:]).sum(axis=1) > 0.0
        return np.where(angular, MOMENT_ARM_M**2, 1.0)

    @classmethod
    def create(
        cls, robot: RobotModel, frame: str, kind: str = 'surface', axis: npt.ArrayLike = None
    ) -> 'Contact':
        """Validate a contact description (FrameNotFound for unknown frames)."""
        try:
            contact_type = ContactType(kind)
        except ValueError as error:
            raise InvalidTaskConfig(
                f"contact '{frame}': type must be surface, point or along; got '{kind}'"
            ) from error
        frame_id = robot.frame_id(frame)
        if contact_type is ContactType.SURFACE:
            rows = np.eye(6)
        elif contact_type is ContactType.POINT:
            rows = np.eye(6)[:3]
        else:
            rows = np.zeros((1, 6))
            rows[0, :3] = _unit_axis(frame, axis)
        rows.flags.writeable = False
        return cls(frame, frame_id, contact_type, rows)


def contact_row_weights(contacts: Sequence[Contact]) -> np.ndarray:
    """`Contact.row_weights` of stacked contacts, `(m,)`."""
    return np.concatenate([contact.row_weights for contact in contacts])


def _unit_axis(frame: str, axis: npt.ArrayLike | None) -> np.ndarray:
    if axis is None:
        raise InvalidTaskConfig(f"contact '{frame}' of type 'along' needs an axis")
    vector = np.asarray(axis, dtype=float)
    norm = np.linalg.norm(vector) if vector.shape == (3,) else 0.0
    if not np.isfinite(norm) or norm < 1e-9:
        raise InvalidValue(f"contact '{frame}': axis must be a finite non-zero 3-vector")
    return vector / norm


class ContactBuffers(NamedTuple):
    """A stack's contact terms, rewritten every tick (`contact_jacobian`)."""

    constraint: np.ndarray  # A (m, nv)
    drift: np.ndarray  # Ȧq̇ (m,)


def constraint_buffers(contacts: Sequence[Contact], nv: int) -> ContactBuffers:
    """Uninitialized buffers for the terms of `contacts` (m rows)."""
    size = sum(contact.dim for contact in contacts)
    return ContactBuffers(np.empty((size, nv)), np.empty(size))


def contact_jacobian(
    state: RobotState,
    contacts: Sequence[Contact],
    out: ContactBuffers | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Stacked constraint Jacobian A `(m, nv)` and drift Ȧq̇ `(m,)` of all contacts.

    C_i J_i and C_i J̇_i v per contact, C_i its `rows`; for a surface or point contact, whose
    rows are the first six or three of the identity, the rows copied. Written into `out`
    (`constraint_buffers`) when given, else into new arrays.
    """
    if out is None:
        size = sum(contact.dim for contact in contacts)
        constraint, drift = np.empty((size, state.model.nv)), np.empty(size)
    else:
        constraint, drift = out.constraint, out.drift
    start = 0
    for contact in contacts:
        _, jacobian, frame_drift = state.frame_terms(contact.frame_id)
        size = contact.rows.shape[0]
        rows = slice(start, start + size)
        if contact.kind is ContactType.ALONG:
            contact.rows.dot(jacobian, out=constraint[rows])
            contact.rows.dot(frame_drift, out=drift[rows])
        else:  # surface, point: the first 6 or 3 rows of the identity, copied
            constraint[rows] = jacobian[:size]
            drift[rows] = frame_drift[:size]
        start = rows.stop
    return constraint, drift


def contact_acceleration(
    constraint: np.ndarray, drift: np.ndarray, velocity: np.ndarray
) -> np.ndarray:
    """A q̈ the contact rows ask for, −Ȧq̇ − K A q̇ `(m,)` (K = `CONTACT_VELOCITY_DAMPING`).

    A q̈ = −Ȧq̇ alone keeps a contact's velocity A q̇ as it is: after an impact, or where a
    sole that a task unloaded has rolled, slid or lifted, it would keep moving. Baumgarte's
    stabilised constraint Φ̈ + 2α Φ̇ + β² Φ = 0 (Baumgarte 1972, "Stabilization of constraints
    and integrals of motion in dynamical systems"), here on the velocity alone (β = 0,
    2α = K, Φ̇ = A q̇), brings it to rest: d/dt (A q̇) = −K A q̇. Where the contacts are at
    rest the term is zero and the rows are Johnson's (2024, eq 19).

    Args:
        constraint: A `(m, nv)`.
        drift: Ȧq̇ `(m,)`.
        velocity: q̇ `(nv,)`.
    """
    return -drift - CONTACT_VELOCITY_DAMPING * constraint.dot(velocity)


class ContactForces(NamedTuple):
    """Contact forces that balance the base rows, and how well they do."""

    forces: np.ndarray  # (m,) stacked, in each contact's constrained directions
    base_residual: float  # ‖A_bᵀ f − (M_b q̈ + h_b)‖, 0 when the contacts span the base wrench


def base_contact_forces(
    constraint_jacobian: np.ndarray,
    generalized_force: np.ndarray,
    base_nv: int,
    load_shares: np.ndarray | None = None,
) -> ContactForces:
    """Minimum-norm f with A_bᵀ f = (M q̈ + h)_b (module docstring); f = 0 for a fixed base.

    With `load_shares` w `(m,)` (≥ 0 per row: `contact_row_weights` times the load shares of
    a contact switch), the weighted minimum norm
    min Σ f_i² / w_i: f = W^½ (A_bᵀ W^½)⁺ (M q̈ + h)_b. A row of share 0 carries no force;
    as a share falls to 0 its force does too, continuously, while the other contacts span the
    base wrench (the load transfer of `wbc_control.control.switching.contact_transitions`).

    Where the normal equations are well conditioned, one compiled call
    (`contact_kernel.base_forces`); else `minimum_norm_solution`'s least squares.
    """
    rows = constraint_jacobian.shape[0]
    if base_nv == 0:
        return ContactForces(np.zeros(rows), 0.0)
    forces = np.empty(rows)
    shares = np.ones(rows) if load_shares is None else load_shares
    residual = base_forces(
        constraint_jacobian, generalized_force, base_nv, shares, NORMAL_EQUATIONS_MAX_CONDITION,
        forces,
    )  # fmt: skip
    if residual != -1.0:  # the normal equations, compiled (a NaN input gives NaN forces)
        return ContactForces(forces, residual)
    # Rank loss or an ill-conditioned G: the minimum-norm least-squares solution.
    base_columns = constraint_jacobian[:, :base_nv].T  # (base_nv, m)
    target = generalized_force[:base_nv]
    if load_shares is None:
        forces = minimum_norm_solution(base_columns, target)
    else:
        scale = np.sqrt(load_shares)
        forces = scale * minimum_norm_solution(base_columns * scale, target)
    error = base_columns.dot(forces) - target
    return ContactForces(forces, math.sqrt(error.dot(error)))  # ‖·‖ without norm's wrapper


def minimum_norm_solution(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The minimum-norm least-squares x of B x = t, B `(k, m)` with k ≤ m (k = 6 here).

    With full row rank, x = Bᵀ (B Bᵀ)⁻¹ t from a Cholesky factorisation of the k×k normal
    equations G = B Bᵀ (Golub & Van Loan 2013, sec 5.6), a fraction of the cost of `lstsq`'s
    SVD at this size. Forming G squares the condition number, so this path is taken only
    when G is positive definite and provably well conditioned, κ₂(G) ≤ tr(G) tr(G⁻¹) ≤
    :data:`NORMAL_EQUATIONS_MAX_CONDITION`; otherwise (contacts that no longer span the base
    wrench: rank loss) `lstsq` gives the minimum-norm least-squares solution as before.
    """
    gram = matrix.dot(matrix.T)
    factor = lapack.cholesky(gram)
    if factor is not None:
        identity = _IDENTITY_6 if gram.shape[0] == 6 else np.eye(gram.shape[0])
        inverse = lapack.cholesky_solve(factor, identity)
        if float(gram.trace()) * float(inverse.trace()) <= NORMAL_EQUATIONS_MAX_CONDITION:
            return matrix.T.dot(inverse.dot(rhs))
    return np.linalg.lstsq(matrix, rhs, rcond=None)[0]


class ContactForceReport(NamedTuple):
    """One contact's force and whether it is physically plausible."""

    frame: str
    force: np.ndarray  # (k,) in the contact's constrained directions (world axes)
    normal_force: float  # N, along world z
    friction_ratio: float  # ‖f_t‖ / f_n (inf when f_n ≤ 0)
    pulling: bool
    outside_friction_cone: bool


def contact_force_reports(
    contacts: Sequence[Contact], forces: np.ndarray, friction_coefficient: float
) -> tuple[ContactForceReport, ...]:
    """Split stacked forces per contact and check unilaterality and the friction cone."""
    reports, start = [], 0
    for contact in contacts:
        force = forces[start : start + contact.dim]
        start += contact.dim
        linear = contact.rows[:, :3].T @ force  # the linear force in world axes
        normal = float(linear @ _WORLD_UP)
        tangential = float(np.linalg.norm(linear - normal * _WORLD_UP))
        ratio = tangential / normal if normal > 0.0 else np.inf
        checks_friction = contact.kind is not ContactType.ALONG
        reports.append(
            ContactForceReport(
                contact.frame,
                force,
                normal,
                ratio,
                checks_friction and normal < -PULL_TOLERANCE,
                checks_friction and ratio > friction_coefficient * (1.0 + CONE_TOLERANCE),
            )
        )
    return tuple(reports)


#: A tick's forces are checked exactly only if some ‖f_t‖ exceeds this fraction of μ f_n (or
#: some f_n ≤ 0): a margin over the rounding of the cheap test below.
CONE_CHECK_MARGIN = 0.99


def cone_check_terms(contacts: Sequence[Contact]) -> tuple[np.ndarray, np.ndarray]:
    """What `may_leave_friction_cone` needs of a contact set, computed once per set.

    Returns:
        The map from stacked forces to each contact's linear force in world axes
        `(3 × contacts, m)`, and which contacts are checked (not `along`) `(contacts,)`.
    """
    linear_map = np.zeros((3 * len(contacts), sum(contact.dim for contact in contacts)))
    start = 0
    for index, contact in enumerate(contacts):
        linear_map[3 * index : 3 * index + 3, start : start + contact.dim] = contact.rows[:, :3].T
        start += contact.dim
    checked = np.array([contact.kind is not ContactType.ALONG for contact in contacts], bool)
    return linear_map, checked


def may_leave_friction_cone(
    terms: tuple[np.ndarray, np.ndarray], forces: np.ndarray, friction_coefficient: float
) -> bool:
    """False only if no checked contact pulls or leaves the cone (`contact_force_reports`).

    A few array operations for all contacts, instead of a report per contact: a tick for
    which it returns False has no pulling or outside-the-cone report; True means look.
    """
    linear_map, checked = terms
    linear = linear_map.dot(forces).reshape(-1, 3)
    normal = linear[:, 2]
    tangential = linear[:, 0] * linear[:, 0] + linear[:, 1] * linear[:, 1]
    bound = (CONE_CHECK_MARGIN * friction_coefficient) ** 2 * normal * normal
    return bool((checked & ((normal <= 0.0) | (tangential > bound))).any())


def holding_torque(state: RobotState, contacts: Sequence[Contact]) -> np.ndarray:
    """The torque that holds the state still (the `gravity` safe command), `(n_act,)`.

    Without contacts, g(q) of the actuated joints. With contacts, the actuated rows of
    g − Aᵀf where f are the contact forces that balance g on the base rows (the rule of this
    module; f = 0 for a fixed base). For a robot standing on its feet this is what its legs
    must push to carry it at q̈ = 0, not g(q) of the joints alone, which would treat the legs
    as arms hanging from a fixed base.
    """
    robot = state.robot
    gravity = state.gravity
    if contacts:
        constraint = contact_jacobian(state, contacts)[0]  # (m, nv)
        weights = contact_row_weights(contacts)
        forces = base_contact_forces(constraint, gravity, robot.base_nv, weights).forces
        gravity = gravity - constraint.T.dot(forces)
    return gravity[robot.indices.v]
