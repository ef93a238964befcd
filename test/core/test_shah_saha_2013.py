"""Shah & Saha 2013, section 2: the 4-link example (eqs 7-9) and the perturbation bound (eq 4).

Run through the project's code: the chain of `wbc_control.benchmark.rod_chain`, its inertia and
forces from `RobotState`, q̈ by `RobotState.solve_mass_matrix` (the controller's Cholesky
solve) and κ₂ by `wbc_control.conditioning.estimators.condition_number`.

Regime of the paper's numbers. Eq 7 is the chain at q₁ = 60° (not the "q = 0" of the text,
where the chain is horizontal and φ is twice eq 7's) with m l² = 2.207 kg m² (the value that
fits all ten printed entries; the text says m = 2.2 kg, l = 1 m). q̈ = I⁻¹φ does not depend on
m, so eq 8 is reproduced whatever the mass. The paper's percentages are truncated, not rounded
(φ₂ changes by 0.027 %, printed 0.02 %; q̈₄ by 55.6 %, printed 55 %).

Tolerances. The paper prints I and φ to 4 decimals, i.e. to within 5e-5 per entry; by eq 4
(with the same bound for a perturbed matrix), q̈ computed from the exact chain then differs
from the printed q̈ by at most κ (‖δI‖/‖I‖ + ‖δφ‖/‖φ‖) ‖q̈‖, plus the printed q̈'s own 5e-5.
"""

import math

import numpy as np
import pytest

from wbc_control.benchmark.rod_chain import serial_chain_urdf
from wbc_control.conditioning.estimators import condition_number
from wbc_control.model.robot_model import RobotModel
from wbc_control.model.robot_state import RobotState

EQ7_PHI = np.array([-86.6015, -48.7133, -21.6504, -5.4126])
EQ8_QDD = np.array([-6.2189, 7.8864, -2.1226, 0.6071])
EQ9_PHI = np.array([-86.0, -48.7, -21.6, -5.4])
EQ9_QDD = np.array([-5.7477, 6.7586, -1.2128, 0.2696])
EQ9_PHI_CHANGE_PERCENT = np.array([0.69, 0.02, 0.23, 0.23])
EQ9_QDD_CHANGE_PERCENT = np.array([7.0, 14.0, 42.0, 55.0])
ROD_INERTIA_KG_M2 = 2.207  # m l² implied by eq 7
INCLINATION_RAD = math.pi / 3
PRINTED_HALF_UNIT = 5e-5  # 4 decimals


def eq7_state() -> RobotState:
    """The 4-rod chain at rest at q₁ = 60°, through RobotModel / RobotState."""
    robot = RobotModel.from_urdf_string(serial_chain_urdf(4, mass=ROD_INERTIA_KG_M2))
    state = RobotState(robot)
    state.update(np.array([INCLINATION_RAD, 0.0, 0.0, 0.0]), np.zeros(4))
    return state


def printing_bound(state: RobotState, qdd: np.ndarray, phi: np.ndarray) -> float:
    """Eq 4 for the 4-decimal rounding of I (4×4 entries) and φ (4), plus q̈'s own rounding."""
    kappa = condition_number(state.mass_matrix).condition_number
    inertia_error = PRINTED_HALF_UNIT * 4.0 / np.linalg.norm(state.mass_matrix, 2)
    phi_error = PRINTED_HALF_UNIT * 2.0 / np.linalg.norm(phi)
    return kappa * (inertia_error + phi_error) * np.linalg.norm(qdd) + PRINTED_HALF_UNIT


def test_the_chain_has_eq7_forces_and_a_condition_number_of_1074():
    state = eq7_state()
    phi = -state.nonlinear_effects  # φ = τ − C q̇ − g at τ = 0, q̇ = 0
    # φ scales with m l², known to 4 digits (2.207 ± 0.0005): a relative 2.3e-4.
    np.testing.assert_allclose(phi, EQ7_PHI, rtol=0.0005 / ROD_INERTIA_KG_M2)
    assert round(condition_number(state.mass_matrix).condition_number) == 1074


def test_eq8_acceleration_through_the_controller_cholesky_solve():
    state = eq7_state()
    phi = -state.nonlinear_effects
    qdd = state.solve_mass_matrix(phi)
    np.testing.assert_allclose(qdd, EQ8_QDD, atol=printing_bound(state, qdd, phi))
    # The same q̈ at the paper's printed φ, and q̈ is independent of the rod mass.
    np.testing.assert_allclose(
        state.solve_mass_matrix(EQ7_PHI), EQ8_QDD, atol=printing_bound(state, qdd, EQ7_PHI)
    )
    light = RobotState(RobotModel.from_urdf_string(serial_chain_urdf(4, mass=1.0)))
    light.update(state.q, state.v)
    np.testing.assert_allclose(light.solve_mass_matrix(-light.nonlinear_effects), qdd, rtol=1e-9)


def test_eq9_perturbation_figures():
    """Rounding φ (eq 9) changes it by 0.69/0.02/0.23/0.23 % and q̈ by 7/14/42/55 %."""
    state = eq7_state()
    qdd = state.solve_mass_matrix(EQ7_PHI)
    perturbed = state.solve_mass_matrix(EQ9_PHI)
    np.testing.assert_allclose(perturbed, EQ9_QDD, atol=printing_bound(state, perturbed, EQ9_PHI))
    phi_change = 100.0 * np.abs((EQ9_PHI - EQ7_PHI) / EQ7_PHI)
    qdd_change = 100.0 * np.abs((perturbed - qdd) / qdd)
    np.testing.assert_array_equal(np.floor(phi_change * 100.0) / 100.0, EQ9_PHI_CHANGE_PERCENT)
    np.testing.assert_array_equal(np.floor(qdd_change), EQ9_QDD_CHANGE_PERCENT)


def test_eq4_bounds_the_relative_error_of_eq9():
    state = eq7_state()
    kappa = condition_number(state.mass_matrix).condition_number
    qdd = state.solve_mass_matrix(EQ7_PHI)
    delta_qdd = state.solve_mass_matrix(EQ9_PHI) - qdd
    relative_error = np.linalg.norm(delta_qdd) / np.linalg.norm(qdd)
    bound = kappa * np.linalg.norm(EQ9_PHI - EQ7_PHI) / np.linalg.norm(EQ7_PHI)
    assert relative_error <= bound
    # 15 % of q̈ from 0.6 % of φ: a 25-fold magnification, a fortieth of what κ allows.
    assert relative_error == pytest.approx(0.152, abs=0.001)
    assert 40.0 < bound / relative_error < 45.0


def test_eq4_holds_for_any_perturbation_and_kappa_is_attained():
    """‖δq̈‖/‖q̈‖ ≤ κ ‖δφ‖/‖φ‖ for random δφ; equality for φ, δφ along the extreme eigenvectors."""
    state = eq7_state()
    spectrum = condition_number(state.mass_matrix)
    kappa = spectrum.condition_number
    rng = np.random.default_rng(2013)
    for _ in range(200):
        phi, delta = rng.standard_normal(4), 1e-3 * rng.standard_normal(4)
        qdd = state.solve_mass_matrix(phi)
        delta_qdd = state.solve_mass_matrix(phi + delta) - qdd
        ratio = (np.linalg.norm(delta_qdd) / np.linalg.norm(qdd)) / (
            np.linalg.norm(delta) / np.linalg.norm(phi)
        )
        assert ratio <= kappa * (1.0 + 1e-9)
    eigenvalues, eigenvectors = np.linalg.eigh(state.mass_matrix)
    phi, delta = eigenvectors[:, -1], 1e-6 * eigenvectors[:, 0]
    qdd = state.solve_mass_matrix(phi)
    delta_qdd = state.solve_mass_matrix(phi + delta) - qdd
    ratio = (np.linalg.norm(delta_qdd) / np.linalg.norm(qdd)) / 1e-6
    assert ratio == pytest.approx(kappa, rel=1e-6)
    assert kappa == pytest.approx(eigenvalues[-1] / eigenvalues[0], rel=1e-9)
