"""A payload held by the robot: a rigid body attached to a frame, added to the model's inertias.

The payload is a mass m, a centre of mass c and a rotational inertia I_c about c, both given in
the axes of a frame of the model (any frame of the URDF: a link, a joint, a tool frame). It is
fixed to that frame, so it moves with the frame's parent joint: its spatial inertia, carried
into the parent joint's frame by the frame's placement jMf (Featherstone 2008, eq 2.66,
I_j = jXf* I_f fX j), adds to that joint's body inertia, and M(q), h(q, v) and g(q) follow
(they are linear in the inertias). In the standard dynamic parameters
π = (m, m c, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz) about the joint origin (Atkeson, An &
Hollerbach 1986; Pinocchio's `toDynamicParameters`), the body inertia becomes
π_j = π_j,URDF + π_payload, and a blend (1 − α) π_a + α π_b of two payloads is a payload too.

The URDF's inertias stay untouched in :attr:`RobotModel.nominal_inertias`, so a payload is
added and removed exactly (:meth:`RobotModel.set_payload_parameters`).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pinocchio as pin

from wbc_control.exceptions import InvalidShape, InvalidValue
from wbc_control.model.robot_model import RobotModel

#: The order of a URDF `<inertia>` element's attributes, which `inertia` takes.
INERTIA_ORDER = ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')
_INERTIA_INDICES = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
#: Rounding allowed in the rigid-body checks of an inertia (relative to its largest moment).
_INERTIA_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Payload:
    """A rigid body fixed to a frame; :data:`NO_PAYLOAD` is none.

    Attributes:
        frame: the frame it is fixed to ('' with no payload).
        mass: kg.
        center_of_mass: in the frame (m), `(3,)`.
        inertia: ixx, ixy, ixz, iyy, iyz, izz about the centre of mass, in the frame's axes
            (kg m²), `(6,)`; zeros: a point mass.
    """

    frame: str = ''
    mass: float = 0.0
    center_of_mass: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros(6))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Payload):
            return NotImplemented
        return (
            self.frame == other.frame
            and self.mass == other.mass
            and np.array_equal(self.center_of_mass, other.center_of_mass)
            and np.array_equal(self.inertia, other.inertia)
        )

    __hash__ = None

    @property
    def empty(self) -> bool:
        """Whether it adds nothing (no mass)."""
        return self.mass == 0.0

    @classmethod
    def create(
        cls,
        robot: RobotModel,
        frame: str,
        mass: float,
        center_of_mass: npt.ArrayLike = (0.0, 0.0, 0.0),
        inertia: npt.ArrayLike = (0.0,) * 6,
    ) -> 'Payload':
        """Validate a payload of `robot` (the checks below, in this order).

        Raises:
            FrameNotFound, InvalidValue: :func:`check_frame`.
            InvalidValue: :func:`check_mass`, :func:`check_inertia`.
            InvalidShape, InvalidValue: :func:`check_center_of_mass`, :func:`check_inertia`.
        """
        mass = check_mass(mass)
        com = check_center_of_mass(center_of_mass)
        values = check_inertia(inertia, mass)
        return cls(check_frame(robot, frame, mass), mass, com, values)

    def dynamic_parameters(self, robot: RobotModel) -> dict[int, np.ndarray]:
        """{parent joint id: π `(10,)` of the payload about that joint's origin}; {} if empty."""
        if self.empty:
            return {}
        frame = robot.model.frames[robot.frame_id(self.frame)]
        in_frame = pin.Inertia(self.mass, self.center_of_mass, rotational_inertia(self.inertia))
        return {frame.parentJoint: frame.placement.act(in_frame).toDynamicParameters()}


#: The robot as its URDF describes it.
NO_PAYLOAD = Payload()


def rotational_inertia(values: npt.ArrayLike) -> np.ndarray:
    """The symmetric 3×3 tensor of ixx, ixy, ixz, iyy, iyz, izz (URDF order)."""
    tensor = np.empty((3, 3))
    for value, (row, column) in zip(np.asarray(values, dtype=float), _INERTIA_INDICES):
        tensor[row, column] = tensor[column, row] = value
    return tensor


def blend(
    start: Mapping[int, np.ndarray], end: Mapping[int, np.ndarray], alpha: float
) -> dict[int, np.ndarray]:
    """(1 − α) start + α end, joint by joint (a joint absent from one has zeros there)."""
    zero = np.zeros(10)
    return {
        joint: (1.0 - alpha) * start.get(joint, zero) + alpha * end.get(joint, zero)
        for joint in start.keys() | end.keys()
    }


def check_frame(robot: RobotModel, frame: str, mass: float) -> str:
    """A frame of the model, or '' without a mass.

    Raises:
        FrameNotFound: not a frame of the model (the message lists them).
        InvalidValue: not a string, or no frame for a mass.
    """
    if not isinstance(frame, str):
        raise InvalidValue(f'must be a frame name, got {frame!r}')
    if frame:
        robot.frame_id(frame)
    elif mass > 0.0:
        raise InvalidValue('a payload with a mass needs the frame it is fixed to')
    return frame


def check_mass(mass: object) -> float:
    """A mass in kg: finite and >= 0.

    Raises:
        InvalidValue: otherwise.
    """
    try:
        value = float(mass)  # type: ignore[arg-type]
    except (TypeError, ValueError) as error:
        raise InvalidValue(f'must be a mass in kg, got {mass!r}') from error
    if isinstance(mass, bool | str | bytes) or not (np.isfinite(value) and value >= 0.0):
        raise InvalidValue(f'must be a finite mass >= 0 (kg), got {mass!r}')
    return value


def check_center_of_mass(value: npt.ArrayLike) -> np.ndarray:
    """x, y, z (m), finite; a read-only copy.

    Raises:
        InvalidShape, InvalidValue: not 3 finite numbers.
    """
    return _finite(value, 3, 'x, y, z in the frame (m)')


def check_inertia(value: npt.ArrayLike, mass: float) -> np.ndarray:
    """ixx, ixy, ixz, iyy, iyz, izz of a rigid body of `mass` (kg); a read-only copy.

    A rigid body's principal moments are >= 0 and A + B >= C (C − A − B = −2∫z² dm); a body
    without mass has none.

    Raises:
        InvalidShape, InvalidValue: not 6 finite numbers, or no rigid body's.
    """
    values = _finite(value, 6, ', '.join(INERTIA_ORDER) + ' (kg m^2)')
    moments = np.linalg.eigvalsh(rotational_inertia(values))  # ascending
    slack = _INERTIA_TOLERANCE * max(abs(moments[-1]), 1e-12)
    if moments[0] < -slack or moments[0] + moments[1] < moments[2] - slack:
        raise InvalidValue(
            f'principal moments {np.round(moments, 12).tolist()} kg m^2 are not those of a '
            'rigid body (each must be >= 0 and at most the sum of the other two)'
        )
    if mass == 0.0 and moments[-1] > 0.0:
        raise InvalidValue('an inertia needs a payload mass > 0')
    return values


def _finite(value: npt.ArrayLike, size: int, meaning: str) -> np.ndarray:
    try:
        array = np.array(value, dtype=float).reshape(-1)
    except (TypeError, ValueError) as error:
        raise InvalidValue(f'must be {size} numbers: {meaning}; got {value!r}') from error
    if array.shape != (size,):
        raise InvalidShape(f'needs {size} values ({meaning}), got {array.size}')
    if not np.isfinite(array).all():
        raise InvalidValue(f'has non-finite values: {array.tolist()}')
    array.flags.writeable = False
    return array
