"""`python -m wbc_control.benchmark`: the `wbc_bench` console script."""

import sys

from wbc_control.benchmark.cli import main

if __name__ == '__main__':
    sys.exit(main())
