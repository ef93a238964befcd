"""The user tools: console scripts with --help and a README entry; wbc_out_of_reach runs.

No tools/ folder (developer scripts are in dev/); wbc_out_of_reach runs as installed, a
short lock-stepped run per target, and names bad input without a traceback.
"""

from pathlib import Path
import re
import subprocess
import sys

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / 'README.md'
#: The console scripts that are user tools (the nodes are in the README's Executables).
TOOLS = ('wbc_bench', 'wbc_demo', 'wbc_faults', 'wbc_out_of_reach')
ROW = re.compile(r'^(\S+), (\S+), (\S+) \| (\S+) / (\S+) \| (\S+) % \| (\S+) / (\S+)$', re.M)


def script(name: str) -> str:
    """The installed console script `name`, next to this interpreter."""
    path = Path(sys.executable).parent / name
    assert path.exists(), f'{name} is not installed: pip install -e .'
    return str(path)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [script('wbc_out_of_reach'), *args], capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize('name', TOOLS)
def test_each_tool_answers_help_and_has_a_readme_entry(name: str) -> None:
    done = subprocess.run([script(name), '--help'], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('usage:'), done.stdout
    assert f'`{name}' in README.read_text(encoding='utf-8'), f'README.md does not name {name}'


def test_no_tools_folder_and_developer_scripts_in_dev() -> None:
    """User tools are console scripts (above); developer scripts live in dev/."""
    assert not (REPO / 'tools').exists()
    assert (REPO / 'dev' / 'generate_parameter_docs.py').exists()


@pytest.mark.slow
def test_out_of_reach_prints_one_row_per_target_in_order() -> None:
    targets = [[0.6, 0.0, 0.5], [0.9, 0.1, 0.5], [0.3, -0.2, 0.7]]
    args = [word for target in targets for word in ('--target', *map(str, target))]
    done = run(*args, '--seconds', '1')
    assert done.returncode == 0, done.stderr
    rows = [tuple(map(float, row)) for row in ROW.findall(done.stdout)]
    assert [list(row[:3]) for row in rows] == targets, done.stdout
    for row in rows:
        mean_speed, max_speed, saturated, closest, final = row[3:]
        assert 0.0 <= mean_speed <= max_speed, done.stdout
        assert 0.0 <= saturated <= 100.0, done.stdout
        assert 0.0 <= closest <= final, done.stdout
    # 0.9, 0.1, 0.5 is beyond the Panda's reach (0.92 m from its shoulder, 0.855 m arm).
    assert rows[1][-1] > 0.05 > rows[0][-1], done.stdout


@pytest.mark.parametrize(
    ('args', 'named'),
    [
        (['--task', 'no_such_task'], "no task 'no_such_task'"),
        (['--params-file', '/no/such/file.yaml'], '/no/such/file.yaml'),
    ],
)
def test_out_of_reach_names_bad_input_without_a_traceback(args: list[str], named: str) -> None:
    done = run(*args, '--seconds', '0.1')
    assert done.returncode == 1, done.stdout
    assert named in done.stderr and 'Traceback' not in done.stderr, done.stderr
