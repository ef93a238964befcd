"""Operational-space tasks: each gives J, J̇v, error and desired acceleration."""

from wbc_control.tasks.com import ComTask
from wbc_control.tasks.frame_orientation import FrameOrientationTask
from wbc_control.tasks.frame_pose import FramePoseTask
from wbc_control.tasks.frame_position import FramePositionTask, TargetSet
from wbc_control.tasks.joint_posture import JointPostureTask
from wbc_control.tasks.registry import TASK_TYPES
from wbc_control.tasks.task import PDGains, Task, TaskTerms

__all__ = [
    'ComTask',
    'FrameOrientationTask',
    'FramePoseTask',
    'FramePositionTask',
    'JointPostureTask',
    'PDGains',
    'TASK_TYPES',
    'TargetSet',
    'Task',
    'TaskTerms',
]
