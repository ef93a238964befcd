"""MuJoCo's passive viewer for the simulator, when a display exists (no ROS)."""

import os
import time

from wbc_control.exceptions import WbcError
from wbc_control.sim.simulation import MujocoSimulation

#: The window is redrawn at most this often (wall time), whatever the physics rate.
SYNC_PERIOD_S = 1.0 / 60.0


class ViewerUnavailable(WbcError):
    """No viewer can be opened; the simulation runs headless."""


class Viewer:
    """A passive viewer window on a simulation, redrawn at most every :data:`SYNC_PERIOD_S`."""

    def __init__(self, sim: MujocoSimulation) -> None:
        """Open the window.

        Raises:
            ViewerUnavailable: no display, or MuJoCo's viewer failed to start.
        """
        if not (os.environ.get('DISPLAY') or os.environ.get('WAYLAND_DISPLAY')):
            raise ViewerUnavailable('viewer requested but no display is available')
        try:
            import mujoco.viewer

            self._handle = mujoco.viewer.launch_passive(sim.model, sim.data)
        except Exception as error:  # noqa: BLE001 - a GUI failure must not stop the simulation
            raise ViewerUnavailable(f'cannot open the MuJoCo viewer ({error})') from error
        self._synced_s = 0.0

    def sync(self) -> bool:
        """Redraw if due; False once the user has closed the window."""
        now = time.monotonic()
        if now - self._synced_s < SYNC_PERIOD_S:
            return True
        self._synced_s = now
        if not self._handle.is_running():
            return False
        self._handle.sync()
        return True

    def close(self) -> None:
        """Close the window."""
        self._handle.close()
