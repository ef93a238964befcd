"""Friction pyramids and unilateral normal forces as linear constraints on the contact forces.

A surface or point contact's linear force f (world axes) must push (f_z ≥ 0 on flat, horizontal
ground, the normal the contact reports use) and stay inside the Coulomb cone ‖f_t‖ ≤ μ f_z.
The cone is replaced by the pyramid inscribed in it, |f_x| ≤ μ' f_z and |f_y| ≤ μ' f_z with
μ' = μ / √2, the usual linearisation (Stewart & Trinkle 1996; Del Prete et al. 2016 use the same
for TSID): every force it admits is inside the cone, so the friction ratio a report shows never
exceeds μ. Contacts `along` one axis constrain a single direction and get no rows.
"""

from collections.abc import Sequence

import numpy as np

from wbc_control.control.contact.contacts import Contact, ContactType

#: Rows per contact: ±f_x − μ' f_z ≤ 0, ±f_y − μ' f_z ≤ 0, −f_z ≤ 0.
ROWS_PER_CONTACT = 5


def friction_rows(contacts: Sequence[Contact], friction_coefficient: float) -> np.ndarray:
    """C with C f ≤ 0 the pyramids of the module docstring, `(5 × checked contacts, m)`.

    f are the stacked contact forces (each contact's constrained directions, world axes).
    """
    inner = friction_coefficient / np.sqrt(2.0)
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
