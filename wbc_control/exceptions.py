"""Typed errors raised by the wbc_control core.

Every user-facing mistake has its own class carrying the offending value, so that a node can turn
it into a precise log line (at start-up: a non-zero exit; at runtime: a rejected update).
"""

from collections.abc import Sequence


class WbcError(Exception):
    """Root of every error raised by wbc_control."""


class ModelError(WbcError):
    """The robot model could not be built (missing or malformed URDF)."""


class FrameNotFound(WbcError):
    """A frame name does not exist in the robot model."""

    def __init__(self, name: str, available: Sequence[str]) -> None:
        self.name = name
        self.available = list(available)
        super().__init__(
            f"frame '{name}' is not in the robot model; available frames: "
            f'{", ".join(self.available)}'
        )


class JointNotFound(WbcError):
    """One or more joint names do not exist in the robot model."""

    def __init__(self, names: Sequence[str], available: Sequence[str]) -> None:
        self.names = list(names)
        self.available = list(available)
        super().__init__(
            f'joint(s) {", ".join(repr(n) for n in self.names)} not in the robot model; '
            f'available joints: {", ".join(self.available)}'
        )


class MissingJoints(WbcError):
    """A joint state lacks some of the model's joints."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        super().__init__(f'joint state lacks joint(s) {", ".join(repr(n) for n in self.names)}')


class InvalidShape(WbcError, ValueError):
    """An array has the wrong length or shape."""


class InvalidValue(WbcError, ValueError):
    """A value is non-finite or out of its allowed range (gains, weights, thresholds)."""


class InvalidTaskConfig(WbcError, ValueError):
    """A task description is inconsistent (unknown type, bad constraint, bad axis)."""


class SingularConstraint(WbcError):
    """The block matrix [M A^T; A 0] is not invertible (Johnson 2024, condition eq 32)."""


class StartupError(WbcError):
    """A node cannot start with the parameters it was given."""
