"""The controller's /diagnostics message: formats the checks of :mod:`controller_checks`.

Nothing is decided here: levels and summaries come from
:mod:`wbc_control.control.controller_checks`; this module turns them into
diagnostic_msgs/DiagnosticStatus named "<node>: <check>" with the robot as hardware id.
"""

from collections.abc import Mapping

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
import numpy as np

from wbc_control.control.controller_checks import Check, Severity

_LEVELS = {
    Severity.OK: DiagnosticStatus.OK,
    Severity.WARN: DiagnosticStatus.WARN,
    Severity.ERROR: DiagnosticStatus.ERROR,
}


def diagnostic_status(node: str, hardware_id: str, name: str, check: Check) -> DiagnosticStatus:
    """One check as a DiagnosticStatus "<node>: <name>"."""
    return DiagnosticStatus(
        level=_LEVELS[check.severity],
        name=f'{node}: {name}',
        message=check.summary,
        hardware_id=hardware_id,
        values=[
            KeyValue(key=key, value=format_value(value)) for key, value in check.values.items()
        ],
    )


def diagnostic_array(
    stamp: Time, node: str, hardware_id: str, checks: Mapping[str, Check]
) -> DiagnosticArray:
    """Every check of one period in one DiagnosticArray."""
    message = DiagnosticArray()
    message.header.stamp = stamp
    message.status = [
        diagnostic_status(node, hardware_id, name, check) for name, check in checks.items()
    ]
    return message


def format_value(value: object) -> str:
    """Floats to 6 significant digits, everything else as str()."""
    if isinstance(value, float | np.floating):
        return f'{value:.6g}'
    return str(value)
