#!/usr/bin/env python3
"""Mutation testing of the control core: plant one small bug at a time, see whether a test fails.

A small AST mutator (no third-party tool): each mutant changes one operator or constant of one
of the core modules (``MODULES``), and the fast core tests that exercise that module
(``TESTS_BY_MODULE``, else all of ``TESTS``) run against it. A mutant
is *killed* when the tests fail (or time out), *survives* when they pass. Every survivor is
either an equivalent mutant (the program means the same) or a missing test.

The repository is never touched: the committed tree (``git archive HEAD``, or the working tree
with ``--worktree``) is copied to a temporary directory per worker, mutants are written there,
and the original file is restored after each run. The tests import that copy first
(``PYTHONPATH``), bytecode caching is off, and Hypothesis runs with a fixed seed, so a run is
reproducible. A first pass caps every Hypothesis test at ``--quick-examples`` examples
(``tools/mutation_pytest_plugin.py``); its survivors are run again with the tests' own example
counts, and only those verdicts are reported.

Usage (from the repository root)::

    .venv-kilted/bin/python tools/mutation_test.py --jobs 2 --report mutation_report.json
    .venv-kilted/bin/python tools/mutation_test.py --list            # the mutants, not run
    .venv-kilted/bin/python tools/mutation_test.py --only 12 40      # some of them
"""

import argparse
import ast
from collections.abc import Iterator
import concurrent.futures
from dataclasses import asdict, dataclass
import json
import os
from pathlib import Path
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = Path(__file__).resolve().parents[1]
MODULES = (
    'wbc_control/control/prioritized_controller.py',
    'wbc_control/control/task_inertia.py',
    'wbc_control/control/torque_limits.py',
    'wbc_control/control/contacts.py',
    'wbc_control/tasks/task.py',
    'wbc_control/tasks/joint_posture.py',
    'wbc_control/tasks/frame_position.py',
    'wbc_control/tasks/frame_orientation.py',
    'wbc_control/tasks/frame_pose.py',
    'wbc_control/tasks/com.py',
)
#: Fastest and most specific first: with -x a killed mutant stops at its first failure.
TESTS = (
    'test/core/test_torque_limits.py',
    'test/core/test_task_inertia.py',
    'test/core/test_freitag_2015.py',
    'test/core/test_target_sets.py',
    'test/core/test_tasks.py',
    'test/core/test_task_interface.py',
    'test/core/test_priority_properties.py',
    'test/core/test_prioritized_controller.py',
    'test/core/test_contacts.py',
    'test/core/test_johnson_2024.py',
    'test/core/test_singularity.py',
)
#: The tests that exercise each module, most specific first; a mutant runs these only.
TESTS_BY_MODULE = {
    'wbc_control/control/torque_limits.py': (
        'test/core/test_torque_limits.py',
        'test/core/test_prioritized_controller.py',
    ),
    'wbc_control/control/contacts.py': (
        'test/core/test_contacts.py',
        'test/core/test_task_interface.py',
        'test/core/test_priority_properties.py',
        'test/core/test_johnson_2024.py',
    ),
    'wbc_control/tasks/': (
        'test/core/test_tasks.py',
        'test/core/test_task_interface.py',
        'test/core/test_target_sets.py',
        'test/core/test_freitag_2015.py',
        'test/core/test_priority_properties.py',
        'test/core/test_prioritized_controller.py',
        'test/core/test_contacts.py',
    ),
}
TIMEOUT_S = 600.0

_BINARY_SWAPS = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Pow: ast.Mult,
}
_COMPARE_SWAPS = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BOOL_SWAPS = {ast.And: ast.Or, ast.Or: ast.And}
#: Floats that carry structure (a zero, a half, a unit, a factor 2). Other float literals are
#: tuning values (tolerances, default gains) where doubling is a different choice, not a bug.
_STRUCTURAL_FLOATS = (0.0, 0.5, 1.0, 2.0)


@dataclass(frozen=True)
class Mutant:
    """One planted bug: where, and what became what."""

    ident: int
    path: str
    index: int  # site within the module, in `_sites` order
    line: int
    description: str


@dataclass
class Outcome:
    """What the tests made of a mutant."""

    mutant: Mutant
    status: str  # 'killed', 'survived' or 'timeout'
    seconds: float
    failing: str  # first failing test, if any


def _docstring_nodes(tree: ast.AST) -> set[int]:
    """The ids of docstring expressions (never mutated)."""
    skip = set()
    for node in ast.walk(tree):
        body = getattr(node, 'body', None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                skip.add(id(body[0].value))
    return skip


def _skipped_subtrees(tree: ast.AST) -> set[int]:
    """The ids of nodes in annotations, raise statements and f-strings (messages, not logic)."""
    skip = set()
    for node in ast.walk(tree):
        roots = []
        if isinstance(node, ast.Raise | ast.JoinedStr):
            roots.append(node)
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            roots.append(node.annotation)
        if isinstance(node, ast.FunctionDef) and node.returns is not None:
            roots.append(node.returns)
        for root in roots:
            skip.update(id(child) for child in ast.walk(root))
    return skip


def _sites(tree: ast.AST) -> Iterator[tuple[ast.AST, str, str]]:
    """(node, what, description) for every mutation this tree offers, in a fixed order."""
    skip = _docstring_nodes(tree) | _skipped_subtrees(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _BINARY_SWAPS:
            new = _BINARY_SWAPS[type(node.op)]
            yield node, 'op', f'{type(node.op).__name__} -> {new.__name__}'
        elif isinstance(node, ast.Compare):
            for index, op in enumerate(node.ops):
                if type(op) in _COMPARE_SWAPS:
                    new = _COMPARE_SWAPS[type(op)]
                    yield node, f'cmp{index}', f'{type(op).__name__} -> {new.__name__}'
        elif isinstance(node, ast.BoolOp):
            new = _BOOL_SWAPS[type(node.op)]
            yield node, 'op', f'{type(node.op).__name__} -> {new.__name__}'
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
            yield node, 'drop', f'drop {type(node.op).__name__}'
        elif isinstance(node, ast.Constant) and not isinstance(node.value, str | bytes):
            value = node.value
            if isinstance(value, bool):
                yield node, 'const', f'{value} -> {not value}'
            elif isinstance(value, int) or value in _STRUCTURAL_FLOATS:
                yield node, 'const', f'{value!r} -> {_changed_number(value)!r}'


def _changed_number(value: int | float) -> int | float:
    if isinstance(value, int):
        return 1 if value == 0 else (0 if value == 1 else value + 1)
    return 1.0 if value == 0.0 else 2.0 * value


def _mutate_node(tree: ast.AST, node: ast.AST, what: str) -> None:
    if what == 'op':
        swaps = _BOOL_SWAPS if isinstance(node, ast.BoolOp) else _BINARY_SWAPS
        node.op = swaps[type(node.op)]()
    elif what.startswith('cmp'):
        index = int(what[3:])
        node.ops[index] = _COMPARE_SWAPS[type(node.ops[index])]()
    elif what == 'drop':  # `not x` -> `x`, `-x` -> `x`
        _replace(tree, node, node.operand)
    elif what == 'const':
        node.value = (
            (not node.value) if isinstance(node.value, bool) else _changed_number(node.value)
        )


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for index, item in enumerate(value):
                    if item is old:
                        value[index] = new
                        return
    raise ValueError('node not found')


def mutants(root: Path) -> list[Mutant]:
    """Every mutant of every module under `root`, numbered in a fixed order."""
    found = []
    for path in MODULES:
        tree = ast.parse((root / path).read_text())
        for index, (node, _, description) in enumerate(_sites(tree)):
            line = getattr(node, 'lineno', 0)
            found.append(Mutant(len(found), path, index, line, description))
    return found


def interleaved(found: list[Mutant]) -> list[Mutant]:
    """Run order that takes every module in turn, so a partial run is a fair sample."""
    sizes = {path: sum(m.path == path for m in found) for path in MODULES}
    return sorted(found, key=lambda m: (m.index / sizes[m.path], m.ident))


def mutated_source(mutant: Mutant, source: str) -> str:
    """The module source with `mutant` applied (its `index`-th site)."""
    tree = ast.parse(source)
    node, what, _ = list(_sites(tree))[mutant.index]
    _mutate_node(tree, node, what)
    return ast.unparse(ast.fix_missing_locations(tree))


def _checkout_modules(tree: Path, commit: str) -> None:
    """The mutated modules as of `commit` (the tests stay as copied): re-runs an earlier run."""
    for path in MODULES:
        source = subprocess.run(
            ['git', 'show', f'{commit}:{path}'], cwd=ROOT, check=True, capture_output=True
        ).stdout
        (tree / path).write_bytes(source)


def copy_tree(destination: Path, worktree: bool) -> None:
    """The repository's committed tree (or its working tree) at `destination`."""
    destination.mkdir(parents=True)
    if worktree:
        files = subprocess.run(
            ['git', 'ls-files', '-co', '--exclude-standard'],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        for name in files:
            source = ROOT / name
            if source.is_file():
                target = destination / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        return
    archive = subprocess.run(['git', 'archive', 'HEAD'], cwd=ROOT, check=True, capture_output=True)
    subprocess.run(['tar', '-x', '-C', str(destination)], input=archive.stdout, check=True)


class TestRunner:
    """pytest runs in one tree through `mutation_forkserver.py` (imports paid once)."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        environment = {
            **os.environ,
            'PYTHONPATH': f'{tree}{os.pathsep}{tree / "tools"}',
            'PYTHONDONTWRITEBYTECODE': '1',
        }
        self.server = subprocess.Popen(
            [sys.executable, str(tree / 'tools' / 'mutation_forkserver.py'), str(tree)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=environment,
            cwd=tree,
        )
        assert json.loads(self.server.stdout.readline())['ready']

    def run(
        self, tests: tuple[str, ...], timeout_s: float, max_examples: int = 0
    ) -> tuple[str, str]:
        """('passed' | 'failed' | 'timeout', first failing test) of `tests`.

        `max_examples` > 0 caps every Hypothesis test's examples (`mutation_pytest_plugin`).
        """
        log = self.tree / 'pytest.log'
        argv = ['-q', '-x', '-p', 'no:randomly', '-p', 'no:cacheprovider']
        argv += ['-p', 'mutation_pytest_plugin', '--hypothesis-seed=0', *tests]
        request = {'argv': argv, 'timeout': timeout_s, 'log': str(log), 'cap': max_examples}
        self.server.stdin.write(json.dumps(request) + '\n')
        self.server.stdin.flush()
        code = json.loads(self.server.stdout.readline())['code']
        if code is None:
            return 'timeout', ''
        output = log.read_text()
        failing = next(
            (line.split()[1] for line in output.splitlines() if line.startswith('FAILED')), ''
        )
        if not failing and code != 0:
            failing = output.strip().splitlines()[-1] if output.strip() else 'error'
        return ('passed' if code == 0 else 'failed'), failing

    def close(self) -> None:
        """Stop the fork server."""
        self.server.stdin.close()
        self.server.wait(30)


def tests_for(path: str) -> tuple[str, ...]:
    """The tests a mutant of `path` runs (`TESTS_BY_MODULE`, else all of `TESTS`)."""
    return next((t for prefix, t in TESTS_BY_MODULE.items() if path.startswith(prefix)), TESTS)


def _worker(runner: 'TestRunner', batch: list[Mutant], timeout_s: float, max_examples: int):
    tree = runner.tree
    originals = {m.path: (tree / m.path).read_text() for m in batch}
    outcomes = []
    for mutant in batch:
        target = tree / mutant.path
        started = time.monotonic()
        try:
            target.write_text(mutated_source(mutant, originals[mutant.path]))
            verdict, failing = runner.run(tests_for(mutant.path), timeout_s, max_examples)
        finally:
            target.write_text(originals[mutant.path])
        status = {'passed': 'survived', 'failed': 'killed', 'timeout': 'timeout'}[verdict]
        outcome = Outcome(mutant, status, time.monotonic() - started, failing)
        print(
            f'[{mutant.ident:4d}] {status:8s} {mutant.path}:{mutant.line} '
            f'{mutant.description} ({outcome.seconds:.0f} s) {failing}',
            flush=True,
        )
        outcomes.append(outcome)
    return outcomes


def _run(runners: list[TestRunner], selected: list[Mutant], timeout_s: float, max_examples: int):
    """Outcomes of `selected`, spread over one worker per tree."""
    batches = [selected[index :: len(runners)] for index in range(len(runners))]
    with concurrent.futures.ThreadPoolExecutor(len(runners)) as pool:
        futures = [
            pool.submit(_worker, runner, batch, timeout_s, max_examples)
            for runner, batch in zip(runners, batches)
        ]
        return [o for future in futures for o in future.result()]


def _survey(runners: list[TestRunner], selected: list[Mutant], arguments) -> list[Outcome]:
    """The quick pass, then its survivors again with every test's own example count."""
    outcomes = _run(runners, selected, arguments.timeout, arguments.quick_examples)
    if arguments.quick_examples > 0:
        survivors = [o.mutant for o in outcomes if o.status == 'survived']
        print(f'\nsecond pass: {len(survivors)} survivors with full examples', flush=True)
        again = {o.mutant.ident: o for o in _run(runners, survivors, arguments.timeout, 0)}
        outcomes = [again.get(o.mutant.ident, o) for o in outcomes]
    return outcomes


def main(argv: list[str] | None = None) -> int:
    """Copy the tree, check the unmutated tests pass, run every mutant, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--jobs', type=int, default=1, help='parallel workers (one copy each)')
    parser.add_argument('--only', type=int, nargs='*', help='run only these mutant numbers')
    parser.add_argument('--list', action='store_true', help='list the mutants and exit')
    parser.add_argument('--worktree', action='store_true', help='copy the working tree')
    parser.add_argument('--report', type=Path, help='write the outcomes as JSON here')
    parser.add_argument(
        '--code-from',
        metavar='COMMIT',
        help="mutate MODULES as of COMMIT (same mutant numbers as a run then), today's tests",
    )
    parser.add_argument('--timeout', type=float, default=TIMEOUT_S, help='s per mutant')
    parser.add_argument(
        '--quick-examples',
        type=int,
        default=3,
        help='first pass with at most this many Hypothesis examples per test (0: one full pass)',
    )
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='wbc_mutation_') as scratch:
        trees = [Path(scratch) / f'tree{index}' for index in range(max(arguments.jobs, 1))]
        for tree in trees:
            copy_tree(tree, arguments.worktree)
            if arguments.code_from:
                _checkout_modules(tree, arguments.code_from)
        selected = interleaved(mutants(trees[0]))
        if arguments.only:
            wanted = set(arguments.only)
            selected = [m for m in selected if m.ident in wanted]
        if arguments.list:
            for mutant in selected:
                print(f'[{mutant.ident:4d}] {mutant.path}:{mutant.line} {mutant.description}')
            return 0
        runners = [TestRunner(tree) for tree in trees]
        try:
            for tests in sorted({tests_for(m.path) for m in selected} | {TESTS}):
                baseline, failing = runners[0].run(tests, arguments.timeout)
                if baseline != 'passed':
                    print(f'the unmutated tests do not pass ({failing}); nothing to measure')
                    return 2
            outcomes = _survey(runners, selected, arguments)
        finally:
            for runner in runners:
                runner.close()
    outcomes.sort(key=lambda o: o.mutant.ident)
    killed = sum(o.status != 'survived' for o in outcomes)
    print(f'\n{killed} of {len(outcomes)} mutants killed ({100.0 * killed / len(outcomes):.1f} %)')
    for outcome in outcomes:
        if outcome.status == 'survived':
            m = outcome.mutant
            print(f'  survived [{m.ident}] {m.path}:{m.line} {m.description}')
    if arguments.report:
        arguments.report.write_text(
            json.dumps([{**asdict(o), 'mutant': asdict(o.mutant)} for o in outcomes], indent=1)
        )
    return 0


if __name__ == '__main__':
    sys.exit(main())
