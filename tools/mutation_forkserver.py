"""Fork server for `tools/mutation_test.py`: import once, fork one pytest run per mutant.

Started in a copy of the repository (``python mutation_forkserver.py TREE``), it imports what
no mutant changes (numpy, scipy, numba, Pinocchio, Hypothesis, pytest and the robot model,
not `RobotState` with its compiled M⁻¹ nor the test suite's `robots` helper, which imports
the controller), then reads one JSON request per line: ``{"argv": [...], "timeout": s,
"log": path, "cap": max Hypothesis examples, "environment": {name: value}}``. For each it
forks; the child sets the environment (numba's configuration re-read from it, so
``NUMBA_DISABLE_JIT=1`` takes effect for the modules it imports next), runs
``pytest.main(argv)`` in TREE with its output in ``log`` and imports the mutated modules fresh
from disk (the parent never imports them). The parent answers with one JSON line
``{"code": exit code, or null on timeout}``.
"""

import json
import os
from pathlib import Path
import signal
import sys
import time

#: Must stay unimported in the parent: the mutants live there (and `robot_state`, which
#: imports the compiled M⁻¹ of `model.mass_inverse`).
MUTATED_PACKAGES = (
    'wbc_control.control',
    'wbc_control.tasks',
    'wbc_control.model.mass_inverse',
    'wbc_control.model.robot_state',
)


def preload(tree: Path) -> None:
    """Import the libraries and helpers every run needs, never the mutated packages."""
    sys.path[:0] = [str(tree / 'test'), str(tree), str(tree / 'tools')]
    import eigenpy  # noqa: F401
    import hypothesis  # noqa: F401
    import numba  # noqa: F401
    import numpy  # noqa: F401
    import pinocchio  # noqa: F401
    import pytest  # noqa: F401
    import scipy.linalg  # noqa: F401

    import wbc_control.model.robot_model  # noqa: F401

    leaked = [m for m in sys.modules if m.startswith(MUTATED_PACKAGES)]
    assert not leaked, f'the fork server imported mutated modules: {leaked}'


def run_child(
    tree: Path, argv: list[str], log: str, cap: int, environment: dict[str, str]
) -> None:
    """In the forked child: pytest in `tree`, output to `log`, then exit with its code."""
    from numba.core import config
    import pytest

    os.environ.update(environment)
    os.environ['WBC_MUTATION_MAX_EXAMPLES'] = str(cap)
    config.reload_config()  # numba read its configuration when the parent imported it
    os.chdir(tree)
    descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(descriptor, 1)
    os.dup2(descriptor, 2)
    code = 3
    try:
        code = int(pytest.main(argv))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def wait(pid: int, timeout_s: float) -> int | None:
    """The child's exit code, or None after killing it at `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.05)


def main() -> None:
    """Serve requests from stdin until it closes."""
    tree = Path(sys.argv[1]).resolve()
    preload(tree)
    print(json.dumps({'ready': True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            run_child(
                tree,
                request['argv'],
                request['log'],
                request.get('cap', 0),
                request.get('environment', {}),
            )
        print(json.dumps({'code': wait(pid, request['timeout'])}), flush=True)


if __name__ == '__main__':
    main()
