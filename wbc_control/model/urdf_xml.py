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
