"""Running the tests against mutants for `tools/mutation_test.py`: trees, fork servers, workers.

Each worker owns a copy of the repository (never the repository itself) and a fork server in it
(`tools/mutation_forkserver.py`); a mutant is written into the copy, its tests run (with the
environment variables its module asks for), and the original file is put back.
"""

from collections.abc import Callable, Sequence
import concurrent.futures
from dataclasses import dataclass
import json
import os
from pathlib import Path
import shutil
import subprocess
import sys
import time

from mutation_operators import Mutant, mutated_source

ROOT = Path(__file__).resolve().parents[1]
#: The tests a mutant of a module runs: module path -> test paths.
TestsFor = Callable[[str], tuple[str, ...]]
#: The environment variables a mutant's tests run with: module path -> {name: value}.
EnvironmentFor = Callable[[str], dict[str, str]]
#: How a mutant of a module is run: (its tests, their environment).
Plan = tuple[TestsFor, EnvironmentFor]


@dataclass
class Outcome:
    """What the tests made of a mutant."""

    mutant: Mutant
    status: str  # 'killed', 'survived' or 'timeout'
    seconds: float
    failing: str  # first failing test, if any


def checkout_modules(tree: Path, commit: str, modules: Sequence[str]) -> None:
    """`modules` as of `commit` (the tests stay as copied): re-runs an earlier run."""
    for path in modules:
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
        self,
        tests: tuple[str, ...],
        timeout_s: float,
        max_examples: int = 0,
        environment: dict[str, str] | None = None,
    ) -> tuple[str, str]:
        """('passed' | 'failed' | 'timeout', first failing test) of `tests`.

        `max_examples` > 0 caps every Hypothesis test's examples (`mutation_pytest_plugin`);
        `environment` is set in the test process (e.g. ``NUMBA_DISABLE_JIT``).
        """
        log = self.tree / 'pytest.log'
        argv = ['-q', '-x', '-p', 'no:randomly', '-p', 'no:cacheprovider']
        argv += ['-p', 'mutation_pytest_plugin', '--hypothesis-seed=0', *tests]
        request = {
            'argv': argv,
            'timeout': timeout_s,
            'log': str(log),
            'cap': max_examples,
            'environment': environment or {},
        }
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


def _worker(
    runner: TestRunner,
    batch: list[Mutant],
    plan: Plan,
    timeout_s: float,
    max_examples: int,
) -> list[Outcome]:
    tests_for, environment_for = plan
    tree = runner.tree
    originals = {m.path: (tree / m.path).read_text() for m in batch}
    outcomes = []
    for mutant in batch:
        target = tree / mutant.path
        started = time.monotonic()
        try:
            target.write_text(mutated_source(mutant, originals[mutant.path]))
            verdict, failing = runner.run(
                tests_for(mutant.path), timeout_s, max_examples, environment_for(mutant.path)
            )
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


def _run(
    runners: list[TestRunner],
    selected: list[Mutant],
    plan: Plan,
    timeout_s: float,
    max_examples: int,
) -> list[Outcome]:
    """Outcomes of `selected`, spread over one worker per tree."""
    batches = [selected[index :: len(runners)] for index in range(len(runners))]
    with concurrent.futures.ThreadPoolExecutor(len(runners)) as pool:
        futures = [
            pool.submit(_worker, runner, batch, plan, timeout_s, max_examples)
            for runner, batch in zip(runners, batches)
        ]
        return [o for future in futures for o in future.result()]


def survey(
    runners: list[TestRunner],
    selected: list[Mutant],
    plan: Plan,
    timeout_s: float,
    quick_examples: int,
) -> list[Outcome]:
    """A quick pass, then its survivors again with every test's own example count.

    `plan` gives each mutant's tests and their environment. The quick pass caps every
    Hypothesis test at `quick_examples` examples (0: no cap, one pass).
    """
    outcomes = _run(runners, selected, plan, timeout_s, quick_examples)
    if quick_examples > 0:
        survivors = [o.mutant for o in outcomes if o.status == 'survived']
        print(f'\nsecond pass: {len(survivors)} survivors with full examples', flush=True)
        again = {o.mutant.ident: o for o in _run(runners, survivors, plan, timeout_s, 0)}
        outcomes = [again.get(o.mutant.ident, o) for o in outcomes]
    return outcomes
