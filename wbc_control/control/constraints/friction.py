"""Friction pyramids and unilateral normal forces as linear constraints on the contact forces.

A surface or point contact's linear force f (world axes) must push (f_z ≥ 0 on flat, horizontal
ground, the normal the contact reports use) and stay inside the Coulomb cone ‖f_t‖ ≤ μ f_z.
The cone is replaced by a pyramid, |f_x| ≤ μ' f_z and |f_y| ≤ μ' f_z (Stewart & Trinkle 1996;
Del Prete et al. 2016 use such pyramids for TSID), with μ' = μ / 2. The usual μ' = μ / √2
inscribes the pyramid in the cone: its edges are on the cone, so a force it admits along a
diagonal is at the friction limit, where a foot slides, and outside the four-sided pyramid
n ± μ tᵢ of a floor (or a simulator: MuJoCo's pyramidal cones) linearised along other
tangent axes tᵢ. μ / 2 is the largest such square inside every four-sided pyramid inscribed
in the cone, whatever its axes: their common part is the cone of μ / √2, and the square
inscribed in it has half-width μ / 2. So the friction ratio ‖f_t‖ / f_z a report shows is at
most μ / √2 ≈ 0.71 μ, and never exceeds μ. Contacts `along` one axis constrain a single
direction and get no rows.
"""

from collections.abc import Sequence

import numpy as np

from wbc_control.control.contact.contacts import Contact, ContactType
from wbc_control.exceptions import InvalidValue

#: Rows per contact: ±f_x − μ' f_z ≤ 0, ±f_y − μ' f_z ≤ 0, −f_z ≤ 0.
ROWS_PER_CONTACT = 5


def pyramid_coefficient(friction_coefficient: float) -> float:
    """μ' = μ / 2, the pyramid of the module docstring for the Coulomb cone of μ."""
    return 0.5 * friction_coefficient


def friction_rows(contacts: Sequence[Contact], friction_coefficient: float) -> np.ndarray:
    """C with C f ≤ 0 the pyramids of the module docstring, `(5 × checked contacts, m)`.

    f are the stacked contact forces (each contact's constrained directions, world axes).
    """
    inner = pyramid_coefficient(friction_coefficient)
    pyramid = np.array(
        [
            [1.0, 0.0, -inner],
            [-1.0, 0.0, -inner],
            [0.0, 1.0, -inner],
            [0.0, -1.0, -inner],
            [0.0, 0.0, -1.0],
        ]
    )
    size = sum(contact.dim for contact in contacts)
    blocks, start = [], 0
    for contact in contacts:
        if contact.kind is not ContactType.ALONG:
            block = np.zeros((ROWS_PER_CONTACT, size))
            block[:, start : start + contact.dim] = pyramid.dot(contact.rows[:, :3].T)
            blocks.append(block)
        start += contact.dim
    return np.vstack(blocks) if blocks else np.zeros((0, size))


def validated_friction(value: float) -> float:
    """μ, finite and > 0 (InvalidValue otherwise)."""
    value = float(value)
    if not (np.isfinite(value) and value > 0.0):
        raise InvalidValue(f'friction_coefficient must be > 0, got {value}')
    return value
