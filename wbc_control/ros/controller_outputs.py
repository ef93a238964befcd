"""The controller node's outputs: the command per tick, the watchdog's safe command, /diagnostics.

A mixin of :class:`~wbc_control.ros.controller_node.ControllerNode`; the work is in
:class:`~wbc_control.control.loop.controller_loop.ControllerLoop` and the status texts in
:mod:`wbc_control.ros.controller_status`. A watchdog on the steady clock sends the safe command
while no tick ran for `joint_state_timeout` s.
"""

import time

import numpy as np
from rclpy.time import Time

from wbc_control.control.loop import controller_checks as checks
from wbc_control.control.loop.controller_loop import Mode
from wbc_control.inputs.joint_states import JointSample
from wbc_control.inputs.odometry import BaseSample
from wbc_control.ros import controller_status as status
from wbc_control.ros import messages
from wbc_control.ros.controller_topics import JOINT_STATE_TOPIC, ODOM_TOPIC


class CommandOutput:
    """The tick, the command publisher, the watchdog and the diagnostics timer's callbacks."""

    def _tick(self, joints: JointSample, base: BaseSample | None, now: Time) -> None:
        """One tick: compute and publish (the safe command if the torque is unusable)."""
        pose, twist = (None, None) if base is None else (base.pose, base.twist)
        seconds = now.nanoseconds * 1e-9
        # References at the instant the state was measured (its stamp; stamp 0: now).
        self._task_inputs.apply(joints.stamp_s if joints.stamp_s > 0.0 else seconds)
        self._watchdog_timer.reset()  # its checks restart from this state's receipt
        outcome = self._loop.tick(joints.positions, joints.velocities, pose, twist, seconds)
        self._publish(outcome.torque, now)
        logger = self.get_logger()
        if outcome.resumed:
            inputs = 'joint states and odom' if self._robot.floating_base else 'joint states'
            logger.info(f'{inputs} back: control resumed')
        for name, target in outcome.held:
            logger.info(
                f'task {name}: no target configured, holding the measured {target.round(4)}'
            )
        if outcome.homing:
            logger.info(outcome.homing)
        if outcome.error:
            self._throttled.error('tick', outcome.error)
        new_bug = outcome.bug is not None and outcome.error not in self._traced
        if new_bug and len(self._traced) < 10:
            self._traced.add(outcome.error)  # a bug's traceback once, not per tick
            logger.error(f'{outcome.error}: please report this traceback\n{outcome.trace}')
        if outcome.stopped:
            logger.info(
                f'soft stop done: the {self._settings.stale_command} command went out last; '
                'publishing nothing until activated'
            )

    def _publish(self, torque: np.ndarray, now: Time) -> None:
        self._publisher.publish(
            messages.fill_command(self._command, torque[self._settings.command_index])
        )
        self._loop.sent(now.nanoseconds * 1e-9)

    def _on_watchdog(self) -> None:
        """While no tick is fresh, publish the safe command, never the last one."""
        if self._loop is None:  # released by cleanup after this call was queued
            return
        now = self.get_clock().now()
        was_stale, stopping = self._loop.stale, self._loop.mode is Mode.STOPPING
        if not self._loop.watchdog(now.nanoseconds * 1e-9):
            return
        kind = self._settings.stale_command
        if not was_stale:
            waited = self._waited(self._loop.state_age(now.nanoseconds * 1e-9), 3)
            self.get_logger().warning(f'{waited}: publishing the {kind} safe command')
            self._pairing.stale()
        self._publish(self._loop.safe_torque(), now)
        if stopping:
            self.get_logger().info(
                f'soft stop ended by the watchdog with the {kind} command; publishing nothing '
                'until activated'
            )

    def _waited(self, age: float | None, digits: int) -> str:
        """What the watchdog is waiting for, e.g. 'no valid joint state for 0.2 s on /js'."""
        odom = self.resolve_topic_name(ODOM_TOPIC) if self._robot.floating_base else None
        return status.waited(age, digits, self.resolve_topic_name(JOINT_STATE_TOPIC), odom)

    def _checks(self) -> dict[str, checks.Check]:
        """The controller's checks now ({name: check}, the contacts only with contacts)."""
        now_s = self.get_clock().now().nanoseconds * 1e-9
        age = self._loop.state_age(now_s)
        base_age = self._pairing.base_age(now_s) if self._robot.floating_base else None
        clock_hint = self._decoder.clock_hint or self._odom_decoder.clock_hint
        return status.controller_checks(
            self._loop, self._settings, self._waited(age, 2), age, base_age, clock_hint
        )

    def _on_diagnostics(self) -> None:
        """Publish the checks on /diagnostics and start the statistics' next period."""
        if self._loop is None:
            return
        stamp = self.get_clock().now().to_msg()
        message = status.diagnostic_array(stamp, self.get_name(), self._robot.name, self._checks())
        self._diagnostics.publish(message)
        self._loop.statistics.start_period(time.monotonic())
