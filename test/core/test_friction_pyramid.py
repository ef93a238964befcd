"""The friction pyramid |f_x|, |f_y| ≤ μ/2 f_z, f_z ≥ 0 against the cones it must stay inside."""

import numpy as np
import pytest
from robots import robot

from wbc_control.control.constraints.friction import (
    ROWS_PER_CONTACT,
    friction_rows,
    pyramid_coefficient,
)
from wbc_control.control.contact.contacts import Contact

MU = 0.6
NORMAL = 240.0


def point_rows() -> np.ndarray:
    solo = robot('solo12')
    rows = friction_rows([Contact.create(solo, 'FL_FOOT', 'point')], MU)
    assert rows.shape == (ROWS_PER_CONTACT, 3)
    return rows


def inside(rows: np.ndarray, force) -> bool:
    return bool((rows.dot(np.asarray(force, dtype=float)) <= 1e-9).all())


@pytest.mark.parametrize('scale', [1.0 - 1e-6, 1.0, 1.0 + 1e-6])
@pytest.mark.parametrize('direction', [(1.0, 0.0), (0.0, -1.0), (1.0, 1.0), (-1.0, 1.0)])
def test_the_pyramid_holds_forces_up_to_half_mu_per_axis(direction, scale):
    rows = point_rows()
    tangential = scale * 0.5 * MU * NORMAL * np.array(direction)
    assert inside(rows, [*tangential, NORMAL]) is (scale <= 1.0)
    assert pyramid_coefficient(MU) == pytest.approx(0.5 * MU)


def test_a_pulling_force_is_outside():
    rows = point_rows()
    assert inside(rows, [0.0, 0.0, 1e-6])
    assert not inside(rows, [0.0, 0.0, -1e-6])


def test_what_it_holds_is_inside_every_four_sided_pyramid_of_the_cone():
    """The pyramids n ± μ tᵢ for any tangent axes tᵢ (a simulator's or a floor's linearisation)."""
    rows = point_rows()
    rng = np.random.default_rng(3)
    half = 0.5 * MU * NORMAL
    edge = np.array([[half, s * half] for s in np.linspace(-1.0, 1.0, 21)])
    boundary = np.vstack([edge, -edge, edge[:, ::-1], -edge[:, ::-1]])  # the square's edges
    for angle in rng.uniform(0.0, np.pi / 2, 50):
        axes = np.array([[np.cos(angle), np.sin(angle)], [-np.sin(angle), np.cos(angle)]])
        assert all(inside(rows, [*force, NORMAL]) for force in boundary)
        assert (np.abs(boundary.dot(axes.T)).sum(axis=1) <= MU * NORMAL + 1e-9).all()
    assert (np.linalg.norm(boundary, axis=1) <= MU / np.sqrt(2.0) * NORMAL + 1e-9).all()
    # The largest such square: its corner, a little further out, leaves the pyramid along x, y.
    corner = 1.0001 * np.array([half, half])
    assert np.abs(corner).sum() > MU * NORMAL
