"""URDF of the planar serial chain of identical slender rods (Shah & Saha 2013, Fig. 1).

The chain is the paper's test case for the conditioning of the inertia matrix: n identical
homogeneous rods of mass m and length l joined end to end by revolute joints about one common axis.
Its worst condition number grows as O(4 n^4) (Shah & Saha 2013, section 2), which makes it the
model of choice for tests and benchmarks of ill-conditioned M.

Geometry and conventions, chosen so that the paper's planar frame maps onto a right-handed URDF
frame with gravity along -z (paper X -> x, paper Y -> z, paper Z = X x Y -> -y):

- the first joint sits at the origin of ``base_link``; every rod lies along its own x axis, its
  centre of mass at mid-length, and the next joint at its far end;
- every joint turns about -y, so a positive angle lifts the chain (counter-clockwise in the paper's
  figure) and gravity torques on a chain reaching along +x are negative, as in their eq 7;
- at q = 0 the chain is straight and horizontal along +x, with its tip at (n l, 0, 0).

The numbers printed in Shah & Saha 2013, eq 7, imply two facts worth knowing when comparing with
them: its M equals this chain's with ``mass=2.207`` (m l^2 = 2.207 kg m^2, not the 2.2 kg of the
text), and its phi is the gravity torque of the straight chain inclined 60 degrees from horizontal
(q = (+-pi/3, 0, ..., 0): cos 60 deg = 1/2, g = 9.81 m/s^2), not of the horizontal chain, whose
gravity torques are twice as large; M does not depend on q1. The mass scales M and phi alike, so
the condition number, the diagonal ratio and the motion do not depend on it.
"""

import math
import numbers

from wbc_control.exceptions import InvalidValue

_STANDARD_GRAVITY = 9.81
# The rods are slender: their inertia about their own axis is this fraction of m l^2, non-zero so
# that the inertia tensor stays positive definite for simulators that check it.
_AXIAL_INERTIA_FRACTION = 1e-6
_VELOCITY_LIMIT_RAD_S = 50.0


def serial_chain_urdf(n_links: int, mass: float = 2.2, length: float = 1.0) -> str:
    """Build the URDF of a planar chain of ``n_links`` identical slender homogeneous rods.

    Each rod has mass ``mass`` at mid-length and central inertia m l^2 / 12 about its transverse
    axes (Shah & Saha 2013, section 2, Fig. 1). Links are ``link_1`` .. ``link_n``, joints
    ``joint_1`` .. ``joint_n`` (revolute about -y, limits +-pi), and a massless link ``tip``
    marks the free end. The effort limit of every joint is twice the torque that holds the whole
    straight chain horizontal at the first joint.

    Args:
        n_links: Number of rods, at least 1.
        mass: Mass of one rod in kg, positive.
        length: Length of one rod in m, positive.

    Returns:
        The URDF XML text of robot ``serial_chain_<n_links>``.

    Raises:
        InvalidValue: If ``n_links`` is not an integer >= 1 or ``mass`` or ``length`` is not a
            finite positive number.
    """
    _check_arguments(n_links, mass, length)
    n_links, mass, length = int(n_links), float(mass), float(length)
    effort_limit_nm = mass * _STANDARD_GRAVITY * length * n_links**2
    parts = [f'<robot name="serial_chain_{n_links}">', '  <link name="base_link"/>']
    parent = 'base_link'
    for index in range(1, n_links + 1):
        offset_m = 0.0 if index == 1 else length
        parts.append(_joint_xml(index, parent, offset_m, effort_limit_nm))
        parts.append(_rod_xml(index, mass, length))
        parent = f'link_{index}'
    parts.append(_tip_xml(parent, length))
    parts.append('</robot>')
    return '\n'.join(parts) + '\n'


def _check_arguments(n_links: int, mass: float, length: float) -> None:
    if isinstance(n_links, bool) or not isinstance(n_links, numbers.Integral) or n_links < 1:
        raise InvalidValue(f'n_links must be an integer >= 1, got {n_links!r}')
    for name, value in (('mass', mass), ('length', length)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InvalidValue(f'{name} must be a finite positive number, got {value!r}')
        if not (math.isfinite(value) and value > 0.0):
            raise InvalidValue(f'{name} must be a finite positive number, got {value!r}')


def _joint_xml(index: int, parent: str, offset_m: float, effort_limit_nm: float) -> str:
    return (
        f'  <joint name="joint_{index}" type="revolute">\n'
        f'    <parent link="{parent}"/>\n'
        f'    <child link="link_{index}"/>\n'
        f'    <origin xyz="{offset_m!r} 0 0" rpy="0 0 0"/>\n'
        '    <axis xyz="0 -1 0"/>\n'
        f'    <limit lower="{-math.pi!r}" upper="{math.pi!r}" effort="{effort_limit_nm!r}"'
        f' velocity="{_VELOCITY_LIMIT_RAD_S!r}"/>\n'
        '  </joint>'
    )


def _rod_xml(index: int, mass: float, length: float) -> str:
    transverse = mass * length**2 / 12.0
    axial = _AXIAL_INERTIA_FRACTION * mass * length**2
    return (
        f'  <link name="link_{index}">\n'
        '    <inertial>\n'
        f'      <origin xyz="{length / 2.0!r} 0 0" rpy="0 0 0"/>\n'
        f'      <mass value="{mass!r}"/>\n'
        f'      <inertia ixx="{axial!r}" ixy="0" ixz="0" iyy="{transverse!r}" iyz="0"'
        f' izz="{transverse!r}"/>\n'
        '    </inertial>\n'
        '  </link>'
    )


def _tip_xml(parent: str, length: float) -> str:
    return (
        '  <joint name="tip_joint" type="fixed">\n'
        f'    <parent link="{parent}"/>\n'
        '    <child link="tip"/>\n'
        f'    <origin xyz="{length!r} 0 0" rpy="0 0 0"/>\n'
        '  </joint>\n'
        '  <link name="tip"/>'
    )
