"""MuJoCo's warnings handed to the program instead of written to MUJOCO_LOG.TXT.

MuJoCo reports a warning (a model it compiled while ignoring a setting, such as a joint whose
limits are equal; a simulation that became unstable) through one hook for the whole process,
and with no hook set appends the text to MUJOCO_LOG.TXT in the working directory: a file a
user of the simulator node never reads, left wherever the node was started.
"""

from collections.abc import Callable

import mujoco


def route_warnings(
    handler: Callable[[str], None] | None,
) -> Callable[[str], None] | None:
    """Give the text of every MuJoCo warning to `handler` (None: MuJoCo's file again).

    The hook is the process's: the last call wins. Returns the handler it replaces, for the
    caller to put back when it is done.
    """
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(handler)
    return previous


def warning_key(text: str) -> str:
    """The part of a warning's text that names its kind (the simulation time left out).

    MuJoCo's run-time warnings end with the time they occurred (`... Time = 0.1230.`), so
    that the same warning would never count as a repeat.
    """
    return text.split(' Time = ')[0]
