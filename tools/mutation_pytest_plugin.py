"""pytest plugin for `tools/mutation_test.py`: at most N Hypothesis examples per test.

Loaded with ``-p mutation_pytest_plugin`` and ``WBC_MUTATION_MAX_EXAMPLES=N``. A first pass
over all mutants with few examples is fast; the survivors are then run again with every
test's own example count, so no mutant is called a survivor for want of examples.
"""

import os

from hypothesis import settings


def pytest_collection_modifyitems(items) -> None:
    """Cap `max_examples` of every Hypothesis test (explicit @settings included).

    No example database either: an example that killed one mutant must not be replayed
    first for the next, or the verdicts would depend on the order of the run.
    """
    cap = int(os.environ.get('WBC_MUTATION_MAX_EXAMPLES', '0'))
    for item in items:
        test = getattr(item, 'obj', None)
        if getattr(test, 'hypothesis', None) is None:
            continue
        current = getattr(test, '_hypothesis_internal_use_settings', settings.default)
        examples = min(current.max_examples, cap) if cap > 0 else current.max_examples
        test._hypothesis_internal_use_settings = settings(
            current, max_examples=examples, database=None
        )
