"""`python -m runner.cli` is `finevo-verify` (for environments without the console script on PATH)."""

import sys

from runner.cli import main

sys.exit(main())
