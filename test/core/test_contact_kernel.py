"""The contact path's compiled calls against numpy and against their decline rules.

`schur_terms` (Johnson 2024, eqs 6-7) must give the block matrix's M† and A†ᵀ where it applies
and decline where M or the Delassus matrix is singular or too badly conditioned for its bound;
`base_forces` must give `lstsq`'s weighted minimum-norm contact forces where the normal
equations are well conditioned, decline at rank loss (leaving f alone), and pass a NaN load
through as NaN forces rather than decline.
"""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
from oracles.constrained_dynamics import SCHUR_MIN_RCOND, dagger_terms, schur_terms
import pytest
from robots import random_state, robot

from wbc_control.control.contact.contact_kernel import base_forces
from wbc_control.control.contact.contacts import (
    NORMAL_EQUATIONS_MAX_CONDITION,
    Contact,
    base_contact_forces,
    contact_jacobian,
)

seeds = st.integers(0, 2**31 - 1)
FEET = ('left_sole_link', 'right_sole_link')


def random_system(seed: int, nv: int = 20, rows: int = 12):
    """A random SPD M, its inverse and a full-row-rank A `(rows, nv)`."""
    rng = np.random.default_rng(seed)
    root = rng.standard_normal((nv, nv))
    mass = root @ root.T + nv * np.eye(nv)
    return mass, np.linalg.inv(mass), rng.standard_normal((rows, nv))


def schur(mass, inverse_mass, constraint) -> tuple[bool, np.ndarray, np.ndarray]:
    """`schur_terms` into new buffers: (done, M†, A†ᵀ)."""
    nv, rows = mass.shape[0], constraint.shape[0]
    m_dagger, a_dagger_t = np.full((nv, nv), np.nan), np.full((nv, rows), np.nan)
    done = schur_terms(mass, inverse_mass, constraint, SCHUR_MIN_RCOND, m_dagger, a_dagger_t)
    return done, m_dagger, a_dagger_t


@settings(max_examples=25, deadline=None)
@given(seeds)
def test_the_schur_terms_equal_the_block_matrix_terms(seed):
    mass, inverse_mass, constraint = random_system(seed)
    done, m_dagger, a_dagger_t = schur(mass, inverse_mass, constraint)
    assert done
    block = dagger_terms(mass, constraint, method='block_lu')
    np.testing.assert_allclose(m_dagger, block.m_dagger, atol=1e-12)
    np.testing.assert_allclose(a_dagger_t, block.a_dagger.T, atol=1e-12)
    # Eq 6's defining properties: A M† = 0, and A A†ᵀ = I.
    np.testing.assert_allclose(constraint @ m_dagger, 0.0, atol=1e-12)
    np.testing.assert_allclose(constraint @ a_dagger_t, np.eye(constraint.shape[0]), atol=1e-10)


def test_the_schur_terms_decline_a_dependent_constraint_and_a_badly_conditioned_m():
    mass, inverse_mass, constraint = random_system(1)
    dependent = np.vstack([constraint, constraint[:1]])  # D singular: not positive definite
    assert not schur(mass, inverse_mass, dependent)[0]
    stiff = np.diag(np.r_[1e9, np.ones(19)])  # tr(M) tr(M⁻¹) ≈ 1e9 > 1 / SCHUR_MIN_RCOND
    assert not schur(stiff, np.linalg.inv(stiff), constraint)[0]
    nearly = np.vstack([constraint, constraint[:1] + 1e-7 * constraint[1:2]])  # κ(D) ≈ 1e14
    assert not schur(mass, inverse_mass, nearly)[0]


@pytest.mark.parametrize('seed', range(3))
def test_the_schur_terms_of_talos_standing_equal_the_block_matrix_terms(seed):
    talos = robot('talos')
    state = random_state(talos, seed)
    feet = [Contact.create(talos, frame, 'surface') for frame in FEET]
    constraint, _ = contact_jacobian(state, feet)
    done, m_dagger, a_dagger_t = schur(state.mass_matrix, state.inverse_mass_matrix, constraint)
    assert done
    block = dagger_terms(state.mass_matrix, constraint, method='block_lu')
    scale = np.abs(block.m_dagger).max()
    np.testing.assert_allclose(m_dagger, block.m_dagger, atol=1e-9 * scale)
    np.testing.assert_allclose(a_dagger_t, block.a_dagger.T, atol=1e-9)


def expected_forces(constraint, load, shares):
    """The weighted minimum-norm forces by `lstsq`: f = W^½ (A_bᵀ W^½)⁺ t."""
    scale = np.sqrt(shares)
    return scale * np.linalg.lstsq(constraint[:, :6].T * scale, load[:6], rcond=None)[0]


@settings(max_examples=30, deadline=None)
@given(seeds)
def test_the_compiled_forces_are_the_weighted_minimum_norm_ones(seed):
    rng = np.random.default_rng(seed)
    constraint = rng.standard_normal((12, 18)) * rng.uniform(0.1, 10.0, 18)
    load = rng.standard_normal(18) * 100.0
    shares = rng.uniform(0.05, 1.0, 12)
    forces = np.full(12, np.nan)
    residual = base_forces(constraint, load, 6, shares, NORMAL_EQUATIONS_MAX_CONDITION, forces)
    expected = expected_forces(constraint, load, shares)
    np.testing.assert_allclose(forces, expected, atol=1e-9 * max(1.0, np.abs(expected).max()))
    assert 0.0 <= residual < 1e-9 * np.abs(load).max()


def test_rank_loss_is_declined_and_the_caller_takes_least_squares():
    rng = np.random.default_rng(4)
    constraint = rng.standard_normal((12, 18))
    constraint[:, :6] = rng.standard_normal((12, 3)) @ rng.standard_normal((3, 6))  # rank 3
    load, shares = rng.standard_normal(18), np.ones(12)
    forces = np.full(12, 7.0)
    assert base_forces(constraint, load, 6, shares, NORMAL_EQUATIONS_MAX_CONDITION, forces) == -1
    assert (forces == 7.0).all()  # not written
    result = base_contact_forces(constraint, load, 6)
    np.testing.assert_allclose(result.forces, expected_forces(constraint, load, shares), atol=1e-9)
    assert result.base_residual > 1e-3  # a rank-3 A_b cannot balance a general base wrench
    nearly = rng.standard_normal((12, 18))
    nearly[:, 5] = nearly[:, 4] + 1e-6 * nearly[:, 5]  # G positive definite, κ₂(G) ≈ 1e13
    assert base_forces(nearly, load, 6, shares, NORMAL_EQUATIONS_MAX_CONDITION, forces) == -1


def test_a_nan_load_gives_nan_forces_not_a_decline():
    rng = np.random.default_rng(5)
    constraint, load = rng.standard_normal((12, 18)), rng.standard_normal(18)
    load[2] = np.nan
    forces = np.zeros(12)
    residual = base_forces(
        constraint, load, 6, np.ones(12), NORMAL_EQUATIONS_MAX_CONDITION, forces
    )
    assert np.isnan(residual) and np.isnan(forces).all()
    assert np.isnan(base_contact_forces(constraint, load, 6).base_residual)
