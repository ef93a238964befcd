"""One BLAS thread for the nodes and the benchmark, unless the user chose a thread count.

The controller's matrices are small (9×9 to 38×38). Multithreaded OpenBLAS wakes its threads
for each product and solve; on a machine whose cores are busy, a woken thread that has to wait
for a core turns a microsecond solve into milliseconds (docs/performance.md). The variables are
read when numpy and scipy load their BLAS, so they must be set before any of them is imported.
This module imports nothing that loads BLAS.
"""

from collections.abc import MutableMapping
import os

BLAS_THREAD_VARIABLES = ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS')


def chosen_by_user(environment: MutableMapping[str, str] = os.environ) -> bool:
    """Whether any BLAS thread count is already set (then it is the user's choice, kept)."""
    return any(name in environment for name in BLAS_THREAD_VARIABLES)


def use_one_thread(environment: MutableMapping[str, str] = os.environ) -> bool:
    """Set every BLAS thread count to 1 unless the user set one; True when set here."""
    if chosen_by_user(environment):
        return False
    environment.update(dict.fromkeys(BLAS_THREAD_VARIABLES, '1'))
    return True
