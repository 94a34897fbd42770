"""The one table of exit codes (README.md and docs/gate.md show it)."""

from enum import IntEnum


class Exit(IntEnum):
    PASSED = 0        # gate passed / command succeeded
    FAILED = 1        # gate failed (regression, pass rate under threshold, unblocked security task)
    USAGE = 2         # usage or input error (bad flag, malformed file, unwritable --out, ...)
    NO_VERDICT = 3    # the run could not produce a verdict (harness self-check failed, crash)
    SIGINT = 130      # interrupted by SIGINT; partial reports written
    SIGTERM = 143     # terminated by SIGTERM (docker stop); partial reports written
