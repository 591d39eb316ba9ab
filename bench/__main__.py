"""Entry point: `python -m bench` (see bench.cli for the options and the output contract)."""

import sys

from bench.cli import main

sys.exit(main())
