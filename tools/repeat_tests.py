r"""Run test modules many times in a row, to find flaky tests; stop at the first failure.

Each run is a fresh `pytest -q -p no:randomly -p no:cacheprovider <module>` process. A line per
run gives its result, its wall time and the load average when it ended; the whole output of
every run is kept in the log directory, and a failing run's summary is printed. Optionally runs
from another tree (a clone at a commit, so that others' half-edited files do not disturb a long
loop) and with CPU-bound processes beside it, for a loaded machine:

    python tools/repeat_tests.py --runs 20 --burners 1 --tree /tmp/flake/main \
        test/sim/test_closed_loop.py test/ros/test_shutdown.py
"""

import argparse
import multiprocessing
import os
from pathlib import Path
import re
import subprocess
import sys
import time

PYTEST_FLAGS = ('-q', '-p', 'no:randomly', '-p', 'no:cacheprovider')
SUMMARY_LINES = 40


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('modules', nargs='+', help='test modules or node ids, run in turn')
    parser.add_argument('--runs', type=int, default=20, help='runs of each module (20)')
    parser.add_argument('-k', dest='keyword', help="pytest's -k expression for every module")
    parser.add_argument('--python', default=sys.executable, help='interpreter (this one)')
    parser.add_argument(
        '--tree',
        type=Path,
        help='run from this tree (cwd, first on PYTHONPATH: its package, also in the nodes)',
    )
    parser.add_argument('--burners', type=int, default=0, help='CPU-bound processes beside')
    parser.add_argument(
        '--minutes',
        type=float,
        help='no new run of a module after this many minutes on it (fewer than --runs)',
    )
    parser.add_argument('--log-dir', type=Path, default=Path('/tmp/repeat_tests'))
    parser.add_argument(
        '--next-module-on-failure',
        action='store_true',
        help='after a failure go on with the next module instead of stopping',
    )
    return parser.parse_args(argv)


def burn() -> None:
    """A CPU-bound process: loops until it is terminated."""
    while True:
        pass


def load_average() -> str:
    """The 1, 5 and 15 minute load averages."""
    return ' '.join(f'{value:.1f}' for value in os.getloadavg())


def failure_summary(output: str) -> str:
    """The short summary of pytest (FAILED / ERROR lines) and the last lines of the output."""
    flagged = [line for line in output.splitlines() if re.match(r'(FAILED|ERROR) ', line)]
    tail = output.splitlines()[-SUMMARY_LINES:]
    return '\n'.join(flagged + ['--- last lines ---'] + tail)


def run_once(args: argparse.Namespace, module: str, log: Path) -> tuple[bool, float]:
    """One pytest process for `module`, its output in `log`; whether it passed and its time."""
    command = [args.python, '-m', 'pytest', *PYTEST_FLAGS, module]
    if args.keyword:
        command += ['-k', args.keyword]
    environment = dict(os.environ)
    cwd = None
    if args.tree is not None:
        cwd = args.tree.resolve()
        path = environment.get('PYTHONPATH')
        environment['PYTHONPATH'] = f'{cwd}{os.pathsep}{path}' if path else str(cwd)
    start = time.monotonic()
    with log.open('w') as stream:
        code = subprocess.call(
            command, stdout=stream, stderr=subprocess.STDOUT, env=environment, cwd=cwd
        )
    return code == 0, time.monotonic() - start


def repeat(args: argparse.Namespace, module: str, record) -> tuple[int, int, list[float]]:
    """Up to `args.runs` runs of `module`; (runs, passed, durations)."""
    name = re.sub(r'[^A-Za-z0-9_.-]+', '_', module)
    durations = []
    deadline = None if args.minutes is None else time.monotonic() + 60.0 * args.minutes
    for index in range(1, args.runs + 1):
        if deadline is not None and time.monotonic() > deadline:
            return index - 1, index - 1, durations
        log = args.log_dir / f'{name}.run{index}.log'
        passed, duration = run_once(args, module, log)
        durations.append(duration)
        record(
            f'{module}\trun {index}/{args.runs}\t{"pass" if passed else "FAIL"}\t'
            f'{duration:.0f} s\tload {load_average()}\t{log}'
        )
        if not passed:
            print(failure_summary(log.read_text(errors='replace')), flush=True)
            return index, index - 1, durations
    return args.runs, args.runs, durations


def main(argv: list[str] | None = None) -> int:
    """Run every module in turn; 0 when every run passed."""
    args = parse_arguments(argv)
    args.log_dir.mkdir(parents=True, exist_ok=True)
    burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(args.burners)]
    for burner in burners:
        burner.start()
    results_file = (args.log_dir / 'runs.tsv').open('a')

    def record(line: str) -> None:
        print(line, flush=True)
        results_file.write(line + '\n')
        results_file.flush()

    totals = []
    try:
        for module in args.modules:
            runs, passed, durations = repeat(args, module, record)
            totals.append((module, runs, passed, durations))
            if passed < runs and not args.next_module_on_failure:
                break
    finally:
        for burner in burners:
            burner.terminate()
        results_file.close()
    for module, runs, passed, durations in totals:
        print(
            f'{module}: {passed} of {runs} passed in a row, '
            f'{min(durations):.0f} to {max(durations):.0f} s per run'
        )
    return 0 if all(passed == runs for _, runs, passed, _ in totals) else 1


if __name__ == '__main__':
    sys.exit(main())
