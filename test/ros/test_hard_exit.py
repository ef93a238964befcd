"""`HardExit`: the message and the exit code at the set time, while a C call holds the GIL."""

import subprocess
import sys
import textwrap

ARMED = textwrap.dedent(
    """
    import ctypes, sys, time
    from wbc_control.ros.hard_exit import HardExit

    code, then = int(sys.argv[1]), sys.argv[2]
    held = HardExit(time.monotonic() + 0.5, code, "ending: 'quoted' $HOME `id` \\\\ as written")
    assert held.arm()
    if then == 'cancel':
        held.cancel()
        time.sleep(1.0)  # past the time it was set for
        print('ran on', flush=True)
        sys.exit(3)
    ctypes.PyDLL(None).sleep(30)  # a C call that keeps the GIL: no Python thread runs
    """
)


def run(code: int, then: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, '-c', ARMED, str(code), then], capture_output=True, text=True, timeout=30
    )


def test_it_ends_a_process_whose_gil_is_held_with_its_code_and_message():
    for code in (0, 7):
        done = run(code, 'hold')
        assert done.returncode == code, done.stderr
        assert done.stderr.splitlines() == ["ending: 'quoted' $HOME `id` \\ as written"]


def test_a_cancelled_one_does_nothing():
    done = run(0, 'cancel')
    assert done.returncode == 3, done.stderr
    assert done.stdout == 'ran on\n' and done.stderr == ''
