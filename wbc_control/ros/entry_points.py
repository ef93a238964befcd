"""The nodes' console scripts (setup.py): a stop signal during the start-up imports is quiet.

Importing a node pulls in rclpy, numpy, scipy, Pinocchio (and MuJoCo for the simulator): a second
or more on a loaded machine. ``ros2 launch`` sends SIGINT to every node when one of them fails to
start, so the signal often lands inside those imports, before :func:`runtime.run_node` has
installed its handlers; Python's default handler would print a KeyboardInterrupt traceback from
deep inside scipy. Nothing needs cleaning up at that point (rclpy is not initialised, no DDS
entity exists), so the process simply ends with code 0, as after any requested stop.

Once the node has stopped, the process ends without the interpreter's teardown
(:func:`runtime.end_process`).

Before the node's module is imported, BLAS is made single-threaded unless the user set a thread
count (:mod:`wbc_control.blas_threads`): multithreaded BLAS on a busy machine turns the tick's
small solves into millisecond stalls.
"""

import importlib
import os
import signal

from wbc_control.blas_threads import use_one_thread


def _stop_during_imports(number: int, frame: object) -> None:
    os._exit(0)


def _run(module: str) -> None:
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, _stop_during_imports)
    # run_node replaces these handlers with its own before it initialises rclpy.
    use_one_thread()  # before numpy and scipy load their BLAS
    try:
        importlib.import_module(module).main()
    except SystemExit as stop:
        # The node is gone and rclpy shut down: end without the interpreter's slow teardown.
        importlib.import_module('wbc_control.ros.runtime').end_process(stop.code)


def controller() -> None:
    """``wbc_controller``."""
    _run('wbc_control.ros.controller_node')


def sim() -> None:
    """``wbc_sim``."""
    _run('wbc_control.ros.sim_node')


def diagnostics() -> None:
    """``wbc_diagnostics``."""
    _run('wbc_control.ros.diagnostics_node')
