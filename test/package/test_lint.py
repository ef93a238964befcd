"""Lint with ruff, configured in ruff.toml like ament_flake8 / ament_pep257 (99 columns)."""

import importlib.util
from pathlib import Path
import subprocess
import sys

import pytest

REPO = Path(__file__).resolve().parents[2]
LINTED = ['wbc_control', 'test', 'launch', 'setup.py']


def ruff(*args: str) -> subprocess.CompletedProcess:
    paths = [name for name in LINTED if (REPO / name).exists()]
    return subprocess.run(
        [sys.executable, '-m', 'ruff', *args, '--no-cache', *paths],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    'args',
    [('check', '--output-format', 'concise'), ('format', '--check')],
    ids=['check', 'format'],
)
def test_ruff_is_clean(args: tuple[str, ...]) -> None:
    if importlib.util.find_spec('ruff') is None:
        pytest.skip('ruff is not installed (pip install ruff)')
    result = ruff(*args)
    if result.returncode != 0:
        pytest.fail(
            f'ruff {args[0]} found problems (fix with `ruff check --fix` / `ruff format`):\n'
            f'{result.stdout}{result.stderr}',
            pytrace=False,
        )
