"""Contact cones closed to f = 0, told apart by a certificate and held as equalities.

`closed_cones.closed` against a linear program that finds the largest ±f_j a cone admits in the
unit box (0 for every j exactly when the cone is {0}), on a sole tilted on either side of the
angle where its cone closes, on a cone that is a ray (no interior, not closed) and on rows
too few to close anything. Then the controller: a Talos whose sole is tilted so far that its
cone is shut solves its cascade with the joint limits softened, its other inequalities exact,
where the same cone as inequalities made every inequality give way (DAQP and quadprog take a
vertex of 17 active rows in 6 unknowns for a conflict); a Talos whose effort limits cannot
hold it still softens every inequality.
"""

import numpy as np
from oracles.cone_reach import cone_reach
import pinocchio as pin
import pytest
from robots import random_state, robot, talos_sole_controller, talos_standing_state
from scipy.optimize import linprog

from wbc_control.control.constraints.centre_of_pressure import centre_of_pressure_rows
from wbc_control.control.constraints.closed_cones import closed
from wbc_control.control.constraints.friction import friction_rows
from wbc_control.control.contact.contacts import Contact
from wbc_control.control.prioritized_controller import PrioritizedController

HALF = np.array([0.1, 0.065])  # X, Y (m)
MU = 0.7


def sole_cone(tilt: float, yaw: float = 0.3) -> np.ndarray:
    """A Talos sole's 17 cone rows over its 6 force components, the sole rolled by `tilt`."""
    contacts = [Contact.create(robot('talos'), 'left_sole_link', 'surface')]
    rotation = pin.utils.rpyToMatrix(tilt, 0.5 * tilt, yaw)
    return np.vstack(
        [
            friction_rows(contacts, MU),
            centre_of_pressure_rows(contacts, [rotation], HALF, MU),
        ]
    )


def closing_tilt() -> float:
    """The roll at which the sole's cone closes, by bisection on the linear program."""
    low, high = 0.0, 1.5
    assert cone_reach(sole_cone(low)) > 0.1 and cone_reach(sole_cone(high)) < 1e-9
    for _ in range(30):
        middle = 0.5 * (low + high)
        low, high = (low, middle) if cone_reach(sole_cone(middle)) < 1e-9 else (middle, high)
    return high


def test_a_sole_cone_is_closed_exactly_past_the_tilt_where_no_force_but_zero_meets_it():
    tilt = closing_tilt()
    assert 0.2 < tilt < 1.4  # inside the range the bisection began with, not at its ends
    for angle, shut in ((0.0, False), (tilt - 2e-3, False), (tilt + 2e-3, True), (1.5, True)):
        cone = sole_cone(angle)
        assert (cone_reach(cone) < 1e-9) == shut
        assert closed(cone) == shut


def test_a_cone_without_interior_that_holds_a_ray_is_not_closed():
    """μ = 0: f_x = f_y = 0 and f_z ≥ 0, a ray of pushes, no interior."""
    contacts = [Contact.create(robot('talos'), 'left_sole_link', 'point')]
    ray = friction_rows(contacts, 0.0)
    assert cone_reach(ray) == pytest.approx(1.0)
    assert not closed(ray)
    assert closed(np.vstack([ray, [[0.0, 0.0, 1.0]]]))  # and f_z ≤ 0: closed


def test_rows_too_few_to_span_or_with_a_zero_row_are_not_closed():
    assert not closed(np.vstack([np.eye(3), -np.eye(3)[:2]]))  # f_z ≥ ... free: a ray
    assert closed(np.vstack([np.eye(3), -np.eye(3)]))
    assert not closed(np.eye(3))  # as many rows as unknowns: a corner, never {0}
    assert not closed(np.vstack([np.eye(3), -np.eye(3), np.zeros((1, 3))]))


def talos_controller(effort_scale: float) -> PrioritizedController:
    return talos_sole_controller(effort_scale * robot('talos').effort_limits, 2 * HALF, MU)


def shut_feet(controller) -> list[bool]:
    layout = controller._problem._layout
    return [bool(layout.hard.equality[rows].all()) for rows, _ in layout.cones]


def exact_rows_meet(controller) -> bool:
    """Whether the hard rows but the joint bounds have a common solution (a linear program)."""
    layout = controller._problem._layout
    hard, rest = layout.hard, ~layout.joint_flags
    equal, inequal = hard.equality & rest, ~hard.equality & rest
    rows, lower, upper = hard.rows[inequal], hard.lower[inequal], hard.upper[inequal]
    below, above = np.isfinite(lower), np.isfinite(upper)
    program = linprog(
        np.zeros(hard.rows.shape[1]),
        A_ub=np.vstack([-rows[below], rows[above]]),
        b_ub=np.concatenate([-lower[below], upper[above]]),
        A_eq=hard.rows[equal], b_eq=hard.lower[equal],
        bounds=[(None, None)] * hard.rows.shape[1], method='highs',
    )  # fmt: skip
    assert program.status in (0, 2)  # solved, or proved infeasible
    return program.status == 0


def test_a_shut_cone_leaves_the_joint_limits_the_only_rows_to_give_way():
    """A random Talos (feet tilted; seed 9: the right cone shut) whose joint bounds conflict."""
    controller = talos_controller(1.0)
    talos = controller.robot
    state = random_state(talos, 9, 0.3)
    result = controller.compute(state)
    assert shut_feet(controller) == [False, True]
    assert result.solver.endswith('joint limits softened')
    assert exact_rows_meet(controller)
    right = result.contacts[1].force
    np.testing.assert_allclose(right, 0.0, atol=1e-9)  # the shut cone: no force
    problem = controller._problem
    hard = problem._layout.hard
    solution = np.concatenate([result.acceleration, *[c.force for c in result.contacts]])
    values = hard.rows.dot(solution)
    exact = ~problem._layout.joint_flags
    scale = 1.0 + np.abs(hard.lower[exact & np.isfinite(hard.lower)]).max()
    assert (values[exact] >= hard.lower[exact] - 1e-9 * scale).all()
    assert (values[exact] <= hard.upper[exact] + 1e-9 * scale).all()


def test_a_robot_its_effort_limits_cannot_hold_still_softens_every_inequality():
    controller = talos_controller(0.001)
    state = talos_standing_state(controller.robot, 0, 0.1)
    result = controller.compute(state)
    assert shut_feet(controller) == [False, False]  # level soles: both cones open
    assert not exact_rows_meet(controller)
    assert result.solver.endswith('every inequality softened')
