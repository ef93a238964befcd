"""Interpolation of task-reference trajectories, independent of ROS.

A trajectory message is decoded (:mod:`wbc_control.ros.trajectory_messages`) and validated
(:mod:`wbc_control.inputs.trajectory_points`) into points: per point its time from start, its
values and, where it has them, its velocities and accelerations. The interpolation is built once
on receipt (:mod:`wbc_control.inputs.trajectory_follower`); each tick only evaluates it
(:meth:`Trajectory.sample`) into preallocated arrays.

Positions (x, y, z or joint positions): a quintic Hermite spline on positions, velocities and
accelerations when any point gives accelerations, else scipy's `CubicHermiteSpline` on positions
and velocities when any point gives velocities, else scipy's C² `CubicSpline` with the first and
last points at rest (clamped). A point that lacks velocities or accelerations takes them from
that C² spline.

Orientations: R(t) = R_i exp(φ(t)) on segment i, φ a cubic (quintic with accelerations) Hermite
polynomial in the tangent space of R_i from 0 to Δ = log(R_iᵀ R_i+1), the representation of
scipy's `RotationSpline` (N. Mayorov, "Smooth Attitude Interpolation", 2019). In the world
ω = R J_r(φ) φ̇ and ω̇ = R (J_r(φ) φ̈ + n(φ, φ̇)), J_r the right Jacobian of SO(3) and n its
time derivative applied to φ̇; the end conditions use J_r(Δ)⁻¹. A constant φ̇ along Δ is SLERP.
A point that lacks angular velocities or accelerations takes them from `RotationSpline` (the
first and last points at rest).

After the last point the reference holds it with zero velocity and acceleration.
"""

import bisect
import math

import numpy as np
import pinocchio as pin
from scipy.interpolate import CubicHermiteSpline, CubicSpline
from scipy.spatial.transform import Rotation, RotationSpline

from wbc_control.inputs.trajectory_points import PointArrays
from wbc_control.tasks.task import ReferenceSample


def _filled(given: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    missing = np.isnan(given[:, 0])
    return np.where(missing[:, None], fallback, given)


def quintic_hermite(times, p0, v0, a0, p1, v1, a1) -> np.ndarray:
    """Per-segment coefficients (segments, 6, dims), ascending powers of t − t_i.

    The unique quintic with the given value, first and second derivative at both ends of
    each segment [t_i, t_i+1] (quintic Hermite interpolation).
    """
    h = np.diff(times)[:, None]
    dp = p1 - p0
    c3 = 10.0 * dp - (6.0 * v0 + 4.0 * v1) * h - (1.5 * a0 - 0.5 * a1) * h**2
    c4 = -15.0 * dp + (8.0 * v0 + 7.0 * v1) * h + (1.5 * a0 - a1) * h**2
    c5 = 6.0 * dp - 3.0 * (v0 + v1) * h - 0.5 * (a0 - a1) * h**2
    return np.stack([p0, v0, 0.5 * a0, c3 / h**3, c4 / h**4, c5 / h**5], axis=1)


def cubic_hermite(times, p0, v0, p1, v1) -> np.ndarray:
    """Per-segment coefficients (segments, 4, dims) of the cubic Hermite interpolation."""
    h = np.diff(times)[:, None]
    dp = p1 - p0
    c2 = (3.0 * dp / h - 2.0 * v0 - v1) / h
    c3 = (-2.0 * dp / h + v0 + v1) / h**2
    return np.stack([p0, v0, c2, c3], axis=1)


class PiecewisePolynomial:
    """Value, first and second derivative of a piecewise polynomial at one time, fast.

    scipy's `PPoly.__call__` costs about 10 µs a call; one tick needs three. Here the segment
    is found by bisection and the three rows come from one (3, d+1) @ (d+1, dims) product into
    preallocated arrays.

    Args:
        times: (m,) knots.
        coefficients: (m − 1, d + 1, dims), ascending powers of t − t_i.
    """

    def __init__(self, times: np.ndarray, coefficients: np.ndarray) -> None:
        self.knots = times.tolist()
        self.coefficients = coefficients
        degree = coefficients.shape[1] - 1
        self._exponents = np.arange(degree + 1, dtype=float)
        self._first = self._exponents[1:].copy()
        self._second = self._exponents[2:] * (self._exponents[2:] - 1.0)
        self._powers = np.empty(degree + 1)
        self._basis = np.zeros((3, degree + 1))
        self.rows = np.empty((3, coefficients.shape[2]))  # value, rate, acceleration
        #: The segment of the last :meth:`evaluate`.
        self.index = 0

    def evaluate(self, t: float) -> np.ndarray:
        """The rows (value, first, second derivative) at `t`, clamped to the knots' range."""
        knots = self.knots
        if t <= knots[0]:
            i, s = 0, 0.0
        elif t >= knots[-1]:
            i = len(knots) - 2
            s = knots[-1] - knots[i]
        else:
            i = bisect.bisect_right(knots, t) - 1
            s = t - knots[i]
        self.index = i
        powers, basis = self._powers, self._basis
        np.power(s, self._exponents, out=powers)
        basis[0] = powers
        np.multiply(self._first, powers[:-1], out=basis[1, 1:])
        np.multiply(self._second, powers[:-2], out=basis[2, 2:])
        return np.matmul(basis, self.coefficients[i], out=self.rows)

    def segment(self, t: float) -> int:
        """The index of the segment that holds `t`."""
        return min(max(bisect.bisect_right(self.knots, t) - 1, 0), len(self.knots) - 2)


class PositionSpline:
    """Positions, velocities and accelerations of a Hermite spline (module docstring)."""

    def __init__(self, points: PointArrays) -> None:
        times, values = points.times, points.values
        self.last = values[-1].copy()
        if times.size == 1:
            self.spline = None
            return
        base = CubicSpline(times, values, bc_type='clamped', axis=0)
        given_v, given_a = points.velocities, points.accelerations
        v = _filled(given_v, base(times, 1))
        if not np.isnan(given_a[:, 0]).all():
            a = _filled(given_a, base(times, 2))
            ends = (values[:-1], v[:-1], a[:-1], values[1:], v[1:], a[1:])
            coefficients = quintic_hermite(times, *ends)
        elif not np.isnan(given_v[:, 0]).all():
            # scipy's PPoly layout: (degree + 1, segments, dims), highest power first.
            hermite = CubicHermiteSpline(times, values, v, axis=0)
            coefficients = np.ascontiguousarray(hermite.c[::-1].transpose(1, 0, 2))
        else:
            coefficients = np.ascontiguousarray(base.c[::-1].transpose(1, 0, 2))
        self.spline = PiecewisePolynomial(times, coefficients)

    def evaluate(self, t: float, position, velocity, acceleration) -> None:
        """Write the values at `t` (inside the points' time range) into the three arrays."""
        if self.spline is None:
            position[:] = self.last
            velocity.fill(0.0)
            acceleration.fill(0.0)
            return
        rows = self.spline.evaluate(t)
        position[:] = rows[0]
        velocity[:] = rows[1]
        acceleration[:] = rows[2]


def _rotvec_coefficients(phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Norms (…, 1) and a safe divisor for the closed forms below (series near 0)."""
    norm = np.linalg.norm(phi, axis=-1, keepdims=True)
    return norm, np.where(norm > 1e-4, norm, 1.0)


def inverse_right_jacobian(phi: np.ndarray) -> np.ndarray:
    """J_r(φ)⁻¹ of SO(3) for a stack of rotation vectors (…, 3) -> (…, 3, 3)."""
    norm, safe = _rotvec_coefficients(phi)
    k = np.where(
        norm > 1e-4, (1.0 - 0.5 * safe / np.tan(0.5 * safe)) / safe**2, 1.0 / 12.0 + norm**2 / 720
    )[..., None]
    skew = np.zeros(phi.shape + (3,))
    skew[..., 0, 1], skew[..., 0, 2], skew[..., 1, 2] = -phi[..., 2], phi[..., 1], -phi[..., 0]
    skew -= np.swapaxes(skew, -1, -2)
    return np.eye(3) + 0.5 * skew + k * (skew @ skew)


def angular_acceleration_term(phi: np.ndarray, phi_dot: np.ndarray) -> np.ndarray:
    """n(φ, φ̇) = d/dt(J_r(φ)) φ̇, the part of ω̇ quadratic in φ̇ (Mayorov 2019; scipy).

    For stacks (…, 3) or single vectors.
    """
    norm, safe = _rotvec_coefficients(phi)
    dp = np.sum(phi * phi_dot, axis=-1, keepdims=True)
    cp = np.cross(phi, phi_dot)
    s, c = np.sin(safe), np.cos(safe)
    big = norm > 1e-4
    k1 = np.where(big, (-safe * s - 2.0 * (c - 1.0)) / safe**4, 1 / 12 - norm**2 / 180)
    k2 = np.where(big, (-2.0 * safe + 3.0 * s - safe * c) / safe**5, -1 / 60 + norm**2 / 12604)
    k3 = np.where(big, (safe - s) / safe**3, 1 / 6 - norm**2 / 120)
    return dp * (k1 * cp + k2 * np.cross(phi, cp)) + k3 * np.cross(phi_dot, cp)


def angular_acceleration_term_3(phi: np.ndarray, phi_dot: np.ndarray) -> np.ndarray:
    """:func:`angular_acceleration_term` of one vector, for the tick (numpy's cross is slow)."""
    norm = math.sqrt(float(phi @ phi))
    dp = float(phi @ phi_dot)
    skew = pin.skew(phi)
    cp = skew @ phi_dot
    if norm > 1e-4:
        s, c = math.sin(norm), math.cos(norm)
        k1 = (-norm * s - 2.0 * (c - 1.0)) / norm**4
        k2 = (-2.0 * norm + 3.0 * s - norm * c) / norm**5
        k3 = (norm - s) / norm**3
    else:
        k1, k2, k3 = 1 / 12 - norm**2 / 180, -1 / 60 + norm**2 / 12604, 1 / 6 - norm**2 / 120
    return (dp * k1) * cp + (dp * k2) * (skew @ cp) + k3 * (pin.skew(phi_dot) @ cp)


class RotationTrajectory:
    """R(t), ω(t), ω̇(t) of the SO(3) Hermite interpolation (module docstring)."""

    def __init__(self, points: PointArrays) -> None:
        times = points.times
        rotations = Rotation.from_quat(points.values)
        self.matrices = rotations.as_matrix()
        if times.size == 1:
            self.spline = None
            return
        # World rates at the points: given, else RotationSpline's (body rates rotated).
        body = RotationSpline(times, rotations)
        spline_rates = np.einsum('mij,mj->mi', self.matrices, body(times, 1))
        spline_rates[[0, -1]] = 0.0
        spline_accelerations = np.einsum('mij,mj->mi', self.matrices, body(times, 2))
        omega = _filled(points.velocities, spline_rates)
        alpha = _filled(points.accelerations, spline_accelerations)
        # Segment i in R_i's tangent space: φ from 0 to Δ = log(R_iᵀ R_i+1), rates by
        # ω_body = J_r(φ) φ̇ and ω̇_body = J_r(φ) φ̈ + n(φ, φ̇).
        start, end = self.matrices[:-1], self.matrices[1:]
        delta = (rotations[:-1].inv() * rotations[1:]).as_rotvec()
        inverse = inverse_right_jacobian(delta)
        rate0 = np.einsum('mji,mj->mi', start, omega[:-1])
        rate1 = np.einsum('mij,mj->mi', inverse, np.einsum('mji,mj->mi', end, omega[1:]))
        zero = np.zeros_like(delta)
        if np.isnan(points.accelerations[:, 0]).all():
            coefficients = cubic_hermite(times, zero, rate0, delta, rate1)
        else:
            acceleration0 = np.einsum('mji,mj->mi', start, alpha[:-1])
            body_end = np.einsum('mji,mj->mi', end, alpha[1:])
            acceleration1 = np.einsum(
                'mij,mj->mi', inverse, body_end - angular_acceleration_term(delta, rate1)
            )
            ends = (zero, rate0, acceleration0, delta, rate1, acceleration1)
            coefficients = quintic_hermite(times, *ends)
        self.spline = PiecewisePolynomial(times, coefficients)
        self._local = np.empty((3, 3))

    def evaluate(self, t: float, rotation, angular_velocity, angular_acceleration) -> None:
        """Write R, ω, ω̇ (world axes) at `t` (inside the points' time range)."""
        if self.spline is None:
            rotation[:] = self.matrices[-1]
            angular_velocity.fill(0.0)
            angular_acceleration.fill(0.0)
            return
        phi, phi_dot, phi_ddot = self.spline.evaluate(t)
        np.matmul(self.matrices[self.spline.index], pin.exp3(phi), out=rotation)
        jacobian = pin.Jexp3(phi)
        np.matmul(rotation, jacobian @ phi_dot, out=angular_velocity)
        body = jacobian @ phi_ddot + angular_acceleration_term_3(phi, phi_dot)
        np.matmul(rotation, body, out=angular_acceleration)


class Trajectory:
    """A validated, interpolated trajectory of one task's reference, in absolute time.

    Args:
        start_s: absolute time of `times` = 0 (s, the node's clock).
        linear: the positions' interpolation (x, y, z or joints), or None.
        angular: the orientations' interpolation, or None.
        end_s: absolute time of the last point.
    """

    def __init__(
        self,
        start_s: float,
        end_s: float,
        linear: PositionSpline | None,
        angular: RotationTrajectory | None,
    ) -> None:
        self.start_s, self.end_s = start_s, end_s
        self.linear, self.angular = linear, angular

    def sample(self, now_s: float, out: ReferenceSample) -> bool:
        """Write the reference at `now_s` into `out`; False once past the end (last point held).

        Before the start the first point is written.
        """
        start_s, end_s = self.start_s, self.end_s
        t = (end_s if now_s > end_s else now_s if now_s > start_s else start_s) - start_s
        linear, angular = self.linear, self.angular
        if linear is not None:
            if angular is None:
                linear.evaluate(t, out.position, out.velocity, out.acceleration)
            else:
                linear.evaluate(t, out.position, out.velocity[:3], out.acceleration[:3])
        if angular is not None:
            rates = out.velocity.shape[0]
            rows = slice(rates - 3, rates)
            angular.evaluate(t, out.rotation, out.velocity[rows], out.acceleration[rows])
        if now_s >= end_s:
            out.velocity.fill(0.0)
            out.acceleration.fill(0.0)
            return False
        return True
