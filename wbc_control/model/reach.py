"""How far a frame of a fixed-base robot can get from the first joint of its chain.

The frame's position is p = t₁ + R₁(t₂ + R₂(t₃ + … + Rₙ t_f)), with tⱼ the placement of joint j
in its parent (Pinocchio's `jointPlacements`), Rⱼ the joint's rotation and t_f the frame's
placement in its joint; a prismatic joint adds its travel along its axis. Rotations keep
lengths, so by the triangle inequality no configuration puts the frame farther from t₁, the
first joint's origin, than Σⱼ₌₂ ‖tⱼ‖ + ‖t_f‖ plus the largest travel of every prismatic joint
of the chain (the first one's included, as it moves the rest). A target farther than that is
out of reach whatever the joints do: the controller names such tasks (docs/safety.md, targets
out of reach). A floating base can carry the frame anywhere: no bound.
"""

import math
from typing import NamedTuple

import numpy as np

from wbc_control.model.robot_model import RobotModel

#: Pinocchio's prismatic joint models (the others of a fixed-base chain only rotate).
PRISMATIC = ('JointModelPX', 'JointModelPY', 'JointModelPZ', 'JointModelPrismaticUnaligned')


class Reach(NamedTuple):
    """A bound on where a frame can be: within `radius` of `anchor`, whatever the joints."""

    anchor: np.ndarray  # (3,) origin of the chain's first joint, world frame (m)
    radius: float  # m
    joint: str  # the chain's first joint

    def beyond(self, point: np.ndarray) -> float:
        """How far `point` (3,) lies beyond the radius (m; <= 0 inside)."""
        return float(np.linalg.norm(point - self.anchor)) - self.radius


def frame_reach(robot: RobotModel, frame_id: int) -> Reach | None:
    """The reach of frame `frame_id`, or None: floating base, no joint, unbounded travel.

    None on a floating base, for a frame no joint moves, or with a prismatic joint of unbounded
    travel in the chain.
    """
    if robot.floating_base:
        return None
    model = robot.model
    frame = model.frames[frame_id]
    chain = list(model.supports[frame.parentJoint])[1:]  # joints from the root to the frame's
    if not chain:
        return None
    radius = float(np.linalg.norm(frame.placement.translation))
    for joint_id in chain[1:]:
        radius += float(np.linalg.norm(model.jointPlacements[joint_id].translation))
    for joint_id in chain:
        travel = prismatic_travel(model, joint_id)
        if not np.isfinite(travel):
            return None
        radius += travel
    anchor = np.array(model.jointPlacements[chain[0]].translation)
    return Reach(anchor, radius, model.names[chain[0]])


def prismatic_travel(model, joint_id: int) -> float:
    """How far joint `joint_id` of `model` can slide from its zero (m): 0 unless prismatic.

    The larger of its limits' magnitudes; inf where a limit is unbounded.
    """
    if model.joints[joint_id].shortname() not in PRISMATIC:
        return 0.0
    index = model.joints[joint_id].idx_q
    travel = max(abs(model.lowerPositionLimit[index]), abs(model.upperPositionLimit[index]))
    if not np.isfinite(travel) or travel >= np.finfo(float).max:
        return math.inf
    return float(travel)
