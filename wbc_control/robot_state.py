"""Per-tick kinematics and dynamics, computed once and shared by every task.

`RobotState.update(q, v)` runs Pinocchio's C++ routines once per tick:

- `computeAllTerms`: forward kinematics (position, velocity and the zero-acceleration bias),
  joint Jacobians, the joint-space inertia M(q) (CRBA), h(q, v) = C(q, v) v + g(q) (RNEA with
  q̈ = 0), the centre of mass and its Jacobian;
- `updateFramePlacements`;
- a Cholesky factorisation of M, so that M⁻¹B is always a pair of triangular solves and M is
  never inverted explicitly;
- on request, the centre-of-mass drift (`centerOfMass` at ACCELERATION level).

Tasks read from it; they never call Pinocchio algorithms that redo the kinematics.
"""

import numpy as np
import numpy.typing as npt
import pinocchio as pin
from scipy.linalg import cho_factor, cho_solve

from wbc_control.exceptions import InvalidShape, InvalidValue
from wbc_control.robot_model import RobotModel

LOCAL_WORLD_ALIGNED = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


class RobotState:
    """Pinocchio `Data` for one robot plus the per-tick quantities derived from it."""

    def __init__(self, robot: RobotModel) -> None:
        self.robot = robot
        self.model = robot.model
        self.data = robot.model.createData()
        self.q = robot.neutral_configuration()
        self.v = np.zeros(robot.nv)
        self.mass_matrix = np.zeros((robot.nv, robot.nv))
        self.nonlinear_effects = np.zeros(robot.nv)
        self._lower = np.tril_indices(robot.nv, -1)
        self._cholesky: tuple[np.ndarray, bool] | None = None
        self._com_drift_valid = False
        self._gravity_valid = False
        self._gravity = np.zeros(robot.nv)

    def update(self, q: npt.ArrayLike, v: npt.ArrayLike) -> None:
        """Compute kinematics and dynamics at (q, v); the only Pinocchio pass of a tick.

        Raises:
            InvalidShape: wrong vector sizes.
            InvalidValue: non-finite entries, or an inertia matrix that is not positive definite.
        """
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        if q.shape != (self.robot.nq,) or v.shape != (self.robot.nv,):
            raise InvalidShape(
                f'expected q of shape ({self.robot.nq},) and v of shape ({self.robot.nv},), '
                f'got {q.shape} and {v.shape}'
            )
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            raise InvalidValue('q or v has non-finite entries')
        np.copyto(self.q, q)
        np.copyto(self.v, v)
        pin.computeAllTerms(self.model, self.data, self.q, self.v)
        pin.updateFramePlacements(self.model, self.data)
        # CRBA fills the upper triangle only; mirror it so M is exactly symmetric.
        np.copyto(self.mass_matrix, self.data.M)
        self.mass_matrix[self._lower] = self.mass_matrix.T[self._lower]
        np.copyto(self.nonlinear_effects, self.data.nle)
        self._cholesky = None
        self._com_drift_valid = False
        self._gravity_valid = False

    @property
    def mass_matrix_cholesky(self) -> tuple[np.ndarray, bool]:
        """Cholesky factor of M (scipy `cho_factor` form), computed at most once per tick."""
        if self._cholesky is None:
            try:
                self._cholesky = cho_factor(self.mass_matrix, check_finite=False)
            except np.linalg.LinAlgError as error:
                raise InvalidValue(
                    'the joint-space inertia matrix is not positive definite (massless '
                    'subtree without a constraint?)'
                ) from error
        return self._cholesky

    def solve_mass_matrix(self, rhs: np.ndarray) -> np.ndarray:
        """M⁻¹ rhs by two triangular solves (rhs: `(nv,)` or `(nv, k)`)."""
        return cho_solve(self.mass_matrix_cholesky, rhs, check_finite=False)

    @property
    def gravity(self) -> np.ndarray:
        """g(q), the generalized gravity, `(nv,)` (one extra RNEA pass, on request only)."""
        if not self._gravity_valid:
            np.copyto(self._gravity, pin.computeGeneralizedGravity(self.model, self.data, self.q))
            self._gravity_valid = True
        return self._gravity

    def frame_placement(self, frame_id: int) -> pin.SE3:
        """oMf: placement of the frame in the world."""
        return self.data.oMf[frame_id]

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

    @property
    def com(self) -> np.ndarray:
        """Centre of mass position in the world, `(3,)`."""
        return self.data.com[0]

    @property
    def com_velocity(self) -> np.ndarray:
        """Centre of mass velocity, `(3,)` (= Jcom v)."""
        return self.data.vcom[0]

    @property
    def com_jacobian(self) -> np.ndarray:
        """Centre of mass Jacobian, `(3, nv)`."""
        return self.data.Jcom

    @property
    def com_drift(self) -> np.ndarray:
        """J̇com v: centre of mass acceleration at q̈ = 0, `(3,)` (computed on first use)."""
        if not self._com_drift_valid:
            pin.centerOfMass(self.model, self.data, pin.KinematicLevel.ACCELERATION, False)
            self._com_drift_valid = True
        return self.data.acom[0]
