"""The regularized task-space inertia (wbc_control.control.task_inertia)."""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

from wbc_control.control.task_inertia import regularized_task_inertia


def random_spd(rng: np.random.Generator, size: int, condition: float) -> np.ndarray:
    basis, _ = np.linalg.qr(rng.standard_normal((size, size)))
    return (basis * np.geomspace(1.0, 1.0 / condition, size)) @ basis.T


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 8))
def test_exact_inverse_away_from_singularity(seed, size):
    rng = np.random.default_rng(seed)
    phi = random_spd(rng, size, condition=50.0)
    result = regularized_task_inertia(phi, np.ones(size), threshold=1e-3)
    assert result.damped == 0 and result.rank == size
    np.testing.assert_allclose(result.inertia @ phi, np.eye(size), atol=1e-8)


def test_weights_do_not_change_an_exact_inverse():
    rng = np.random.default_rng(3)
    phi = random_spd(rng, 4, condition=10.0)
    weighted = regularized_task_inertia(phi, np.array([1.0, 3.0, 0.2, 5.0]), 1e-3)
    np.testing.assert_allclose(weighted.inertia, np.linalg.inv(phi), rtol=1e-9)


def test_units_do_not_matter_thanks_to_jacobi_scaling():
    """Scaling one row (metres -> millimetres) leaves the damping decision unchanged."""
    rng = np.random.default_rng(4)
    phi = random_spd(rng, 3, condition=2e3)
    units = np.diag([1.0, 1e3, 1.0])
    plain = regularized_task_inertia(phi, np.ones(3), 1e-2)
    scaled = regularized_task_inertia(units @ phi @ units, np.ones(3), 1e-2)
    assert plain.damped == scaled.damped
    np.testing.assert_allclose(units @ scaled.inertia @ units, plain.inertia, rtol=1e-8)


def test_gain_is_continuous_and_bounded_through_a_singular_direction():
    """Φ = [[1, c], [c, 1]] has eigenvalues 1 ± c: c → 1 closes one direction."""
    threshold = 1e-2
    gaps = np.linspace(0.2, 0.0, 2001)
    results = [
        regularized_task_inertia(np.array([[1.0, 1.0 - g], [1.0 - g, 1.0]]), np.ones(2), threshold)
        for g in gaps
    ]
    norms = np.array([np.linalg.norm(r.inertia, 2) for r in results])
    assert np.isfinite(norms).all()
    # ‖Λ‖ ≤ 1/ε with ε = threshold · σ_max and σ_max = 2 − gap ≥ 1.8.
    assert norms.max() <= 1.0 / (threshold * 1.8) + 1e-9
    assert np.abs(np.diff(norms)).max() < 0.01 * norms.max()
    assert results[0].damped == 0 and any(r.damped for r in results)
    assert results[-1].rank == 1


def test_directions_without_authority_are_dropped():
    phi = np.diag([2.0, 0.0, 3.0])
    result = regularized_task_inertia(phi, np.ones(3), 1e-3)
    np.testing.assert_allclose(result.inertia, np.diag([0.5, 0.0, 1.0 / 3.0]))
    empty = regularized_task_inertia(np.zeros((2, 2)), np.ones(2), 1e-3)
    np.testing.assert_array_equal(empty.inertia, 0.0)


def damped_inverse_by_numpy(phi, sqrt_weights, threshold, mobility):
    """Λ = D U diag(min(1/σ, σ/ε²)) Uᵀ D with D = diag(√w / √μ), Φₛ = D Φ D = U diag(σ) Uᵀ."""
    scale = sqrt_weights / np.sqrt(mobility)
    sigma, vectors = np.linalg.eigh(scale[:, None] * phi * scale[None, :])
    sigma = np.maximum(sigma, 0.0)
    epsilon = threshold * sigma[-1]
    inverse = np.where(sigma >= epsilon, 1.0 / np.maximum(sigma, epsilon), sigma / epsilon**2)
    basis = scale[:, None] * vectors
    non_null = sigma > 1e-9 * sigma[-1]
    return basis @ np.diag(inverse) @ basis.T, sigma, non_null, epsilon


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 7), st.booleans())
def test_the_variable_damping_law_against_numpy(seed, size, projected):
    """Nakamura & Hanafusa 1986 / Chiaverini 1997 per direction, on a badly conditioned Φ.

    `projected`: Φ of a lower level, whose rows are scaled by the larger unprojected mobility.
    """
    rng = np.random.default_rng(seed)
    phi = random_spd(rng, size, condition=1e6)
    sqrt_weights = np.sqrt(rng.uniform(0.2, 5.0, size))
    mobility = np.diag(phi) * rng.uniform(1.0, 3.0, size) if projected else np.diag(phi)
    threshold = 1e-2
    result = regularized_task_inertia(
        phi, sqrt_weights, threshold, mobility if projected else None
    )
    expected, sigma, non_null, epsilon = damped_inverse_by_numpy(
        phi, sqrt_weights, threshold, mobility
    )
    scale = np.abs(expected).max()
    np.testing.assert_allclose(result.inertia, expected, atol=1e-8 * scale)
    assert result.rank == int((sigma >= epsilon).sum())
    assert result.damped == int(non_null.sum()) - result.rank
    np.testing.assert_allclose(result.condition_number, sigma[-1] / sigma[non_null][0], rtol=1e-6)


def test_a_row_below_1e_12_of_the_largest_mobility_has_no_authority():
    """Rows with μᵢ ≤ 1e-12 max μ are dropped (zero rows of Λ), relative to the largest row."""
    result = regularized_task_inertia(np.diag([100.0, 1e-11]), np.ones(2), 1e-3)
    np.testing.assert_allclose(result.inertia, np.diag([0.01, 0.0]))
    kept = regularized_task_inertia(np.diag([100.0, 1e-9]), np.ones(2), 1e-3)
    assert kept.inertia[1, 1] > 0.0


def test_units_do_not_matter_when_a_row_has_no_authority():
    """The Jacobi scaling of the other rows still decides the damping (none here)."""
    result = regularized_task_inertia(np.diag([1e4, 0.0, 1.0]), np.ones(3), 1e-3)
    np.testing.assert_allclose(result.inertia, np.diag([1e-4, 0.0, 1.0]), rtol=1e-12)
    assert (result.rank, result.damped) == (2, 0)


def test_structural_rank_loss_is_relative_to_the_largest_eigenvalue():
    """σ ≤ 1e-9 σ_max is a structurally null direction (not damped, not in κ), at any scale.

    Heavy weights (10⁴) make σ_max large, so a rule on σ itself would count the small
    direction (σ ≈ 1e-7 here) as merely damped.
    """
    angle = np.radians(30.0)
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    phi = rotation @ np.diag([1.0, 1e-11]) @ rotation.T
    result = regularized_task_inertia(phi, np.full(2, 100.0), 1e-3)
    assert (result.rank, result.damped) == (1, 0)
    assert result.condition_number == pytest.approx(1.0)


def test_a_structurally_null_direction_gets_no_gain():
    """σ ≤ 1e-9 σ_max: gain 0, not σ/ε² (step 3). Λ is the exact rank-one inverse of the rest.

    With σ/ε² the null direction, whose σ is the rounding of Φ in a real level, would add
    σ_null/ε² of it to Λ: 1e-5 of Λ's largest entry here.
    """
    angle = np.radians(30.0)
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    for small in (1e-10, 1e-11, 0.0):
        phi = rotation @ np.diag([1.0, small]) @ rotation.T
        result = regularized_task_inertia(phi, np.array([1.0, 3.0]), 1e-3)
        scale = np.array([1.0, 3.0]) / np.sqrt(phi.diagonal())
        values, vectors = np.linalg.eigh(phi * np.outer(scale, scale))
        direction = scale * vectors[:, 1]
        expected = np.outer(direction, direction) / values[1]
        np.testing.assert_allclose(result.inertia, expected, rtol=1e-9, atol=0.0)
        np.testing.assert_allclose(result.blocking, expected, rtol=1e-9, atol=0.0)
        assert (result.rank, result.damped) == (1, 0)


def test_a_level_without_authority_reports_nothing_inverted():
    result = regularized_task_inertia(np.zeros((3, 3)), np.ones(3), 1e-3)
    assert (result.rank, result.damped) == (0, 0)
    assert result.condition_number == np.inf
    np.testing.assert_array_equal(result.inertia, 0.0)
