"""Working directories: removal without recursion or link following, and the sweep of stale ones
that removes only directories whose owning process is dead."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from finevo.sandbox import workspace


def _deep_tree(top: Path, levels: int) -> None:
    """``levels`` nested directories under ``top`` (fd-relative: deeper than PATH_MAX allows)."""
    root = os.open(top, os.O_RDONLY)
    current = root
    for level in range(levels):
        os.mkdir("d" * 50, dir_fd=current)
        inner = os.open("d" * 50, os.O_RDONLY, dir_fd=current)
        if level % 400 == 0:
            fd = os.open("file", os.O_WRONLY | os.O_CREAT, 0o400, dir_fd=inner)
            os.close(fd)
        if current != root:
            os.close(current)
        current = inner
    os.close(current)
    os.close(root)


def test_a_tree_deeper_than_the_recursion_limit_and_path_max(tmp_path: Path) -> None:
    top = tmp_path / "work"
    top.mkdir()
    _deep_tree(top, 1500)  # 1500 * 51 characters: far beyond PATH_MAX as one path
    assert workspace.remove(str(top))
    assert not top.exists()


def test_hostile_contents_are_removed_and_nothing_outside_is_touched(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    top = tmp_path / "work"
    (top / "a" / "b").mkdir(parents=True)
    (top / "a" / "b" / "f").write_text("x")
    (top / "link_dir").symlink_to(outside)
    (top / "a" / "link_file").symlink_to(outside / "keep.txt")
    (top / "ro").mkdir()
    (top / "ro" / "f").write_text("x")
    (top / "none").mkdir()
    (top / "none" / "f").write_text("x")
    os.chmod(top / "ro", 0o500)
    os.chmod(top / "none", 0o000)
    os.chmod(top / "a" / "b" / "f", 0o000)
    assert workspace.remove(str(top))
    assert not os.path.lexists(top)
    assert (outside / "keep.txt").read_text() == "keep" and outside.is_dir()


def test_a_link_given_as_the_directory_is_removed_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    link = tmp_path / "finevo-sbx-link"
    link.symlink_to(target)
    assert workspace.remove(str(link))
    assert not os.path.lexists(link) and (target / "keep.txt").read_text() == "keep"


def test_missing_directory_is_fine(tmp_path: Path) -> None:
    assert workspace.remove(str(tmp_path / "never-created"))


def _dead_owner_tag() -> str:
    """The owner tag of a process that has exited (and been reaped)."""
    code = "from finevo.sandbox import workspace; print(workspace.owner_tag())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.mark.slow
def test_sweep_removes_only_directories_whose_owner_is_dead(tmp_path: Path) -> None:
    live_child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                                  stdin=subprocess.PIPE)
    try:
        live_ticks = workspace._start_ticks(live_child.pid)
        namespace = workspace._pid_namespace()
        dead = tmp_path / f"finevo-sbx-{_dead_owner_tag()}-abc123"
        mine = tmp_path / f"finevo-sbx-{workspace.owner_tag()}-abc123"
        live = tmp_path / f"finevo-sbx-{live_child.pid}-{live_ticks}-{namespace}-abc123"
        reused = tmp_path / f"finevo-sbx-{live_child.pid}-{(live_ticks or 0) + 1}-{namespace}-abc123"
        other_namespace = tmp_path / f"finevo-sbx-{_dead_owner_tag().rsplit('-', 1)[0]}-1-abc123"
        legacy = tmp_path / "finevo-sbx-k2j3h4"
        unrelated = tmp_path / "something-else"
        everything = [dead, mine, live, reused, other_namespace, legacy, unrelated]
        for path in everything:
            (path / "inner").mkdir(parents=True)
        removed = workspace.sweep_stale(str(tmp_path))
        assert sorted(removed) == sorted([str(dead), str(reused)])  # reused: the pid names another process
        assert [p.exists() for p in everything] == [False, True, True, False, True, True, True]
    finally:
        live_child.communicate(b"")


def test_created_directories_carry_their_owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    path = workspace.create()
    try:
        name = os.path.basename(path)
        assert name.startswith(f"finevo-sbx-{workspace.owner_tag()}-")
        assert not workspace.owner_is_dead(name)
        assert os.stat(path).st_mode & 0o777 == 0o700
    finally:
        workspace.remove(path)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to become another user")
def test_an_unprivileged_owner_removes_its_mode_000_directories(tmp_path: Path) -> None:
    """Without root, permissions apply: directories the tool made unreadable (000) or read-only
    must be opened up (by their owner) before their contents can go."""
    base = Path(tempfile.mkdtemp())  # under /tmp: pytest's own directories are root's alone
    os.chown(base, 65534, 65534)
    top = base / "work"
    pid = os.fork()
    if pid == 0:  # the child: become nobody, build the tree, remove it; report by exit code
        status = 1
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            (top / "a" / "b").mkdir(parents=True)
            (top / "a" / "b" / "f").write_text("x")
            (top / "r" / "s").mkdir(parents=True)
            os.chmod(top / "a" / "b", 0)
            os.chmod(top / "a", 0)
            os.chmod(top / "r", 0o500)
            status = 0 if workspace.remove(str(top)) and not os.path.lexists(top) else 2
        finally:
            os._exit(status)
    _, wait_status = os.waitpid(pid, 0)
    try:
        assert os.waitstatus_to_exitcode(wait_status) == 0
        assert not os.path.lexists(top)
    finally:
        workspace.remove(str(base))


def test_a_working_directorys_name_cannot_be_foretold_from_the_state_a_fork_inherits(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    """Every fork of the worker holds a copy of its ``tempfile`` name generator: a name drawn from it
    could be drawn again by a tool, naming the directories of the runs after its own. The names come
    from the kernel's randomness instead: a copy of the generator foretells none of them."""
    import copy
    import random

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    names = tempfile._get_candidate_names()  # type: ignore[attr-defined]
    foretold = copy.copy(names)
    foretold._rng = random.Random()  # type: ignore[attr-defined]
    foretold._rng.setstate(names.rng.getstate())  # type: ignore[attr-defined]
    foretold._rng_pid = os.getpid()  # type: ignore[attr-defined]
    guesses = {next(foretold) for _ in range(50)}
    made = [workspace.create() for _ in range(5)]
    assert all(Path(p).parent == tmp_path and Path(p).is_dir() for p in made)
    assert all(oct(os.stat(p).st_mode & 0o777) == "0o700" for p in made)
    assert not any(name.endswith(guess) for name in made for guess in guesses), made
    assert len(set(made)) == 5
