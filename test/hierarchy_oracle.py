"""Independent oracles of the hierarchy, for the tests: numpy and quadprog, never the product.

`recursion` is Khatib's dynamically consistent recursion written from the formulas
(Khatib 1987, eq 30; Sentis & Khatib 2005) with numpy's eigh and pseudo-inverse, the rows of a
level normalised by group as docs/theory.md says. `lexicographic` solves the cascade of
least-squares QPs of Kanoun, Lamiraux & Wieber (2011) with quadprog (Goldfarb & Idnani 1983),
a different algorithm from the product's solver.
"""

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import quadprog

STRUCTURALLY_NULL = 1e-9


class OracleLevel(NamedTuple):
    """One level: stacked J `(m, nv)`, t = ẍ* − J̇v `(m,)`, √w `(m,)`, group sizes."""

    jacobian: np.ndarray
    target: np.ndarray
    sqrt_weights: np.ndarray
    groups: tuple[int, ...]


def normalisation(
    jacobian: np.ndarray, inverse_inertia: np.ndarray, sqrt_weights: np.ndarray, groups
) -> np.ndarray:
    """D: √wᵢ over the square root of the mean mobility (J M⁻¹ Jᵀ)ⱼⱼ of row i's group."""
    mobility = np.einsum('ij,jk,ik->i', jacobian, inverse_inertia, jacobian)
    scale, start = np.zeros(len(mobility)), 0
    for size in groups:
        rows = slice(start, start + size)
        mean = mobility[rows].mean()
        if mean > 1e-12 * mobility.max():
            scale[rows] = sqrt_weights[rows] / np.sqrt(mean)
        start += size
    return scale


def recursion(
    inverse_inertia: np.ndarray, start: np.ndarray, levels: Sequence[OracleLevel], band: float
):
    """q̈, each level's (condition, not weak, weak, λ²) and the scales D of every level.

    A direction is weak with weight (ε (1 − κ/0.1)⁺ − σ/σ_max)⁺, κ its kinematic factor
    ‖Jpᵀf‖² / Σᵣ fᵣ² ‖Jpᵣ‖² (docs/theory.md).
    """
    nv = len(start)
    acceleration, null_space = start.copy(), np.eye(nv)
    stats, scales = [], []
    for level in levels:
        scale = normalisation(level.jacobian, inverse_inertia, level.sqrt_weights, level.groups)
        projected = level.jacobian.dot(null_space)
        phi = projected.dot(inverse_inertia).dot(projected.T)
        mobility = np.einsum('ij,jk,ik->i', level.jacobian, inverse_inertia, level.jacobian)
        scale = np.where(phi.diagonal() > 1e-12 * mobility, scale, 0.0)  # blocked rows
        scaled = phi * np.outer(scale, scale)
        sigma, vectors = np.linalg.eigh(scaled)
        sigma_max = max(sigma[-1], 0.0)
        keep = sigma > STRUCTURALLY_NULL * sigma_max
        pseudo = (vectors[:, keep] / sigma[keep]).dot(vectors[:, keep].T)
        inertia = scale[:, None] * pseudo * scale[None, :]  # Λ
        consistent = inverse_inertia.dot(projected.T).dot(inertia)  # J̄
        acceleration = acceleration + consistent.dot(
            level.target - level.jacobian.dot(acceleration)
        )
        null_space = null_space - consistent.dot(projected)
        kept = sigma[keep]
        directions = (vectors[:, keep] * scale[:, None]).T  # f_i = D u_i, rows
        moved = directions.dot(projected)
        kinematic = (moved**2).sum(axis=1) / np.maximum(
            (directions**2).dot((projected**2).sum(axis=1)), np.finfo(float).tiny
        )
        weights = np.clip(
            band * np.clip(1.0 - kinematic / 0.1, 0.0, None) - kept / max(sigma_max, 1e-300),
            0.0,
            None,
        )
        weak = int((weights > 0.0).sum())
        condition = sigma_max / kept.min() if kept.size else np.inf
        stats.append((condition, int(kept.size) - weak, weak, float(weights.max(initial=0.0))))
        scales.append(scale)
    return acceleration, stats, scales


def lexicographic(
    levels: Sequence[tuple[np.ndarray, np.ndarray, float]],
    hard: tuple[np.ndarray, np.ndarray, np.ndarray],
    metric: np.ndarray,
    reference: np.ndarray,
    tie_break: float = 1e-9,
) -> np.ndarray:
    """The cascade: per level (R, T, λ²) min ‖R q̈ − T‖² + λ² c ‖P(q̈ − q̈_ref)‖² + tie-break.

    `hard` = (G, lower, upper) over x `(nx,)` (equal bounds: an equality); P projects onto the
    rows of R, c is the largest eigenvalue of RᵀR. Every level keeps its predecessors' R q̈.
    """
    rows, lower, upper = hard
    nx, nv = metric.shape[0], len(reference)
    pins: list[tuple[np.ndarray, np.ndarray]] = []
    solution = None
    for level_rows, target, regularisation in levels or [(np.zeros((0, nv)), np.zeros(0), 0.0)]:
        hessian, gradient = np.zeros((nx, nx)), np.zeros(nx)
        normal = level_rows.T.dot(level_rows)
        scale = max(np.linalg.eigvalsh(normal)[-1], 1e-300) if len(target) else np.trace(metric)
        hessian[:nv, :nv] = normal
        gradient[:nv] = level_rows.T.dot(target)
        if regularisation > 0.0:
            projector = np.linalg.pinv(level_rows).dot(level_rows)
            hessian[:nv, :nv] += regularisation * scale * projector
            gradient[:nv] += regularisation * scale * projector.dot(reference)
        hessian += tie_break * scale / (np.trace(metric) / nx) * metric
        solution = _quadprog(hessian, gradient, rows, lower, upper, pins, nv)
        if len(target):
            pins.append((level_rows, level_rows.dot(solution[:nv])))
    return solution


def _quadprog(hessian, gradient, rows, lower, upper, pins, nv):
    """Quadprog's min ½xᵀHx − aᵀx s.t. Cᵀx ≥ b, equalities first."""
    nx = hessian.shape[0]
    equal_rows, equal_values, inequality_rows, inequality_values = [], [], [], []
    for row, low, high in zip(rows, lower, upper):
        if low == high:
            equal_rows.append(row)
            equal_values.append(low)
            continue
        if np.isfinite(low):
            inequality_rows.append(row)
            inequality_values.append(low)
        if np.isfinite(high):
            inequality_rows.append(-row)
            inequality_values.append(-high)
    for pin_rows, values in pins:
        for row, value in zip(pin_rows, values):
            padded = np.zeros(nx)
            padded[:nv] = row
            equal_rows.append(padded)
            equal_values.append(value)
    matrix = np.array(equal_rows + inequality_rows).reshape(-1, nx)
    bounds = np.array(equal_values + inequality_values)
    symmetric = 0.5 * (hessian + hessian.T)
    return quadprog.solve_qp(symmetric, gradient, matrix.T, bounds, len(equal_rows))[0]
