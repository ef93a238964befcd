"""Add the ros2_control tags Gazebo Sim needs to a plain URDF (gz_ros2_control).

gz_ros2_control builds its hardware from the URDF's ``<ros2_control>`` block (parsed by
ros2_control's hardware_interface component parser: ``<ros2_control name type="system">``,
``<hardware><plugin>``, ``<joint name>`` with ``<command_interface name>`` and
``<state_interface name>``, whose ``<param name="initial_value">`` sets the start position) and
starts its controller manager from the ``<gazebo><plugin filename="gz_ros2_control-system"
name="gz_ros2_control::GazeboSimROS2ControlPlugin">`` tag, whose ``<parameters>`` children are
controller_manager parameter files and whose ``<ros><namespace>`` places the controller
manager. This module writes both for the joints wbc_controller commands, with an effort command
interface and position / velocity state interfaces, unless the URDF already has them.
"""

from collections.abc import Sequence
from pathlib import Path
import xml.etree.ElementTree as ET

from wbc_control.exceptions import ModelError
from wbc_control.model.urdf_xml import parse_urdf

HARDWARE_PLUGIN = 'gz_ros2_control/GazeboSimSystem'
GZ_PLUGIN_FILENAME = 'gz_ros2_control-system'
GZ_PLUGIN_NAME = 'gz_ros2_control::GazeboSimROS2ControlPlugin'
MOVABLE_JOINT_TYPES = ('revolute', 'continuous', 'prismatic')


def has_ros2_control(root: ET.Element) -> bool:
    """Whether the URDF already carries a ``<ros2_control>`` block."""
    return root.find('ros2_control') is not None


def has_gz_ros2_control_plugin(root: ET.Element) -> bool:
    """Whether the URDF already loads the gz_ros2_control system plugin."""
    return any(
        plugin.get('name') == GZ_PLUGIN_NAME
        or 'gz_ros2_control-system' in plugin.get('filename', '')
        for plugin in root.iterfind('gazebo/plugin')
    )


def _movable_joints(root: ET.Element) -> dict[str, ET.Element]:
    return {
        joint.get('name', ''): joint
        for joint in root.iterfind('joint')
        if joint.get('type') in MOVABLE_JOINT_TYPES
    }


def _initial_position(joint: ET.Element) -> float:
    """Zero, moved inside the joint's position limits when zero lies outside them."""
    limit = joint.find('limit')
    if joint.get('type') == 'continuous' or limit is None:
        return 0.0
    lower = float(limit.get('lower', '0'))
    upper = float(limit.get('upper', '0'))
    return min(max(0.0, lower), upper) if lower <= upper else 0.0


def ros2_control_block(root: ET.Element, joints: Sequence[str]) -> ET.Element:
    """A ``<ros2_control>`` system for `joints`: effort command, position and velocity state.

    Raises:
        ModelError: a joint is not a movable joint of the URDF.
    """
    movable = _movable_joints(root)
    missing = [name for name in joints if name not in movable]
    if missing:
        raise ModelError(
            f'the URDF has no movable joint {", ".join(missing)} (commanded joints: '
            f'{", ".join(joints)})'
        )
    system = ET.Element('ros2_control', name='GazeboSimSystem', type='system')
    ET.SubElement(ET.SubElement(system, 'hardware'), 'plugin').text = HARDWARE_PLUGIN
    for name in joints:
        joint = ET.SubElement(system, 'joint', name=name)
        ET.SubElement(joint, 'command_interface', name='effort')
        position = ET.SubElement(joint, 'state_interface', name='position')
        initial = ET.SubElement(position, 'param', name='initial_value')
        initial.text = repr(_initial_position(movable[name]))
        ET.SubElement(joint, 'state_interface', name='velocity')
    return system


def gz_plugin_block(parameter_files: Sequence[str | Path], namespace: str = '') -> ET.Element:
    """The ``<gazebo>`` tag loading gz_ros2_control with these controller_manager files."""
    gazebo = ET.Element('gazebo')
    plugin = ET.SubElement(gazebo, 'plugin', filename=GZ_PLUGIN_FILENAME, name=GZ_PLUGIN_NAME)
    for path in parameter_files:
        ET.SubElement(plugin, 'parameters').text = str(Path(path).resolve())
    if namespace.strip('/'):
        ros = ET.SubElement(plugin, 'ros')
        ET.SubElement(ros, 'namespace').text = '/' + namespace.strip('/')
    return gazebo


def with_gz_ros2_control(
    urdf_xml: str,
    joints: Sequence[str],
    parameter_files: Sequence[str | Path],
    namespace: str = '',
) -> str:
    """The URDF with a ``<ros2_control>`` block and the gz_ros2_control plugin added.

    Each is added only when the URDF lacks it; a URDF that has both comes back unchanged.

    Raises:
        ModelError: not a URDF, or a commanded joint is missing from it.
    """
    root = parse_urdf(urdf_xml)
    add_system = not has_ros2_control(root)
    add_plugin = not has_gz_ros2_control_plugin(root)
    if not add_system and not add_plugin:
        return urdf_xml
    if add_system:
        root.append(ros2_control_block(root, joints))
    if add_plugin:
        root.append(gz_plugin_block(parameter_files, namespace))
    return ET.tostring(root, encoding='unicode')


def forward_controller_joints(document: dict, controller: str = 'effort_controller') -> list[str]:
    """The `joints` of `controller` in a controller_manager parameter file (parsed YAML).

    Accepts the keys ros2_control's spawner accepts: ``controller``, ``/controller``,
    ``/**/controller`` and ``/**: controller:``.

    Raises:
        ModelError: the file names no joints for `controller`.
    """
    wildcard = document.get('/**', {}) if isinstance(document, dict) else {}
    for section in (
        document.get(controller),
        document.get(f'/{controller}'),
        document.get(f'/**/{controller}'),
        wildcard.get(controller) if isinstance(wildcard, dict) else None,
    ):
        if isinstance(section, dict):
            joints = section.get('ros__parameters', {}).get('joints')
            if joints:
                return [str(joint) for joint in joints]
    raise ModelError(f"the ros2_control parameters name no joints for '{controller}'")
