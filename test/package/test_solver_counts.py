"""dev/solver_counts.py: the cascade's solver calls per tick on the built-in scenarios' states.

Every tick solves one cascade with nothing soft; a fallback cascade, a DAQP or quadprog call
without a solution is counted among the calls of its kind, never more often than they.
"""

import subprocess

from dev_scripts import run_dev_script
import pytest


def counts(robot: str, states: int) -> dict[str, tuple[float, int]]:
    output = run_dev_script(
        'solver_counts.py', '--robot', robot, '--states', str(states), timeout=600
    )
    lines = output.splitlines()
    assert lines[0] == f'{robot}: {states} ticks, per tick (total)'
    table = {}
    for line in lines[1:]:
        name, per_tick, total = line.rsplit(maxsplit=2)
        table[name.strip()] = (float(per_tick), int(total.strip('()')))
        assert float(per_tick) == pytest.approx(table[name.strip()][1] / states, abs=1e-3)
    return table


def test_the_talos_states_count_each_solver_call_and_fallback_cascade():
    table = counts('talos', 6)
    assert table['cascades, soft: none'][1] == 6
    assert table['DAQP calls'][1] >= 6  # its states need QPs
    failed = sum(total for name, (_, total) in table.items() if name.startswith('DAQP no'))
    assert failed <= table['DAQP calls'][1]
    quadprog = table.get('quadprog calls', (0.0, 0))[1]
    assert table.get('quadprog no solution', (0.0, 0))[1] <= quadprog <= failed
    softened = sum(total for name, (_, total) in table.items() if 'soft: ' in name)
    assert softened >= 6


def test_the_panda_states_need_no_fallback_and_a_count_of_no_states_is_refused():
    table = counts('panda', 4)
    assert table['cascades, soft: none'][1] == 4
    assert not any(name.startswith('cascades, soft: j') for name in table)
    with pytest.raises(subprocess.CalledProcessError):
        run_dev_script('solver_counts.py', '--states', '0', timeout=120)
