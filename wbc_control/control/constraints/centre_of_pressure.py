"""A surface contact's wrench kept inside its sole's contact wrench cone, as linear inequalities.

A flat rectangular sole of length 2X and width 2Y centred on its contact frame holds a wrench
(force f, moment m at the frame's origin; f' = Rᵀ f and m' = Rᵀ m in the sole's axes, R the
frame's rotation) without tipping or sliding exactly when it is the resultant of forces at its
four corners, each inside its friction pyramid |f'ₓ|, |f'ᵧ| ≤ μ' f'_z. In closed form (Caron,
Pham & Nakamura 2015, "Stability of surface contacts for humanoid robots: closed-form formulae
of the contact wrench cone for rectangular support areas", Sec. III):

    |m'_x| ≤ Y f_z,   |m'_y| ≤ X f_z         the centre of pressure (−m'_y, m'_x) / f_z inside
                                             the sole (their eq 3, the ZMP support area)
    τ_min ≤ m'_z ≤ τ_max                     the yaw moment (their eq 17), with
    τ_min = −μ'(X + Y) f_z + |Y f'_x − μ' m'_x| + |X f'_y − μ' m'_y|
    τ_max = +μ'(X + Y) f_z − |Y f'_x + μ' m'_x| − |X f'_y + μ' m'_y|

and the resultant's own pyramid, which is `control.constraints.friction`'s. The yaw bounds are
what a sole loaded near an edge or a corner can hold: a sole whose centre of pressure is on
its corner can only turn the corner's force, m'_z = X f'_y − Y f'_x, where a bound of the yaw
moment by the load alone lets the sole spin about that corner. Each absolute value opens into
two rows: 4 + 8 = 12 rows C f ≤ 0 per surface contact, rebuilt every tick with R (one
compiled call per sole, numba). f_z is the world-z force (horizontal ground), as for the
friction pyramids; μ' is their coefficient (`friction.pyramid_coefficient`), so that every
corner force is inside the Coulomb cone too.
"""

from collections.abc import Sequence

from numba import float64, types
import numpy as np
import numpy.typing as npt

from wbc_control.control.constraints.friction import pyramid_coefficient
from wbc_control.control.contact.contacts import Contact, ContactType
from wbc_control.exceptions import InvalidValue
from wbc_control.kernel_cache import kernel
from wbc_control.kernel_types import MATRIX

#: Rows per surface contact: ±m'_y ≤ X f_z, ±m'_x ≤ Y f_z, four for τ_min and four for τ_max.
ROWS_PER_SOLE = 12


def surface_contact_count(contacts: Sequence[Contact]) -> int:
    """How many of `contacts` are surface contacts (each gets `ROWS_PER_SOLE` rows)."""
    return sum(contact.kind is ContactType.SURFACE for contact in contacts)


def centre_of_pressure_rows(
    contacts: Sequence[Contact],
    rotations: Sequence[np.ndarray],
    half_size: np.ndarray,
    friction_coefficient: float,
) -> np.ndarray:
    """C with C f ≤ 0 the module docstring's rows, `(12 × surface contacts, m)`.

    Args:
        contacts: the stacked contacts (f their constrained directions, world axes).
        rotations: each contact frame's rotation in the world, `(3, 3)` each.
        half_size: (X, Y), half the sole's length and width (m).
        friction_coefficient: μ of the Coulomb cone.
    """
    soles = SoleRows(contacts, half_size, friction_coefficient)
    rows = np.zeros(soles.shape)
    soles.write(rotations, rows)
    return rows


class SoleRows:
    """`centre_of_pressure_rows` of one set of contacts: laid out once, written at each tick."""

    def __init__(
        self, contacts: Sequence[Contact], half_size: np.ndarray, friction_coefficient: float
    ) -> None:
        """Each surface contact's block of C: its rows, its force columns (as in the function)."""
        self.shape = (
            ROWS_PER_SOLE * surface_contact_count(contacts),
            sum(contact.dim for contact in contacts),
        )
        self._sizes = (float(half_size[0]), float(half_size[1]))
        self._inner = pyramid_coefficient(friction_coefficient)
        blocks, first, start = [], 0, 0
        for index, contact in enumerate(contacts):
            if contact.kind is ContactType.SURFACE:
                columns = slice(start, start + contact.dim)
                blocks.append((index, slice(first, first + ROWS_PER_SOLE), columns, contact.rows))
                first += ROWS_PER_SOLE
            start += contact.dim
        self._blocks = tuple(blocks)

    def write(self, rotations: Sequence[np.ndarray], rows: np.ndarray) -> None:
        """Write the soles' blocks of C into `rows` `shape` (the rest is left as it is).

        `rotations`: each contact frame's rotation in the world, `(3, 3)` each, all contacts.
        """
        half_length, half_width = self._sizes
        for index, block_rows, columns, selection in self._blocks:
            block = rows[block_rows, columns]
            _sole_rows(selection, rotations[index], half_length, half_width, self._inner, block)


@kernel(
    types.void(MATRIX, MATRIX, float64, float64, float64, types.Array(float64, 2, 'A')),
    any_layout=True,
)
def _sole_rows(
    selection, rotation, half_length, half_width, inner, rows
):  # pragma: no cover - runs compiled
    """One sole's 12 rows over its own force components, written into `rows` `(12, dim)`.

    Row i of `selection` says how the contact's force component i moves the world wrench;
    f' = Rᵀ f and m' = Rᵀ m in the sole's axes. The yaw rows take one row per choice of the
    signs (s₁, s₂) inside the two absolute values: (1, 1), (1, −1), (−1, 1), (−1, −1).
    """
    reach_scale = inner * (half_length + half_width)
    force = np.empty(3)  # how f_i moves f' (row i of selection[:, :3] R)
    moment = np.empty(3)  # and m'
    for i in range(selection.shape[0]):
        force[:] = 0.0
        moment[:] = 0.0
        for c in range(3):
            for k in range(3):
                force[c] += selection[i, k] * rotation[k, c]
                moment[c] += selection[i, 3 + k] * rotation[k, c]
        normal = selection[i, 2]  # the world-z force
        rows[0, i] = moment[1] - half_length * normal
        rows[1, i] = -moment[1] - half_length * normal
        rows[2, i] = moment[0] - half_width * normal
        rows[3, i] = -moment[0] - half_width * normal
        reach = reach_scale * normal
        along_x, along_y = half_width * force[0], half_length * force[1]
        twist_x, twist_y = inner * moment[0], inner * moment[1]
        for k in range(4):
            first = 1.0 if k < 2 else -1.0
            second = 1.0 if k % 2 == 0 else -1.0
            # m'_z ≥ τ_min: −m'_z − μ'(X + Y) f_z + s₁(Y f'_x − μ' m'_x) + s₂(X f'_y − μ' m'_y) ≤ 0
            rows[4 + 2 * k, i] = (
                (-moment[2] - reach) + first * (along_x - twist_x) + second * (along_y - twist_y)
            )
            # m'_z ≤ τ_max: m'_z − μ'(X + Y) f_z + s₁(Y f'_x + μ' m'_x) + s₂(X f'_y + μ' m'_y) ≤ 0
            rows[5 + 2 * k, i] = (
                (moment[2] - reach) + first * (along_x + twist_x) + second * (along_y + twist_y)
            )


def sole_half_size(size: npt.ArrayLike | None) -> np.ndarray | None:
    """(X, Y), half the sole's length and width, from (length, width); None stays None."""
    if size is None:
        return None
    values = np.asarray(size, dtype=float)
    if values.shape != (2,) or not (np.isfinite(values).all() and (values > 0.0).all()):
        raise InvalidValue(f'sole size must be (length, width) > 0 in m, got {values.tolist()}')
    return 0.5 * values
