"""The nodes' console scripts run BLAS with one thread unless the user chose a count.

A probe module started through the same entry-point function as ``wbc_controller`` reads the
thread count of every OpenBLAS that numpy and scipy loaded, through OpenBLAS's own
``*_get_num_threads`` (what the tick's solves use, not just the environment).
"""

import json
import os
from pathlib import Path
import subprocess
import sys

from wbc_control.blas_threads import BLAS_THREAD_VARIABLES

PROBE = """
import ctypes, json, os
import numpy, scipy.linalg  # both load their BLAS


def main():
    counts = {}
    for line in open('/proc/self/maps'):
        path = line.split()[-1]
        if 'openblas' not in path.lower() or path in counts:
            continue
        library = ctypes.CDLL(path)
        for name in %r:
            if hasattr(library, name):
                counts[path] = getattr(library, name)()
                break
    variables = {name: os.environ.get(name) for name in %r}
    print(json.dumps({'threads': counts, 'variables': variables}))
"""
GETTERS = (
    'openblas_get_num_threads',
    'openblas_get_num_threads64_',
    'scipy_openblas_get_num_threads64_',
    'scipy_openblas_get_num_threads',
)


def run_probe(tmp_path: Path, **variables: str) -> dict:
    """The probe's report, run as the console scripts run a node (`entry_points._run`)."""
    (tmp_path / 'blas_probe.py').write_text(PROBE % (GETTERS, BLAS_THREAD_VARIABLES))
    environment = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    environment.update(variables)
    environment['PYTHONPATH'] = os.pathsep.join(
        [str(tmp_path), *filter(None, [environment.get('PYTHONPATH')])]
    )
    script = "from wbc_control.ros.entry_points import _run; _run('blas_probe')"
    command = [sys.executable, '-c', script]
    done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_node_runs_blas_on_one_thread(tmp_path):
    report = run_probe(tmp_path)
    assert report['threads'], 'no OpenBLAS with a thread-count getter found in the process'
    assert set(report['threads'].values()) == {1}, report
    assert set(report['variables'].values()) == {'1'}


def test_a_thread_count_the_user_set_is_kept(tmp_path):
    report = run_probe(tmp_path, OPENBLAS_NUM_THREADS='2')
    assert report['variables'] == {
        'OPENBLAS_NUM_THREADS': '2',
        'OMP_NUM_THREADS': None,
        'MKL_NUM_THREADS': None,
    }
    if len(os.sched_getaffinity(0)) >= 2:  # OpenBLAS never runs more threads than cores
        assert 2 in report['threads'].values(), report
