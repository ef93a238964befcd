"""URDF inertia tensors that no rigid body has, replaced by the nearest ones that one has.

Pinocchio takes any symmetric tensor; MuJoCo refuses one whose principal moments are not all
positive or where one exceeds the sum of the other two (a rigid body's moments A ≤ B ≤ C satisfy
A + B ≥ C, since C − A − B = −2 ∫ z² dm ≤ 0 about C's axis). example-robot-data ships such
tensors: placeholder links of 1e-6 kg whose tensor is all 1e-6 (rank 1: Go1, B1, ANYmal B, HyQ)
and camera links whose largest moment is twice the others' (ANYmal C); and moving links of
several hundred grams whose tensor is zero or rounding around it (iCub's hips, ankles, legs and
head: point masses, which MuJoCo refuses in a moving body). `urdf_to_mujoco` rewrites them with
`rigid_body_inertia` before MuJoCo parses the URDF.
"""

from typing import NamedTuple
import xml.etree.ElementTree as ET

import numpy as np

#: The attributes of a URDF `<inertia>` element, and their places in the tensor.
INERTIA_ENTRIES = ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')
INERTIA_INDICES = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
#: Relative margin by which an adjusted tensor satisfies A + B ≥ C.
RIGID_BODY_SLACK = 1e-9
#: Smallest principal moment of an adjusted tensor, relative to its largest.
MOMENT_FLOOR = 1e-6
#: Smallest principal moment kept (kg m²): MuJoCo refuses those below about 1e-14.
SMALLEST_MOMENT = 1e-12


class AdjustedInertia(NamedTuple):
    """A URDF inertia tensor MuJoCo refuses, and the principal moments simulated instead."""

    link: str
    principal_moments: tuple[float, float, float]  # ascending (kg m²)
    simulated: tuple[float, float, float]  # the same axes' moments simulated (kg m²)

    def __str__(self) -> str:
        moments, simulated = (
            ', '.join(f'{moment:.3g}' for moment in values)
            for values in (self.principal_moments, self.simulated)
        )
        return (
            f"of link {self.link}: principal moments {moments} kg m² are not a rigid body's "
            f'(MuJoCo refuses them); simulated as {simulated} about the same axes'
        )


def rigid_body_inertia(link: ET.Element, moving: bool = True) -> AdjustedInertia | None:
    """Make `link`'s inertia tensor a rigid body's if it is not; what was changed.

    Such a tensor becomes a nearby one with the same principal axes: its moments are raised to
    1e-6 of the largest (and to 1e-12 kg m²), then projected onto the half-space of the most
    violated λᵢ + λⱼ ≥ λₖ (with a 1e-9 relative slack against rounding), λ + d/3 (1, 1, −1)
    with d = λₖ − λᵢ − λⱼ (the nearest point in the Frobenius norm). A tensor without a
    positive moment is a point mass: it gets 1e-12 kg m² about each axis if the link has mass
    and is `moving` (the child of a joint that is not fixed, or the root), else is left alone
    (a link welded to its parent is fused into it, and a moving link without mass is MuJoCo's
    own error). Left alone too: valid tensors and those not finite.
    """
    element = link.find('inertial/inertia')
    if element is None:
        return None
    try:
        xx, xy, xz, yy, yz, zz = (float(element.get(name, 0.0)) for name in INERTIA_ENTRIES)
    except ValueError:
        return None  # MuJoCo's parser names the bad attribute
    tensor = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    if not np.isfinite(tensor).all():
        return None
    moments, axes = np.linalg.eigh(tensor)  # ascending
    valid = moments[0] >= SMALLEST_MOMENT and moments[0] + moments[1] >= moments[2]
    if valid or (moments[2] <= 0.0 and not (moving and _mass(link) > 0.0)):
        return None
    simulated = _rigid_body_moments(moments)
    adjusted = (axes * simulated) @ axes.T
    for name, (row, column) in zip(INERTIA_ENTRIES, INERTIA_INDICES, strict=True):
        element.set(name, repr(float(adjusted[row, column])))
    return AdjustedInertia(
        link.get('name', ''),
        tuple(float(moment) for moment in moments),
        tuple(float(moment) for moment in simulated),
    )


def _mass(link: ET.Element) -> float:
    """The link's mass (kg); 0 when absent or unreadable (MuJoCo's parser names the latter)."""
    element = link.find('inertial/mass')
    try:
        return 0.0 if element is None else float(element.get('value', 0.0))
    except ValueError:
        return 0.0


def _rigid_body_moments(moments: np.ndarray) -> np.ndarray:
    """Principal moments `(3,)` moved onto a rigid body's (`rigid_body_inertia`), same order.

    One projection suffices: with λₖ the largest, the projected λₖ − d/3 = (2λₖ + λᵢ + λⱼ)/3 is
    positive, and λᵢ + λₖ − λⱼ − d/3 = (4λᵢ + 2λₖ − 2λⱼ)/3 ≥ 0 keeps the other two inequalities.
    """
    simulated = np.maximum(moments, max(MOMENT_FLOOR * moments.max(), SMALLEST_MOMENT))
    largest = int(np.argmax(simulated))
    deficit = simulated[largest] * (2.0 + RIGID_BODY_SLACK) - simulated.sum()
    if deficit > 0.0:
        step = np.full(3, deficit / 3.0)
        step[largest] = -deficit / 3.0
        simulated = simulated + step
    return simulated
