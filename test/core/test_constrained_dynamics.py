"""Tests of the dagger terms of [M Aᵀ; A 0] against Johnson 2024 (Block Matrix Solutions)."""

from pathlib import Path
import sysconfig

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import numpy.testing as npt
from oracles.constrained_dynamics import (
    DaggerTerms,
    constrained_accelerations,
    constraint_null_space_projector,
    dagger_terms,
)
import pytest

from wbc_control.exceptions import InvalidShape, InvalidValue, SingularConstraint

METHODS = ('schur', 'block_lu')
ATOL = 1e-8
ROBOTS_DIR = (
    Path(sysconfig.get_paths()['purelib']) / 'cmeel.prefix/share/example-robot-data/robots'
)

# Crank-slider with a massless second link, Johnson 2024, eqs 31 and 33-34.
CRANK_M = np.array([[1.0, 0.0], [0.0, 0.0]])
CRANK_A = np.array([[2.0, -1.0]])

property_settings = settings(max_examples=25, deadline=None)


def random_spd(rng: np.random.Generator, n: int, rank: int) -> np.ndarray:
    """Random symmetric positive semi-definite (n, n) matrix of the given rank."""
    factor = rng.standard_normal((n, rank))  # (n, rank)
    regularization = 0.5 * np.eye(n) if rank == n else np.zeros((n, n))
    return factor @ factor.T + regularization


@st.composite
def constrained_systems(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Random positive definite M (n, n) and full-rank A (m, n), 2 <= n <= 12, 1 <= m < n."""
    n = draw(st.integers(2, 12))
    m = draw(st.integers(1, n - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return random_spd(rng, n, n), rng.standard_normal((m, n))


@st.composite
def massless_systems(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    """Singular M of nullity d (1 <= d <= m) with A (m, n) covering its null space (eq 32).

    M = Y diag(μ) Yᵀ and A = C Qᵀ with Q = [Z Y] orthogonal, so A Z = C[:, :d]; orthonormal
    columns there keep A Z well away from rank deficiency, hence the block matrix well-conditioned.
    """
    n = draw(st.integers(2, 12))
    m = draw(st.integers(1, n - 1))
    nullity = draw(st.integers(1, m))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    basis = np.linalg.qr(rng.standard_normal((n, n)))[0]  # (n, n), [Z Y]
    range_basis = basis[:, nullity:]  # (n, n - d), Y
    M = range_basis @ np.diag(rng.uniform(0.5, 5.0, n - nullity)) @ range_basis.T
    coefficients = rng.standard_normal((m, n))  # (m, n), C
    coefficients[:, :nullity] = np.linalg.qr(rng.standard_normal((m, nullity)))[0]
    return M, coefficients @ basis.T, nullity


def block_inverse(terms: DaggerTerms) -> np.ndarray:
    """Reassemble [M† A†ᵀ; A† Λ†] (eq 5)."""
    return np.block([[terms.m_dagger, terms.a_dagger.T], [terms.a_dagger, terms.lambda_dagger]])


def rank(matrix: np.ndarray) -> int:
    return int(np.linalg.matrix_rank(matrix, tol=1e-7 * max(1.0, np.abs(matrix).max())))


def assert_block_identities(M: np.ndarray, A: np.ndarray, terms: DaggerTerms) -> None:
    """Johnson 2024, eqs (9)-(13)."""
    n, m = A.shape[1], A.shape[0]
    m_dag, a_dag, lam_dag = terms.m_dagger, terms.a_dagger, terms.lambda_dagger
    block = np.block([[M, A.T], [A, np.zeros((m, m))]])
    npt.assert_allclose(block @ block_inverse(terms), np.eye(n + m), atol=ATOL)  # eq 9
    npt.assert_allclose(block_inverse(terms) @ block, np.eye(n + m), atol=ATOL)  # eq 9
    npt.assert_allclose(M @ m_dag + A.T @ a_dag, np.eye(n), atol=ATOL)  # eq 10
    npt.assert_allclose(m_dag @ M + a_dag.T @ A, np.eye(n), atol=ATOL)  # eq 10
    npt.assert_allclose(M @ a_dag.T + A.T @ lam_dag, np.zeros((n, m)), atol=ATOL)  # eq 11
    npt.assert_allclose(a_dag @ M + lam_dag @ A, np.zeros((m, n)), atol=ATOL)  # eq 11
    npt.assert_allclose(A @ m_dag, np.zeros((m, n)), atol=ATOL)  # eq 12
    npt.assert_allclose(m_dag @ A.T, np.zeros((n, m)), atol=ATOL)  # eq 12
    npt.assert_allclose(A @ a_dag.T, np.eye(m), atol=ATOL)  # eq 13
    npt.assert_allclose(a_dag @ A.T, np.eye(m), atol=ATOL)  # eq 13


def assert_definiteness(M: np.ndarray, terms: DaggerTerms) -> None:
    """Johnson 2024, eqs (16)-(17): symmetry, semi-definiteness and nullities of M† and Λ†."""
    n, m = terms.a_dagger.shape[1], terms.a_dagger.shape[0]
    npt.assert_array_equal(terms.m_dagger, terms.m_dagger.T)
    npt.assert_array_equal(terms.lambda_dagger, terms.lambda_dagger.T)
    assert np.linalg.eigvalsh(terms.m_dagger).min() >= -ATOL
    assert np.linalg.eigvalsh(terms.lambda_dagger).max() <= ATOL
    assert n - rank(terms.m_dagger) == m
    assert m - rank(terms.lambda_dagger) == n - rank(M)


@property_settings
@given(constrained_systems())
@pytest.mark.parametrize('method', METHODS)
def test_identities_hold_for_positive_definite_mass(
    method: str, system: tuple[np.ndarray, np.ndarray]
) -> None:
    M, A = system
    terms = dagger_terms(M, A, method=method)
    assert terms.method == method
    assert_block_identities(M, A, terms)
    assert_definiteness(M, terms)


@property_settings
@given(constrained_systems())
def test_methods_agree_and_auto_picks_schur(system: tuple[np.ndarray, np.ndarray]) -> None:
    M, A = system
    auto, block = dagger_terms(M, A), dagger_terms(M, A, method='block_lu')
    assert auto.method == 'schur'
    npt.assert_allclose(auto.m_dagger, block.m_dagger, atol=ATOL)
    npt.assert_allclose(auto.a_dagger, block.a_dagger, atol=ATOL)
    npt.assert_allclose(auto.lambda_dagger, block.lambda_dagger, atol=ATOL)


@property_settings
@given(constrained_systems())
@pytest.mark.parametrize('method', METHODS)
def test_schur_terms_match_johnson_eqs_6_to_8(
    method: str, system: tuple[np.ndarray, np.ndarray]
) -> None:
    M, A = system
    terms = dagger_terms(M, A, method=method)
    m_inv = np.linalg.inv(M)
    delassus_inv = np.linalg.inv(A @ m_inv @ A.T)
    npt.assert_allclose(terms.m_dagger, m_inv - m_inv @ A.T @ delassus_inv @ A @ m_inv, atol=ATOL)
    npt.assert_allclose(terms.a_dagger, delassus_inv @ A @ m_inv, atol=ATOL)
    npt.assert_allclose(terms.lambda_dagger, -delassus_inv, atol=ATOL)


@property_settings
@given(massless_systems())
def test_identities_hold_for_singular_mass_covered_by_constraints(
    system: tuple[np.ndarray, np.ndarray, int],
) -> None:
    M, A, nullity = system
    terms = dagger_terms(M, A)
    assert terms.method == 'block_lu'
    assert_block_identities(M, A, terms)
    assert_definiteness(M, terms)
    assert A.shape[0] - rank(terms.lambda_dagger) == nullity  # eq 17
    npt.assert_allclose(terms.lambda_dagger, -terms.a_dagger @ M @ terms.a_dagger.T, atol=ATOL)


@property_settings
@given(constrained_systems())
@pytest.mark.parametrize('method', METHODS)
def test_practice_problem_2(method: str, system: tuple[np.ndarray, np.ndarray]) -> None:
    M, A = system
    terms = dagger_terms(M, A, method=method)
    npt.assert_allclose(terms.lambda_dagger, -terms.a_dagger @ M @ terms.a_dagger.T, atol=ATOL)


def test_crank_slider_matches_johnson_eqs_33_34() -> None:
    terms = dagger_terms(CRANK_M, CRANK_A)
    assert terms.method == 'block_lu'
    npt.assert_allclose(terms.m_dagger, [[1.0, 2.0], [2.0, 4.0]], atol=1e-14)
    npt.assert_allclose(terms.a_dagger, [[0.0, -1.0]], atol=1e-14)
    npt.assert_allclose(terms.lambda_dagger, [[0.0]], atol=1e-14)
    npt.assert_allclose(
        terms.lambda_dagger, -terms.a_dagger @ CRANK_M @ terms.a_dagger.T, atol=1e-14
    )
    assert_block_identities(CRANK_M, CRANK_A, terms)
    assert_definiteness(CRANK_M, terms)


def test_crank_slider_dynamics_satisfy_the_constrained_equations() -> None:
    terms = dagger_terms(CRANK_M, CRANK_A)
    force, drift = np.array([0.3, -1.2]), np.array([0.7])
    qdd, lam = constrained_accelerations(terms, force, drift)
    npt.assert_allclose(CRANK_M @ qdd + CRANK_A.T @ lam, force, atol=1e-14)  # eq 18
    npt.assert_allclose(CRANK_A @ qdd + drift, [0.0], atol=1e-14)  # eq 19


@property_settings
@given(constrained_systems(), st.integers(0, 2**32 - 1))
@pytest.mark.parametrize('method', METHODS)
def test_dagger_solution_equals_traditional_solution(
    method: str, system: tuple[np.ndarray, np.ndarray], seed: int
) -> None:
    M, A = system
    rng = np.random.default_rng(seed)
    force, drift = rng.standard_normal(M.shape[0]), rng.standard_normal(A.shape[0])
    qdd, lam = constrained_accelerations(dagger_terms(M, A, method=method), force, drift)
    m_inv = np.linalg.inv(M)
    lam_traditional = np.linalg.solve(A @ m_inv @ A.T, A @ m_inv @ force + drift)  # eq 24
    qdd_traditional = m_inv @ (force - A.T @ lam_traditional)  # eq 23
    npt.assert_allclose(lam, lam_traditional, atol=ATOL)
    npt.assert_allclose(qdd, qdd_traditional, atol=ATOL)


@property_settings
@given(constrained_systems(), st.integers(0, 2**32 - 1))
def test_null_space_projector_is_dynamically_consistent(
    system: tuple[np.ndarray, np.ndarray], seed: int
) -> None:
    M, A = system
    terms = dagger_terms(M, A)
    projector = constraint_null_space_projector(terms, M)
    n = M.shape[0]
    npt.assert_allclose(projector, np.eye(n) - terms.a_dagger.T @ A, atol=ATOL)  # eq 10
    npt.assert_allclose(A @ projector, np.zeros(A.shape), atol=ATOL)
    npt.assert_allclose(projector @ projector, projector, atol=ATOL)
    npt.assert_allclose(M @ projector, (M @ projector).T, atol=ATOL)
    null_basis = np.linalg.svd(A)[2][A.shape[0] :].T  # (n, n - m), A null_basis = 0
    consistent_velocity = null_basis @ np.random.default_rng(seed).standard_normal(n - A.shape[0])
    npt.assert_allclose(projector @ consistent_velocity, consistent_velocity, atol=ATOL)


@pytest.mark.parametrize('method', ('auto', *METHODS))
def test_rank_deficient_constraint_raises(method: str) -> None:
    rng = np.random.default_rng(7)
    M = random_spd(rng, 5, 5)
    row = rng.standard_normal((1, 5))
    with pytest.raises(SingularConstraint, match='singular'):
        dagger_terms(M, np.vstack([row, 2.0 * row]), method=method)


@pytest.mark.parametrize(
    ('M', 'A'),
    [
        ([[1.0, 0.0], [0.0, 0.0]], [[1.0, 0.0]]),  # massless joint with no constraint on it
        ([[1.0, 1.0], [1.0, 1.0]], [[1.0, 1.0]]),  # A q̇ = 0 and M q̇ = 0 for q̇ = (1, -1)
        ([[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0]]),  # empty constraint row
    ],
)
@pytest.mark.parametrize('method', ('auto', 'block_lu'))
def test_uncovered_singular_mass_raises(
    M: list[list[float]], A: list[list[float]], method: str
) -> None:
    with pytest.raises(SingularConstraint, match='eq 32|zero'):
        dagger_terms(M, A, method=method)


def test_more_constraints_than_coordinates_raise() -> None:
    with pytest.raises(SingularConstraint, match=r'\(3, 2\)'):
        dagger_terms(np.eye(2), np.ones((3, 2)))


def test_schur_method_rejects_singular_mass() -> None:
    with pytest.raises(InvalidValue, match='positive definite'):
        dagger_terms(CRANK_M, CRANK_A, method='schur')


@pytest.fixture(scope='module')
def panda_mass_and_hand_jacobian() -> tuple[np.ndarray, np.ndarray]:
    """Panda M(q) (symmetrized CRBA) and 'panda_hand' LOCAL_WORLD_ALIGNED Jacobian (6, nv)."""
    pin = pytest.importorskip('pinocchio')
    urdf = ROBOTS_DIR / 'panda_description/urdf/panda.urdf'
    if not urdf.is_file():
        pytest.skip(f'example-robot-data not found at {urdf}')
    model = pin.buildModelFromUrdf(str(urdf))
    data = model.createData()
    pin.seed(1)
    q = pin.randomConfiguration(model)
    mass = pin.crba(model, data, q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    pin.computeJointJacobians(model, data, q)
    pin.updateFramePlacements(model, data)
    frame_id = model.getFrameId('panda_hand')
    jacobian = pin.getFrameJacobian(model, data, frame_id, pin.LOCAL_WORLD_ALIGNED)
    return mass, np.array(jacobian)


@pytest.mark.parametrize('method', ('auto', *METHODS))
def test_panda_hand_constraint(
    method: str, panda_mass_and_hand_jacobian: tuple[np.ndarray, np.ndarray]
) -> None:
    M, A = panda_mass_and_hand_jacobian
    terms = dagger_terms(M, A, method=method)
    assert_block_identities(M, A, terms)
    assert_definiteness(M, terms)
    npt.assert_allclose(A @ terms.m_dagger, np.zeros(A.shape), atol=ATOL)


def test_terms_are_read_only() -> None:
    terms = dagger_terms(np.eye(3), [[1.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match='read-only'):
        terms.m_dagger[0, 0] = 1.0


@pytest.mark.parametrize(
    ('M', 'A', 'match'),
    [
        (np.eye(3)[:, :2], np.ones((1, 2)), r'\(3, 2\)'),
        (np.ones(3), np.ones((1, 3)), r'\(3,\)'),
        (np.eye(3), np.ones((1, 4)), r'\(m, 3\).*\(1, 4\)'),
        (np.eye(3), np.ones(3), r'\(3,\)'),
        (np.eye(3), np.ones((0, 3)), r'\(0, 3\)'),
        (np.zeros((0, 0)), np.ones((1, 0)), r'\(0, 0\)'),
    ],
)
def test_bad_shapes_raise(M: np.ndarray, A: np.ndarray, match: str) -> None:
    with pytest.raises(InvalidShape, match=match):
        dagger_terms(M, A)


@pytest.mark.parametrize(
    ('M', 'A', 'match'),
    [
        (np.diag([1.0, np.nan]), np.ones((1, 2)), 'M .*NaN'),
        (np.eye(2), np.array([[1.0, np.inf]]), 'A .*Inf'),
        (np.array([[1.0, 0.5], [0.0, 1.0]]), np.ones((1, 2)), 'not symmetric'),
        ([['a', 'b'], ['c', 'd']], np.ones((1, 2)), 'real numeric'),
    ],
)
def test_bad_values_raise(M: np.ndarray, A: np.ndarray, match: str) -> None:
    with pytest.raises(InvalidValue, match=match):
        dagger_terms(M, A)


def test_unknown_method_raises() -> None:
    with pytest.raises(InvalidValue, match='method'):
        dagger_terms(np.eye(2), np.ones((1, 2)), method='inverse')  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ('force', 'drift', 'error'),
    [
        (np.ones(2), np.ones(1), InvalidShape),
        (np.ones(3), np.ones(2), InvalidShape),
        (np.ones((3, 1)), np.ones(1), InvalidShape),
        (np.array([1.0, np.nan, 0.0]), np.ones(1), InvalidValue),
        (np.ones(3), np.array([np.inf]), InvalidValue),
    ],
)
def test_bad_dynamics_inputs_raise(
    force: np.ndarray, drift: np.ndarray, error: type[Exception]
) -> None:
    terms = dagger_terms(np.eye(3), [[1.0, 0.0, 0.0]])
    with pytest.raises(error):
        constrained_accelerations(terms, force, drift)


def test_projector_rejects_mismatched_mass() -> None:
    terms = dagger_terms(np.eye(3), [[1.0, 0.0, 0.0]])
    with pytest.raises(InvalidShape, match=r'\(3, 3\).*\(2, 2\)'):
        constraint_null_space_projector(terms, np.eye(2))
    with pytest.raises(InvalidValue, match='NaN'):
        constraint_null_space_projector(terms, np.full((3, 3), np.nan))
