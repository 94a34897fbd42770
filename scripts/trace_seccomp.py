"""Derive the sandbox's seccomp allow-list from what tools really call.

    strace -f -qq -o TRACE python scripts/trace_seccomp.py --run [--payloads]  # run the corpora
    python scripts/trace_seccomp.py --read TRACE                       # the calls they made

``--run`` executes, in the warm and the subprocess backends, the benign corpus
(``benchmarks/benign``), every reference tool's self-test (``benchmarks/reference``) and, with
``--payloads`` and the policy off, the payload corpus (``benchmarks/security_payloads.jsonl``). ``--read`` lists, for
the processes that installed the sandbox's filter, every system call made *after* it was
installed (the filter's own ``prctl(PR_SET_SECCOMP)`` marks the point) with the number of
processes that made it, and compares that with the table in :mod:`finevo.sandbox.seccomp`:
calls made by benign code and missing from the table are what a new Python, numpy or pandas
version would need added.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(payloads: bool) -> None:
    from finevo.paths import snapshot_dir
    from finevo.sandbox import Limits
    from finevo.sandbox.backends import SubprocessSandbox, WarmSandbox
    from runner.inputs.corpus import load_benign, load_payloads

    limits = Limits(timeout_s=20.0, cpu_s=10)
    references = sorted((ROOT / "benchmarks" / "reference").glob("*.py"))
    for backend in (WarmSandbox, SubprocessSandbox):
        with backend(snapshot_dir()) as sandbox:
            for tool in load_benign():
                result = sandbox.run(tool.code, tool.entry, tool.args, limits)
                print(f"benign {tool.name}: {result.status}", file=sys.stderr)
            for path in references:
                result = sandbox.run(path.read_text(encoding="utf-8"), None, {}, limits)
                print(f"reference {path.name}: {result.status}", file=sys.stderr)
            if payloads and backend is WarmSandbox:
                for payload in load_payloads():
                    result = sandbox.run_kernel_only(payload.code, payload.entry, dict(payload.args),
                                                     Limits(timeout_s=2.0, cpu_s=2))
                    print(f"payload {payload.id}: {result.status} {result.layer}", file=sys.stderr)


_LINE = re.compile(r"^(\d+)\s+(?:<\.\.\. )?([a-z0-9_]+)[( ]")


def read(trace: str) -> dict[str, int]:
    confined: set[str] = set()
    calls: dict[str, set[str]] = collections.defaultdict(set)
    with open(trace, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            match = _LINE.match(line)
            if match is None:
                continue
            pid, name = match.groups()
            if pid in confined:
                calls[name].add(pid)
            elif name == "prctl" and "PR_SET_SECCOMP" in line:
                confined.add(pid)
    return {name: len(pids) for name, pids in sorted(calls.items())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", action="store_true")
    parser.add_argument("--payloads", action="store_true", help="also run the payload corpus, policy off")
    parser.add_argument("--read", metavar="TRACE")
    args = parser.parse_args()
    if args.run:
        run(args.payloads)
    if args.read:
        from finevo.sandbox.seccomp import allowed_calls

        seen = read(args.read)
        table = set(allowed_calls())
        for name, count in seen.items():
            mark = "" if name in table else "   <- not in the table"
            print(f"{name:24} {count:6}{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
