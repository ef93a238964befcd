"""The demo's node processes: started from their console scripts, waited for, spun until done."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
import signal
import subprocess
import sys
import time

import rclpy
from rclpy.node import Node
import yaml

from wbc_control.ros.runtime import executable

STALL_TIMEOUT_S = 20.0
#: The lock-stepped simulator is silent until the controller connects, which on a loaded
#: machine can take far longer than a stall between two states.
START_TIMEOUT_S = 120.0


@dataclass
class ManagedProcess:
    """A node process and the file its output goes to."""

    name: str
    process: subprocess.Popen
    log: Path

    def stop(self) -> None:
        """SIGINT, then SIGKILL if it does not exit within 10 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(10.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def tail(self, lines: int = 15) -> str:
        """The last lines of its output."""
        return '\n'.join(self.log.read_text(errors='replace').splitlines()[-lines:])


def start_node(
    script: str, parameters: dict, directory: Path, arguments: Sequence[str] = ()
) -> ManagedProcess:
    """Write `<script>.yaml` and start the node with it (and further `--ros-args`)."""
    params_file = directory / f'{script}.yaml'
    params_file.write_text(yaml.safe_dump({script: {'ros__parameters': parameters}}))
    log = directory / f'{script}.log'
    process = subprocess.Popen(
        [executable(script), '--ros-args', '--params-file', str(params_file), *arguments],
        stdout=log.open('w'),
        stderr=subprocess.STDOUT,
    )
    return ManagedProcess(script, process, log)


def wait_for_simulator(monitor: Node, sim: ManagedProcess) -> bool:
    """Spin until the monitor's joint_states subscription has matched the simulator."""
    return wait_for_publisher(monitor, monitor.joint_state_publishers, sim)


def wait_for_publisher(monitor: Node, publishers: Callable[[], int], node: ManagedProcess) -> bool:
    """Spin `monitor` until `publishers()` > 0; False if `node` exits or never comes up."""
    return wait_until(monitor, lambda: publishers() > 0, [node])


def wait_until(
    monitor: Node,
    done: Callable[[], bool],
    processes: Sequence[ManagedProcess],
    after_spin: Callable[[], None] | None = None,
    spin_s: float = 0.05,
) -> bool:
    """Spin `monitor` until `done()`; False if one of `processes` exits or START_TIMEOUT_S pass.

    `after_spin` runs after every spin of at most `spin_s`. On failure the process that exited
    (else the last of `processes`) is named with its last output.
    """
    deadline = time.monotonic() + START_TIMEOUT_S
    while not done():
        rclpy.spin_once(monitor, timeout_sec=spin_s)
        if after_spin is not None:
            after_spin()
        dead = [process for process in processes if process.process.poll() is not None]
        if dead or time.monotonic() > deadline:
            culprit = dead[0] if dead else processes[-1]
            print(f'wbc_demo: {culprit.name} did not come up; its last output:\n{culprit.tail()}')
            return False
    return True


def spin_until(
    monitor: Node,
    processes: list[ManagedProcess],
    duration: float,
    status: Callable[[], str],
    after_spin: Callable[[], None] | None = None,
    stall_timeout: float = STALL_TIMEOUT_S,
) -> bool:
    """Spin `monitor` until `duration` sim seconds; False if a node died or the loop stalled.

    `monitor` has `sim_time`, `last_state_wall` and `started()` (a state recorded); `status`
    is the progress line printed every 0.5 sim s, `after_spin` runs after every spin.
    `stall_timeout` (wall s) bounds the wait for the next state once one was recorded.
    """
    last_print = -1.0
    monitor.last_state_wall = time.monotonic()
    while monitor.sim_time < duration - 1e-9:
        rclpy.spin_once(monitor, timeout_sec=0.05)
        if after_spin is not None:
            after_spin()
        dead = [p for p in processes if p.process.poll() is not None]
        limit = stall_timeout if monitor.started() else START_TIMEOUT_S
        if dead or time.monotonic() - monitor.last_state_wall > limit:
            culprit = dead[0] if dead else processes[0]
            reason = f'{culprit.name} exited' if dead else f'no state for {limit:.0f} s'
            print(f'\nwbc_demo: {reason}; last output of {culprit.name}:\n{culprit.tail()}')
            return False
        if monitor.sim_time - last_print >= 0.5:
            last_print = monitor.sim_time
            print(f'\r  t = {monitor.sim_time:5.2f} / {duration:.1f} s   {status()}', end='')
            sys.stdout.flush()
    return True
