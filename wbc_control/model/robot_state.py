"""Per-tick kinematics and dynamics, computed once and shared by every task.

`RobotState.update(q, v)` runs Pinocchio's C++ routines once per tick, and no more of them
than the controller needs:

- `computeAllTerms`: in one pass, joint placements, velocities and the zero-acceleration bias
  (the classical drift terms J̇v of the tasks are read from it), the joint Jacobians, the
  joint-space inertia M(q) (both triangles), h(q, v) = C(q, v) v + g(q), and the centre of mass
  with its velocity and Jacobian; one call instead of five (`forwardKinematics` with q̈ = 0,
  `computeJointJacobians`, `crba`, `nonLinearEffects`, `jacobianCenterOfMass`), and less time;
- `updateFramePlacements`.

M and h are views of Pinocchio's `Data`, not copies. On first use in a tick, and only then:

- a Cholesky factorisation of M (LAPACK `potrf`), so that M⁻¹B is a pair of triangular
  solves (`potrs`);
- M⁻¹ itself, for the controller, which applies it once per priority level (a product costs
  less than a pair of solves): by the tree's sparse LᵀDL factorisation (Featherstone 2005,
  `wbc_control.model.mass_inverse`), a third of a dense Cholesky inverse's time on a humanoid;
- the centre of mass drift (`centerOfMass` at ACCELERATION level, from the kinematics above);
- the generalized gravity g(q) (one more RNEA pass).

Tasks read from it; they never call Pinocchio algorithms that redo the kinematics.
"""

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from wbc_control import lapack
from wbc_control.exceptions import InvalidShape, InvalidValue
from wbc_control.model.mass_inverse import dof_parents, tree_inverse
from wbc_control.model.robot_model import RobotModel

LOCAL_WORLD_ALIGNED = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

_INFINITY = float('inf')
_SUM = np.add.reduce  # `ndarray.sum` adds a Python wrapper to each call
_NOT_POSITIVE_DEFINITE = (
    'the joint-space inertia matrix is not positive definite (massless subtree without a '
    'constraint?)'
)


class RobotState:
    """Pinocchio `Data` for one robot plus the per-tick quantities derived from it."""

    def __init__(self, robot: RobotModel) -> None:
        self.robot = robot
        self.model = robot.model
        self.data = robot.model.createData()
        self.q = robot.neutral_configuration()
        self.v = np.zeros(robot.nv)
        self._incoming = np.empty(robot.nq + robot.nv)  # q and v, checked before they are kept
        # Views of the Data that `update` fills in place (Pinocchio never reallocates them).
        self.mass_matrix: np.ndarray = self.data.M
        self.nonlinear_effects: np.ndarray = self.data.nle
        self._cholesky: np.ndarray | None = None
        self._inverse_valid = False
        self._inverse = np.empty((robot.nv, robot.nv))
        self._dof_parents = dof_parents(robot.model)
        self._inverse_work = np.empty((3, robot.nv, robot.nv))
        self._com_valid = False
        self._com: np.ndarray = self.data.com[0]
        self._com_velocity: np.ndarray = self.data.vcom[0]
        self._com_drift: np.ndarray = self.data.acom[0]
        self._com_jacobian: np.ndarray = self.data.Jcom
        self._com_terms = (self._com, self._com_velocity, self._com_jacobian, self._com_drift)
        self._gravity_valid = False
        self._gravity = np.zeros(robot.nv)
        # Each frame's oMf: Pinocchio's `data.oMf[i]` is a view of the Data, which `update`
        # rewrites in place, so one per frame serves every tick without a lookup of its own.
        self._placements = [self.data.oMf[frame] for frame in range(len(self.data.oMf))]

    def update(self, q: npt.ArrayLike, v: npt.ArrayLike) -> None:
        """Compute kinematics and dynamics at (q, v); the only Pinocchio pass of a tick.

        Raises:
            InvalidShape: wrong vector sizes.
            InvalidValue: non-finite entries.
        """
        if type(q) is not np.ndarray:
            q = np.asarray(q, dtype=float)
        if type(v) is not np.ndarray:
            v = np.asarray(v, dtype=float)
        if q.shape != (self.robot.nq,) or v.shape != (self.robot.nv,):
            raise InvalidShape(
                f'expected q of shape ({self.robot.nq},) and v of shape ({self.robot.nv},), '
                f'got {q.shape} and {v.shape}'
            )
        # A sum is finite exactly when every entry is (barring overflow past 1e306, far beyond
        # any joint state): one reduction over q and v side by side in a scratch buffer (the
        # state keeps its last good q, v) instead of an elementwise test and `all` per vector.
        # A comparison, False for NaN, does what math.isfinite does without a call.
        incoming, nq = self._incoming, self.robot.nq
        incoming[:nq] = q
        incoming[nq:] = v
        total = _SUM(incoming)
        if not -_INFINITY < total < _INFINITY:
            raise InvalidValue('q or v has non-finite entries')
        self.q[:] = q
        self.v[:] = v
        pin.computeAllTerms(self.model, self.data, self.q, self.v)
        pin.updateFramePlacements(self.model, self.data)
        self._cholesky, self._inverse_valid = None, False
        self._com_valid = False
        self._gravity_valid = False

    @property
    def mass_matrix_cholesky(self) -> tuple[np.ndarray, bool]:
        """Cholesky factor of M in scipy's `cho_factor` form `(c, lower)`, once per tick.

        Raises:
            InvalidValue: M is not positive definite.
        """
        if self._cholesky is None:
            factor = lapack.cholesky(self.mass_matrix)
            if factor is None:
                raise InvalidValue(_NOT_POSITIVE_DEFINITE)
            self._cholesky = factor
        return self._cholesky, False

    def solve_mass_matrix(self, rhs: np.ndarray) -> np.ndarray:
        """M⁻¹ rhs by two triangular solves (rhs: `(nv,)` or `(nv, k)`)."""
        factor = self._cholesky
        if factor is None:
            factor = self.mass_matrix_cholesky[0]
        return lapack.cholesky_solve(factor, rhs)

    @property
    def inverse_mass_matrix(self) -> np.ndarray:
        """M⁻¹ `(nv, nv)`, once per tick, by the tree's sparse LᵀDL (`mass_inverse`).

        One buffer, rewritten by the next tick's first use: read it, do not write or keep it.

        Raises:
            InvalidValue: M is not positive definite.
        """
        if not self._inverse_valid:
            work = self._inverse_work
            if not tree_inverse(self.mass_matrix, self._dof_parents, work, self._inverse):
                raise InvalidValue(_NOT_POSITIVE_DEFINITE)
            self._inverse_valid = True
        return self._inverse

    @property
    def gravity(self) -> np.ndarray:
        """g(q), the generalized gravity, `(nv,)` (one extra RNEA pass, on request only)."""
        if not self._gravity_valid:
            np.copyto(self._gravity, pin.computeGeneralizedGravity(self.model, self.data, self.q))
            self._gravity_valid = True
        return self._gravity

    def frame_placement(self, frame_id: int) -> pin.SE3:
        """oMf: placement of the frame in the world (this tick's: a view of `Data`)."""
        return self._placements[frame_id]

    def frame_jacobian(self, frame_id: int) -> np.ndarray:
        """6×nv frame Jacobian in LOCAL_WORLD_ALIGNED (rows: linear, angular)."""
        return pin.getFrameJacobian(self.model, self.data, frame_id, LOCAL_WORLD_ALIGNED)

    def frame_velocity(self, frame_id: int) -> np.ndarray:
        """Frame twist (linear of the origin, angular) in LOCAL_WORLD_ALIGNED, `(6,)`."""
        return pin.getFrameVelocity(self.model, self.data, frame_id, LOCAL_WORLD_ALIGNED).vector

    def frame_drift(self, frame_id: int) -> np.ndarray:
        """J̇v for the LOCAL_WORLD_ALIGNED frame Jacobian, `(6,)`.

        The *classical* acceleration of the frame origin at q̈ = 0 (linear part includes the
        ω × v term); the spatial acceleration would not be the time derivative of J v.
        """
        acceleration = pin.getFrameClassicalAcceleration(
            self.model, self.data, frame_id, LOCAL_WORLD_ALIGNED
        )
        return acceleration.vector

    def frame_terms(self, frame_id: int) -> tuple[pin.SE3, np.ndarray, np.ndarray]:
        """oMf, the Jacobian `(6, nv)` and J̇v `(6,)` of a frame (LOCAL_WORLD_ALIGNED), in one call.

        The same as :meth:`frame_placement`, :meth:`frame_jacobian` and :meth:`frame_drift`.
        """
        model, data, axes = self.model, self.data, LOCAL_WORLD_ALIGNED
        return (
            self._placements[frame_id],
            pin.getFrameJacobian(model, data, frame_id, axes),
            pin.getFrameClassicalAcceleration(model, data, frame_id, axes).vector,
        )

    @property
    def com_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """c, ċ, J_com `(3, nv)` and J̇_com v in one call (this tick's, views of `Data`)."""
        if not self._com_valid:
            self._update_com()
        return self._com_terms

    @property
    def com(self) -> np.ndarray:
        """Centre of mass position in the world, `(3,)`."""
        self._update_com()
        return self._com

    @property
    def com_velocity(self) -> np.ndarray:
        """Centre of mass velocity, `(3,)` (= Jcom v)."""
        self._update_com()
        return self._com_velocity

    @property
    def com_jacobian(self) -> np.ndarray:
        """Centre of mass Jacobian, `(3, nv)`."""
        self._update_com()
        return self._com_jacobian

    @property
    def com_drift(self) -> np.ndarray:
        """J̇com v: centre of mass acceleration at q̈ = 0, `(3,)`."""
        self._update_com()
        return self._com_drift

    def _update_com(self) -> None:
        """Centre-of-mass quantities from this tick's kinematics, at most once per tick."""
        if self._com_valid:
            return
        # com, vcom and Jcom are computeAllTerms'; this adds acom from the same kinematics.
        pin.centerOfMass(self.model, self.data, pin.KinematicLevel.ACCELERATION, False)
        self._com_valid = True
