"""The contact forces' minimum-norm solve: normal equations where safe, lstsq at rank loss."""

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
from robots import random_state, robot

from wbc_control.control.contact.contacts import (
    Contact,
    base_contact_forces,
    contact_jacobian,
    minimum_norm_solution,
)

seeds = st.integers(0, 2**31 - 1)


@settings(max_examples=30, deadline=None)
@given(seeds)
def test_full_row_rank_matches_lstsq(seed):
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((6, 12)) * rng.uniform(0.1, 10.0, 12)
    rhs = rng.standard_normal(6) * 100.0
    expected = np.linalg.lstsq(matrix, rhs, rcond=None)[0]
    np.testing.assert_allclose(minimum_norm_solution(matrix, rhs), expected, rtol=0, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(seeds)
def test_rank_loss_falls_back_to_the_minimum_norm_least_squares_solution(seed):
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((6, 3)).dot(rng.standard_normal((3, 12)))  # rank 3
    rhs = rng.standard_normal(6)
    expected = np.linalg.lstsq(matrix, rhs, rcond=None)[0]
    np.testing.assert_allclose(minimum_norm_solution(matrix, rhs), expected, atol=1e-9)


def test_talos_feet_forces_equal_the_lstsq_rule():
    talos = robot('talos')
    state = random_state(talos, seed=5)
    feet = [Contact.create(talos, frame) for frame in ('left_sole_link', 'right_sole_link')]
    constraint = contact_jacobian(state, feet)[0]
    load = np.random.default_rng(5).standard_normal(talos.nv) * 50.0
    shares = np.linspace(0.2, 1.0, constraint.shape[0])
    forces = base_contact_forces(constraint, load, 6, shares)
    scale = np.sqrt(shares)
    expected = scale * np.linalg.lstsq(constraint[:, :6].T * scale, load[:6], rcond=None)[0]
    np.testing.assert_allclose(forces.forces, expected, rtol=0, atol=1e-9)
    assert forces.base_residual < 1e-9
