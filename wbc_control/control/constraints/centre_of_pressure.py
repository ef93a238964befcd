"""The centre of pressure of a surface contact kept inside its sole, as linear inequalities.

A flat sole of length 2X and width 2Y centred on its contact frame, loaded by the force f and
the moment m at the frame's origin (world axes, `Contact` surface rows), has its centre of
pressure at p = (−m'_y, m'_x) / f_z in the sole's own axes, m' = Rᵀ m with R the frame's
rotation (Caron, Pham & Nakamura 2015, "Stability of surface contacts for humanoid robots",
eq 3, the ZMP support area of one contact). Inside the sole:

    |m'_y| ≤ X f_z,     |m'_x| ≤ Y f_z,     |m'_z| ≤ μ min(X, Y) f_z

the last a conservative bound of the torsion friction can hold (the yaw moment of the sole's
contact wrench cone is at most μ times the pressure's moment arm, Caron, Pham & Nakamura 2015,
eq 17; min(X, Y) is inside it): six rows C f ≤ 0 per surface contact, rebuilt every tick with
R. The rows assume the ground is horizontal (f_z is the world-z force), as the friction
pyramids do.
"""

from collections.abc import Sequence

import numpy as np

from wbc_control.control.contact.contacts import Contact, ContactType

#: Rows per surface contact: ±m'_y ≤ X f_z, ±m'_x ≤ Y f_z, ±m'_z ≤ μ min(X, Y) f_z.
ROWS_PER_SOLE = 6


def surface_contact_count(contacts: Sequence[Contact]) -> int:
    """How many of `contacts` are surface contacts (each gets `ROWS_PER_SOLE` rows)."""
    return sum(contact.kind is ContactType.SURFACE for contact in contacts)


def centre_of_pressure_rows(
    contacts: Sequence[Contact],
    rotations: Sequence[np.ndarray],
    half_size: np.ndarray,
    friction_coefficient: float,
) -> np.ndarray:
    """C with C f ≤ 0 the module docstring's rows, `(6 × surface contacts, m)`.

    Args:
        contacts: the stacked contacts (f their constrained directions, world axes).
        rotations: each contact frame's rotation in the world, `(3, 3)` each.
        half_size: (X, Y), half the sole's length and width (m).
        friction_coefficient: μ.
    """
    size = sum(contact.dim for contact in contacts)
    blocks, start = [], 0
    half_length, half_width = float(half_size[0]), float(half_size[1])
    torsion = friction_coefficient * min(half_length, half_width)
    for contact, rotation in zip(contacts, rotations):
        if contact.kind is ContactType.SURFACE:
            block = np.zeros((ROWS_PER_SOLE, size))
            forces, moments = contact.rows[:, :3], contact.rows[:, 3:]
            local = moments.dot(rotation)  # row i: how f_i moves m' = Rᵀ m
            normal = forces[:, 2]
            block[0, start : start + contact.dim] = local[:, 1] - half_length * normal
            block[1, start : start + contact.dim] = -local[:, 1] - half_length * normal
            block[2, start : start + contact.dim] = local[:, 0] - half_width * normal
            block[3, start : start + contact.dim] = -local[:, 0] - half_width * normal
            block[4, start : start + contact.dim] = local[:, 2] - torsion * normal
            block[5, start : start + contact.dim] = -local[:, 2] - torsion * normal
            blocks.append(block)
        start += contact.dim
    return np.vstack(blocks) if blocks else np.zeros((0, size))
