"""Helpers for tests that run wbc_control nodes as real processes over real DDS.

`NodeProcess` starts a console script (`wbc_controller`, ...) with `--ros-args`, and
`RosProbe` is an rclpy node in the test process that publishes and subscribes and spins until
a condition holds or a timeout expires.
"""

from collections.abc import Callable, Iterator, Sequence
import os
from pathlib import Path
import signal
import subprocess
import tempfile
import time

import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile
import yaml

from wbc_control.model.example_robots import example_robot_urdf
from wbc_control.ros.runtime import executable

__all__ = ['NodeProcess', 'RosProbe', 'executable', 'start_panda_node', 'write_params']

#: The shipped configurations.
CONFIG = Path(__file__).resolve().parents[1] / 'config'


def write_params(node_name: str, parameters: dict) -> Path:
    """Write a `ros__parameters` YAML file for one node and return its path."""
    handle = tempfile.NamedTemporaryFile('w', suffix='.yaml', delete=False)
    with handle:
        yaml.safe_dump({node_name: {'ros__parameters': parameters}}, handle)
    return Path(handle.name)


def start_panda_node(
    script: str, config: str, *overrides: str, prefix: Sequence[str] = ()
) -> 'NodeProcess':
    """`script` started with the shipped `config`, Panda's URDF and `name:=value` overrides.

    `prefix` is a command the script runs under (`chrt -f 50`, ...).
    """
    arguments = ['--params-file', str(CONFIG / config)]
    for override in (f'urdf_path:={example_robot_urdf("panda")[0]}', *overrides):
        arguments += ['-p', override]
    return NodeProcess(script, extra_args=arguments, prefix=prefix).__enter__()


class NodeProcess:
    """A node started from its console script; use as a context manager."""

    def __init__(
        self,
        script: str,
        parameters: dict | None = None,
        node_name: str | None = None,
        extra_args: list[str] | None = None,
        cwd: Path | None = None,
        environment: dict[str, str] | None = None,
        prefix: Sequence[str] = (),
    ) -> None:
        args = [*prefix, executable(script), '--ros-args']
        if parameters:
            args += ['--params-file', str(write_params(node_name or script, parameters))]
        args += extra_args or []
        self.args, self.cwd = args, cwd
        self.environment = environment or {}
        self.process: subprocess.Popen | None = None
        self._log = tempfile.NamedTemporaryFile('w+', suffix='.log', delete=False)

    def __enter__(self) -> 'NodeProcess':
        self.process = subprocess.Popen(
            self.args,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.environment},
            cwd=self.cwd,
        )
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def alive(self) -> bool:
        """True while the process runs."""
        return self.process is not None and self.process.poll() is None

    def stop(self, sig: int = signal.SIGINT, timeout: float = 10.0) -> int:
        """Send `sig` and wait; kill if it does not exit. Returns the exit code."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def wait(self, timeout: float = 20.0) -> int:
        """Wait for the process to exit by itself and return its exit code."""
        assert self.process is not None
        return self.process.wait(timeout)

    def output(self) -> str:
        """Everything the process printed so far."""
        self._log.flush()
        return Path(self._log.name).read_text()


class RosProbe:
    """An rclpy node for tests: publish, subscribe, spin until a condition holds."""

    def __init__(self, name: str = 'test_probe') -> None:
        if not rclpy.ok():
            rclpy.init()
        self.node = Node(name)
        self.messages: dict[str, list] = {}

    def subscribe(self, msg_type, topic: str, qos: QoSProfile | int = 10) -> list:
        """Record every message on `topic`; returns the (live) list."""
        received: list = []
        self.messages[topic] = received
        self.node.create_subscription(msg_type, topic, received.append, qos)
        return received

    def publisher(self, msg_type, topic: str, qos: QoSProfile | int = 10):
        """A publisher on `topic`."""
        return self.node.create_publisher(msg_type, topic, qos)

    def spin_until(self, condition: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Spin until `condition()` is true (returns True) or `timeout` s pass (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return True
            rclpy.spin_once(self.node, timeout_sec=0.01)
        return condition()

    def request(self, send: Callable[[], object], timeout: float, retry: float = 5.0) -> object:
        """The result of the future `send()` returns, sending again every `retry` s.

        A service response can be lost right after discovery (Fast DDS: "failed to send
        response (timeout)" while the client's response reader is not yet matched); for
        requests safe to repeat. None if nothing answers within `timeout` s.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            future = send()
            if self.spin_until(future.done, min(retry, deadline - time.monotonic())):
                return future.result()
        return None

    def spin_for(self, seconds: float) -> None:
        """Spin for a fixed time."""
        self.spin_until(lambda: False, seconds)

    def close(self) -> None:
        """Destroy the node (rclpy stays initialised for other probes)."""
        self.node.destroy_node()


def stamp_s(message) -> float:
    """A stamped message's header time in seconds (simulated time under `use_sim_time`)."""
    return message.header.stamp.sec + 1e-9 * message.header.stamp.nanosec


def named_probe(request: object) -> Iterator[RosProbe]:
    """A RosProbe named after the requesting test module (a pytest fixture's body)."""
    probe = RosProbe(f'{Path(str(request.path)).stem}_probe')
    yield probe
    probe.close()
