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
  ``Timestamp("now"/"today")`` read the frozen clock; ``pandas.to_datetime("now"/"today")`` too.

Not patched: ``time.monotonic``/``perf_counter`` (durations stay real), C extensions that read
the OS clock directly (e.g. ``numpy.datetime64("today")``), and modules that bound the original
classes before freezing. :func:`unfreeze` restores everything.
"""

from __future__ import annotations

import datetime as _dt
import sys
import time as _time
from dataclasses import dataclass
from typing import Any, Callable

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
        return _aware_now(_dt.timezone.utc).replace(tzinfo=None)


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


def _frozen_localtime(secs: float | None = None) -> _time.struct_time:
    """Without ``secs``: wall time in the anchor's zone (whatever the process TZ is)."""
    if secs is not None or _STATE.anchor is None:
        return _REAL_LOCALTIME(secs)
    return _aware_now(None).timetuple()


def _frozen_ctime(secs: float | None = None) -> str:
    return _time.asctime(_frozen_localtime(secs)) if secs is None else _REAL_CTIME(secs)


def _is_now_word(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() in ("now", "today")


def _patch_pandas() -> None:
    pd = sys.modules.get("pandas")
    if pd is None or _STATE.pandas_originals is not None:
        return
    real_ts = pd.Timestamp
    real_to_datetime = pd.to_datetime

    class _TimestampMeta(_AcceptsReal):
        pass

    class FrozenTimestamp(real_ts, metaclass=_TimestampMeta):  # type: ignore[misc, valid-type]
        _real = real_ts

        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            if args and _is_now_word(args[0]):
                tz = kwargs.get("tz", kwargs.get("tzinfo"))
                return FrozenTimestamp.now(tz) if args[0].strip().lower() == "now" else FrozenTimestamp.today(tz)
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

    def frozen_to_datetime(arg: Any, *args: Any, **kwargs: Any) -> Any:
        if _is_now_word(arg):
            return FrozenTimestamp.now("UTC" if kwargs.get("utc") else None)
        return real_to_datetime(arg, *args, **kwargs)

    frozen_to_datetime.__doc__ = real_to_datetime.__doc__
    _STATE.pandas_originals = {"Timestamp": real_ts, "to_datetime": real_to_datetime}
    pd.Timestamp = FrozenTimestamp
    pd.to_datetime = frozen_to_datetime


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
        pd.Timestamp = _STATE.pandas_originals["Timestamp"]
        pd.to_datetime = _STATE.pandas_originals["to_datetime"]
        _STATE.pandas_originals = None
    _STATE.anchor = None
