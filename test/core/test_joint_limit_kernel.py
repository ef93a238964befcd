"""The compiled SNS search against its numpy reference, level by level.

`JointLimits.saturate_levels` with `JointLimits.plan` (joint_limits.py) is the readable
multi-task SNS (Flacco, De Luca & Khatib 2012, Algorithm 2); the controller runs the whole
stack in one compiled call, `stack_kernel.solve_stack`, whose per-level search is
`joint_limit_kernel.search_level` (a level settles from its chosen try's held state). Where
the unconstrained recursion leaves the bounds, both must choose the same saturated joints at
the same targets and scales and give the same q̈, on real robots (fixed base, and floating
base under contacts, where q̈ does not start at zero) and on states where the search has to
saturate several joints and scale levels down.
"""

from functools import cache

import numpy as np
import pytest
from robots import core_controller, random_state, robot, shipped_controller, shipped_parameters

from wbc_control.control.bounded_least_squares import box_least_squares
from wbc_control.control.contacts import contact_dynamics
from wbc_control.control.held_joints import JointLimitLevel
from wbc_control.control.joint_limit_kernel import hold_joints
from wbc_control.control.joint_limits import JointLimits
from wbc_control.control.level_kernel import KEEP, level_step
from wbc_control.control.level_search import LevelSearch
from wbc_control.control.prioritized_controller import SEARCH_TOLERANCES
from wbc_control.control.stack_kernel import solve_stack
from wbc_control.control.task_inertia_kernel import LAW
from wbc_control.control.torque_fit import fit_torque
from wbc_control.control.torque_limits import fits

TOLERANCE = 1e-9
STACKS = ('panda', 'panda_three_levels', 'talos', 'solo12')
#: Where the random states ask more than the bounds give: levels scaled, lower ones saturated.
SCALED_STACKS = ('talos',)


@cache
def controller(stack: str):
    """A shipped stack with the joint-limit level on; for the Panda also three levels."""
    if stack == 'panda_three_levels':
        parameters = dict(shipped_parameters('panda_controller'))
        elbow = {'type': 'frame_position', 'frame': 'panda_link4', 'priority': 1, 'kp': 50.0}
        parameters['tasks'] = dict(parameters['tasks'], elbow=elbow)
        parameters['tasks']['posture'] = dict(parameters['tasks']['posture'], priority=2)
        parameters['task_names'] = ['hand', 'elbow', 'posture']
        built = core_controller(robot('panda'), parameters)
    else:
        built = shipped_controller(stack)
    built.joint_limits = JointLimits(built.robot)
    return built


def search_inputs(stack: str, seed: int):
    """(LevelSearch factory, the level terms, JointLimits, bounds) at a random fast state."""
    control = controller(stack)
    state = random_state(control.robot, seed, speed=2.0)
    control.compute(state)  # the tasks write the level terms the search reads
    if control.contacts:
        inverse_inertia, _, _, start = contact_dynamics(state, control.contacts)
    else:
        inverse_inertia, start = state.inverse_mass_matrix, np.zeros(state.model.nv)
    terms = [(None, level.jacobian.copy(), None, level.target.copy()) for level in control.levels]
    threshold = control.singular_value_threshold

    def new_search() -> LevelSearch:
        stats = np.full((len(terms), 3), np.nan)
        return LevelSearch(inverse_inertia, start, terms, control._sqrt_weights, threshold, stats)

    limits = control.joint_limits
    return new_search, terms, limits, limits.bounds(state)


class Compiled:
    """`solve_stack` on the terms of a `LevelSearch` (its stacked rows), with its outputs.

    `given` is applied to every input array (e.g. to freeze it).
    """

    def __init__(self, search: LevelSearch, limits: JointLimits, bounds, given=np.asarray):
        levels, nv, n = search._levels, search.acceleration.shape[0], len(limits.joint_names)
        offsets = np.cumsum([0, *(jacobian.shape[0] for _, jacobian, _, _ in levels)])
        self.acceleration, count = np.empty(nv), len(levels)
        self.level_active = np.empty((count + 1, n), dtype=bool)
        self.level_values, self.level_scales = np.empty((count + 1, n)), np.empty(count)
        self.stats = np.full((count, 3), np.nan)
        inputs = (
            search._inverse_inertia,
            search.acceleration,
            np.vstack([jacobian for _, jacobian, _, _ in levels]),
            np.concatenate([target for _, _, _, target in levels]),
            np.concatenate(search._sqrt_weights),
            offsets.astype(np.int64),
        )
        inertia, start, jacobian, target, weights, offsets = map(given, inputs)
        joints, lower, upper = map(given, (limits.velocity_indices, *bounds))
        self.least_scale, saturated_count = solve_stack(
            inertia, start, jacobian, target, weights, offsets, search._threshold, LAW, True,
            joints, lower, upper, SEARCH_TOLERANCES, self.acceleration, np.empty((nv, nv)),
            self.level_active, self.level_values, self.level_scales, self.stats,
        )  # fmt: skip
        self.combined = limits.saturated(self.level_active[-1], self.level_values[-1])
        assert saturated_count == np.count_nonzero(self.level_active[-1])


def recursion_within(new_search, count: int, limits: JointLimits, bounds) -> bool:
    """Whether the recursion without joint limits keeps the bounds (then nothing is searched)."""
    search = new_search()
    for _ in range(count):
        search.settle(None, 1.0)
    return limits.within(search.acceleration, bounds)


def close(actual: np.ndarray, expected: np.ndarray) -> bool:
    scale = max(float(np.abs(expected).max(initial=0.0)), 1.0)
    return float(np.abs(actual - expected).max(initial=0.0)) <= TOLERANCE * scale


@pytest.mark.parametrize('stack', STACKS)
def test_the_compiled_search_chooses_the_reference_sets_scales_and_acceleration(stack):
    saturated_levels, scaled_levels, lower_saturated = 0, 0, 0
    searched = 0
    for seed in range(16):
        new_search, terms, limits, bounds = search_inputs(stack, seed)
        if recursion_within(new_search, len(terms), limits, bounds):
            continue
        searched += 1
        reference_search = new_search()
        expected = limits.saturate_levels(bounds, reference_search, len(terms))
        compiled_search = Compiled(new_search(), limits, bounds)
        combined, least_scale = compiled_search.combined, compiled_search.least_scale
        scales = compiled_search.level_scales
        for index, (expected_level, expected_scale) in enumerate(expected):
            active = compiled_search.level_active[index]
            assert scales[index] == pytest.approx(expected_scale, abs=TOLERANCE)
            assert active.any() == (expected_level is not None), (seed, index)
            if expected_level is not None:
                assert active.tolist() == expected_level.active.tolist()
                values = compiled_search.level_values[index][active]
                assert close(values, expected_level.target)
                saturated_levels += 1
                lower_saturated += index > 0
            scaled_levels += scales[index] < 1.0
        expected_combined, expected_least = limits.combined(expected)
        assert least_scale == pytest.approx(expected_least, abs=TOLERANCE)
        assert (combined is None) == (expected_combined is None)
        if combined is not None:
            assert combined.active.tolist() == expected_combined.active.tolist()
            assert close(combined.target, expected_combined.target)
            np.testing.assert_array_equal(combined.jacobian, expected_combined.jacobian)
        assert close(compiled_search.acceleration, reference_search.acceleration)
        np.testing.assert_allclose(compiled_search.stats, reference_search.stats, rtol=1e-6)
    # The states exercise the search: joints saturated, and (where the stack asks more than
    # the bounds give) levels scaled down.
    assert searched >= 10 and saturated_levels >= 6, (searched, saturated_levels)
    assert scaled_levels >= 3 or stack not in SCALED_STACKS, scaled_levels
    assert lower_saturated >= 1 or stack not in SCALED_STACKS


def test_held_rows_nearly_dependent_below_a_level_are_held_as_the_reference_holds_them():
    """Joint rows are held without the kinematic attenuation of user levels, compiled too.

    Level 0, J₀ = [1, −1, δ], leaves joints 1 and 2 rows whose projections differ by about δ
    (σ_min / σ_max ≈ δ² / 2, inside the kinematic band): the compiled `hold_joints` must hold
    them as `held_joints.hold` does (the rows eᵢᵀ of a joint limit are never attenuated).
    """
    delta, threshold = 0.01, 1e-3
    inverse_inertia = np.diag([1.0, 2.0, 0.5])
    terms = [
        (None, np.array([[1.0, -1.0, delta]]), None, np.array([0.3])),
        (None, np.array([[0.0, 0.0, 1.0]]), None, np.array([-0.7])),
    ]
    weights = [np.ones(1), np.ones(1)]
    searches = [
        LevelSearch(inverse_inertia, np.zeros(3), terms, weights, threshold, np.zeros((2, 3)))
        for _ in range(2)
    ]
    for search in searches:
        search.settle(None, 1.0)
    active, values = np.array([True, True, False]), np.array([1.0, 2.0, 0.0])
    rows = np.eye(3)[active]
    reference, compiled = searches
    reference.settle(JointLimitLevel(rows, values[active], active), 1.0)
    first = hold_joints(
        inverse_inertia, compiled.acceleration, compiled._null_space, False,
        np.arange(3, dtype=np.int64), active, values, threshold, LAW,
    )  # fmt: skip
    level_step(
        terms[1][1], terms[1][3], weights[1], inverse_inertia, compiled._null_space, first,
        threshold, 1.0, True, KEEP, LAW, compiled.acceleration, compiled.stats[1],
    )  # fmt: skip
    assert close(compiled.acceleration, reference.acceleration)


@pytest.mark.parametrize(('last', 'unit'), [(0.4, 1.0), (-5.0, 1.0), (0.4, 0.1)])
def test_a_decoupled_posture_beyond_the_bounds_is_clipped_joint_by_joint(last, unit):
    """A decoupled posture (M diagonal, J = I) beyond the bounds of 8 or all 9 Panda joints.

    Holding a joint moves no other one, so each try saturates exactly one more joint: the
    search needs 9 tries to reach s = 1, or 10 when every joint is saturated (the last with no
    joint left free). SNS then gives the desired acceleration clipped to the bounds, joint by
    joint, with the level unscaled; the compiled search and the reference agree. With `unit`
    0.1 the accelerations are below 1 rad/s² (a joint's bound chosen by the sign of a small
    change).
    """
    limits = JointLimits(robot('panda'))
    rng = np.random.default_rng(3)
    inverse_inertia = np.diag(rng.uniform(0.5, 2.0, 9))
    desired = unit * np.r_[rng.uniform(2.0, 9.0, 8) * rng.choice([-1.0, 1.0], 8), last]
    bounds = (-unit * np.ones(9), unit * np.ones(9))
    terms = [(None, np.eye(9), None, desired)]

    def new_search() -> LevelSearch:
        return LevelSearch(
            inverse_inertia, np.zeros(9), terms, [np.ones(9)], 1e-3, np.zeros((1, 3))
        )

    compiled, reference = Compiled(new_search(), limits, bounds), new_search()
    combined, scale = compiled.combined, compiled.least_scale
    ((expected_level, expected_scale),) = limits.saturate_levels(bounds, reference, 1)
    np.testing.assert_allclose(compiled.acceleration, np.clip(desired, *bounds), atol=1e-12)
    assert scale == 1.0 and expected_scale == 1.0
    assert combined.active.tolist() == [True] * 8 + [abs(last) > 1.0]
    assert expected_level.active.tolist() == combined.active.tolist()
    assert close(reference.acceleration, compiled.acceleration)


def decoupled_posture(desired: np.ndarray) -> tuple[Compiled, JointLimits, tuple]:
    """`solve_stack` on one decoupled posture level (M diagonal, J = I) of the Panda, bounds ±1."""
    limits = JointLimits(robot('panda'))
    inverse_inertia = np.diag(np.linspace(0.5, 2.0, 9))
    terms = [(None, np.eye(9), None, desired)]
    search = LevelSearch(inverse_inertia, np.zeros(9), terms, [np.ones(9)], 1e-3, np.zeros((1, 3)))
    bounds = (-np.ones(9), np.ones(9))
    return Compiled(search, limits, bounds), limits, bounds


def test_a_recursion_within_the_bounds_is_the_answer_with_every_level_whole():
    desired = np.linspace(-0.9, 0.9, 9)
    compiled, _, _ = decoupled_posture(desired)
    np.testing.assert_allclose(compiled.acceleration, desired, atol=1e-12)
    assert compiled.least_scale == 1.0 and compiled.level_scales.tolist() == [1.0]
    assert not compiled.level_active.any() and compiled.combined is None


def test_a_bound_crossed_by_less_than_the_level_tolerance_is_still_searched_and_held():
    """The search starts where q̈ leaves a bound by more than BOUND_TOLERANCE (1e-9).

    Past a bound by 5e-7, below LEVEL_TOLERANCE (1e-6, what a try's scale may overshoot by):
    the joint is held exactly at its bound, not left 5e-7 beyond it.
    """
    desired = np.r_[np.linspace(-0.9, 0.9, 8), 1.0 + 5e-7]
    compiled, limits, bounds = decoupled_posture(desired)
    assert compiled.combined is not None and compiled.combined.active.tolist()[-1]
    assert compiled.acceleration[-1] == 1.0
    assert limits.within(compiled.acceleration, bounds)


def frozen(array: np.ndarray) -> np.ndarray:
    """A read-only copy of `array`."""
    copy = np.array(array)
    copy.setflags(write=False)
    return copy


def test_read_only_inputs_give_the_same_results():
    """The compiled calls take read-only arrays (frozen task terms, M⁻¹, bounds, flags).

    Their signatures type the inputs read-only, which accepts writable arrays too; typed
    writable, a frozen array would find no matching signature.
    """
    new_search, _, limits, bounds = search_inputs('talos', 0)
    expected = Compiled(new_search(), limits, bounds)
    compiled = Compiled(new_search(), limits, bounds, frozen)
    assert compiled.least_scale == expected.least_scale < 1.0
    assert close(compiled.acceleration, expected.acceleration)
    assert limits.within(frozen(compiled.acceleration), tuple(map(frozen, bounds)))
    panda = robot('panda')
    state = random_state(panda, 1, speed=2.0)
    panda_limits = JointLimits(panda)
    for name in ('lower_wall', 'upper_wall', 'max_speed'):
        setattr(panda_limits, name, frozen(getattr(panda_limits, name)))
    panda_bounds = panda_limits.bounds(state)
    held = frozen(np.arange(panda.n_actuated) < 2)
    torque_range = (frozen(state.gravity - 1.0), frozen(state.gravity + 1.0))
    acceleration = frozen(np.full(panda.nv, 3.0))
    fitted = fit_torque(state, acceleration, held, torque_range, panda_bounds)
    writable = fit_torque(
        state, np.full(panda.nv, 3.0), np.array(held), tuple(map(np.array, torque_range)),
        panda_bounds,
    )  # fmt: skip
    np.testing.assert_array_equal(fitted, writable)
    torque = state.mass_matrix.dot(fitted) + state.nonlinear_effects
    assert fits(frozen(torque), *torque_range) == fits(torque, *map(np.array, torque_range))
    box = (np.diag([2.0, 4.0]), np.array([4.0, -8.0]), -np.ones(2), np.ones(2))
    np.testing.assert_array_equal(box_least_squares(*map(frozen, box)), [1.0, -1.0])
