"""Where numba keeps the compiled kernels: one cache per version of all of their sources.

numba's own on-disk cache (`cache=True`) stays valid while the file of the function it compiled
is unchanged (its modification time and size). A kernel that calls a kernel of another module
has the callee compiled into it, so
after a change to the callee's file alone (an edit, a `git pull`) numba would load the caller's
old machine code, the old callee included, and run it. :func:`kernel` therefore caches every
kernel of this package in a directory named after a hash of all the kernel sources: any change
to any of them starts a new cache, compiled once. The directory is under numba's cache
directory when the user set one (`NUMBA_CACHE_DIR`), else in the package's `__pycache__`;
there the newest :data:`KEPT` caches are kept and older ones removed. Where that directory
cannot be written (a read-only install, whose files do not change), numba falls back to its
per-user cache.
"""

from collections.abc import Callable
from contextlib import suppress
import functools
import hashlib
from pathlib import Path
import shutil
import warnings

import numba
from numba.core.errors import NumbaPerformanceWarning

HERE = Path(__file__).resolve().parent
#: Every module of this package whose functions numba compiles, calls between them included
#: (paths in the package).
KERNEL_SOURCES = (
    'cholesky_kernel.py',
    'control/constraints/centre_of_pressure.py',
    'control/constraints/gravity_holding.py',
    'control/contact/contact_kernel.py',
    'control/constraints/joint_limits.py',
    'control/constraints/torque_limits.py',
    'control/hierarchy/level_kernel.py',
    'control/hierarchy/problem_kernel.py',
    'control/hierarchy/stage_kernel.py',
    'model/mass_inverse.py',
    'tasks/pd_law.py',
)
PREFIX = 'wbc_kernels-'
#: Caches kept in the package's own `__pycache__` (a developer switching between versions).
KEPT = 3


def sources_digest(directory: Path = HERE, names: tuple[str, ...] = KERNEL_SOURCES) -> str:
    """A hash of the kernel sources' names and contents (16 hex digits)."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode())
        digest.update((directory / name).read_bytes())
    return digest.hexdigest()[:16]


@functools.cache
def cache_directory() -> Path:
    """This version's cache directory (older ones in `__pycache__` beyond :data:`KEPT` go)."""
    user_root = numba.config.CACHE_DIR
    root = Path(user_root) if user_root else HERE / '__pycache__'
    directory = root / f'{PREFIX}{sources_digest()}'
    if not user_root:  # a user's directory may hold other checkouts' caches: left alone
        _remove_older(root, directory)
    return directory


def _remove_older(root: Path, current: Path) -> None:
    """Remove all but the newest :data:`KEPT` caches of `root`, `current` always kept."""
    with suppress(OSError):
        current.mkdir(parents=True, exist_ok=True)
        current.touch()
        others = sorted(
            (path for path in root.glob(f'{PREFIX}*') if path != current),
            key=lambda path: path.stat().st_mtime,
            reverse=True,
        )
        for stale in others[KEPT - 1 :]:
            shutil.rmtree(stale, ignore_errors=True)


def kernel(
    *signature: object, any_layout: bool = False, **options: object
) -> Callable[[Callable], Callable]:
    """`numba.njit(*signature, cache=True, nogil=True, **options)`, in :func:`cache_directory`.

    Without the GIL, as every kernel of this package runs (they touch no Python object). numba
    picks a function's cache directory when it is decorated, so the setting is needed only
    meanwhile (the compilation for an explicit signature happens then too). `any_layout`: the
    signature types matrices of any memory layout, which are contiguous at run time (or the
    rare odd one is copied by `np.dot`), so numba's warning at compilation that `np.dot` is
    faster on contiguous arrays is silenced rather than shown to a user at the first start.
    """
    options = {'nogil': True, **options}

    def compile_cached(function: Callable) -> Callable:
        if numba.config.DISABLE_JIT:  # plain Python: nothing to cache
            return numba.njit(*signature, **options)(function)
        previous = numba.config.CACHE_DIR
        numba.config.CACHE_DIR = str(cache_directory())
        try:
            with warnings.catch_warnings():
                if any_layout:
                    warnings.simplefilter('ignore', NumbaPerformanceWarning)
                return numba.njit(*signature, cache=True, **options)(function)
        finally:
            numba.config.CACHE_DIR = previous

    return compile_cached
