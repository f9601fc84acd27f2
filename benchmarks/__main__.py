"""``python -m benchmarks``: see ``python -m benchmarks --help``."""

import sys

from .cli import main

sys.exit(main())
