"""The soles' contact-wrench-cone rows against the corner forces they stand for.

A sole's wrench is admissible exactly when four forces at the corners of its rectangle, each
inside its friction pyramid, add up to it (Caron, Pham & Nakamura 2015): the oracle here finds
such forces, or proves there are none, with a linear program.
"""

import numpy as np
import pinocchio as pin
import pytest
from robots import robot
from scipy.optimize import linprog

from wbc_control.control.constraints.centre_of_pressure import (
    ROWS_PER_SOLE,
    centre_of_pressure_rows,
)
from wbc_control.control.constraints.friction import pyramid_coefficient
from wbc_control.control.contact.contacts import Contact

HALF = np.array([0.1, 0.06])  # X, Y
MU = 0.5
INNER = pyramid_coefficient(MU)
CORNERS = np.array([[sx * HALF[0], sy * HALF[1], 0.0] for sx in (1, -1) for sy in (1, -1)])
#: Rows and oracle agree away from the boundary by this margin (N, N m).
CLEAR = 1e-6


def contacts_and_rotations(yaw: float):
    talos = robot('talos')
    contacts = [
        Contact.create(talos, 'left_sole_link', 'surface'),
        Contact.create(talos, 'right_sole_link', 'point'),
    ]
    rotation = pin.utils.rpyToMatrix(0.0, 0.0, yaw)
    return contacts, [rotation, np.eye(3)], rotation


def stacked(local_wrench: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """The sole's 6 rows (world axes) for a wrench in its own axes, then the point's 3."""
    forces = np.zeros(9)
    forces[:3] = rotation.dot(local_wrench[:3])
    forces[3:6] = rotation.dot(local_wrench[3:])
    forces[6:] = [0.1, 0.4, 50.0]
    return forces


def corner_wrench(corner_forces: np.ndarray) -> np.ndarray:
    """(f, m) at the sole's centre of forces `(4, 3)` at its corners, in its axes."""
    moment = np.cross(CORNERS, corner_forces).sum(axis=0)
    return np.concatenate([corner_forces.sum(axis=0), moment])


def corners_can_make(wrench: np.ndarray) -> bool:
    """Whether corner forces inside their pyramids |f_x|, |f_y| ≤ μ' f_z sum to `wrench`."""
    equality = np.zeros((6, 12))
    for k, corner in enumerate(CORNERS):
        block = slice(3 * k, 3 * k + 3)
        equality[:3, block] = np.eye(3)
        equality[3:, block] = pin.skew(corner)
    pyramid = np.array(
        [[1.0, 0, -INNER], [-1.0, 0, -INNER], [0, 1.0, -INNER], [0, -1.0, -INNER], [0, 0, -1.0]]
    )
    inequality = np.kron(np.eye(4), pyramid)
    result = linprog(np.zeros(12), inequality, np.zeros(20), equality, wrench, bounds=(None, None))
    return result.status == 0


@pytest.mark.parametrize('yaw', [0.0, 0.7, -2.1])
def test_a_wrench_meets_the_rows_exactly_when_four_corner_forces_make_it(yaw):
    contacts, rotations, rotation = contacts_and_rotations(yaw)
    rows = centre_of_pressure_rows(contacts, rotations, HALF, MU)
    assert rows.shape == (ROWS_PER_SOLE, 9)
    rng = np.random.default_rng(7)
    seen = {True: 0, False: 0}
    for _ in range(300):
        normal = rng.uniform(50.0, 400.0)
        wrench = np.array(
            [
                rng.uniform(-0.6, 0.6) * INNER * normal,
                rng.uniform(-0.6, 0.6) * INNER * normal,
                normal,
                rng.uniform(-1.2, 1.2) * HALF[1] * normal,
                rng.uniform(-1.2, 1.2) * HALF[0] * normal,
                rng.uniform(-1.2, 1.2) * INNER * HALF.sum() * normal,
            ]
        )
        values = rows.dot(stacked(wrench, rotation))
        if np.abs(values).min() < CLEAR * normal:
            continue  # on the boundary to rounding: either answer is right
        inside = corners_can_make(wrench)
        assert bool((values <= 0.0).all()) is inside, wrench
        seen[inside] += 1
    assert min(seen.values()) > 30, seen  # both sides of the cone were drawn


@pytest.mark.parametrize('corner', range(4))
def test_a_sole_on_one_corner_holds_only_that_corner_forces_yaw_moment(corner):
    """Load on a corner: m_z = (p × f)_z exactly; a bound by the load alone let it spin."""
    contacts, rotations, rotation = contacts_and_rotations(0.4)
    rows = centre_of_pressure_rows(contacts, rotations, HALF, MU)
    forces = np.zeros((4, 3))
    forces[corner] = [0.7 * INNER * 300.0, -0.4 * INNER * 300.0, 300.0]
    wrench = corner_wrench(forces)
    step = 1e-3 * INNER * HALF.min() * 300.0
    for twist, inside in ((0.0, True), (step, False), (-step, False)):
        turned = wrench + np.array([0, 0, 0, 0, 0, twist])
        assert bool((rows.dot(stacked(turned, rotation)) <= 1e-9).all()) is inside, twist


@pytest.mark.parametrize(
    ('cop', 'inside'),
    [
        ((0.05, -0.03), True),
        ((0.099, 0.059), True),  # just inside every edge
        ((0.101, 0.0), False),  # past the front edge
        ((-0.101, 0.0), False),  # past the back edge
        ((0.0, 0.061), False),  # past a side
        ((0.0, -0.061), False),
    ],
)
def test_the_centre_of_pressure_stays_inside_the_sole(cop, inside):
    contacts, rotations, rotation = contacts_and_rotations(0.7)
    rows = centre_of_pressure_rows(contacts, rotations, HALF, MU)
    normal = 300.0
    # A vertical force at p: m' = (p_y f_z, −p_x f_z, 0).
    wrench = np.array([0.0, 0.0, normal, cop[1] * normal, -cop[0] * normal, 0.0])
    assert bool((rows.dot(stacked(wrench, rotation)) <= 1e-9).all()) is inside


def test_the_rows_scale_with_the_load_and_ignore_the_point_contact():
    contacts, rotations, rotation = contacts_and_rotations(0.3)
    rows = centre_of_pressure_rows(contacts, rotations, HALF, MU)
    forces = stacked(np.array([3.0, -2.0, 200.0, 4.0, -9.0, 0.5]), rotation)
    np.testing.assert_allclose(rows.dot(3.0 * forces), 3.0 * rows.dot(forces))
    assert not rows[:, 6:].any()
