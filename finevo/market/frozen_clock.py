"""Make "now" read a fixed moment in the current process (used inside the sandbox).

:func:`freeze` anchors the wall clock at a given tz-aware moment. The clock still *ticks*
(anchor + time elapsed since freezing, measured with ``time.monotonic``), so loops that wait on
``time.time()`` terminate; it stops at 23:59:59 of the anchor's day, so however long a warm
sandbox worker lives, the date never moves past the anchor's date. What is patched:

* ``time.time``, ``time.time_ns``; ``time.localtime``, ``time.gmtime``, ``time.ctime`` and
  ``time.strftime`` when called without an explicit time (local = the anchor's zone).
* ``datetime.datetime`` and ``datetime.date`` in the ``datetime`` module are replaced by
  subclasses whose ``now()`` / ``today()`` / ``utcnow()`` read the frozen clock. ``isinstance``
  still accepts ordinary datetimes/dates (and pandas Timestamps), so only code that looks the
  class up *after* freezing (``from datetime import datetime`` in a tool) sees the difference.
  Naive results are wall-clock time in the anchor's time zone.
* ``pandas.Timestamp`` is replaced by a subclass whose ``now()``, ``today()``, ``utcnow()`` and
  ``Timestamp("now"/"today")`` (also as ``ts_input=``) read the frozen clock;
  ``pandas.to_datetime("now"/"today")`` too, and such words inside a list or tuple passed to it.
* ``pandas.date_range`` and ``pandas.bdate_range`` read the frozen clock for ``start`` / ``end``
  given as ``"now"`` / ``"today"`` (``pd.bdate_range(end="today", periods=20)``). pandas parses
  these words in C with the OS clock, so they are replaced by the frozen moment before the call.
* pandas' *own* ``Timestamp`` class (the one its Cython code calls) gets frozen ``now()``,
  ``today()`` and ``utcnow()``, and ``Period.now()`` reads the frozen clock: "now" / "today" inside
  arrays, Index and Series (``pd.DatetimeIndex(["today"])``, ``pd.to_datetime(series)``,
  ``.astype("datetime64[ns]")``) go through these.
* **C code** (:func:`_patch_c_clock`): numpy parses ``numpy.datetime64("today")`` / ``("now")``
  and the words inside numpy arrays (``np.array(["today"], dtype="datetime64[D]")``) in C with
  libc's ``time()``; CPython's ``datetime.now()`` -- and with it pandas' C paths for "now" in
  zoned arrays and its own ``Timestamp("now")`` -- reads ``_PyTime_GetSystemClock()``, which calls
  libc's ``clock_gettime(CLOCK_REALTIME)``. These calls are redirected where they leave their
  library, through the dynamic linker's table (GOT) of that library only: numpy's
  ``_multiarray_umath`` entry for ``time`` and ``_datetime``'s entry for
  ``_PyTime_GetSystemClock`` go to small Python callbacks (both are only called with the GIL
  held); the interpreter's own entry for ``clock_gettime`` (the executable or libpython: this is
  the only route where ``_datetime`` is built in, as in Debian's python3 and the container
  image) goes to a 76-byte x86-64 routine that calls the real function and shifts only
  ``CLOCK_REALTIME`` / ``CLOCK_REALTIME_COARSE`` (it may run without the GIL, so it is not
  Python). No ``LD_PRELOAD`` and no exec: it applies in the process that freezes -- the warm
  worker, whose forked children inherit it -- and follows every re-anchoring. An entry is patched
  only if it holds the real function (or the linker's not-yet-resolved stub);
  :func:`c_clock_patched` says which were, and other platforms simply stay unpatched.
* The process's time zone (``TZ``) becomes the anchor's zone, so C code converting to local time
  (numpy's "today", ``localtime_r``) yields the anchor's wall-clock date on any host;
  :func:`zone_for_c` gives the value for a process that must set it again after clearing its
  environment.

Not patched -- these still read the real clock: ``time.monotonic`` / ``perf_counter`` (durations
stay real), C extensions other than numpy's core and ``_datetime`` that call the OS clock
themselves, and code that bound the original Python functions before freezing.

:func:`unfreeze` restores everything.
"""

from __future__ import annotations

import ctypes
import datetime as _dt
import importlib
import os
import re
import struct
import sys
import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, SupportsIndex

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

_REAL_DATETIME = _dt.datetime
_REAL_DATE = _dt.date
_REAL_TIME = _time.time
_REAL_TIME_NS = _time.time_ns
_REAL_LOCALTIME = _time.localtime
_REAL_GMTIME = _time.gmtime
_REAL_CTIME = _time.ctime
_REAL_STRFTIME = _time.strftime
_REAL_MONOTONIC = _time.monotonic


@dataclass
class _State:
    anchor: _dt.datetime | None = None      # tz-aware
    anchor_epoch: float = 0.0
    last_epoch: float = 0.0                  # the clock stops here: the anchor day's 23:59:59
    started: float = 0.0                     # monotonic reading when frozen
    pandas_originals: JSONObject | None = None
    class_originals: list[tuple[type, str, Any]] = field(default_factory=list)
    c_slots: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (address, old)
    zone: str | None = None                  # TZ set by freeze()
    old_zone: str | None = None              # TZ before freeze() (None: unset)


_STATE = _State()
_MISSING = object()


def frozen_at() -> _dt.datetime | None:
    """The tz-aware anchor when the clock is frozen, else None."""
    return _STATE.anchor


def _epoch() -> float:
    """Frozen epoch seconds; the real clock once unfrozen (classes bound earlier keep working)."""
    if _STATE.anchor is None:
        return _REAL_TIME()
    return min(_STATE.anchor_epoch + (_REAL_MONOTONIC() - _STATE.started), _STATE.last_epoch)


def _aware_now(tz: _dt.tzinfo | None) -> _dt.datetime:
    """Now as an aware datetime in ``tz`` (in the anchor's zone, or local time, when None)."""
    if _STATE.anchor is None:
        return _REAL_DATETIME.fromtimestamp(_REAL_TIME(), tz) if tz else _REAL_DATETIME.now().astimezone()
    moment = _REAL_DATETIME.fromtimestamp(_epoch(), _STATE.anchor.tzinfo)
    return moment.astimezone(tz) if tz is not None else moment


class _AcceptsReal(type):
    """Metaclass: instances of the real base class count as instances of the frozen class."""

    _real: type

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, cls._real)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls._real)


class FrozenDatetime(_REAL_DATETIME, metaclass=_AcceptsReal):
    _real = _REAL_DATETIME

    @classmethod
    def now(cls, tz: _dt.tzinfo | None = None) -> _dt.datetime:  # type: ignore[override]
        moment = _aware_now(tz)
        return moment if tz is not None else moment.replace(tzinfo=None)

    @classmethod
    def today(cls) -> _dt.datetime:  # type: ignore[override]
        return cls.now()

    @classmethod
    def utcnow(cls) -> _dt.datetime:  # type: ignore[override]
        return _aware_now(_dt.UTC).replace(tzinfo=None)


class FrozenDate(_REAL_DATE, metaclass=_AcceptsReal):
    _real = _REAL_DATE

    @classmethod
    def today(cls) -> _dt.date:  # type: ignore[override]
        return _aware_now(None).date()


def _frozen_time() -> float:
    return _epoch()


def _frozen_time_ns() -> int:
    return int(_epoch() * 1e9)


def _default_to_frozen(real: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any) -> Any:
        if not args or args[0] is None:
            return real(_epoch())
        return real(*args)

    wrapper.__name__ = real.__name__
    wrapper.__doc__ = real.__doc__
    return wrapper


def _frozen_strftime(fmt: str, t: Any = None) -> str:
    return _REAL_STRFTIME(fmt, _frozen_localtime() if t is None else t)


def _frozen_localtime(secs: float | SupportsIndex | None = None) -> _time.struct_time:
    """Without ``secs``: wall time in the anchor's zone (whatever the process TZ is)."""
    if secs is not None or _STATE.anchor is None:
        return _REAL_LOCALTIME(secs)
    return _aware_now(None).timetuple()


def _frozen_ctime(secs: float | SupportsIndex | None = None) -> str:
    return _time.asctime(_frozen_localtime(secs)) if secs is None else _REAL_CTIME(secs)


def _is_now_word(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() in ("now", "today")


def _to_datetime_reading_frozen_clock(real: Callable[..., Any],
                                      frozen_now: Callable[[bool], Any]) -> Callable[..., Any]:
    """``pd.to_datetime`` with "now" / "today" (alone or in a list) read from the frozen clock."""
    def frozen_to_datetime(arg: Any, *args: Any, **kwargs: Any) -> Any:
        if _is_now_word(arg):
            return frozen_now(bool(kwargs.get("utc")))
        if isinstance(arg, (list, tuple)) and any(_is_now_word(item) for item in arg):
            arg = type(arg)(frozen_now(bool(kwargs.get("utc"))) if _is_now_word(item) else item
                            for item in arg)
        return real(arg, *args, **kwargs)

    frozen_to_datetime.__doc__ = real.__doc__
    return frozen_to_datetime


def _range_reading_frozen_clock(real: Callable[..., Any], frozen_now: Callable[[bool], Any]) -> Callable[..., Any]:
    """``start`` / ``end`` given as "now" / "today" become the frozen moment (naive wall time
    in the anchor's zone, as pandas gives local wall time; a ``tz=`` then localizes it)."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        args = tuple(frozen_now(False) if i < 2 and _is_now_word(a) else a for i, a in enumerate(args))
        for key in ("start", "end"):
            if _is_now_word(kwargs.get(key)):
                kwargs[key] = frozen_now(False)
        return real(*args, **kwargs)

    wrapper.__name__ = real.__name__
    wrapper.__qualname__ = real.__qualname__
    wrapper.__doc__ = real.__doc__
    wrapper.__module__ = real.__module__
    return wrapper


def _patch_classes(targets: list[tuple[Any, str, Any]]) -> None:
    """Set each ``(class, name, method)``, remembering the original (a C type that refuses is left to
    the C-level patch)."""
    for cls, name, method in targets:
        if type(cls) is not type:
            continue
        try:
            original = cls.__dict__.get(name, _MISSING)
            setattr(cls, name, method)
        except (TypeError, AttributeError):
            continue
        _STATE.class_originals.append((cls, name, original))


def _patch_pandas() -> None:
    pd: Any = sys.modules.get("pandas")  # patched attribute by attribute below
    if pd is None or _STATE.pandas_originals is not None:
        return
    real_ts = pd.Timestamp
    real_now = real_ts.now
    real_to_datetime = pd.to_datetime

    class _TimestampMeta(_AcceptsReal):
        pass

    class FrozenTimestamp(real_ts, metaclass=_TimestampMeta):  # type: ignore[misc, valid-type]
        _real = real_ts

        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            word = args[0] if args else kwargs.get("ts_input")
            if _is_now_word(word):
                rest = {k: v for k, v in kwargs.items() if k != "ts_input"}
                tz = rest.get("tz", rest.get("tzinfo"))
                return FrozenTimestamp.now(tz)  # pandas reads "now" and "today" alike
            return real_ts(*args, **kwargs)

        @classmethod
        def now(cls, tz: Any = None) -> Any:
            if _STATE.anchor is None:
                return real_now(tz)
            stamp = real_ts(_epoch(), unit="s", tz="UTC")
            if tz is None:
                return stamp.tz_convert(_STATE.anchor.tzinfo).tz_localize(None)
            return stamp.tz_convert(tz)

        @classmethod
        def today(cls, tz: Any = None) -> Any:
            return cls.now(tz)

        @classmethod
        def utcnow(cls) -> Any:
            return real_ts(_epoch(), unit="s", tz="UTC")

    def frozen_now(utc: bool = False) -> Any:
        return FrozenTimestamp.now("UTC" if utc else None)

    frozen_to_datetime = _to_datetime_reading_frozen_clock(real_to_datetime, frozen_now)
    _STATE.pandas_originals = {"Timestamp": real_ts, "to_datetime": real_to_datetime,
                               "date_range": pd.date_range, "bdate_range": pd.bdate_range}
    # pandas' Cython code calls its own class (not ``pd.Timestamp``) for "now" / "today" inside
    # arrays: that class gets the frozen methods too (it is an ordinary Python class).
    frozen_methods: JSONObject = {
        "now": classmethod(lambda cls, tz=None: FrozenTimestamp.now(tz)),
        "today": classmethod(lambda cls, tz=None: FrozenTimestamp.now(tz)),
        "utcnow": classmethod(lambda cls: FrozenTimestamp.utcnow()),
    }
    real_period = getattr(pd, "Period", None)
    targets: list[tuple[Any, str, Any]] = [(real_ts, name, method) for name, method in frozen_methods.items()
                                           if hasattr(real_ts, name)]
    if type(real_period) is type and hasattr(real_period, "now"):
        targets.append((real_period, "now",
                        classmethod(lambda cls, freq: real_period(FrozenTimestamp.now(), freq=freq))))
    _patch_classes(targets)
    pd.Timestamp = FrozenTimestamp
    pd.to_datetime = frozen_to_datetime
    pd.date_range = _range_reading_frozen_clock(pd.date_range, frozen_now)
    pd.bdate_range = _range_reading_frozen_clock(pd.bdate_range, frozen_now)


def freeze(moment: _dt.datetime) -> None:
    """Freeze this process's clock at ``moment`` (tz-aware). Calling it again re-anchors."""
    if moment.tzinfo is None:
        raise ValueError("freeze() needs a tz-aware moment")
    _STATE.anchor = moment
    _STATE.anchor_epoch = moment.timestamp()
    day_end = _REAL_DATETIME.combine(moment.date(), _dt.time(23, 59, 59), moment.tzinfo)
    _STATE.last_epoch = max(day_end.timestamp(), _STATE.anchor_epoch)
    _STATE.started = _REAL_MONOTONIC()
    _dt.datetime = FrozenDatetime  # type: ignore[misc]
    _dt.date = FrozenDate  # type: ignore[misc]
    _time.time = _frozen_time
    _time.time_ns = _frozen_time_ns
    _time.localtime = _frozen_localtime
    _time.gmtime = _default_to_frozen(_REAL_GMTIME)
    _time.ctime = _frozen_ctime
    _time.strftime = _frozen_strftime
    _patch_pandas()
    _set_zone(moment.tzinfo)
    _patch_c_clock()
    _set_stub_clock()


def restart() -> None:
    """Start the frozen clock again at its anchor (nothing when not frozen).

    A process forked from one that froze the clock inherits the moment the freeze began: a tool
    child of a world zygote that has lived an hour would otherwise start an hour past the anchor,
    after the close of a session it was meant to run during, or after the open of one it was meant
    to run before. Each run starts at the anchor and ticks with its own time only."""
    if _STATE.anchor is not None:
        _STATE.started = _REAL_MONOTONIC()


def prepare() -> None:
    """The part of :func:`freeze` a process makes once (the C-level clock redirection: reading the
    ELF files' relocations and patching their GOT), without freezing anything: the C clocks read the
    real time until :func:`freeze`. A process that forks many, each freezing at a moment of its own,
    makes it once before forking instead of once in each."""
    _patch_c_clock()


def unfreeze() -> None:
    """Restore the real clock everywhere :func:`freeze` patched it."""
    _dt.datetime = _REAL_DATETIME  # type: ignore[misc]
    _dt.date = _REAL_DATE  # type: ignore[misc]
    _time.time = _REAL_TIME
    _time.time_ns = _REAL_TIME_NS
    _time.localtime = _REAL_LOCALTIME
    _time.gmtime = _REAL_GMTIME
    _time.ctime = _REAL_CTIME
    _time.strftime = _REAL_STRFTIME
    if _STATE.pandas_originals is not None:
        pd = sys.modules["pandas"]
        for name, original in _STATE.pandas_originals.items():
            setattr(pd, name, original)
        _STATE.pandas_originals = None
    for cls, name, original in reversed(_STATE.class_originals):
        if original is _MISSING:
            delattr(cls, name)
        else:
            setattr(cls, name, original)
    _STATE.class_originals.clear()
    _restore_c_clock()
    _restore_zone()
    _STATE.anchor = None


# --------------------------------------------------------------------------- the process time zone
def _posix_zone(tz: _dt.tzinfo, moment: _dt.datetime) -> str | None:
    """A ``TZ`` value for ``tz``: its IANA key, or a fixed offset in POSIX notation."""
    key = getattr(tz, "key", None)
    if isinstance(key, str) and re.fullmatch(r"[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*", key):
        return key
    offset = tz.utcoffset(moment)
    if offset is None:
        return None
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes >= 0 else "+"  # POSIX counts hours *west* of Greenwich
    hours, rest = divmod(abs(minutes), 60)
    return f"<{'+' if minutes >= 0 else '-'}{hours:02d}{rest:02d}>{sign}{hours}:{rest:02d}"


def _set_zone(tz: _dt.tzinfo | None) -> None:
    if tz is None or _STATE.anchor is None:
        return
    zone = _posix_zone(tz, _STATE.anchor)
    if zone is None:
        return
    if _STATE.zone is None:
        _STATE.old_zone = os.environ.get("TZ")
    _STATE.zone = zone
    os.environ["TZ"] = zone
    _time.tzset()


def _restore_zone() -> None:
    if _STATE.zone is None:
        return
    if _STATE.old_zone is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = _STATE.old_zone
    _STATE.zone = _STATE.old_zone = None
    _time.tzset()


def zone_for_c() -> str | None:
    """The ``TZ`` value freezing set (None when not frozen): a process that clears its environment
    (the sandbox child) sets it again with ``os.putenv`` so C code keeps the anchor's zone."""
    return _STATE.zone


# --------------------------------------------------------------------------- C code's clock
# Two C entry points read the OS clock for "now"/"today" where no Python patch can reach: numpy's
# datetime parser calls libc time() (numpy/_core/src/multiarray/datetime_strings.c), and CPython's
# datetime.now() calls _PyTime_GetSystemClock(). Each library reaches the function through its own
# GOT entry; pointing that entry at a callback changes what *that library* sees, and nothing else.
_C_TIME = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.POINTER(ctypes.c_int64))
_C_SYSTEM_CLOCK = ctypes.CFUNCTYPE(ctypes.c_int64)
#: ELF machine -> relocation types of GOT entries (GLOB_DAT, JUMP_SLOT): x86-64, AArch64.
_GOT_RELOCATIONS: dict[int, frozenset[int]] = {62: frozenset({6, 7}), 183: frozenset({1025, 1026})}
_CALLBACKS: JSONObject = {}


def _c_time(tloc: Any) -> int:
    try:
        value = int(_epoch())
    except Exception:  # pragma: no cover - never let an exception cross into C
        value = int(_REAL_TIME())
    if tloc:
        tloc[0] = value
    return value


def _c_system_clock() -> int:
    try:
        return int(_epoch() * 1_000_000_000)
    except Exception:  # pragma: no cover
        return _REAL_TIME_NS()


def _got_offsets(path: str, symbol: str) -> tuple[bool, list[int]]:
    """Link-time addresses of the GOT entries through which the ELF file ``path`` calls ``symbol``,
    and whether they are absolute (a non-PIE executable) rather than relative to the load address."""
    wanted = symbol.encode("ascii")
    with open(path, "rb") as handle:
        head = handle.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            return False, []  # only 64-bit little-endian ELF
        absolute = struct.unpack_from("<H", head, 16)[0] == 2  # ET_EXEC
        kinds = _GOT_RELOCATIONS.get(struct.unpack_from("<H", head, 18)[0])
        if not kinds:
            return False, []
        (shoff,) = struct.unpack_from("<Q", head, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", head, 0x3A)
        handle.seek(shoff)
        table = handle.read(shentsize * shnum)
        sections = [struct.unpack_from("<IIQQQQIIQQ", table, i * shentsize) for i in range(shnum)]

        def read(index: int) -> bytes:
            handle.seek(sections[index][4])
            return handle.read(sections[index][5])

        offsets: list[int] = []
        for section in sections:
            if section[1] != 4 or section[6] >= shnum:  # SHT_RELA, linked to its symbol table
                continue
            symbols = read(section[6])
            names = read(sections[section[6]][6]) if sections[section[6]][6] < shnum else b""
            relocations = read(sections.index(section))
            for at in range(0, len(relocations) - 23, 24):
                r_offset, r_info = struct.unpack_from("<QQ", relocations, at)
                if r_info & 0xFFFFFFFF not in kinds:
                    continue
                entry = (r_info >> 32) * 24
                if entry + 4 > len(symbols):
                    continue
                (name_at,) = struct.unpack_from("<I", symbols, entry)
                if names[name_at:name_at + len(wanted) + 1] == wanted + b"\0":
                    offsets.append(r_offset)
        return absolute, offsets


def _mappings(path: str) -> list[tuple[int, int, str, int]]:
    """(start, end, permissions, file offset) of each mapping of ``path`` in this process."""
    found = []
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and parts[5].rstrip("\n") == path:
                start, end = (int(x, 16) for x in parts[0].split("-"))
                found.append((start, end, parts[1], int(parts[2], 16)))
    return found


def _redirect(name: str, path: str, symbol: str, real: int, callback: Any) -> bool:
    """Point ``path``'s GOT entries for ``symbol`` at ``callback`` (a ctypes function or an
    address); True when every one was."""
    path = os.path.realpath(path)
    maps = _mappings(path)
    absolute, offsets = _got_offsets(path, symbol)
    base = 0 if absolute else min((start for start, _, _, offset in maps if offset == 0), default=None)
    if base is None or not offsets or not maps:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    page = os.sysconf("SC_PAGE_SIZE")
    target = callback if isinstance(callback, int) else ctypes.cast(callback, ctypes.c_void_p).value
    done = True
    for offset in offsets:
        address = base + offset
        region = next(((s, e, perms) for s, e, perms, _ in maps if s <= address < e), None)
        if region is None:
            done = False
            continue
        slot = ctypes.c_void_p.from_address(address)
        old = slot.value or 0
        lazy_stub = any(s <= old < e for s, e, _, _ in maps)
        if old != real and not lazy_stub and old != target:
            done = False  # not what the linker put there: leave it alone
            continue
        writable = "w" in region[2]
        start = address - address % page
        if not writable and libc.mprotect(ctypes.c_void_p(start), ctypes.c_size_t(page), 3) != 0:
            done = False
            continue
        slot.value = target
        if not writable:
            libc.mprotect(ctypes.c_void_p(start), ctypes.c_size_t(page), 1)
        _STATE.c_slots.setdefault(f"{name}@{address:x}", (address, old))
    return done


# CPython reads the wall clock with clock_gettime(CLOCK_REALTIME) (time.time, datetime.now, and
# pandas' C paths through datetime.now). Where _datetime is built into the interpreter (Debian's
# python3, the container image) there is no library boundary to redirect but the interpreter's own
# call to libc. That call can run without the GIL (thread waits), so it cannot be a Python callback:
# it goes to this x86-64 routine instead, which calls the real clock_gettime and, for
# CLOCK_REALTIME / CLOCK_REALTIME_COARSE only, adds ``delta`` seconds and stops at ``last``:
#
#     push rdi; push rsi; sub rsp, 8; call [rip+real]; add rsp, 8; pop rsi; pop rdi
#     test eax, eax; jnz done; cmp edi, 0; je adjust; cmp edi, 5; jne done
#   adjust: cmp qword [rip+active], 0; je done
#     mov rdx, [rip+delta]; add [rsi], rdx; mov rdx, [rip+last]; cmp [rsi], rdx; jle done
#     mov [rsi], rdx; mov qword [rsi+8], 0
#   done: ret
#
# with real / active / delta / last the four quadwords at the start of the next page (read-write;
# the code page is made read+execute before use). Monotonic and CPU clocks pass through untouched.
_STUB_X86_64 = bytes.fromhex(
    "57564883ec08ff15f40f00004883c4085e5f85c0753583ff00740583ff05752b48833de00f0000007421"
    "488b15df0f0000480116488b15dd0f00004839167e0b48891648c7460800000000c3")
_STUB: dict[str, int] = {}  # "code": address of the routine, "data": address of its quadwords


def _clock_stub(real: int) -> int | None:
    """The address of the clock_gettime routine (made once per process), or None where it cannot be."""
    if "code" in _STUB:
        return _STUB["code"]
    if os.uname().machine not in ("x86_64", "AMD64"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    page = os.sysconf("SC_PAGE_SIZE")
    if page != 4096:  # the routine addresses its data one 4096-byte page further
        return None
    mapped = libc.mmap(None, 2 * page, 3, 0x22, -1, 0)  # PROT_READ|WRITE, MAP_PRIVATE|ANONYMOUS
    if not isinstance(mapped, int) or not mapped or mapped == ctypes.c_void_p(-1).value:
        return None
    address: int = mapped
    ctypes.memmove(address, _STUB_X86_64, len(_STUB_X86_64))
    ctypes.c_uint64.from_address(address + page).value = real
    if libc.mprotect(ctypes.c_void_p(address), ctypes.c_size_t(page), 5) != 0:  # PROT_READ|EXEC
        return None
    _STUB["code"], _STUB["data"] = address, address + page
    return address


def _set_stub_clock() -> None:
    """Give the routine the current anchor (delta from the real clock, and the day's last second)."""
    data = _STUB.get("data")
    if data is None:
        return
    ctypes.c_int64.from_address(data + 8).value = 0  # off while reading the real clock below
    if _STATE.anchor is None:
        return
    # the routine adds whole seconds to the real clock: the anchor, ticking from the moment of freezing
    ctypes.c_int64.from_address(data + 16).value = round(_STATE.anchor_epoch - _REAL_TIME())
    ctypes.c_int64.from_address(data + 24).value = int(_STATE.last_epoch)
    ctypes.c_int64.from_address(data + 8).value = 1


def _interpreter_objects() -> list[str]:
    """The ELF files holding the interpreter's own code: the executable and any libpython."""
    paths = [os.path.realpath("/proc/self/exe")]
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and os.path.basename(parts[5].strip()).startswith("libpython"):
                path = parts[5].strip()
                if path not in paths:
                    paths.append(path)
    return paths


def _patch_c_clock() -> None:
    """Redirect numpy's ``time()`` and ``_datetime``'s ``_PyTime_GetSystemClock()`` (once)."""
    if _CALLBACKS or not sys.platform.startswith("linux"):
        return
    _CALLBACKS["time"] = _C_TIME(_c_time)
    _CALLBACKS["system_clock"] = _C_SYSTEM_CLOCK(_c_system_clock)
    _CALLBACKS["status"] = status = {"numpy": False, "datetime": False, "interpreter": False}
    try:
        libc = ctypes.CDLL(None)
        numpy_core = sys.modules.get("numpy._core._multiarray_umath") or \
            sys.modules.get("numpy.core._multiarray_umath")
        numpy_file = getattr(numpy_core, "__file__", None)
        if isinstance(numpy_file, str):
            status["numpy"] = _redirect("time", numpy_file, "time",
                                        ctypes.cast(libc.time, ctypes.c_void_p).value or 0,
                                        _CALLBACKS["time"])
        # the C half of the datetime module; built into some interpreters (then nothing to redirect)
        datetime_file = getattr(importlib.import_module("_datetime"), "__file__", None)
        if isinstance(datetime_file, str):
            real = ctypes.cast(ctypes.pythonapi._PyTime_GetSystemClock, ctypes.c_void_p).value or 0
            status["datetime"] = _redirect("system_clock", datetime_file,
                                           "_PyTime_GetSystemClock", real, _CALLBACKS["system_clock"])
        real_clock = ctypes.cast(libc.clock_gettime, ctypes.c_void_p).value or 0
        stub = _clock_stub(real_clock) if real_clock else None
        if stub is not None:
            redirected = [_redirect("clock_gettime", path, "clock_gettime", real_clock, stub)
                          for path in _interpreter_objects()]
            status["interpreter"] = any(redirected)
        if status["interpreter"] and not status["datetime"]:
            status["datetime"] = True  # datetime.now() reaches the interpreter's clock_gettime
    except (OSError, ValueError, AttributeError, struct.error, ImportError):
        pass


def _restore_c_clock() -> None:
    if "data" in _STUB:
        ctypes.c_int64.from_address(_STUB["data"] + 8).value = 0  # the routine passes the real clock
    if not _STATE.c_slots:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    page = os.sysconf("SC_PAGE_SIZE")
    for address, old in _STATE.c_slots.values():
        start = address - address % page
        libc.mprotect(ctypes.c_void_p(start), ctypes.c_size_t(page), 3)
        ctypes.c_void_p.from_address(address).value = old
    _STATE.c_slots.clear()
    _CALLBACKS.clear()


def c_clock_patched() -> dict[str, bool]:
    """Which C clocks read the frozen clock: numpy's parser, ``datetime.now()``, and the
    interpreter's own ``clock_gettime`` (``{"numpy": ..., "datetime": ..., "interpreter": ...}``)."""
    status = _CALLBACKS.get("status")
    if isinstance(status, dict):
        return dict(status)
    return {"numpy": False, "datetime": False, "interpreter": False}
