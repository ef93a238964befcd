"""URDF `<mimic>` joints, and their positions filled in from the joints they follow.

A URDF joint with `<mimic joint="master" multiplier="m" offset="o"/>` moves as q = m q_master + o
(the URDF specification; robot_state_publisher computes its transform that way). Pinocchio's
default URDF parser, which the controller uses, makes it an independent joint, and drivers often
leave it out of `joint_states` (a gripper's driver publishes its one actuated finger joint): the
controller then takes it from its master, position m q + o and velocity m q̇, instead of
rejecting every joint state for a missing joint.
"""

from collections.abc import Sequence
from typing import NamedTuple
import xml.etree.ElementTree as ET

import numpy as np


class MimicJoint(NamedTuple):
    """A joint the URDF declares as following another: q = multiplier · q_master + offset."""

    joint: str
    master: str
    multiplier: float = 1.0
    offset: float = 0.0


def urdf_mimic_joints(robot: ET.Element) -> tuple[MimicJoint, ...]:
    """The `<mimic>` declarations of a URDF's ``<robot>`` element, in document order."""
    found = []
    for joint in robot.iter('joint'):
        mimic = joint.find('mimic')
        if mimic is None or not joint.get('name') or not mimic.get('joint'):
            continue
        try:
            multiplier = float(mimic.get('multiplier', 1.0))
            offset = float(mimic.get('offset', 0.0))
        except ValueError:
            continue  # Pinocchio's parser would have refused it first
        found.append(MimicJoint(joint.get('name'), mimic.get('joint'), multiplier, offset))
    return tuple(found)


class FilledMimics(NamedTuple):
    """Mimic joints a message leaves out, gathered from their masters' entries then mapped."""

    joints: np.ndarray  # actuated positions of the mimic joints, `(k,)` int
    multipliers: np.ndarray  # `(k,)`
    offsets: np.ndarray  # `(k,)`

    def apply(self, positions: np.ndarray, velocities: np.ndarray | None = None) -> None:
        """Map the mimic joints' gathered master values: q ← m q + o and q̇ ← m q̇."""
        joints = self.joints
        positions[joints] = self.multipliers * positions[joints] + self.offsets
        if velocities is not None:
            velocities[joints] *= self.multipliers


def filled_mimics(
    mimics: Sequence[MimicJoint], missing: Sequence[str], joint_names: Sequence[str]
) -> tuple[FilledMimics | None, dict[str, str]]:
    """The `missing` joints that mimic a joint; their fill and {mimic joint: master}."""
    by_name = {mimic.joint: mimic for mimic in mimics}
    chosen = [by_name[name] for name in missing if name in by_name]
    if not chosen:
        return None, {}
    position = {name: i for i, name in enumerate(joint_names)}
    fill = FilledMimics(
        np.array([position[mimic.joint] for mimic in chosen], dtype=int),
        np.array([mimic.multiplier for mimic in chosen]),
        np.array([mimic.offset for mimic in chosen]),
    )
    return fill, {mimic.joint: mimic.master for mimic in chosen}
