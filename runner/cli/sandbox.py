"""``finevo-verify sandbox check FILE [--run ENTRY --args JSON] [--no-policy] [--data DIR] [--backend B]``.

Checks a tool file with the static policy and, with ``--run``, executes ENTRY(**ARGS) in the
sandbox (``--run __main__`` runs the module's self-test block instead). Prints one JSON verdict:
allowed/blocked with rule, line and column; if run, status, value, stdout, stderr, duration and
the containment layer that fired; and the layers active on this platform.

``--no-policy`` runs the file even when the policy blocks it, with the static policy and the
run-time audit hook both off, so only the kernel layers (Landlock, seccomp, namespaces, uid,
rlimits) contain it: for auditors testing the runtime layers with their own attacks. The JSON then
says ``"policy": "off"``. The gate itself has no such option.

Exit 0 if allowed and (if run) it ran cleanly; 1 if blocked, contained or failed; 2 for a missing
file, a run without a market snapshot, bad ``--args`` JSON or another usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from finevo.errors import InputError
from finevo.inputs import read_text
from finevo.paths import snapshot_dir
from finevo.vocabulary import SandboxBackend, choices
from runner.exitcodes import Exit

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject, JSONValue

SELF_TEST = "__main__"


class RunVerdict(TypedDict):
    """What ``--run`` did, in the printed verdict."""

    entry: str
    status: str
    value: JSONValue  # the tool's value, as the sandbox returned it (normalised when printed)
    stdout: str
    stderr: str
    duration_s: float
    layer: str | None
    rule: str | None
    error_type: str | None
    error_message: str | None
    traceback: str | None
    evidence: JSONValue  # the supervisor's own evidence of what stopped the run
    hint: JSONValue  # what the tool's own error suggests


class CheckVerdict(TypedDict):
    """The one JSON verdict ``sandbox check`` prints, keys in printed order."""

    file: str
    allowed: bool
    verdict: str
    rule: str | None
    message: str | None
    line: int | None
    col: int | None
    policy: str
    layers: NotRequired[dict[str, bool]]
    isolation: NotRequired[str]
    run: NotRequired[RunVerdict]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("sandbox", help="check (and run) a tool file in the sandbox",
                                   description=__doc__.splitlines()[0] if __doc__ else None)
    verbs = parser.add_subparsers(dest="sandbox_verb", metavar="{check}")

    def usage(_args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return int(Exit.USAGE)

    parser.set_defaults(func=usage)
    check = verbs.add_parser("check", help="policy verdict, and optionally a contained run")
    check.add_argument("file", metavar="FILE", help="the tool module (.py)")
    check.add_argument("--run", metavar="ENTRY", help=f"function to call ({SELF_TEST} = self-test block)")
    check.add_argument("--args", metavar="JSON", default="{}", help="keyword arguments as a JSON object")
    check.add_argument("--data", metavar="DIR", help="market snapshot directory (default: the bundled snapshot)")
    check.add_argument("--backend", choices=choices(SandboxBackend), default=SandboxBackend.WARM.value,
                       help=f"sandbox backend (default {SandboxBackend.WARM})")
    check.add_argument("--timeout", metavar="S", type=float, default=30.0, help="wall-clock limit in seconds")
    check.add_argument("--no-policy", action="store_true",
                       help="run with the static policy and the audit hook off (kernel layers only)")
    check.set_defaults(func=run_check)


def _load_inputs(args: argparse.Namespace) -> tuple[str, JSONObject]:
    path = Path(args.file)
    code = read_text(path)
    try:
        call_args = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise InputError(f"--args: malformed JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(call_args, dict):
        raise InputError("--args: expected a JSON object of keyword arguments")
    if args.timeout <= 0:
        raise InputError("--timeout: must be a positive number of seconds")
    if args.args != "{}" and not args.run:
        raise InputError("--args needs --run ENTRY")
    if args.no_policy and not args.run:
        raise InputError("--no-policy needs --run ENTRY")
    return code, call_args


def run_check(args: argparse.Namespace) -> int:
    code, call_args = _load_inputs(args)
    data = Path(args.data) if args.data else snapshot_dir()
    if args.data and not data.is_dir():
        raise InputError(f"--data: {data}: not a directory")

    from finevo.policy import check
    from finevo.sandbox import Limits, create_sandbox

    report = check(code, filename=args.file)
    first = report.first
    no_policy = bool(args.no_policy)
    verdict: CheckVerdict = {
        "file": args.file, "allowed": report.allowed, "verdict": "allowed" if report.allowed else "blocked",
        "rule": first.rule if first else None, "message": first.message if first else None,
        "line": first.line if first else None, "col": first.col if first else None,
        "policy": "off" if no_policy else "on",
    }
    clean = report.allowed
    # A run needs the market snapshot: without it every data call would fail with a message about
    # the sandbox, not about the missing files, so the path tried is named instead (exit 2).
    if args.run and not (data / "manifest.json").is_file():
        raise InputError(f"{data / 'manifest.json'}: snapshot manifest not found (--data DIR, or set "
                         "FINEVO_BENCHMARKS to the benchmarks directory)")
    snapshot = str(data) if (data / "manifest.json").exists() else None
    with create_sandbox(snapshot, backend=args.backend, policy=not no_policy) as sandbox:
        verdict["layers"] = sandbox.layers()
        verdict["isolation"] = sandbox.isolation()[0]
        if not ((report.allowed or no_policy) and args.run):
            from finevo.normalize import RECORD, normalize  # numpy and pandas: only when needed

            print(json.dumps(normalize(verdict, RECORD), indent=2, allow_nan=False))
            return int(Exit.PASSED if clean else Exit.FAILED)
        entry = None if args.run == SELF_TEST else args.run
        limits = Limits(timeout_s=args.timeout)
        if no_policy:
            result = sandbox.run_kernel_only(code, entry, call_args, limits)
        else:
            result = sandbox.run(code, entry, call_args, limits)
    verdict["run"] = {
        "entry": args.run, "status": result.status, "value": result.value, "stdout": result.stdout,
        "stderr": result.stderr, "duration_s": result.duration_s, "layer": result.layer,
        "rule": result.rule, "error_type": result.error_type, "error_message": result.error_message,
        "traceback": result.traceback,
        # what the supervisor itself saw stop the run, and what the tool's own error suggests
        "evidence": result.details.get("evidence"), "hint": result.details.get("hint"),
    }
    clean = result.status == "ok"
    from finevo.normalize import RECORD, normalize  # numpy and pandas: only when needed

    print(json.dumps(normalize(verdict, RECORD), indent=2, allow_nan=False))
    return int(Exit.PASSED if clean else Exit.FAILED)
