"""The audit-hook guard, called directly (never installed in the test process)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from finevo.sandbox import guard


@pytest.fixture
def setup(tmp_path: Path) -> tuple[object, Path, Path, list[bytes]]:
    workdir = tmp_path / "work"
    workdir.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    read_fd, write_fd = os.pipe()
    hook = guard.make_hook(workdir=str(workdir), read_roots=[str(tmp_path / "lib")], report_fd=write_fd)
    reports: list[bytes] = []

    def drain() -> list[bytes]:
        os.close(write_fd)
        data = os.read(read_fd, 65536)
        os.close(read_fd)
        reports.extend(data.splitlines())
        return reports

    hook.drain = drain  # type: ignore[attr-defined]
    return hook, workdir, outside, reports


def test_reads_outside_refused_and_reported(setup) -> None:  # type: ignore[no-untyped-def]
    hook, _workdir, outside, _ = setup
    with pytest.raises(guard.SandboxRefusal, match="read outside the sandbox"):
        hook("open", (str(outside), "r", os.O_RDONLY))
    assert any(b'"event": "open"' in line for line in hook.drain())


def test_workdir_read_write_allowed_writes_elsewhere_refused(setup) -> None:  # type: ignore[no-untyped-def]
    hook, workdir, outside, _ = setup
    hook("open", (str(workdir / "scratch.txt"), "w", os.O_WRONLY | os.O_CREAT))
    with pytest.raises(guard.SandboxRefusal, match="write outside"):
        hook("open", (str(outside), "a", os.O_WRONLY | os.O_APPEND))


def test_symlink_and_dotdot_cannot_escape(setup, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    hook, workdir, outside, _ = setup
    link = workdir / "innocent.txt"
    link.symlink_to(outside)
    with pytest.raises(guard.SandboxRefusal):
        hook("open", (str(link), "r", os.O_RDONLY))
    with pytest.raises(guard.SandboxRefusal):
        hook("open", (str(workdir / ".." / "outside.txt"), "r", os.O_RDONLY))


def test_path_types_that_could_lie_are_refused_or_read_raw(setup) -> None:  # type: ignore[no-untyped-def]
    hook, workdir, outside, _ = setup

    class Sneaky(str):
        def startswith(self, *_a: object) -> bool:  # would claim to be inside every root
            return True

    with pytest.raises(guard.SandboxRefusal):
        hook("open", (Sneaky(str(outside)), "r", os.O_RDONLY))
    with pytest.raises(guard.SandboxRefusal):
        hook("open", (os.fsencode(str(outside)), "rb", os.O_RDONLY))

    class Shifty:
        def __fspath__(self) -> str:
            return str(workdir / "ok.txt")

    with pytest.raises(guard.SandboxRefusal, match="not a plain path"):
        hook("open", (Shifty(), "r", os.O_RDONLY))
    with pytest.raises(guard.SandboxRefusal, match="raw file descriptor"):
        hook("open", (3, "w", os.O_WRONLY))


@pytest.mark.parametrize("event", ["os.system", "subprocess.Popen", "socket.connect", "ctypes.dlopen",
                                   "pickle.find_class", "os.fork", "os.exec", "os.posix_spawn",
                                   "sys.addaudithook", "gc.get_objects"])
def test_dangerous_events_refused(setup, event: str) -> None:  # type: ignore[no-untyped-def]
    hook, *_ = setup
    with pytest.raises(guard.SandboxRefusal):
        hook(event, ())


def test_file_system_changes_only_inside_workdir(setup) -> None:  # type: ignore[no-untyped-def]
    hook, workdir, outside, _ = setup
    hook("os.remove", (str(workdir / "x"), None))
    with pytest.raises(guard.SandboxRefusal):
        hook("os.remove", (str(outside), None))
    with pytest.raises(guard.SandboxRefusal):
        hook("os.rename", (str(workdir / "x"), str(outside), None, None))
    with pytest.raises(guard.SandboxRefusal):
        hook("os.listdir", ("/etc",))


def test_imports_denied_always_and_by_the_tool(setup) -> None:  # type: ignore[no-untyped-def]
    hook, *_ = setup
    with pytest.raises(guard.SandboxRefusal, match="import of socket"):
        hook("import", ("socket", None, [], [], []))
    hook("import", ("pandas.core.window", None, [], [], []))  # a library's lazy import: allowed
    tool_code = compile("hook('import', ('xml.dom', None, [], [], []))", guard.TOOL_FILENAME, "exec")
    with pytest.raises(guard.SandboxRefusal, match="not in the tool allowlist"):
        exec(tool_code, {"hook": hook})
    allowed = compile("hook('import', ('statistics', None, [], [], []))", guard.TOOL_FILENAME, "exec")
    exec(allowed, {"hook": hook})


def test_no_directory_outside_the_workdir_can_be_opened(setup, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A directory descriptor would let ``os.open(relative, dir_fd=d)`` resolve where the hook,
    which never sees ``dir_fd``, did not look; directories under the read roots included."""
    hook, workdir, _outside, _ = setup
    lib = tmp_path / "lib"
    (lib / "pkg").mkdir(parents=True)
    (lib / "pkg" / "mod.py").write_text("x = 1\n")
    (workdir / "sub").mkdir()
    hook("open", (str(lib / "pkg" / "mod.py"), "r", os.O_RDONLY))  # a file under a read root: fine
    hook("open", (str(workdir / "sub"), None, os.O_RDONLY | os.O_DIRECTORY))  # inside the workdir: fine
    for directory in (lib / "pkg", lib, tmp_path / "lib" / "pkg" / ".."):
        with pytest.raises(guard.SandboxRefusal, match="opening a directory outside the sandbox"):
            hook("open", (str(directory), None, os.O_RDONLY))


def test_changes_in_the_workdir_pass_whatever_their_mode_or_owner_numbers(setup) -> None:  # type: ignore[no-untyped-def]
    """A mode or a uid in the event is a number like a descriptor: only the dir_fd slot is one."""
    hook, workdir, _outside, _ = setup
    hook("os.mkdir", (str(workdir / "sub"), 0o755, -1))
    hook("os.chmod", (str(workdir / "sub"), 0o700, -1))
    hook("os.chown", (str(workdir / "sub"), 1000, 1000, -1))
    hook("os.rename", (str(workdir / "a"), str(workdir / "b"), -1, -1))
    hook("os.utime", (str(workdir / "b"), None, None, -1))
    hook("os.remove", (str(workdir / "b"), -1))


@pytest.mark.parametrize(("event", "args"), [
    ("os.mkdir", ("sub", 0o755, 7)),
    ("os.chmod", ("sub", 0o700, 7)),
    ("os.chown", ("sub", 0, 0, 7)),
    ("os.rename", ("a", "b", -1, 7)),
    ("os.remove", ("b", 7)),
    ("os.utime", ("b", None, None, 7)),
])
def test_dir_fd_relative_changes_are_refused(setup, event: str, args: tuple[object, ...]) -> None:  # type: ignore[no-untyped-def]
    hook, workdir, _outside, _ = setup
    full = tuple(str(workdir / a) if isinstance(a, str) else a for a in args)
    with pytest.raises(guard.SandboxRefusal, match="dir_fd"):
        hook(event, full)
