"""A stack's hard constraints at a tick: its buffers against the blocks stacked plainly.

`StackProblem.hard_constraints` writes each tick's rows into buffers laid out once for each
choice of rows (which torque ranges and joint bounds are finite, whether there are contacts);
here every row, bound and flag equals the textbook stacking of the cascade's blocks
(`wbc_control.control.hierarchy.cascade`), from tick to tick and across a change of layout,
with the cone rows of a contact that admit no force but zero as the equalities C f = 0 (a
linear program's verdict here).
"""

import numpy as np
from oracles.cone_reach import cone_reach
from robots import random_state, robot, talos_sole_controller

from wbc_control.control.constraints.centre_of_pressure import centre_of_pressure_rows
from wbc_control.control.contact.contacts import contact_acceleration, contact_jacobian
from wbc_control.control.prioritized_controller import PrioritizedController

SOLE = np.array([0.2, 0.1])


def talos_controller() -> PrioritizedController:
    return talos_sole_controller(robot('talos').effort_limits, SOLE, 0.6)


def shut(cone: np.ndarray) -> bool:
    """Whether C f ≤ 0 admits only f = 0 (the linear programs of `cone_reach`)."""
    return cone_reach(cone) < 1e-9


def closed_cones(controller, friction, pressure):
    """Per contact (`controller.contacts`, all surface ones): its cone rows and whether shut."""
    cones = []
    for k in range(len(controller.contacts)):
        columns = slice(6 * k, 6 * k + 6)
        rows = np.vstack([friction[5 * k : 5 * k + 5], pressure[12 * k : 12 * k + 12]])
        cones.append(shut(rows[:, columns]))
    return cones


def stacked(controller, state, constraint, bounds, window):
    """(rows, lower, upper, equality, joint rows): the blocks in order, stacked."""
    problem, talos = controller._problem, controller.robot
    nv, count, act = talos.nv, problem.force_count, np.asarray(talos.indices.v)
    mass, bias = state.mass_matrix, state.nonlinear_effects

    def block(rows_q, rows_f):
        return np.hstack([rows_q, rows_f])

    finite = np.isfinite(window[0]) | np.isfinite(window[1])
    limited = np.isfinite(bounds[0]) | np.isfinite(bounds[1])
    drift = contact_acceleration(constraint, problem.contact_buffers.drift.copy(), state.v)
    rotations = [
        state.frame_placement(talos.frame_id(c.frame)).rotation for c in controller.contacts
    ]
    pressure = centre_of_pressure_rows(controller.contacts, rotations, SOLE / 2, 0.6)
    joint_rows = np.zeros((int(limited.sum()), nv + count))
    joint_rows[np.arange(joint_rows.shape[0]), act[limited]] = 1.0
    blocks = [
        (block(mass[act], -constraint[:, act].T)[finite], (window[0] - bias[act])[finite],
         (window[1] - bias[act])[finite], False),
        (block(constraint, np.zeros((constraint.shape[0], count))), drift, drift, True),
        (block(mass[:6], -constraint[:, :6].T), -bias[:6], -bias[:6], True),
        (block(np.zeros((problem.friction.shape[0], nv)), problem.friction),
         np.full(problem.friction.shape[0], -np.inf), np.zeros(problem.friction.shape[0]), False),
        (block(np.zeros((pressure.shape[0], nv)), pressure), np.full(pressure.shape[0], -np.inf),
         np.zeros(pressure.shape[0]), False),
        (joint_rows, bounds[0][limited], bounds[1][limited], False),
    ]  # fmt: skip
    sizes = [b[1].shape[0] for b in blocks]
    joints = np.zeros(sum(sizes), dtype=bool)
    joints[sum(sizes[:-1]) :] = True
    lower = np.concatenate([b[1] for b in blocks])
    equality = np.concatenate([np.full(size, b[3]) for size, b in zip(sizes, blocks)])
    friction_start, pressure_start = sum(sizes[:3]), sum(sizes[:4])
    shuts = closed_cones(controller, problem.friction, pressure)
    for k, closed in enumerate(shuts):
        cone = np.r_[friction_start + 5 * k : friction_start + 5 * k + 5,
                     pressure_start + 12 * k : pressure_start + 12 * k + 12]  # fmt: skip
        equality[cone] = closed
        lower[cone] = 0.0 if closed else -np.inf
    return (
        np.vstack([b[0] for b in blocks]),
        lower,
        np.concatenate([b[2] for b in blocks]),
        equality,
        joints,
    ), shuts


def hard_rows(controller, state, window, unlimited=()):
    controller.compute(state)  # the frames and terms of this state
    constraint, _ = contact_jacobian(
        state, controller.contacts, controller._problem.contact_buffers
    )
    constraint = constraint.copy()
    bounds = [side.copy() for side in controller.joint_limits.bounds(state)]
    for joint in unlimited:
        bounds[0][joint], bounds[1][joint] = -np.inf, np.inf
    hard, joints = controller._problem.hard_constraints(state, constraint, bounds, window)
    expected, shuts = stacked(controller, state, constraint, bounds, window)
    return (hard.rows, hard.lower, hard.upper, hard.equality, joints), expected, shuts


def test_the_hard_rows_are_the_blocks_stacked_from_tick_to_tick_and_across_layouts():
    controller = talos_controller()
    talos = controller.robot
    limits = talos.effort_limits * np.linspace(0.4, 0.9, talos.n_actuated)
    full = (-limits, limits * 1.1)
    open_ranges = (full[0].copy(), full[1].copy())
    open_ranges[0][[3, 17]], open_ranges[1][[3, 17]] = -np.inf, np.inf
    seen, shuts = [], []
    for seed, window, unlimited in [
        (0, full, ()),
        (1, full, ()),  # the same layout: the buffers rewritten
        (2, open_ranges, ()),  # two torque rows fewer
        (3, full, (5,)),  # one joint-bound row fewer
        (4, full, ()),  # back: every block at its place again
    ]:
        state = random_state(talos, seed, 0.3)
        got, expected, closed = hard_rows(controller, state, window, unlimited)
        for part, want in zip(got, expected):
            np.testing.assert_array_equal(part, want)
        seen.append(got[0].shape[0])
        shuts.extend(closed)
    actuated = talos.n_actuated
    assert seen[0] == seen[1] == seen[4] == actuated + 12 + 6 + 10 + 24 + actuated
    assert seen[2] == seen[0] - 2 and seen[3] == seen[0] - 1
    assert any(shuts) and not all(shuts)  # random feet: cones shut and open both seen
