"""The controller node's subscriptions: joint states and odometry decoded into ticks.

A mixin of :class:`~wbc_control.ros.controller_node.ControllerNode`. Each accepted
`joint_states` sample is one tick (paired with `odom` first on a floating base); a rejected
sample is logged (throttled) and counted. A jump of the node's clock or of a publisher's
stamps backwards restarts the input rules, the watchdog and the soft start
(:mod:`wbc_control.inputs.timing`).
"""

from nav_msgs.msg import Odometry
from rclpy.clock import TimeJump
from sensor_msgs.msg import JointState

from wbc_control.inputs.joint_states import JointStateRejected
from wbc_control.inputs.odometry import OdometryRejected
from wbc_control.ros import messages
from wbc_control.ros.controller_topics import JOINT_STATE_TOPIC, ODOM_TOPIC


class StateInputs:
    """The joint-state and odometry callbacks, the clock-jump callback and rejections."""

    def _on_joint_state(self, msg: JointState) -> None:
        """Decode; tick now (fixed base) or when the pairing rule has both halves."""
        if self._loop is None or not self._loop.commanding:  # inactive: nothing ticks
            return
        stamp, now = messages.stamp_seconds(msg.header), self.get_clock().now()
        try:
            sample = self._decoder.decode(
                msg.name, msg.position, msg.velocity, stamp, now.nanoseconds * 1e-9
            )
        except JointStateRejected as rejection:
            self._restart_if(rejection.restarted, JOINT_STATE_TOPIC)
            self._reject(
                f'joint_states.{rejection.reason}',
                f'joint_states rejected: {rejection}',
                rejection.hint,
            )
            return
        self._restart_if(sample.restarted, JOINT_STATE_TOPIC)
        if not self._robot.floating_base:
            self._tick(sample, None, now)
            return
        pair = self._pairing.add_joints(sample, now.nanoseconds * 1e-9)
        if pair is not None:
            self._tick(pair.joints, pair.base, now)

    def _on_odom(self, msg: Odometry) -> None:
        """Decode the base state; tick if it completes a pair (`odom_pairing: stamp`)."""
        if self._loop is None or not self._loop.commanding:
            return
        now = self.get_clock().now()
        try:
            sample = self._odom_decoder.decode(
                *messages.odometry_arrays(msg), now.nanoseconds * 1e-9
            )
        except OdometryRejected as rejection:
            self._restart_if(rejection.restarted, ODOM_TOPIC)
            self._reject(f'odom.{rejection.reason}', f'odom rejected: {rejection}', rejection.hint)
            return
        self._restart_if(sample.restarted, ODOM_TOPIC)
        pair = self._pairing.add_base(sample, now.nanoseconds * 1e-9)
        if pair is not None:
            self._tick(pair.joints, pair.base, now)

    def _restart_if(self, restarted: bool, topic: str) -> None:
        """The clock or the stamps on `topic` jumped back: restart the watchdog and ramp."""
        if restarted:
            self._loop.restart()
            self._throttled.warning(
                f'restart.{topic}',
                f'{self.resolve_topic_name(topic)}: stamps or clock jumped back (publisher or '
                'simulator restart): time rules, watchdog and soft start restarted',
            )

    def _on_clock_jump(self, jump: TimeJump) -> None:
        """The node's clock jumped backwards (or changed type): forget every time reference."""
        self._decoder.reset()
        self._odom_decoder.reset()
        self._loop.restart()
        self.get_logger().warning(
            f'clock jumped by {jump.delta.nanoseconds * 1e-9:.3f} s: input time rules, '
            'watchdog and soft start restarted'
        )

    def _reject(self, key: str, message: str, hint: str = '') -> None:
        """Count a rejected input and log it, throttled per kind of rejection."""
        self._loop.statistics.reject(key)
        if hint:  # the first rejection of stamps on another clock: its cause and fix, once
            self._throttled.warning(key, f'{message}; likely cause: {hint}', always=True)
        else:
            self._throttled.warning(key, message)
