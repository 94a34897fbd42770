"""The run-time guard: a PEP 578 audit hook installed in the sandbox child just before tool code runs.

It refuses, whatever the static policy missed:

* process creation and program execution (``os.system``, ``os.exec*``, ``os.spawn*``,
  ``os.posix_spawn``, ``os.fork``, ``subprocess.Popen``, ``pty``),
* every socket operation, every ``ctypes`` operation, unpickling (``pickle.find_class``),
  ``sqlite3``, signals sent to other processes, new audit hooks, ``gc`` introspection,
* file opens outside an allowlist: reads only under the Python installation, site-packages, the
  ``finevo`` package, time-zone data and the private working directory; writes only inside the
  working directory,
* directory listing outside the read roots and any file-system change outside the working directory,
* imports *by the tool* of modules outside the tool allowlist, and imports of network / process /
  FFI modules by anyone (libraries lazily importing their own helpers stay allowed).

A refusal raises :class:`SandboxRefusal` inside the tool **and** is written at once to the
harness's control channel, so a tool that swallows the exception is still reported as blocked.

The hook is written so that no tool code runs while it decides: it only calls C functions captured
when it is installed (never module attributes a tool could monkeypatch), reads path arguments with
unbound ``str`` / ``bytes`` methods, and refuses path-like objects it cannot read that way.
"""

from __future__ import annotations

import contextlib
import os
import posix
import stat as _stat_mod
import sys
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

from finevo.sandbox.protocol import sealed_dumps

#: Top-level modules a tool may import itself (the static policy's allowlist).
TOOL_IMPORTS: frozenset[str] = frozenset({
    "pandas", "numpy", "math", "statistics", "datetime", "json", "decimal", "collections",
    "itertools", "functools", "re", "typing", "dataclasses", "yfinance", "warnings", "__future__",
})

#: Modules nobody inside the sandbox may import (not even a library, lazily).
DENIED_IMPORTS: frozenset[str] = frozenset({
    "socket", "_socket", "ssl", "_ssl", "subprocess", "_posixsubprocess", "ctypes", "_ctypes",
    "multiprocessing", "_multiprocessing", "concurrent", "asyncio", "pty", "tty", "termios",
    "fcntl", "mmap", "resource", "select", "selectors", "signal", "shelve", "dbm", "sqlite3",
    "_sqlite3", "urllib", "http", "ftplib", "smtplib", "imaplib", "poplib", "telnetlib",
    "xmlrpc", "webbrowser", "socketserver", "requests", "httpx", "urllib3", "curl_cffi",
    "aiohttp", "paramiko", "gc", "pdb", "code", "codeop", "importlib", "runpy", "pickle",
    "_pickle", "marshal", "cffi", "os", "posix", "sys", "shutil", "tempfile", "pathlib", "io",
    "builtins", "inspect", "threading", "_thread", "platform", "sysconfig", "site",
    # C parsers that open files and URLs themselves (XSLT document(), external entities),
    # invisible to this hook: pandas reaches them through to_xml / read_xml / read_html
    "lxml", "bs4", "html5lib",
})

#: Events refused outright (exact names).
REFUSED_EVENTS: frozenset[str] = frozenset({
    "os.system", "os.fork", "os.forkpty", "os.posix_spawn", "os.kill", "os.killpg",
    "os.link", "os.symlink", "os.mkfifo", "os.mknod", "os.chroot", "os.setxattr",
    "os.removexattr", "os.startfile", "subprocess.Popen", "pty.spawn", "pickle.find_class",
    "sys.addaudithook", "sys.setprofile", "sys.settrace", "signal.pthread_kill",
    "resource.setrlimit", "resource.prlimit", "builtins.input", "builtins.input/result",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "webbrowser.open",
    "urllib.Request", "http.client.connect", "http.client.send", "mmap.__new__",
    "_thread.start_new_thread", "cpython.PyInterpreterState_New", "os.truncate",
})

#: Events refused by prefix (families).
REFUSED_PREFIXES: tuple[str, ...] = (
    "socket.", "ctypes.", "os.exec", "os.spawn", "sqlite3.", "ftplib.", "smtplib.", "imaplib.",
    "poplib.", "nntplib.", "telnetlib.", "syslog.", "_winapi.", "winreg.", "msvcrt.",
    "shutil.", "tempfile.",
)

#: Events whose path arguments must lie inside the working directory: (path positions,
#: dir_fd positions) as CPython raises them, e.g. ``os.mkdir(path, mode, dir_fd)``. Only a real
#: descriptor in a dir_fd position is refused (a mode or a uid is just a number).
MODIFY_EVENTS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "os.remove": ((0,), (1,)), "os.rmdir": ((0,), (1,)), "os.mkdir": ((0,), (2,)),
    "os.rename": ((0, 1), (2, 3)), "os.chmod": ((0,), (2,)), "os.chown": ((0,), (3,)),
    "os.lchown": ((0,), ()), "os.chflags": ((0,), ()), "os.lchflags": ((0,), ()),
    "os.utime": ((0,), (3,)), "os.chdir": ((0,), ()),
}

#: Events whose path argument must lie inside a read root.
LIST_EVENTS: dict[str, tuple[int, ...]] = {
    "os.listdir": (0,), "os.scandir": (0,), "glob.glob": (0,), "glob.glob/2": (0,),
}

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_MAX_SYMLINKS = 40
TOOL_FILENAME = "<tool>"


class SandboxRefusal(PermissionError):
    """Raised inside the tool when the run-time guard refuses an operation."""


def default_read_roots(extra: Iterable[str] = ()) -> list[str]:
    """Where reads are allowed: the interpreter, site-packages, finevo, tz data, plus ``extra``."""
    import site
    import sysconfig

    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.__file__)}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        with contextlib.suppress(KeyError):
            roots.add(sysconfig.get_paths()[key])
    with contextlib.suppress(AttributeError):  # pragma: no cover - virtualenv quirks
        roots.update(site.getsitepackages())
    import finevo

    roots.add(os.path.dirname(os.path.abspath(finevo.__file__)))
    roots.update(("/usr/share/zoneinfo", "/etc/localtime", "/dev/null", "/dev/urandom"))
    roots.update(extra)
    return sorted({os.path.realpath(r) for r in roots if r})


def make_hook(*, workdir: str, read_roots: Iterable[str], report_fd: int,
              tool_imports: Iterable[str] = TOOL_IMPORTS,
              tool_filename: str = TOOL_FILENAME) -> Callable[[str, tuple[Any, ...]], None]:
    """Build the audit hook; everything it needs is bound now, as immutable values."""
    workdir_r = os.path.realpath(workdir)
    write_roots = (workdir_r, "/dev/null")
    read_roots_t = tuple({os.path.realpath(r) for r in read_roots} | {workdir_r})
    tool_imports_f = frozenset(tool_imports)
    refused = REFUSED_EVENTS
    refused_prefixes = REFUSED_PREFIXES
    modify_events = dict(MODIFY_EVENTS)
    list_events = dict(LIST_EVENTS)
    denied_imports = DENIED_IMPORTS
    # C functions and unbound methods only: a tool cannot swap them out from under the hook.
    p_lstat, p_readlink, p_getcwd, p_write = posix.lstat, posix.readlink, posix.getcwd, posix.write
    s_islnk, s_isdir, p_stat = _stat_mod.S_ISLNK, _stat_mod.S_ISDIR, posix.stat
    getframe = sys._getframe
    s_startswith, s_split, s_join, s_copy = str.startswith, str.split, str.join, str.__str__
    b_decode = bytes.decode
    dumps = sealed_dumps  # json.dumps can be patched by the tool (json is an allowed import)
    t_str, t_bytes, t_int = str, bytes, int
    is_sub = issubclass
    refusal_cls = SandboxRefusal
    frozen_import = "<frozen importlib"
    import importlib

    importlib_dir = os.path.dirname(os.path.realpath(importlib.__file__)) + "/"
    this_file = os.path.realpath(__file__)

    def as_text(value: Any) -> str | None:
        kind = type(value)  # never isinstance(): it may consult a tool-defined __class__
        if kind is t_str or is_sub(kind, t_str):
            return s_copy(value)
        if kind is t_bytes or is_sub(kind, t_bytes):
            return b_decode(value, "utf-8", "surrogateescape")
        return None

    def resolve(path: str) -> str:
        """A symlink-free absolute path, computed with captured C calls only."""
        if not s_startswith(path, "/"):
            path = p_getcwd() + "/" + path
        pending = [c for c in s_split(path, "/") if c]
        pending.reverse()
        parts: list[str] = []
        hops = 0
        while pending:
            comp = pending.pop()
            if comp == ".":
                continue
            if comp == "..":
                if parts:
                    parts.pop()
                continue
            candidate = "/" + s_join("/", [*parts, comp])
            try:
                st = p_lstat(candidate)
            except OSError:
                parts.append(comp)
                continue
            if s_islnk(st.st_mode):
                hops += 1
                if hops > _MAX_SYMLINKS:
                    return "/\x00symlink-loop"
                target = p_readlink(candidate)
                if s_startswith(target, "/"):
                    parts = []
                more = [c for c in s_split(target, "/") if c]
                more.reverse()
                pending.extend(more)
                continue
            parts.append(comp)
        return "/" + s_join("/", parts)

    def under(path: str, roots: tuple[str, ...]) -> bool:
        for root in roots:  # noqa: SIM110 - no any(): the hook uses captured callables only
            if path == root or s_startswith(path, root + "/") or root == "/":
                return True
        return False

    def refuse(event: str, detail: str) -> None:
        record = dumps({"kind": "refused", "event": event, "detail": detail[:300]})
        try:  # noqa: SIM105 - no contextlib in the hook: a tool could patch a module global
            p_write(report_fd, (record + "\n").encode("utf-8", "replace"))
        except OSError:
            pass
        raise refusal_cls(f"sandbox refused {event}: {detail}")

    def path_arg(event: str, value: Any, roots: tuple[str, ...], what: str) -> None:
        text = as_text(value)
        if text is None:
            refuse(event, f"{what} target of type {type(value).__name__} is not a plain path")
        resolved = resolve(text)  # type: ignore[arg-type]
        if not under(resolved, roots):
            refuse(event, f"{what} outside the sandbox: {text}")

    def is_dir(path: str) -> bool:
        try:
            return s_isdir(p_stat(path).st_mode)
        except OSError:
            return False

    def importer_is_tool() -> bool:
        frame: FrameType | None = getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if s_startswith(name, frozen_import) or s_startswith(name, importlib_dir) or name == this_file:
                frame = frame.f_back
                continue
            return name == tool_filename
        return False

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            target = args[0] if args else None
            flags = args[2] if len(args) > 2 and type(args[2]) is t_int else 0
            if type(target) is t_int:
                refuse(event, "opening a raw file descriptor")
            writing = bool(flags & _WRITE_FLAGS)
            path_arg(event, target, write_roots if writing else read_roots_t,
                     "write" if writing else "read")
            # The event does not carry os.open's dir_fd, and the kernel resolves a relative path
            # against that descriptor, not the working directory this hook checked it against:
            # so no descriptor of a directory outside the working directory may be opened.
            text = as_text(target)
            resolved = resolve(text)  # type: ignore[arg-type]
            if not under(resolved, (workdir_r,)) and is_dir(resolved):
                refuse(event, f"opening a directory outside the sandbox: {text}")
            return
        if event == "import":
            module = as_text(args[0]) if args else None
            if module is None:
                refuse(event, "import of a non-string module name")
            top = s_split(module, ".")[0]  # type: ignore[arg-type]
            if top in denied_imports:
                refuse(event, f"import of {module}")
            if top not in tool_imports_f and importer_is_tool():
                refuse(event, f"import of {module} (not in the tool allowlist)")
            return
        if event in refused:
            refuse(event, "operation not allowed in the sandbox")
        for prefix in refused_prefixes:
            if s_startswith(event, prefix):
                refuse(event, "operation not allowed in the sandbox")
        spec = modify_events.get(event)
        if spec is not None:
            paths, dir_fds = spec
            for i in paths:
                if i < len(args):
                    path_arg(event, args[i], (workdir_r,), "change")
            for i in dir_fds:
                if i < len(args) and type(args[i]) is t_int and args[i] >= 0:
                    refuse(event, "dir_fd-relative file-system change")
            return
        positions = list_events.get(event)
        if positions is not None:
            for i in positions:
                target = args[i] if i < len(args) else None
                if target is None:
                    target = "."
                if type(target) is t_int:
                    refuse(event, "listing a raw file descriptor")
                path_arg(event, target, read_roots_t, "listing")
            return

    return hook


def install(**kwargs: Any) -> None:
    """Install the guard for the rest of this process's life (audit hooks cannot be removed)."""
    sys.addaudithook(make_hook(**kwargs))
