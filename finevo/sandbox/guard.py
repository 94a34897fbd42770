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


#: The gate's own packages (the oracle, the judge, the worlds, the baseline writer, the reports):
#: never readable by a tool, whatever the install (editable, wheel, image).
GATE_PACKAGES: frozenset[str] = frozenset({"runner"})


def site_dirs() -> set[str]:
    """Every site-packages directory of this interpreter (resolved)."""
    import site
    import sysconfig

    dirs = set()
    for key in ("purelib", "platlib"):
        with contextlib.suppress(KeyError):
            dirs.add(sysconfig.get_paths()[key])
    with contextlib.suppress(AttributeError):  # pragma: no cover - virtualenv quirks
        dirs.update(site.getsitepackages())
    return {os.path.realpath(d) for d in dirs if d}


def loaded_site_entries(sites: set[str] | None = None) -> list[str]:
    """The top-level entries of site-packages that the modules loaded in this process come from
    (a package's directory, a module's file, and a ``<name>.libs`` directory beside it), never one
    of :data:`GATE_PACKAGES`. Called in the warm worker after preloading: what tools can import."""
    sites = site_dirs() if sites is None else sites
    entries: set[str] = set()
    for module in list(sys.modules.values()):
        try:  # a module may answer any attribute by raising (the no-snapshot yfinance stand-in)
            path = getattr(module, "__file__", None)
        except Exception:
            continue
        if not isinstance(path, str):
            continue
        real = os.path.realpath(path)
        for site_dir in sites:
            if real.startswith(site_dir + os.sep):
                top = real[len(site_dir) + 1:].split(os.sep, 1)[0]
                name = top.split(".", 1)[0]
                if name not in GATE_PACKAGES and name != "__pycache__":
                    entries.add(os.path.join(site_dir, top))
                    libs = os.path.join(site_dir, f"{name}.libs")
                    if os.path.isdir(libs):
                        entries.add(libs)
    return sorted(entries)


def default_read_roots(extra: Iterable[str] = ()) -> list[str]:
    """Where reads are allowed: the standard library, the site-packages entries of the libraries
    loaded here (never a whole prefix or site-packages, which would hold the gate's own packages),
    finevo, tz data, plus ``extra``."""
    import sysconfig

    roots = {os.path.dirname(os.__file__)}
    for key in ("stdlib", "platstdlib"):
        with contextlib.suppress(KeyError):
            roots.add(sysconfig.get_paths()[key])
    roots.update(loaded_site_entries())
    import finevo

    roots.add(os.path.dirname(os.path.abspath(finevo.__file__)))
    roots.update(("/usr/share/zoneinfo", "/etc/localtime", "/dev/null", "/dev/urandom"))
    roots.update(extra)
    return narrow_read_roots({os.path.realpath(r) for r in roots if r})


def narrow_read_roots(roots: Iterable[str]) -> list[str]:
    """``roots`` without any site-packages directory or any directory above one (a prefix, a
    virtual environment's ``lib/pythonX.Y``), with the site-packages entries of the libraries
    loaded in this process instead. The standard library's own directory always stays (an
    install straight into the base interpreter's site-packages below it is the one case where
    the gate's packages stay readable; use a virtual environment, as the image does)."""
    sites = site_dirs()
    stdlib = os.path.realpath(os.path.dirname(os.__file__))
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    kept = {r for r in roots if r not in prefixes
            and not any(s == r or s.startswith(r.rstrip(os.sep) + os.sep) for s in sites)}
    return sorted(kept | {stdlib} | set(loaded_site_entries(sites)))


class _Prims:
    """The C functions and unbound methods the hook calls, captured when it is built: a tool
    cannot swap them out from under it (module globals are looked up at call time; these are not)."""

    __slots__ = (
        "bytes",
        "copy",
        "decode",
        "dumps",
        "getcwd",
        "getframe",
        "int",
        "isdir",
        "islnk",
        "issub",
        "join",
        "lstat",
        "readlink",
        "refusal",
        "split",
        "startswith",
        "stat",
        "str",
        "write",
    )

    def __init__(self) -> None:
        self.lstat, self.readlink, self.getcwd, self.write = posix.lstat, posix.readlink, posix.getcwd, posix.write
        self.islnk, self.isdir, self.stat = _stat_mod.S_ISLNK, _stat_mod.S_ISDIR, posix.stat
        self.getframe = sys._getframe
        self.startswith, self.split, self.join, self.copy = str.startswith, str.split, str.join, str.__str__
        self.decode = bytes.decode
        self.dumps = sealed_dumps  # json.dumps can be patched by the tool (json is an allowed import)
        self.str, self.bytes, self.int = str, bytes, int
        self.issub = issubclass
        self.refusal = SandboxRefusal


def _make_as_text(p: _Prims) -> Callable[[Any], str | None]:
    t_str, t_bytes, is_sub, s_copy, b_decode = p.str, p.bytes, p.issub, p.copy, p.decode

    def as_text(value: Any) -> str | None:
        kind = type(value)  # never isinstance(): it may consult a tool-defined __class__
        if kind is t_str or is_sub(kind, t_str):
            return s_copy(value)
        if kind is t_bytes or is_sub(kind, t_bytes):
            return b_decode(value, "utf-8", "surrogateescape")
        return None

    return as_text


def _make_resolve(p: _Prims) -> Callable[[str], str]:
    p_lstat, p_readlink, p_getcwd, s_islnk = p.lstat, p.readlink, p.getcwd, p.islnk
    s_startswith, s_split, s_join = p.startswith, p.split, p.join

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

    return resolve


def _make_under(p: _Prims) -> Callable[[str, tuple[str, ...]], bool]:
    s_startswith = p.startswith

    def under(path: str, roots: tuple[str, ...]) -> bool:
        for root in roots:  # noqa: SIM110 - no any(): the hook uses captured callables only
            if path == root or s_startswith(path, root + "/") or root == "/":
                return True
        return False

    return under


def _make_refuse(p: _Prims, report_fd: int) -> Callable[[str, str], None]:
    dumps, p_write, refusal_cls = p.dumps, p.write, p.refusal

    def refuse(event: str, detail: str) -> None:
        record = dumps({"kind": "refused", "event": event, "detail": detail[:300]})
        try:  # noqa: SIM105 - no contextlib in the hook: a tool could patch a module global
            p_write(report_fd, (record + "\n").encode("utf-8", "replace"))
        except OSError:
            pass
        raise refusal_cls(f"sandbox refused {event}: {detail}")

    return refuse


def _make_importer_is_tool(p: _Prims, tool_filename: str) -> Callable[[], bool]:
    import importlib

    getframe, s_startswith = p.getframe, p.startswith
    frozen_import = "<frozen importlib"
    importlib_dir = os.path.dirname(resolved(importlib.__file__)) + "/"
    this_file = resolved(__file__)

    def importer_is_tool() -> bool:
        frame: FrameType | None = getframe(3)
        while frame is not None:
            name = frame.f_code.co_filename
            if s_startswith(name, frozen_import) or s_startswith(name, importlib_dir) or name == this_file:
                frame = frame.f_back
                continue
            return name == tool_filename
        return False

    return importer_is_tool


_Check = Callable[[str, tuple[Any, ...]], None]


def _make_path_checks(p: _Prims, refuse: Callable[[str, str], None], workdir_r: str,
                      read_roots_t: tuple[str, ...]) -> tuple[_Check, Callable[[str, Any, tuple[str, ...], str], None]]:
    """The ``open`` check, and the path check every other file event uses."""
    as_text, resolve, under = _make_as_text(p), _make_resolve(p), _make_under(p)
    t_int, s_isdir, p_stat = p.int, p.isdir, p.stat
    write_roots = (workdir_r, "/dev/null")

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

    def on_open(event: str, args: tuple[Any, ...]) -> None:
        target = args[0] if args else None
        flags = args[2] if len(args) > 2 and type(args[2]) is t_int else 0
        if type(target) is t_int:
            refuse(event, "opening a raw file descriptor")
        writing = bool(flags & _WRITE_FLAGS)
        path_arg(event, target, write_roots if writing else read_roots_t, "write" if writing else "read")
        # The event does not carry os.open's dir_fd, and the kernel resolves a relative path
        # against that descriptor, not the working directory this hook checked it against:
        # so no descriptor of a directory outside the working directory may be opened.
        text = as_text(target)
        resolved = resolve(text)  # type: ignore[arg-type]
        if not under(resolved, (workdir_r,)) and is_dir(resolved):
            refuse(event, f"opening a directory outside the sandbox: {text}")

    return on_open, path_arg


def _make_import_check(p: _Prims, refuse: Callable[[str, str], None], tool_imports: frozenset[str],
                       tool_filename: str) -> _Check:
    as_text, s_split = _make_as_text(p), p.split
    importer_is_tool = _make_importer_is_tool(p, tool_filename)
    denied_imports = DENIED_IMPORTS

    def on_import(event: str, args: tuple[Any, ...]) -> None:
        module = as_text(args[0]) if args else None
        if module is None:
            refuse(event, "import of a non-string module name")
        top = s_split(module, ".")[0]  # type: ignore[arg-type]
        if top in denied_imports:
            refuse(event, f"import of {module}")
        if top not in tool_imports and importer_is_tool():
            refuse(event, f"import of {module} (not in the tool allowlist)")

    return on_import


def _make_change_checks(p: _Prims, refuse: Callable[[str, str], None],
                        path_arg: Callable[[str, Any, tuple[str, ...], str], None], workdir_r: str,
                        read_roots_t: tuple[str, ...]) -> tuple[Callable[[str, tuple[Any, ...], tuple[Any, Any]], None],
                                                                Callable[[str, tuple[Any, ...], Any], None]]:
    """The checks of file-system changes (inside the working directory only) and listings."""
    t_int = p.int

    def on_modify(event: str, args: tuple[Any, ...], spec: tuple[Any, Any]) -> None:
        paths, dir_fds = spec
        for i in paths:
            if i < len(args):
                path_arg(event, args[i], (workdir_r,), "change")
        for i in dir_fds:
            if i < len(args) and type(args[i]) is t_int and args[i] >= 0:
                refuse(event, "dir_fd-relative file-system change")

    def on_list(event: str, args: tuple[Any, ...], positions: Any) -> None:
        for i in positions:
            target = args[i] if i < len(args) else None
            if target is None:
                target = "."
            if type(target) is t_int:
                refuse(event, "listing a raw file descriptor")
            path_arg(event, target, read_roots_t, "listing")

    return on_modify, on_list


#: Read roots (and this package's files) resolved by :func:`resolved`, by the path as given.
_RESOLVED: dict[str, str] = {}


def resolved(path: str) -> str:
    """``os.path.realpath(path)``, remembered: the read roots are the worker's own fixed directories
    (no tool can write there), resolved once before the worker forks (:func:`prepare`), so a child
    does not spend an ``lstat`` per path component of every root again."""
    found = _RESOLVED.get(path)
    if found is None:
        found = _RESOLVED[path] = os.path.realpath(path)
    return found


def prepare(read_roots: Iterable[str]) -> None:
    """Resolve what every hook resolves (called in a zygote before it forks tool children)."""
    import importlib

    for path in (*read_roots, importlib.__file__ or "", __file__):
        if path:
            resolved(path)


def make_hook(*, workdir: str, read_roots: Iterable[str], report_fd: int,
              tool_imports: Iterable[str] = TOOL_IMPORTS,
              tool_filename: str = TOOL_FILENAME) -> Callable[[str, tuple[Any, ...]], None]:
    """Build the audit hook; everything it needs is bound now, as immutable values."""
    workdir_r = os.path.realpath(workdir)
    read_roots_t = tuple({resolved(r) for r in read_roots} | {workdir_r})
    prims = _Prims()
    refuse = _make_refuse(prims, report_fd)
    on_open, path_arg = _make_path_checks(prims, refuse, workdir_r, read_roots_t)
    on_import = _make_import_check(prims, refuse, frozenset(tool_imports), tool_filename)
    on_modify, on_list = _make_change_checks(prims, refuse, path_arg, workdir_r, read_roots_t)
    refused = REFUSED_EVENTS
    refused_prefixes = REFUSED_PREFIXES
    modify_events = dict(MODIFY_EVENTS)
    list_events = dict(LIST_EVENTS)
    s_startswith = prims.startswith

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            on_open(event, args)
            return
        if event == "import":
            on_import(event, args)
            return
        if event in refused:
            refuse(event, "operation not allowed in the sandbox")
        for prefix in refused_prefixes:
            if s_startswith(event, prefix):
                refuse(event, "operation not allowed in the sandbox")
        spec = modify_events.get(event)
        if spec is not None:
            on_modify(event, args, spec)
            return
        positions = list_events.get(event)
        if positions is not None:
            on_list(event, args, positions)

    return hook


def install(**kwargs: Any) -> None:
    """Install the guard for the rest of this process's life (audit hooks cannot be removed)."""
    sys.addaudithook(make_hook(**kwargs))
