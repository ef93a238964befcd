"""The compiled kernels' cache follows every kernel source, not just the compiled function's.

numba's own cache is keyed on the compiled function's file: after a change to a callee in
another file, compiled into its caller, it would load the caller's old machine code.
`kernel_cache` names the cache after all the kernel sources.
"""

import ast
import os
from pathlib import Path
import time

import numba
import pytest

from wbc_control import kernel_cache
from wbc_control.control.constraints import joint_limits
from wbc_control.kernel_cache import KERNEL_SOURCES, PREFIX, kernel, sources_digest

PACKAGE = Path(kernel_cache.__file__).resolve().parent


def copied_sources(tmp_path: Path) -> Path:
    for name in KERNEL_SOURCES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes((kernel_cache.HERE / name).read_bytes())
    return tmp_path


def test_a_change_to_any_kernel_source_names_a_new_cache(tmp_path):
    directory = copied_sources(tmp_path)
    original = sources_digest(directory)
    assert original == sources_digest()  # the same sources, the same name
    for name in KERNEL_SOURCES:
        path = directory / name
        source = path.read_bytes()
        path.write_bytes(source + b'\n')
        assert sources_digest(directory) != original, name
        path.write_bytes(source)
    assert sources_digest(directory) == original


def test_the_kernels_load_from_the_cache_named_after_their_sources():
    cache_path = Path(joint_limits.acceleration_bounds._cache._cache_path)
    assert Path(kernel_cache.cache_directory()) in cache_path.parents
    assert kernel_cache.cache_directory().name == PREFIX + sources_digest()
    assert joint_limits.acceleration_bounds.targetoptions[
        'nogil'
    ]  # every kernel runs without the GIL


def test_every_compiled_function_of_the_package_goes_through_kernel():
    # A module compiled with numba.njit directly, or missing from KERNEL_SOURCES, would bring
    # back the stale caller.
    users = set()
    for path in PACKAGE.rglob('*.py'):
        if path.name == 'kernel_cache.py':
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ('njit', 'jit'):
                pytest.fail(f'{path}:{node.lineno} compiles with numba.{node.attr} directly')
            if isinstance(node, ast.keyword) and node.arg == 'cache':
                pytest.fail(f'{path}:{node.lineno} sets cache= itself')
            if isinstance(node, ast.Name) and node.id == 'kernel':
                users.add(path.relative_to(PACKAGE).as_posix())
    assert users == set(KERNEL_SOURCES)


def test_older_caches_beyond_the_kept_ones_are_removed(tmp_path):
    for age, digest in enumerate(('a', 'b', 'c', 'd')):
        old = tmp_path / f'{PREFIX}{digest}'
        old.mkdir()
        stamp = time.time() - 100 * (age + 1)  # 'a' newest, 'd' oldest
        os.utime(old, (stamp, stamp))
    (tmp_path / 'unrelated').mkdir()
    current = tmp_path / f'{PREFIX}now'
    kernel_cache._remove_older(tmp_path, current)
    kept = {path.name for path in tmp_path.iterdir()}
    assert kernel_cache.KEPT == 3  # the current one and the two newest others
    assert kept == {f'{PREFIX}now', f'{PREFIX}a', f'{PREFIX}b', 'unrelated'}


def test_a_user_cache_directory_holds_ours_and_is_not_pruned(tmp_path, monkeypatch):
    monkeypatch.setattr(numba.config, 'CACHE_DIR', str(tmp_path))
    other = tmp_path / f'{PREFIX}another_checkout'
    other.mkdir()
    kernel_cache.cache_directory.cache_clear()
    try:
        assert kernel_cache.cache_directory() == tmp_path / f'{PREFIX}{sources_digest()}'
        assert other.exists()
    finally:
        kernel_cache.cache_directory.cache_clear()


def test_the_setting_lasts_only_while_decorating(tmp_path, monkeypatch):
    monkeypatch.setattr(numba.config, 'CACHE_DIR', '')
    monkeypatch.setattr(kernel_cache, 'cache_directory', lambda: tmp_path / 'kernels')

    @kernel('float64(float64)', nogil=True)
    def add_one(x):  # pragma: no cover - runs compiled
        return x + 1.0

    assert add_one(1.0) == 2.0
    assert numba.config.CACHE_DIR == ''
    assert Path(add_one._cache._cache_path).is_relative_to(tmp_path / 'kernels')
