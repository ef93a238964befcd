"""The controller node's lifecycle callbacks (rclpy.lifecycle): configure to shutdown.

A mixin of :class:`~wbc_control.ros.controller_node.ControllerNode`, which builds and releases
what the transitions need (`_configure`, `_release`) and holds `_loop` and `_settings`.
"""

import traceback

from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn

from wbc_control.exceptions import WbcError

SUCCESS = TransitionCallbackReturn.SUCCESS
FAILURE = TransitionCallbackReturn.FAILURE


class LifecycleCallbacks:
    """configure, activate, deactivate, cleanup, shutdown and error, as the node logs them."""

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Load the model, validate the parameters, create the topics: inactive."""
        self._configuring = True
        try:
            self._configure()
        except Exception as error:  # noqa: BLE001  (whatever failed, the node stays unconfigured)
            self._release()
            self._failure = error
            if not self._starting:  # at start-up, run_node reports it
                self._report('configure failed', error)
            return FAILURE
        finally:
            self._configuring = False
        return SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Command from the next joint state on, with the soft start from that state."""
        self._loop.activate()
        ramp = self._settings.soft_start_time
        soft_start = f', soft start over {ramp:g} s' if ramp > 0.0 else ''
        self.get_logger().info(f'active: commanding from the next joint state{soft_start}')
        return SUCCESS

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Ramp to the safe command over `soft_stop_time`, then publish nothing."""
        kind = self._settings.stale_command
        if self._loop.deactivate():
            self.get_logger().info(
                f'deactivating: ramping to the {kind} command over '
                f'{self._settings.soft_stop_time:g} s, then publishing nothing'
            )
        else:
            self.get_logger().info('inactive: publishing nothing')
        return SUCCESS

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release what configure built; the parameters stay declared, with their values."""
        self._release()
        self.get_logger().info('cleaned up: unconfigured')
        return SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Send the safe command if commanding (no task torque left standing); release all."""
        loop = self._loop
        if loop is not None and loop.commanding and loop.last_command_s is not None:
            self._publish(loop.safe_torque(), self.get_clock().now())
            self.get_logger().info(f'shutting down: sent the {loop.stale_command} command')
        self._release()
        return SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """A transition raised: release what configure built and be unconfigured."""
        self._release()
        self.get_logger().error('a transition failed: released everything, unconfigured')
        return SUCCESS

    def _report(self, what: str, error: Exception) -> None:
        """Log a failure: our named errors as one line, anything else with its traceback."""
        if isinstance(error, WbcError):
            self.get_logger().error(f'{what}: {error}')
            return
        trace = ''.join(traceback.format_exception(error))
        self.get_logger().error(f'{what}: please report this traceback\n{trace}')
