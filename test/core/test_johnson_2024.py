"""Johnson 2024 (Block Matrix Solutions), section 3: A†ᵀ is the least-kinetic-energy right inverse.

Of all q̇ with A q̇ = ċ, q̇ = A†ᵀċ has the least kinetic energy ½ q̇ᵀ M q̇ (the mass-weighted right
Moore-Penrose pseudo-inverse M⁻¹Aᵀ(AM⁻¹Aᵀ)⁻¹). Checked against the null-space method, an
algorithm that shares nothing with the project's: with Z an orthonormal basis of null(A)
(numpy SVD) and q_p any particular solution, the minimiser is q_p + Z y* with
y* = −(ZᵀMZ)⁻¹ ZᵀM q_p. Both the block-matrix dagger terms (`dagger_terms`, 'schur' and
'block_lu') and the controller's own Schur path (`schur_dagger_terms`) are checked, on random
systems and on Talos standing on both feet.
"""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
from oracles.constrained_dynamics import dagger_terms, schur_dagger_terms
import pytest
from robots import random_state, robot

from wbc_control.control.contact.contacts import Contact, contact_jacobian

seeds = st.integers(0, 2**31 - 1)


def least_energy_by_null_space(mass: np.ndarray, constraint: np.ndarray, rate: np.ndarray):
    """The q̇ of least ½ q̇ᵀMq̇ with A q̇ = ċ, by the null-space method."""
    particular = np.linalg.lstsq(constraint, rate, rcond=None)[0]
    _, singular_values, rows = np.linalg.svd(constraint)
    basis = rows[singular_values.size :].T  # (n, n − m), A has full row rank m
    reduced = basis.T @ mass @ basis
    return particular - basis @ np.linalg.solve(reduced, basis.T @ mass @ particular)


def random_system(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    m = int(rng.integers(1, n))
    factor = rng.standard_normal((n, n))
    return factor @ factor.T + 0.1 * np.eye(n), rng.standard_normal((m, n))


def energy(mass: np.ndarray, velocity: np.ndarray) -> float:
    return 0.5 * float(velocity @ mass @ velocity)


@settings(max_examples=40, deadline=None)
@given(seeds, st.sampled_from(['schur', 'block_lu']))
def test_a_dagger_transpose_is_the_least_kinetic_energy_right_inverse(seed, method):
    mass, constraint = random_system(seed)
    terms = dagger_terms(mass, constraint, method=method)
    right_inverse = terms.a_dagger.T  # (n, m)
    m = constraint.shape[0]
    np.testing.assert_allclose(constraint @ right_inverse, np.eye(m), atol=1e-8)
    rng = np.random.default_rng(seed + 1)
    for _ in range(5):
        rate = rng.standard_normal(m)
        velocity = right_inverse @ rate
        expected = least_energy_by_null_space(mass, constraint, rate)
        scale = 1.0 + np.abs(expected).max()
        np.testing.assert_allclose(velocity, expected, atol=1e-7 * scale)
        # Any other solution of A q̇ = ċ costs more energy.
        other = np.linalg.lstsq(constraint, rate, rcond=None)[0]
        assert energy(mass, other) >= energy(mass, velocity) - 1e-9 * scale**2


@pytest.mark.parametrize('seed', range(4))
def test_the_controllers_contact_inverse_is_the_least_energy_one_on_talos(seed):
    talos = robot('talos')
    state = random_state(talos, seed)
    contacts = [Contact.create(talos, f, 'surface') for f in ('left_sole_link', 'right_sole_link')]
    constraint, _ = contact_jacobian(state, contacts)
    rate = np.random.default_rng(seed).standard_normal(constraint.shape[0])
    expected = least_energy_by_null_space(state.mass_matrix, constraint, rate)
    schur = schur_dagger_terms(state, constraint)
    assert schur is not None, 'Talos standing is well conditioned: the Schur path applies'
    block = dagger_terms(state.mass_matrix, constraint, method='block_lu')
    for right_inverse in (schur[1], block.a_dagger.T):
        np.testing.assert_allclose(right_inverse @ rate, expected, atol=1e-7)
