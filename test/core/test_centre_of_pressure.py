"""The soles' centre-of-pressure and torsion rows against the wrench they stand for."""

import numpy as np
import pinocchio as pin
import pytest
from robots import robot

from wbc_control.control.constraints.centre_of_pressure import (
    ROWS_PER_SOLE,
    centre_of_pressure_rows,
)
from wbc_control.control.contact.contacts import Contact

HALF = np.array([0.1, 0.06])  # X, Y
MU = 0.5


def contacts_and_rotations(yaw: float):
    talos = robot('talos')
    contacts = [
        Contact.create(talos, 'left_sole_link', 'surface'),
        Contact.create(talos, 'right_sole_link', 'point'),
    ]
    rotation = pin.utils.rpyToMatrix(0.0, 0.0, yaw)
    return contacts, [rotation, np.eye(3)], rotation


def wrench_for(cop_local: np.ndarray, torsion: float, normal: float, rotation) -> np.ndarray:
    """Forces (the sole's 6 rows, the point's 3) whose sole has this CoP and yaw moment."""
    # In the sole's axes: m' = (p_y f_z, −p_x f_z, torsion) for a vertical force f_z at p.
    local = np.array([cop_local[1] * normal, -cop_local[0] * normal, torsion])
    forces = np.zeros(9)
    forces[:6] = [0.3, -0.2, normal, *rotation.dot(local)]
    forces[6:] = [0.1, 0.4, 50.0]
    return forces


@pytest.mark.parametrize('yaw', [0.0, 0.7, -2.1])
@pytest.mark.parametrize(
    ('cop', 'torsion_share', 'inside'),
    [
        ((0.05, -0.03), 0.5, True),
        ((0.099, 0.059), 0.99, True),  # just inside every edge
        ((0.101, 0.0), 0.0, False),  # past the front edge
        ((-0.101, 0.0), 0.0, False),  # past the back edge
        ((0.0, 0.061), 0.0, False),  # past a side
        ((0.0, -0.061), 0.0, False),
        ((0.0, 0.0), 1.01, False),  # more yaw than friction holds
        ((0.0, 0.0), -1.01, False),
    ],
)
def test_a_wrench_meets_the_rows_exactly_when_its_cop_and_torsion_are_inside(
    yaw, cop, torsion_share, inside
):
    contacts, rotations, rotation = contacts_and_rotations(yaw)
    rows = centre_of_pressure_rows(contacts, rotations, HALF, MU)
    assert rows.shape == (ROWS_PER_SOLE, 9)  # the point contact has none
    normal = 300.0
    torsion = torsion_share * MU * HALF.min() * normal
    forces = wrench_for(np.array(cop), torsion, normal, rotation)
    assert bool((rows.dot(forces) <= 1e-9).all()) is inside


def test_the_rows_scale_with_the_load_and_ignore_the_point_contact():
    contacts, rotations, rotation = contacts_and_rotations(0.3)
    rows = centre_of_pressure_rows(contacts, rotations, HALF, MU)
    forces = wrench_for(np.array([0.08, -0.05]), 0.02, 200.0, rotation)
    np.testing.assert_allclose(rows.dot(3.0 * forces), 3.0 * rows.dot(forces))
    assert not rows[:, 6:].any()
