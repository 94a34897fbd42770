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

Not patched -- these still read the real clock:

* ``numpy.datetime64("today")`` / ``numpy.datetime64("now")``: numpy parses the words in C and
  its scalar type cannot be replaced without breaking every datetime array;
* the words ``"now"`` / ``"today"`` inside a numpy array, Index or Series (``pd.to_datetime`` of
  a Series, ``pd.DatetimeIndex(["today"])``, ``.astype("datetime64[ns]")``), and
  ``pandas.Period.now()``: parsed in pandas' C code;
* ``time.monotonic`` / ``perf_counter`` (durations stay real), other C extensions that read the
  OS clock, and modules that bound the original classes or functions before freezing.

:func:`unfreeze` restores everything.
"""

from __future__ import annotations

import datetime as _dt
import sys
import time as _time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, SupportsIndex

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
    pandas_originals: dict[str, Any] | None = None


_STATE = _State()


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


def _patch_pandas() -> None:
    pd: Any = sys.modules.get("pandas")  # patched attribute by attribute below
    if pd is None or _STATE.pandas_originals is not None:
        return
    real_ts = pd.Timestamp
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
                return real_ts.now(tz)
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

    def frozen_to_datetime(arg: Any, *args: Any, **kwargs: Any) -> Any:
        if _is_now_word(arg):
            return frozen_now(bool(kwargs.get("utc")))
        if isinstance(arg, (list, tuple)) and any(_is_now_word(item) for item in arg):
            arg = type(arg)(frozen_now(bool(kwargs.get("utc"))) if _is_now_word(item) else item
                            for item in arg)
        return real_to_datetime(arg, *args, **kwargs)

    def range_reading_frozen_clock(real: Callable[..., Any]) -> Callable[..., Any]:
        """``start`` / ``end`` given as "now" / "today" become the frozen moment (naive wall time
        in the anchor's zone, as pandas gives local wall time; a ``tz=`` then localizes it)."""
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            args = tuple(frozen_now() if i < 2 and _is_now_word(a) else a for i, a in enumerate(args))
            for key in ("start", "end"):
                if _is_now_word(kwargs.get(key)):
                    kwargs[key] = frozen_now()
            return real(*args, **kwargs)

        wrapper.__name__ = real.__name__
        wrapper.__qualname__ = real.__qualname__
        wrapper.__doc__ = real.__doc__
        wrapper.__module__ = real.__module__
        return wrapper

    frozen_to_datetime.__doc__ = real_to_datetime.__doc__
    _STATE.pandas_originals = {"Timestamp": real_ts, "to_datetime": real_to_datetime,
                               "date_range": pd.date_range, "bdate_range": pd.bdate_range}
    pd.Timestamp = FrozenTimestamp
    pd.to_datetime = frozen_to_datetime
    pd.date_range = range_reading_frozen_clock(pd.date_range)
    pd.bdate_range = range_reading_frozen_clock(pd.bdate_range)


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
    _STATE.anchor = None
