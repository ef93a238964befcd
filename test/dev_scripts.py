"""The repository's dev/ scripts run as a developer runs them, for the tests of their output."""

from pathlib import Path
import subprocess
import sys

DEV = Path(__file__).resolve().parents[1] / 'dev'


def run_dev_script(name: str, *arguments: str, timeout: float) -> str:
    """The standard output of `python dev/<name> <arguments>`, which must exit 0 in `timeout` s."""
    done = subprocess.run(
        [sys.executable, str(DEV / name), *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return done.stdout
