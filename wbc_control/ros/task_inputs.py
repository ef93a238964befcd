"""The controller node's per-task inputs: `~/<task>/target` and `~/<task>/trajectory`.

Wiring only. A target message replaces the task's set-point (and ends its trajectory); a
trajectory message is decoded (:mod:`wbc_control.ros.trajectory_messages`) and handed to
:class:`~wbc_control.inputs.trajectory_follower.TaskTrajectories`, which validates it and
builds the interpolation once; every tick :meth:`TaskInputs.apply` writes the references.
A rejected message is logged (throttled) and counted as `targets.<reason>` or
`trajectories.<reason>`, and the reference in force is kept. Multi-DOF trajectories and targets
must be in `world_frame` (or have an empty frame_id).
"""

from collections.abc import Callable
from functools import partial

from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

from wbc_control.exceptions import WbcError
from wbc_control.inputs.trajectory_follower import TaskTrajectories, trajectory_tasks
from wbc_control.inputs.trajectory_points import TrajectoryRejected
from wbc_control.ros import messages
from wbc_control.ros.trajectory_messages import TRAJECTORY_MESSAGES, decode_trajectory

TARGET_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
#: A stream of short trajectories must not lose one behind another.
TRAJECTORY_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)


class TaskInputs:
    """Subscribes every task's target and trajectory topics; see the module docstring.

    Args:
        node: the controller node (subscriptions, clock, robot).
        controller: the prioritized controller whose tasks the topics move.
        world_frame: returns the `world_frame` parameter in force.
        reject: counts and logs a rejection: (statistics key, log message).
    """

    def __init__(
        self,
        node: Node,
        controller,
        robot,
        world_frame: Callable[[], str],
        reject: Callable[[str, str], None],
    ) -> None:
        self._node, self._controller, self._robot = node, controller, robot
        self._world_frame, self._reject = world_frame, reject
        self.trajectories = TaskTrajectories(robot, trajectory_tasks(controller.entries))
        followed = {name for name, _ in trajectory_tasks(controller.entries)}
        for entry in controller.entries:
            name, task = entry.name, entry.task
            message = messages.TARGET_MESSAGES[task.MESSAGE]
            callback = partial(self._on_target, name)
            node.create_subscription(message, f'~/{name}/target', callback, TARGET_QOS)
            if name in followed:
                message = TRAJECTORY_MESSAGES[task.TRAJECTORY]
                callback = partial(self._on_trajectory, name)
                node.create_subscription(message, f'~/{name}/trajectory', callback, TRAJECTORY_QOS)

    def apply(self, now_s: float) -> None:
        """Write the references of the tasks that follow a trajectory (before a tick)."""
        self.trajectories.apply(now_s)

    def _frame_refused(self, name: str, topic: str, kind: str, frame: str) -> bool:
        world = self._world_frame()
        if frame in ('', world):
            return False
        reason = f"frame_id '{frame}' is not the world frame '{world}' (or '')"
        self._reject(f'{kind}.frame', f'~/{name}/{topic} rejected: {reason}')
        return True

    def _on_target(self, name: str, msg) -> None:
        """Replace a task's target from `~/<name>/target`, or reject the message."""
        if self._frame_refused(name, 'target', 'targets', msg.header.frame_id):
            return
        task = self._controller.task(name)
        try:
            target = task.target_from_message(
                self._robot, messages.decode_target(task.MESSAGE, msg)
            )
            task.assign_target(target)
        except WbcError as error:
            self._reject('targets.value', f'~/{name}/target rejected: {error}')

    def _on_trajectory(self, name: str, msg) -> None:
        """Follow `~/<name>/trajectory` from its start time, or reject it."""
        multi_dof = self._controller.task(name).TRAJECTORY != 'joint'
        frame = msg.header.frame_id
        if multi_dof and self._frame_refused(name, 'trajectory', 'trajectories', frame):
            return
        now_s = self._node.get_clock().now().nanoseconds * 1e-9
        try:
            self.trajectories.receive(name, decode_trajectory(msg), now_s)
        except TrajectoryRejected as rejection:
            self._reject(
                f'trajectories.{rejection.reason}', f'~/{name}/trajectory rejected: {rejection}'
            )
