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

The numba kernels (``control/level_kernel.py``, ``control/symmetric_eigen.py``,
``control/joint_limit_kernel.py``, ``control/bounded_least_squares.py``,
``model/mass_inverse.py``, ``control/semidefinite_eigen.py``, ``control/stack_kernel.py``) are
mutated with ``NUMBA_DISABLE_JIT=1`` in their tests' environment (``ENVIRONMENT_BY_MODULE``):
numba then returns the plain Python functions, which mean the same as the compiled ones (the same
arithmetic in float64, the same loops), so a mutant costs its tests' run instead of a
recompilation of the kernel (about 20 s). The tests of every other module run the compiled
kernel, loaded from numba's cache. Mutants of the compiled signatures (argument types) mean
nothing without the compiler: ``--jit`` runs them compiled.

Usage (from the repository root)::

    .venv-kilted/bin/python tools/mutation_test.py --jobs 2 --report mutation_report.json
    .venv-kilted/bin/python tools/mutation_test.py --list            # the mutants, not run
    .venv-kilted/bin/python tools/mutation_test.py --only 12 40      # some of them
    .venv-kilted/bin/python tools/mutation_test.py --module wbc_control/control/level_kernel.py
"""

import argparse
import ast
from dataclasses import asdict
import json
from pathlib import Path
import sys
import tempfile

from mutation_operators import interleaved, mutants
from mutation_runner import TestRunner, checkout_modules, copy_tree, survey

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
    # Appended, so the numbers of the modules above stay those of earlier runs.
    'wbc_control/control/level_kernel.py',
    'wbc_control/control/symmetric_eigen.py',
    'wbc_control/control/joint_limit_kernel.py',
    'wbc_control/control/bounded_least_squares.py',
    'wbc_control/control/level_search.py',
    'wbc_control/control/joint_limits.py',
    'wbc_control/model/mass_inverse.py',
    'wbc_control/control/semidefinite_eigen.py',
    'wbc_control/control/stack_kernel.py',
    'wbc_control/control/task_inertia_kernel.py',
    'wbc_control/control/torque_fit.py',
    'wbc_control/tasks/pd_law.py',
    'wbc_control/control/held_joints.py',
    'wbc_control/control/generic_ranks.py',
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
#: test_joint_limits.py without its rollouts from a fallen arm (30 s compiled, minutes as
#: Python): the SNS properties, the torque fit and the box least squares, each a second or less.
JOINT_LIMIT_TESTS = tuple(
    f'test/core/test_joint_limits.py::{name}'
    for name in (
        'test_a_joint_pulled_into_its_wall_is_held_and_reported',
        'test_a_lower_levels_saturations_leave_the_higher_level_whole',
        'test_a_plan_beyond_the_torque_range_is_fitted_to_it',
        'test_a_soft_start_ramps_the_tasks_while_the_level_brakes_in_full',
        'test_invalid_settings',
        'test_the_bounds_are_the_viability_ceilings',
        'test_within_is_inclusive_up_to_its_tolerance_and_false_for_nan',
        'test_without_tasks_the_joints_beyond_their_walls_are_pulled_back_dynamically_consistently',
        'test_a_posture_beyond_the_bounds_of_eight_joints_is_saturated_joint_after_joint',
        'test_a_zero_margin_puts_the_walls_at_the_urdf_limits',
    )
)
#: The box least squares and the torque fit, against scipy and a closed form (a few seconds).
JOINT_LIMIT_TESTS += ('test/core/test_bounded_least_squares.py',)
#: The workspace rollouts too: 1 s each compiled, 30 to 40 s each as Python.
JOINT_LIMIT_ROLLOUTS = (
    'test/core/test_joint_limits.py::'
    'test_a_target_outside_the_workspace_never_drives_a_joint_past_its_limit',
)
#: The tests that exercise each module, most specific first; a mutant runs these only.
TESTS_BY_MODULE = {
    'wbc_control/control/joint_limit_kernel.py': (
        *JOINT_LIMIT_TESTS,
        'test/core/test_joint_limit_kernel.py',
    ),
    'wbc_control/control/bounded_least_squares.py': (
        'test/core/test_bounded_least_squares.py',
        'test/core/test_joint_limits.py::test_a_plan_beyond_the_torque_range_is_fitted_to_it',
        'test/core/test_joint_limit_kernel.py::test_read_only_inputs_give_the_same_results',
    ),
    'wbc_control/control/level_search.py': (
        'test/core/test_joint_limit_kernel.py',
        *JOINT_LIMIT_TESTS,
        *JOINT_LIMIT_ROLLOUTS,
        'test/core/test_prioritized_controller.py',
    ),
    'wbc_control/control/joint_limits.py': (
        *JOINT_LIMIT_TESTS,
        *JOINT_LIMIT_ROLLOUTS,
        'test/core/test_joint_limit_kernel.py',
        'test/core/test_level_kernel.py',
        'test/core/test_prioritized_controller.py',
    ),
    'wbc_control/control/stack_kernel.py': (
        'test/core/test_joint_limit_kernel.py',
        *JOINT_LIMIT_TESTS,
        'test/core/test_level_kernel.py',
    ),
    'wbc_control/control/held_joints.py': (
        'test/core/test_level_kernel.py',
        'test/core/test_joint_limit_kernel.py',
        *JOINT_LIMIT_TESTS,
    ),
    'wbc_control/control/torque_fit.py': (
        'test/core/test_bounded_least_squares.py',
        'test/core/test_joint_limit_kernel.py',
        'test/core/test_joint_limits.py::test_a_plan_beyond_the_torque_range_is_fitted_to_it',
    ),
    'wbc_control/model/mass_inverse.py': (
        'test/core/test_mass_inverse.py',
        'test/core/test_robot_state.py',
    ),
    'wbc_control/control/semidefinite_eigen.py': (
        'test/core/test_semidefinite_eigen.py',
        'test/core/test_level_kernel.py',
    ),
    'wbc_control/control/symmetric_eigen.py': (
        'test/core/test_symmetric_eigen.py',
        'test/core/test_level_kernel.py',
        'test/core/test_prioritized_controller.py',
        'test/core/test_singularity.py',
    ),
    'wbc_control/control/level_kernel.py': (
        'test/core/test_level_kernel.py',
        'test/core/test_prioritized_controller.py',
        'test/core/test_priority_properties.py',
        'test/core/test_singularity.py',
        'test/core/test_contacts.py',
    ),
    'wbc_control/control/task_inertia_kernel.py': (
        'test/core/test_level_kernel.py',
        'test/core/test_prioritized_controller.py',
        'test/core/test_priority_properties.py',
        'test/core/test_singularity.py',
        'test/core/test_contacts.py',
    ),
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
    'wbc_control/tasks/pd_law.py': (
        'test/core/test_error_clipping.py',
        'test/core/test_tasks.py',
        'test/core/test_task_interface.py',
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
#: Environment of a mutant's tests by module: the kernels run as Python (the module docstring).
ENVIRONMENT_BY_MODULE = {
    'wbc_control/control/level_kernel.py': {'NUMBA_DISABLE_JIT': '1'},
    'wbc_control/control/symmetric_eigen.py': {'NUMBA_DISABLE_JIT': '1'},
    'wbc_control/control/joint_limit_kernel.py': {'NUMBA_DISABLE_JIT': '1'},
    'wbc_control/control/bounded_least_squares.py': {'NUMBA_DISABLE_JIT': '1'},
    'wbc_control/model/mass_inverse.py': {'NUMBA_DISABLE_JIT': '1'},
    'wbc_control/control/semidefinite_eigen.py': {'NUMBA_DISABLE_JIT': '1'},
    'wbc_control/control/stack_kernel.py': {'NUMBA_DISABLE_JIT': '1'},
    'wbc_control/control/task_inertia_kernel.py': {'NUMBA_DISABLE_JIT': '1'},
    'wbc_control/tasks/pd_law.py': {'NUMBA_DISABLE_JIT': '1'},
}
TIMEOUT_S = 600.0


def tests_for(path: str) -> tuple[str, ...]:
    """The tests a mutant of `path` runs (`TESTS_BY_MODULE`, else all of `TESTS`)."""
    return next((t for prefix, t in TESTS_BY_MODULE.items() if path.startswith(prefix)), TESTS)


def environment_for(path: str) -> dict[str, str]:
    """The environment variables of the tests of a mutant of `path` (`ENVIRONMENT_BY_MODULE`)."""
    return ENVIRONMENT_BY_MODULE.get(path, {})


def signature_lines(source: str) -> set[int]:
    """Lines of a module's decorators and of its module-level numba types (`types.`, `float64`).

    Their mutants mean nothing uncompiled: ``--signatures skip`` leaves them out of a run as
    Python, ``--signatures only`` selects them for a run with ``--jit``.
    """
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        spans = []
        if isinstance(node, ast.FunctionDef):
            spans = node.decorator_list
        elif isinstance(node, ast.Assign) and node.col_offset == 0:
            text = ast.unparse(node.value)
            spans = [node] if 'types.' in text or 'float64' in text else []
        for span in spans:
            lines.update(range(span.lineno, span.end_lineno + 1))
    return lines


def main(argv: list[str] | None = None) -> int:
    """Copy the tree, check the unmutated tests pass, run every mutant, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--jobs', type=int, default=1, help='parallel workers (one copy each)')
    parser.add_argument('--only', type=int, nargs='*', help='run only these mutant numbers')
    parser.add_argument(
        '--module', nargs='*', metavar='PATH', help='run only the mutants of these modules'
    )
    parser.add_argument(
        '--jit',
        action='store_true',
        help='no ENVIRONMENT_BY_MODULE: the kernels compiled (for mutants of their signatures)',
    )
    parser.add_argument(
        '--signatures',
        choices=('all', 'skip', 'only'),
        default='all',
        help='mutants of decorators and numba types: all, none of them, or only them',
    )
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
                checkout_modules(tree, arguments.code_from, MODULES)
        selected = interleaved(mutants(trees[0], MODULES))
        if arguments.only:
            wanted = set(arguments.only)
            selected = [m for m in selected if m.ident in wanted]
        if arguments.module:
            selected = [m for m in selected if m.path in arguments.module]
        if arguments.signatures != 'all':
            lines = {p: signature_lines((trees[0] / p).read_text()) for p in MODULES}
            only = arguments.signatures == 'only'
            selected = [m for m in selected if (m.line in lines[m.path]) == only]
        if arguments.list:
            for mutant in selected:
                print(f'[{mutant.ident:4d}] {mutant.path}:{mutant.line} {mutant.description}')
            return 0
        runners = [TestRunner(tree) for tree in trees]
        environments = (lambda _: {}) if arguments.jit else environment_for
        try:
            paths = {m.path for m in selected}
            plans = {(tests_for(p), tuple(environments(p).items())) for p in paths}
            for tests, environment in sorted(plans):  # the unmutated tests of each plan
                baseline, failing = runners[0].run(tests, arguments.timeout, 0, dict(environment))
                if baseline != 'passed':
                    print(f'the unmutated tests do not pass ({failing}); nothing to measure')
                    return 2
            outcomes = survey(
                runners,
                selected,
                (tests_for, environments),
                arguments.timeout,
                arguments.quick_examples,
            )
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
