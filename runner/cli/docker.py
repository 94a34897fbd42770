"""``finevo-verify docker``: run the gate in a fresh container (see :mod:`runner.launcher.container`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from runner.launcher.defaults import DEFAULT_IMAGE, DEFAULT_STOP_GRACE

EPILOG = """\
The gate's own arguments follow the gate verb (or `--`), for example:
  finevo-verify docker --build run --llm reference
  finevo-verify docker --out reports -- --llm predictions:preds.jsonl --only calc_001
Without gate arguments the image's default runs: `run --llm reference --out /out`.

Offline LLM modes (reference, replay:FILE, predictions:FILE) run with no network and get no
API key. Only FINEVO_LLM_*, OPENAI_API_KEY and OPENAI_BASE_URL reach the container, plus
FINEVO_GIT_SHA (this checkout's HEAD: the image has no git). Host files named by
--tasks/--baseline/--data/--llm are mounted read-only. Exit code: the container's; 3 when the
engine is unreachable or the image cannot be built."""


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return value


def _build_arg(text: str) -> tuple[str, str]:
    name, eq, value = text.partition("=")
    if not eq or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "docker", help="run the gate in a fresh container (Docker SDK)",
        description="Build (when asked or missing) and run the gate image with the reports "
                    "directory mounted at /out.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--build", action="store_true", help="build the image even if it exists")
    parser.add_argument("--image", default=DEFAULT_IMAGE, metavar="NAME",
                        help=f"image tag to run (and build) (default: {DEFAULT_IMAGE})")
    parser.add_argument("--base-image", metavar="IMAGE",
                        help="BASE_IMAGE build argument (default: the Dockerfile's)")
    parser.add_argument("--wheelhouse", type=Path, metavar="DIR",
                        help="build offline from the wheels in DIR")
    parser.add_argument("--build-arg", type=_build_arg, action="append", default=[], metavar="NAME=VALUE",
                        help="extra build argument (repeatable), e.g. REVISION=$(git rev-parse HEAD)")
    parser.add_argument("--context", type=Path, metavar="DIR",
                        help="build context (default: the checkout holding the Dockerfile)")
    parser.add_argument("--out", type=Path, default=Path("reports"), metavar="DIR",
                        help="host directory mounted at /out for the reports (default: ./reports)")
    parser.add_argument("--timeout", type=_positive_float, metavar="S",
                        help="wall-clock limit in seconds; then the container is stopped")
    parser.add_argument("--stop-grace", type=_positive_float, default=DEFAULT_STOP_GRACE, metavar="S",
                        help=f"seconds between SIGTERM and SIGKILL on a stop (default: {DEFAULT_STOP_GRACE:g})")
    parser.add_argument("gate_args", nargs=argparse.REMAINDER, metavar="GATE_ARGS",
                        help="the gate's command line (starting with its verb or `--`)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from runner.launcher.container import LaunchOptions, launch  # tarfile, subprocess, hashing: not for --help

    gate_args = list(args.gate_args)
    if gate_args and gate_args[0] == "--":
        gate_args = gate_args[1:]
    options = LaunchOptions(
        gate_args=gate_args, image=args.image, build=args.build, base_image=args.base_image,
        wheelhouse=args.wheelhouse, context_dir=args.context, out_dir=args.out, timeout=args.timeout,
        stop_grace=args.stop_grace, build_args=dict(args.build_arg),
    )
    return launch(options)
