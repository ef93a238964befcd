"""Live parameter changes of the controller node: validated whole, applied from the next tick.

A mixin of :class:`~wbc_control.ros.controller_node.ControllerNode`: the on-set callback plans
the batch (:func:`wbc_control.config.live.plan_live_update`) or refuses it with a reason, the
post-set callback applies the plan.
"""

from rcl_interfaces.msg import SetParametersResult
from rclpy.parameter import Parameter

from wbc_control.config.live import apply_live_update, plan_live_update
from wbc_control.exceptions import WbcError
from wbc_control.ros.parameters import refuse_unknown


class LiveParameters:
    """The node's on-set and post-set parameter callbacks."""

    def _on_set_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """Validate a batch of live changes as a whole; the post-set callback applies it."""
        if self._configuring:  # configure declaring the parameters: it validates them
            return SetParametersResult(successful=True)
        if self._loop is None:
            if any(p.name != 'use_sim_time' for p in parameters):
                return self._refuse(
                    'the node is unconfigured: its parameters are declared by configure (set '
                    'them then, or give them at start-up)'
                )
            return SetParametersResult(successful=True)
        refusal = refuse_unknown(self, self._schema, parameters)
        if refusal is not None:
            return self._refuse(refusal.reason)
        unset = [p.name for p in parameters if p.type_ == Parameter.Type.NOT_SET]
        if unset:
            return self._refuse(f'{unset[0]}: cannot be unset at runtime')
        changes = {p.name: p.value for p in parameters if p.name != 'use_sim_time'}
        try:
            self._planned = plan_live_update(
                self._robot, self._loop.controller, self._settings, changes
            )
        except WbcError as error:
            return self._refuse(str(error))
        return SetParametersResult(successful=True)

    def _on_parameters_set(self, parameters: list[Parameter]) -> None:
        """Apply what the on-set callback validated."""
        planned, self._planned = self._planned, None
        if planned is None:
            return
        apply_live_update(self._loop.controller, planned)
        self._settings = planned.settings
        self._loop.stale_command = planned.settings.stale_command
        self._markers.set_rate(planned.settings.markers_rate)
        self._loop.set_payload(planned.settings.payload)
        changed = ', '.join(parameter.name for parameter in parameters)
        self.get_logger().info(f'parameters changed: {changed}')

    def _refuse(self, reason: str) -> SetParametersResult:
        self._planned = None
        self.get_logger().warning(f'parameter change rejected: {reason}')
        return SetParametersResult(successful=False, reason=reason)
