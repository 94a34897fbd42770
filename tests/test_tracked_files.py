"""What the repository tracks: sources, documents and small fixtures, never a build output or an archive.

A 4 MB tarball of the tree once rode along with a documentation commit; every clone and image build
context paid for it. These checks read ``git ls-files``, so they guard the commit, not the working
tree; outside a git checkout (an unpacked sdist) there is nothing to check.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The largest tracked file is a report screenshot of about 200 kB; twice that leaves room to grow.
MAX_BYTES = 512 * 1024
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip", ".whl", ".egg", ".7z", ".xz", ".bz2")


def _tracked() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no tracked files to check")
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    return [ROOT / name for name in out.decode().split("\0") if name]


def test_no_tracked_file_is_large() -> None:
    large = [f"{p.relative_to(ROOT)} ({p.stat().st_size} bytes)" for p in _tracked()
             if p.is_file() and p.stat().st_size > MAX_BYTES]
    assert not large, f"tracked files over {MAX_BYTES} bytes: {large}"


def test_no_archive_is_tracked() -> None:
    archives = [str(p.relative_to(ROOT)) for p in _tracked() if p.name.lower().endswith(ARCHIVE_SUFFIXES)]
    assert not archives, f"archives tracked by git: {archives}"
