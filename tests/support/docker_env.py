"""Shared set-up for the tests that need a real Docker engine.

``scripts/setup-docker.sh`` prepares the engine, the debootstrap base image and the wheelhouse and
prints ``FINEVO_TEST_BASE_IMAGE`` / ``FINEVO_TEST_WHEELHOUSE``; without them the defaults it uses
are tried. The image is built once per session through the launcher and reused across sessions
when an image with the same context hash exists.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner import docker_launcher as dl

ROOT = Path(__file__).resolve().parents[2]
#: The tag the docker tests build and run (``FINEVO_TEST_IMAGE`` overrides it, so several checkouts
#: can test their own images on one engine side by side).
TEST_IMAGE = os.environ.get("FINEVO_TEST_IMAGE") or "finevo-verify:test"
DEFAULT_BASE = "finevo-base:bookworm"
DEFAULT_WHEELHOUSE = Path("/var/cache/finevo/wheelhouse")


def required() -> bool:
    return os.environ.get("FINEVO_REQUIRE_DOCKER") == "1"


def unavailable(message: str) -> None:
    """Skip, or fail when the docker tests are required (CI)."""
    if required():
        pytest.fail(message)
    pytest.skip(message)


def build_inputs(client: Any) -> tuple[str, Path]:
    """The base image and the wheelhouse to build the test image from, or skip/fail."""
    import docker

    base = os.environ.get("FINEVO_TEST_BASE_IMAGE") or DEFAULT_BASE
    wheelhouse = Path(os.environ.get("FINEVO_TEST_WHEELHOUSE") or DEFAULT_WHEELHOUSE)
    try:
        client.images.get(base)
    except docker.errors.ImageNotFound:
        unavailable(f"base image {base} missing: run `bash scripts/setup-docker.sh`")
    if not any(wheelhouse.glob("*.whl")):
        unavailable(f"wheelhouse {wheelhouse} missing or empty: run `bash scripts/setup-docker.sh`")
    return base, wheelhouse


def snapshot_context(dest: Path) -> Path:
    """A frozen copy of the build context (what ``.dockerignore`` keeps), so the sources cannot
    change under a session's builds while someone edits the checkout."""
    for rel in dl.context_files(ROOT):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    return dest


def build_test_image(client: Any, context_dir: Path) -> tuple[Any, float]:
    """Build (or reuse) the test image from ``context_dir``; returns the image and the seconds it took."""
    base, wheelhouse = build_inputs(client)
    spec = dl.BuildSpec(context_dir=context_dir, tag=TEST_IMAGE, base_image=base, wheelhouse=wheelhouse,
                        build_args={"REVISION": "test"})
    started = time.monotonic()
    image = dl.build_image(client, spec, reuse=True, log=lambda _text: None)
    return image, time.monotonic() - started


def docker_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.2) -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:g}s waiting for {what}")


def finished_tasks(run_dir: Path) -> int:
    """How many task events the gate has flushed to ``events.jsonl`` so far."""
    events = run_dir / "events.jsonl"
    if not events.is_file():
        return 0
    count = 0
    for line in events.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            if json.loads(line).get("event") == "task":
                count += 1
        except json.JSONDecodeError:
            continue  # a line being written
    return count


def open_out_dir(path: Path) -> Path:
    """A reports directory any container user can write to (bind mounts keep host modes)."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o777)
    return path
