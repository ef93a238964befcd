"""Each contact's friction force and moment weighted by its share of the normal load."""

from collections.abc import Sequence

import numpy as np

from wbc_control.control.contact.contacts import Contact

#: The least weight of a contact's horizontal forces and moments, relative to the most loaded
#: contact's.
MIN_TANGENTIAL_SHARE = 0.05


class LoadShares:
    """Each contact's friction force and moment weighted by its share of the normal load.

    With equal weights the least-norm forces split a horizontal force or a moment evenly
    between the contacts, whatever each carries: a sole that is being unloaded would take half
    of it at a tenth of the load, at the edge of its friction cone (it slips) or with its centre
    of pressure m / f_n far outside the sole (it rolls). Weighting a contact's horizontal and
    moment rows by its normal force over the largest one (at least `MIN_TANGENTIAL_SHARE`),
    the normal forces of a first force stage of the same tick, spreads them in proportion to
    the load: towards equal friction ratios ‖f_t‖ / f_n and centres of pressure that stay
    where the load is.
    """

    def __init__(self, contacts: Sequence[Contact]) -> None:
        size = sum(contact.dim for contact in contacts)
        self._normal = np.zeros((len(contacts), size))  # f ↦ each contact's world-z force
        self._owner = np.zeros(size, dtype=np.int64)
        self._tangential = np.zeros(size, dtype=bool)
        start = 0
        for index, contact in enumerate(contacts):
            rows = slice(start, start + contact.dim)
            linear = contact.rows[:, :3]
            self._normal[index, rows] = linear[:, 2]
            self._owner[rows] = index
            angular = np.abs(contact.rows[:, 3:]).sum(axis=1) > 0.0
            self._tangential[rows] = angular | (np.abs(linear[:, 2]) < 1e-12)
            start += contact.dim

    def factors(self, forces: np.ndarray) -> np.ndarray:
        """Per force row: its contact's load share for friction and moment rows, else 1."""
        normals = self._normal.dot(forces)
        largest = float(normals.max(initial=0.0))
        if not (np.isfinite(largest) and largest > 0.0):
            return np.ones(self._owner.shape[0])
        loads = np.clip(normals / largest, MIN_TANGENTIAL_SHARE, 1.0)
        return np.where(self._tangential, loads[self._owner], 1.0)
