"""The task types a configuration can name: the `type` string -> the task class.

Adding a task type is one new file with a :class:`~wbc_control.tasks.task.Task` subclass (its
`TYPE`, `FIELDS`, sizes, target checks and `target_from_state` on the class) and one line here.
"""

from wbc_control.tasks.com import ComTask
from wbc_control.tasks.frame_orientation import FrameOrientationTask
from wbc_control.tasks.frame_pose import FramePoseTask
from wbc_control.tasks.frame_position import FramePositionTask
from wbc_control.tasks.joint_posture import JointPostureTask
from wbc_control.tasks.task import Task

TASK_TYPES: dict[str, type[Task]] = {
    FramePositionTask.TYPE: FramePositionTask,
    FrameOrientationTask.TYPE: FrameOrientationTask,
    FramePoseTask.TYPE: FramePoseTask,
    ComTask.TYPE: ComTask,
    JointPostureTask.TYPE: JointPostureTask,
}
