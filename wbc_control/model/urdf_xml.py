"""Reading URDF XML: one parser, and one error for a robot description that is not a URDF.

Everything that reads a URDF's XML itself (the `<mimic>` joints, the ros2_control tags for
Gazebo, the rewrite for MuJoCo) starts from :func:`parse_urdf`.
"""

import xml.etree.ElementTree as ET

from wbc_control.exceptions import ModelError


def parse_urdf(urdf_xml: str) -> ET.Element:
    """The ``<robot>`` element of a URDF.

    Raises:
        ModelError: the description is empty, not XML, or its root is not ``<robot>``.
    """
    if not urdf_xml or not urdf_xml.strip():
        raise ModelError('the robot description is empty')
    try:
        root = ET.fromstring(urdf_xml)
    except ET.ParseError as error:
        raise ModelError(f'the robot description is not a URDF: invalid XML ({error})') from error
    if root.tag != 'robot':
        raise ModelError(
            f'the robot description is not a URDF: its root is <{root.tag}>, not <robot>'
        )
    return root


def root_link_name(urdf_xml: str) -> str:
    """The URDF's root link: the one link no joint has as its child.

    Raises:
        ModelError: not a URDF, or not one tree (no link, or more than one root).
    """
    robot = parse_urdf(urdf_xml)
    children = {child.get('link') for child in robot.iterfind('joint/child')}
    roots = [
        link.get('name') for link in robot.iterfind('link') if link.get('name') not in children
    ]
    if len(roots) != 1:
        raise ModelError(f'the URDF has {len(roots)} root links ({", ".join(roots)}), not one')
    return roots[0]
