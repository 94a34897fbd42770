"""Landlock for one sandbox child: read-only where a tool needs to read, read-write only its own
working directory, no TCP, and signals / abstract UNIX sockets scoped to the child's own domain.

Landlock is reached through its three system calls (numbers 444-446, the same on every
architecture since Linux 5.13) with ctypes: no binding is needed for three calls with fixed
structures, and a maintained Python binding would only add an import to the child's critical path.

* ``landlock_create_ruleset(attr, size, flags)`` -- ``flags=LANDLOCK_CREATE_RULESET_VERSION``
  returns the ABI version instead of a ruleset.
* ``landlock_add_rule(ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &{allowed_access, parent_fd}, 0)``
  -- the packed 12-byte ``landlock_path_beneath_attr``.
* ``landlock_restrict_self(ruleset_fd, 0)`` -- needs ``no_new_privs`` (set before).

Everything the ABI can restrict is "handled" (denied unless a rule allows it): ABI 1 file
operations, ABI 2 ``REFER`` (cross-directory links/renames), ABI 3 ``TRUNCATE``, ABI 4 TCP bind
and connect (no port rule: every port denied), ABI 5 device ``ioctl``, ABI 6 scoping of abstract
UNIX sockets and of signals to processes outside the domain. A lower ABI enforces what it has;
:class:`LandlockReport` says exactly what was enforced. Execution (``EXECUTE``) is never granted,
so even the interpreter cannot be exec'd; mapping shared libraries needs only ``READ_FILE``.
"""

from __future__ import annotations

import ctypes
import os
import stat
from dataclasses import dataclass, field

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13        # ABI 2
FS_TRUNCATE = 1 << 14     # ABI 3
FS_IOCTL_DEV = 1 << 15    # ABI 5
NET_BIND_TCP = 1 << 0     # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1         # ABI 6

#: Rights that may be granted on a regular file (a directory-only right on a file is EINVAL).
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
_READ = FS_READ_FILE | FS_READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@dataclass
class LandlockReport:
    """What Landlock enforced in this child (sent to the supervisor with the "started" record)."""

    abi: int = 0
    enforced: bool = False
    fs: bool = False
    tcp: bool = False
    scoped_signals: bool = False
    scoped_abstract_unix: bool = False
    read_rules: int = 0
    error: str | None = None
    skipped: list[str] = field(default_factory=list)


_LIBC: list[ctypes.CDLL] = []


def _syscall() -> ctypes._CFuncPtr:  # type: ignore[name-defined]
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    fn = _LIBC[0].syscall
    fn.restype = ctypes.c_long
    return fn


def abi_version() -> int:
    """The kernel's Landlock ABI (0 when Landlock is absent or disabled)."""
    try:
        value = int(_syscall()(ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
                               ctypes.c_uint32(CREATE_RULESET_VERSION)))
    except (OSError, AttributeError):
        return 0
    return max(value, 0)


def handled_fs(abi: int) -> int:
    rights = (1 << 13) - 1  # ABI 1: EXECUTE .. MAKE_SYM
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def workdir_rights(abi: int) -> int:
    """Everything inside the working directory except executing and device ioctls."""
    return handled_fs(abi) & ~(FS_EXECUTE | FS_IOCTL_DEV | FS_MAKE_CHAR | FS_MAKE_BLOCK)


_MAPPED: list[list[str]] = []


def mapped_library_dirs() -> list[str]:
    """Directories of the shared objects this process has mapped (cached once per process: the
    warm worker computes it after preloading, its children inherit it). A tool's lazy import of
    another extension module needs the same system library directories."""
    if not _MAPPED:
        dirs: set[str] = set()
        try:
            with open("/proc/self/maps", encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    parts = line.split(None, 5)
                    if len(parts) == 6 and parts[5].startswith("/") and ".so" in parts[5]:
                        dirs.add(os.path.dirname(parts[5].strip()))
        except OSError:
            pass
        _MAPPED.append(sorted(d for d in dirs if not _shared_writable(d) and not _holds_gate_package(d)))
    return list(_MAPPED[0])


def _shared_writable(path: str) -> bool:
    """A directory anyone may write to (/tmp, /dev/shm, ...): never granted, even read-only, since
    other runs and users leave things there."""
    try:
        return bool(os.stat(path).st_mode & stat.S_IWOTH)
    except OSError:
        return True


def read_paths(read_roots: list[str]) -> list[str]:
    """Everything a tool may read: the sandbox's read roots (interpreter, stdlib, site-packages,
    finevo, snapshot, time zones, /dev/null, /dev/urandom), the mapped libraries' directories and
    the dynamic loader's cache."""
    extra = ["/etc/ld.so.cache", "/dev/random", "/usr/share/zoneinfo", "/etc/localtime"]
    return sorted(set(read_roots) | set(mapped_library_dirs()) | set(extra))


def _holds_gate_package(path: str) -> bool:
    """A library directory that is a site-packages directory itself (an extension module at its
    top level): granting it would grant the gate's own packages beside it."""
    return any(os.path.isdir(os.path.join(path, name)) for name in ("runner",))


def restrict(*, workdir: str, read_roots: list[str], report: LandlockReport) -> LandlockReport:
    """Apply Landlock to this process (and every later child); never raises.

    The caller must have set ``no_new_privs``. On failure ``report.enforced`` stays False and
    ``report.error`` says why; the child goes on with the other layers.
    """
    abi = abi_version()
    report.abi = abi
    if abi <= 0:
        report.error = "Landlock is not available in this kernel (needs Linux >= 5.13 with lsm=landlock)"
        return report
    syscall = _syscall()
    fs_rights = handled_fs(abi)
    attr = _RulesetAttr(fs_rights, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
                        SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = int(syscall(ctypes.c_long(SYS_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size),
                          ctypes.c_uint32(0)))
    if ruleset < 0:
        report.error = f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}"
        return report
    try:
        def add(path: str, rights: int) -> bool:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                report.skipped.append(path)
                return False
            try:
                is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
                allowed = rights if is_dir else rights & _FILE_RIGHTS
                rule = _PathBeneathAttr(allowed & fs_rights, fd)
                done = int(syscall(ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(ruleset),
                                   ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0)))
                if done < 0:
                    report.skipped.append(f"{path}: {os.strerror(ctypes.get_errno())}")
                return done == 0
            finally:
                os.close(fd)

        for path in read_paths(read_roots):
            report.read_rules += add(path, _READ)
        add("/dev/null", FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE)
        if not add(workdir, workdir_rights(abi)):
            report.error = f"cannot add the working directory {workdir} to the ruleset"
            return report
        if int(syscall(ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0))) != 0:
            report.error = f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}"
            return report
    finally:
        os.close(ruleset)
    report.enforced = True
    report.fs = True
    report.tcp = abi >= 4
    report.scoped_signals = report.scoped_abstract_unix = abi >= 6
    return report
