"""The on-disk market snapshot: its format, its writer and :class:`Snapshot`, the reader.

Layout of a snapshot directory::

    README.md                     what this data is (synthetic or recorded), written with it
    manifest.json                 {"synthetic", "label", "as_of", "generator", "generator_version",
                                   "seed", "symbols", "files": {relpath: sha256}, ...}
    history/<stem>.csv            daily bars, yfinance ``auto_adjust=False, actions=True`` columns:
                                  Date,Open,High,Low,Close,Adj Close,Volume,Dividends,Stock Splits
                                  [,Capital Gains]   (Date = exchange-local trading date); it may
                                  end with *pending event rows* (see below)
    income/<stem>.yearly.csv      income statement, rows = yfinance row labels,
    income/<stem>.quarterly.csv   columns = period-end dates, newest first
    quote/<stem>.json             {"info": {...}, "fast_info": {...}}

A pending event row is what yfinance appends for a dividend or split whose date lies after the
last bar: recorded before the open on an ex-dividend date, ``history()`` ends with a row of that
date whose prices (and ``Adj Close``) are empty, ``Volume`` 0 and the event's amount. Such rows may
only follow the last priced bar; the reader keeps them apart (:meth:`Snapshot.pending`), so every
priced frame it hands out has no empty cell, and :meth:`Snapshot.dividends` includes them, as
yfinance's ``dividends`` does. The manifest's ``"before_open": true`` says the data were recorded
on the as-of date before the session opened; its ``"during_session": "HH:MM"`` that they were recorded
while the as-of date's regular session was open, at that New York time, so each symbol's bar of that
date is the session so far (its ``Close`` the last trade then); absent both: after the close, or on a
closed day.

``<stem>`` is the symbol with ``^`` spelt ``INDEX_`` (``^GSPC`` -> ``INDEX_GSPC``), so no file
name needs shell quoting. Floats are written with ``%.10g`` and JSON with sorted keys, so writing
the same data twice gives identical bytes.

:class:`Snapshot` implements :class:`finevo.market.provider.MarketProvider`. It checks every
file against the manifest's sha256 when opened (a missing, altered or unparsable file is an
:class:`~finevo.errors.InputError` naming it), parses lazily, caches, and hands out copies.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
from dataclasses import dataclass, field
from datetime import date
from datetime import time as dtime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import pandas as pd

from finevo.errors import InputError
from finevo.fsutil import atomic_write
from finevo.normalize import RECORD, normalize

if TYPE_CHECKING:
    from collections.abc import Callable

    from finevo.jsontypes import JSONObject

T = TypeVar("T")

EXCHANGE_TZ = "America/New_York"
MANIFEST = "manifest.json"
#: Significant digits a stored history file keeps of each price (:data:`FLOAT_FORMAT`).
SIGNIFICANT_DIGITS = 10
FLOAT_FORMAT = f"%.{SIGNIFICANT_DIGITS}g"
PRICE_COLUMNS: tuple[str, ...] = ("Open", "High", "Low", "Close")
#: Every column a bar prices, ``Adj Close`` too: all of them empty in a pending event row.
PRICED_COLUMNS: tuple[str, ...] = (*PRICE_COLUMNS, "Adj Close")
#: Columns of a stored history file, in yfinance's order (``Capital Gains`` only for ETFs/funds).
RAW_HISTORY_COLUMNS: tuple[str, ...] = ("Open", "High", "Low", "Close", "Adj Close", "Volume",
                                        "Dividends", "Stock Splits")
CAPITAL_GAINS = "Capital Gains"
#: Unit of the daily index: yfinance builds it with ``pd.to_datetime(<array of dates>)``, whose
#: unit depends on the pandas version (``s`` under pandas 3, ``ns`` before); do the same.
INDEX_UNIT: str = pd.to_datetime(np.array([date(2024, 1, 2)], dtype=object)).unit

#: The regular session, New York time: a snapshot recorded ``during_session`` was recorded at or
#: after its open and before its close.
SESSION_OPEN = dtime(9, 30)
SESSION_CLOSE = dtime(16, 0)

Freq = Literal["yearly", "quarterly"]


def session_moment(value: object) -> dtime:
    """A manifest's ``during_session``: ``"HH:MM"`` within the regular session (ValueError otherwise)."""
    if not isinstance(value, str) or len(value) != 5 or value[2] != ":":
        raise ValueError(f"'during_session' must be \"HH:MM\", got {value!r}")
    moment = dtime.fromisoformat(value)
    if not SESSION_OPEN <= moment < SESSION_CLOSE:
        raise ValueError(f"'during_session' {value} is not within the regular session "
                         f"({SESSION_OPEN:%H:%M}-{SESSION_CLOSE:%H:%M})")
    return moment


class SymbolNotRecorded(LookupError):
    """The snapshot (or live source) holds no data for this symbol."""

    def __init__(self, symbol: str, where: str) -> None:
        super().__init__(f"symbol {symbol!r} is not recorded in {where}")
        self.symbol = symbol


def file_stem(symbol: str) -> str:
    """File-name stem for a symbol (``^GSPC`` -> ``INDEX_GSPC``)."""
    stem = symbol.replace("^", "INDEX_")
    if not stem or any(ch in stem for ch in "/\\\0") or stem.startswith("."):
        raise InputError(f"symbol {symbol!r} cannot be stored in a snapshot")
    return stem


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def content_hash_of(files: dict[str, str]) -> str:
    """One hash over a manifest's ``files`` mapping (order-independent)."""
    lines = "".join(f"{rel}:{digest}\n" for rel, digest in sorted(files.items()))
    return sha256_bytes(lines.encode())


# --------------------------------------------------------------------------- writing
@dataclass
class SymbolData:
    """Everything recorded for one symbol.

    ``history`` holds the *unadjusted* bars (``auto_adjust=False, actions=True`` columns) on a
    daily index (naive dates or tz-aware midnights). Income frames are ``None`` for symbols
    without statements (ETFs, indices). ``pending`` holds the pending event rows dated after the
    last bar (same columns, prices NaN, ``Volume`` 0): None when there are none.
    """

    symbol: str
    history: pd.DataFrame
    income_yearly: pd.DataFrame | None = None
    income_quarterly: pd.DataFrame | None = None
    info: JSONObject = field(default_factory=dict)
    fast_info: JSONObject = field(default_factory=dict)
    pending: pd.DataFrame | None = None


def history_csv(history: pd.DataFrame) -> bytes:
    """Serialise unadjusted bars deterministically."""
    missing = [c for c in RAW_HISTORY_COLUMNS if c not in history.columns]
    if missing:
        raise ValueError(f"history lacks columns {missing}")
    columns = list(RAW_HISTORY_COLUMNS) + ([CAPITAL_GAINS] if CAPITAL_GAINS in history.columns else [])
    frame = history[columns].copy()
    frame["Volume"] = frame["Volume"].fillna(0).astype(np.int64)
    dates = pd.DatetimeIndex(frame.index).strftime("%Y-%m-%d")
    fast = _plain_csv(frame, dates)
    if fast is not None:
        return fast
    frame.index = pd.Index(dates, name="Date")
    return str(frame.to_csv(float_format=FLOAT_FORMAT, lineterminator="\n")).encode()


def _plain_csv(frame: pd.DataFrame, dates: pd.Index) -> bytes | None:
    """``frame.to_csv(float_format=FLOAT_FORMAT, lineterminator="\\n")`` with ``dates`` as its
    ``Date`` index, byte for byte, for a frame of float64 and int64 columns whose names need no
    quoting (a history file always is); None for any other frame (``to_csv`` writes it then).

    Worlds are written in this format many times a gate run (every hidden world's every symbol):
    formatting each float with ``%`` in one pass per column is about three times faster than
    ``to_csv``'s per-value formatter, and writes the very same text (NaN as an empty field)."""
    names = [str(c) for c in frame.columns]
    if any(any(ch in name for ch in ',"\r\n') or name != name.strip() for name in names):
        return None
    fields: list[list[str]] = [list(dates)]
    for column in frame.columns:
        values = frame[column].to_numpy()
        if values.dtype == np.float64:
            text = [FLOAT_FORMAT % v for v in values.tolist()]
            for i in np.flatnonzero(np.isnan(values)).tolist():
                text[i] = ""
        elif values.dtype == np.int64:
            text = [str(v) for v in values.tolist()]
        else:
            return None
        fields.append(text)
    lines = [",".join(["Date", *names])]
    lines += [",".join(row) for row in zip(*fields, strict=True)]
    return ("\n".join(lines) + "\n").encode()


def income_csv(income: pd.DataFrame) -> bytes:
    frame = income.copy()
    frame.columns = [pd.Timestamp(c).strftime("%Y-%m-%d") for c in frame.columns]
    frame.index = pd.Index([str(i) for i in frame.index], name="")
    return str(frame.to_csv(float_format=FLOAT_FORMAT, lineterminator="\n")).encode()


def json_bytes(value: Any) -> bytes:
    return (json.dumps(normalize(value, RECORD), indent=1, sort_keys=True, allow_nan=False) + "\n").encode()


def symbol_files(item: SymbolData) -> dict[str, bytes]:
    """The files of one symbol in a snapshot, by path relative to the snapshot directory."""
    stem = file_stem(item.symbol)
    bars = item.history if item.pending is None or item.pending.empty else pd.concat([item.history, item.pending])
    files = {f"history/{stem}.csv": history_csv(bars)}
    if item.income_yearly is not None:
        files[f"income/{stem}.yearly.csv"] = income_csv(item.income_yearly)
    if item.income_quarterly is not None:
        files[f"income/{stem}.quarterly.csv"] = income_csv(item.income_quarterly)
    files[f"quote/{stem}.json"] = json_bytes({"info": item.info, "fast_info": item.fast_info})
    return files


@dataclass(frozen=True)
class SnapshotOrigin:
    """Where a snapshot's data come from, as its manifest and README say it: the as-of date,
    whether the data are generated (``synthetic``) or recorded, a one-line ``label``, the writing
    ``generator`` and its version, and the generator's ``seed`` (None for recorded data)."""

    as_of: date
    synthetic: bool
    label: str
    generator: str
    generator_version: str
    seed: int | None = None
    #: Recorded on the as-of date before the session opened (its bar not yet made).
    before_open: bool = False
    #: Recorded on the as-of date at this New York time, the session open (its bar the session so far).
    during_session: dtime | None = None


def write_snapshot(out_dir: str | os.PathLike[str], data: list[SymbolData], origin: SnapshotOrigin, *,
                   extra: JSONObject | None = None) -> JSONObject:
    """Write a complete snapshot into ``out_dir`` (created if needed) and return its manifest.

    Files are written atomically; files of the same layout left over from an earlier snapshot
    in ``out_dir`` are removed so the directory holds exactly what the manifest lists.
    """
    files: dict[str, bytes] = {}
    for item in data:
        files.update(symbol_files(item))
    return write_snapshot_files(out_dir, files, origin, symbols=[item.symbol for item in data], extra=extra)


def write_snapshot_files(out_dir: str | os.PathLike[str], symbol_blobs: dict[str, bytes], origin: SnapshotOrigin, *,
                         symbols: list[str], extra: JSONObject | None = None,
                         durable: bool = True) -> JSONObject:
    """:func:`write_snapshot` from the symbols' files already serialised (:func:`symbol_files`).

    ``durable=False`` skips the atomic, fsync'd writes: for throw-away snapshots in a temporary
    directory nobody reads while they are written.
    """
    out = Path(out_dir)
    files = dict(symbol_blobs)
    files["README.md"] = _readme(origin, list(symbols))
    manifest: JSONObject = {
        "synthetic": origin.synthetic,
        "label": origin.label,
        "as_of": origin.as_of.isoformat(),
        "generator": origin.generator,
        "generator_version": origin.generator_version,
        "seed": origin.seed,
        "symbols": list(symbols),
        "timezone": EXCHANGE_TZ,
        **({"before_open": True} if origin.before_open else {}),
        **({"during_session": f"{origin.during_session:%H:%M}"} if origin.during_session is not None else {}),
        **(extra or {}),
        "files": {rel: sha256_bytes(blob) for rel, blob in sorted(files.items())},
    }
    for sub in ("history", "income", "quote"):
        folder = out / sub
        if folder.is_dir():
            for old in folder.iterdir():
                if old.is_file() and f"{sub}/{old.name}" not in files:
                    old.unlink()
    for rel, blob in [*files.items(), (MANIFEST, json_bytes(manifest))]:
        if durable:
            atomic_write(out / rel, blob)
        else:
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(blob)
    return manifest


def _readme(origin: SnapshotOrigin, symbols: list[str]) -> bytes:
    label, as_of, generator, seed = origin.label, origin.as_of, origin.generator, origin.seed
    if origin.synthetic:
        intro = (f"**{label}.** Prices, volumes, statement figures and quotes in this folder are "
                 "invented by a seeded random model with realistic levels (only the dividend calendar "
                 "and the stock splits follow the public record); none of it is real market data. "
                 f"Regenerate byte-for-byte with `python -m {generator} --out <dir>`"
                 + (f" (seed {seed})." if seed is not None else "."))
    else:
        intro = (f"**{label}.** Recorded with `finevo-verify data refresh`; prices are Yahoo Finance's, "
                 "subject to Yahoo's terms of use.")
    text = f"""# Market snapshot (as of {as_of.isoformat()})

{intro}

Generator: `{generator}` {origin.generator_version}. Symbols: {", ".join(symbols)}.

Layout (read it with `finevo.market.snapshot.load_snapshot(<dir>)`, check it with
`finevo-verify data info --data <dir>`):

- `manifest.json`: label, as-of date, generator, and the sha256 of every other file.
- `history/<symbol>.csv`: daily bars as yfinance `history(auto_adjust=False, actions=True)` returns
  them (`^` in a symbol is spelt `INDEX_`).
- `income/<symbol>.yearly.csv`, `income/<symbol>.quarterly.csv`: income statements, yfinance row
  labels, period-end columns newest first.
- `quote/<symbol>.json`: the `info` and `fast_info` dicts.

Do not edit these files by hand: the reader rejects any file whose hash differs from the manifest.
"""
    return text.encode()


# --------------------------------------------------------------------------- adjusting
def auto_adjust(raw: pd.DataFrame) -> pd.DataFrame:
    """yfinance's ``auto_adjust``: scale Open/High/Low by Adj Close / Close, Close := Adj Close.

    A new frame, its blocks consolidated (one per dtype), built from the columns' arrays at once: the
    judge adjusts every symbol of every market it builds, and a copy, four column assignments and a
    drop cost ten times as much for the same values (the same float operations, column by column)."""
    adjusted = raw["Adj Close"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = adjusted / raw["Close"].to_numpy(dtype=float)
        columns = {column: (raw[column].to_numpy() * ratio if column in ("Open", "High", "Low") else
                            adjusted.copy() if column == "Close" else raw[column].to_numpy(copy=True))
                   for column in raw.columns if column != "Adj Close"}
    return pd.DataFrame(columns, index=raw.index)


# --------------------------------------------------------------------------- reading
class ParsedFiles:
    """Frames parsed from snapshot files, kept by each file's sha256 (its manifest digest) for every
    :class:`Snapshot` given the same instance: snapshots that hold the same file parse (and adjust)
    it once. A gate run writes a dozen hidden worlds a task, each holding the run's own files for
    every symbol it does not reshape, and the oracle reads each world through a snapshot of its
    own. The frames are shared: read-only, as a snapshot's own caches are."""

    def __init__(self) -> None:
        self._frames: dict[tuple[str, str], Any] = {}

    def get(self, digest: str, kind: str, parse: Callable[[], T]) -> T:
        """``parse()``, once per ``(digest, kind)``; an error is raised again on the next call, not kept."""
        key = (digest, kind)
        if key not in self._frames:
            self._frames[key] = parse()
        found: T = self._frames[key]
        return found


class Snapshot:
    """A snapshot directory as a :class:`~finevo.market.provider.MarketProvider`."""

    def __init__(self, path: str | os.PathLike[str], parsed: ParsedFiles | None = None) -> None:
        self.path = Path(path)
        self._parsed = parsed
        manifest_path = self.path / MANIFEST
        try:
            raw_manifest = manifest_path.read_bytes()
        except FileNotFoundError:
            raise InputError(f"{manifest_path}: snapshot manifest not found") from None
        except OSError as exc:
            raise InputError(f"{manifest_path}: cannot read snapshot manifest ({exc.strerror})") from None
        try:
            manifest = json.loads(raw_manifest)
            files = manifest["files"]
            symbols = manifest["symbols"]
            as_of = date.fromisoformat(manifest["as_of"])
            if not isinstance(files, dict) or not isinstance(symbols, list):
                raise TypeError("'files' must be an object and 'symbols' a list")
            during = None if manifest.get("during_session") is None else session_moment(manifest["during_session"])
            if during is not None and manifest.get("before_open") is True:
                raise ValueError("'before_open' and 'during_session' cannot both hold")
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{manifest_path}: invalid snapshot manifest ({type(exc).__name__}: {exc})") from None
        self.manifest: JSONObject = manifest
        self._as_of = as_of
        self._during_session = during
        self._symbols: list[str] = [str(s) for s in symbols]
        self._blobs: dict[str, bytes] = {}
        for rel, digest in files.items():
            file_path = self.path / rel
            try:
                blob = file_path.read_bytes()
            except FileNotFoundError:
                raise InputError(f"{file_path}: listed in {MANIFEST} but missing") from None
            except OSError as exc:
                raise InputError(f"{file_path}: cannot read ({exc.strerror})") from None
            if sha256_bytes(blob) != digest:
                raise InputError(f"{file_path}: sha256 does not match {MANIFEST} (file altered or corrupt)")
            self._blobs[rel] = blob
        for symbol in self._symbols:
            rel = f"history/{file_stem(symbol)}.csv"
            if rel not in self._blobs:
                raise InputError(f"{manifest_path}: symbol {symbol} has no history file ({rel})")
        self.content_hash: str = content_hash_of(files)
        self._raw: dict[str, pd.DataFrame] = {}
        self._pending: dict[str, pd.DataFrame] = {}
        self._adjusted: dict[str, pd.DataFrame] = {}
        self._income: dict[tuple[str, str], pd.DataFrame] = {}
        self._quotes: dict[str, JSONObject] = {}

    # ----------------------------------------------------------------- descriptive
    @property
    def as_of(self) -> date:
        return self._as_of

    @property
    def before_open(self) -> bool:
        """Recorded on the as-of date before the session opened: the sandbox's clock reads that
        morning, and a pending event row of that date may end a history."""
        return self.manifest.get("before_open") is True

    @property
    def during_session(self) -> dtime | None:
        """Recorded while the as-of date's session was open, at this New York time: the sandbox's
        clock reads it, and each symbol's bar of that date is the session so far."""
        return self._during_session

    @property
    def synthetic(self) -> bool:
        return bool(self.manifest.get("synthetic", False))

    @property
    def label(self) -> str:
        return str(self.manifest.get("label", ""))

    def symbols(self) -> list[str]:
        return list(self._symbols)

    def __repr__(self) -> str:
        kind = "synthetic" if self.synthetic else "recorded"
        return f"Snapshot({str(self.path)!r}, {kind}, as_of={self._as_of}, symbols={self._symbols})"

    # ----------------------------------------------------------------- MarketProvider
    def history(self, symbol: str) -> pd.DataFrame:
        """Daily bars as ``Ticker.history(period="max", auto_adjust=True)`` returns them."""
        return self.history_view(symbol).copy()

    def history_unadjusted(self, symbol: str) -> pd.DataFrame:
        """Daily bars as ``Ticker.history(period="max", auto_adjust=False)`` returns them."""
        return self._raw_history(symbol).copy()

    def history_view(self, symbol: str, *, adjusted: bool = True) -> pd.DataFrame:
        """:meth:`history` (``adjusted``) or :meth:`history_unadjusted` without the copy: the frame
        this snapshot keeps, for a reader that copies only the rows it keeps (the replay shim cuts a
        window or an as-of day first). Never modify it."""
        if not adjusted:
            return self._raw_history(symbol)
        if symbol not in self._adjusted:
            self._adjusted[symbol] = self._shared(f"history/{file_stem(symbol)}.csv", "adjusted",
                                                  lambda: auto_adjust(self._raw_history(symbol)))
        return self._adjusted[symbol]

    def pending(self, symbol: str) -> pd.DataFrame:
        """The pending event rows that end ``symbol``'s recorded history (empty: none), in the
        unadjusted columns: dated after the last bar, prices NaN, ``Volume`` 0."""
        self._raw_history(symbol)
        return self._pending[symbol].copy()

    def dividends(self, symbol: str) -> pd.Series:
        bars = self._raw_history(symbol)  # parses the pending rows too
        return event_amounts(bars, self._pending[symbol], "Dividends")

    def splits(self, symbol: str) -> pd.Series:
        bars = self._raw_history(symbol)
        return event_amounts(bars, self._pending[symbol], "Stock Splits")

    def income_stmt(self, symbol: str, freq: Freq = "yearly") -> pd.DataFrame:
        if freq not in ("yearly", "quarterly"):
            raise ValueError(f"freq must be 'yearly' or 'quarterly', not {freq!r}")
        self._require(symbol)
        key = (symbol, freq)
        if key not in self._income:
            rel = f"income/{file_stem(symbol)}.{freq}.csv"
            blob = self._blobs.get(rel)
            self._income[key] = pd.DataFrame() if blob is None else \
                self._shared(rel, "income", lambda: self._parse_income(rel, blob))
        return self._income[key].copy()

    def info(self, symbol: str) -> JSONObject:
        return copy.deepcopy(self._quote(symbol)["info"])

    def fast_info(self, symbol: str) -> JSONObject:
        return copy.deepcopy(self._quote(symbol)["fast_info"])

    # ----------------------------------------------------------------- internals
    def _require(self, symbol: str) -> None:
        if symbol not in self._symbols:
            raise SymbolNotRecorded(symbol, f"the snapshot at {self.path}")

    def _raw_history(self, symbol: str) -> pd.DataFrame:
        self._require(symbol)
        cached = self._raw.get(symbol)
        if cached is None:
            rel = f"history/{file_stem(symbol)}.csv"
            cached, self._pending[symbol] = self._shared(rel, "history", lambda: self._split_history(rel))
            self._raw[symbol] = cached
        return cached

    def _split_history(self, rel: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The bars of history file ``rel`` and the pending event rows after them."""
        bars, pending = split_pending(self._parse_history(rel, self._blobs[rel]))
        if bars[list(PRICED_COLUMNS)].isna().any().any():
            raise InputError(f"{self.path / rel}: unparsable history CSV (empty price cells before "
                             "the last priced bar: only pending event rows may follow it)")
        # one block per dtype (a copy consolidates): the replay shim copies windows of it, and a
        # copy of rows spread over a block per column costs twice as much, on every call
        return bars.copy(), pending

    def _shared(self, rel: str, kind: str, parse: Callable[[], T]) -> T:
        """``parse()`` of file ``rel``, through the :class:`ParsedFiles` this snapshot was given."""
        if self._parsed is None:
            return parse()
        return self._parsed.get(str(self.manifest["files"][rel]), kind, parse)

    def _parse_history(self, rel: str, blob: bytes) -> pd.DataFrame:
        try:
            frame = pd.read_csv(io.BytesIO(blob), index_col="Date", dtype={"Volume": "int64"})
            missing = [c for c in RAW_HISTORY_COLUMNS if c not in frame.columns]
            if missing:
                raise ValueError(f"missing columns {missing}")
            dates = pd.to_datetime(frame.index, format="%Y-%m-%d")
            frame.index = pd.DatetimeIndex(dates).as_unit(INDEX_UNIT).tz_localize(EXCHANGE_TZ)
            frame.index.name = "Date"
            for column in frame.columns:
                if column != "Volume":
                    frame[column] = frame[column].astype("float64")
            if not frame.index.is_monotonic_increasing or frame.index.has_duplicates:
                raise ValueError("dates not strictly increasing")
        except (ValueError, KeyError, TypeError, pd.errors.ParserError) as exc:
            raise InputError(f"{self.path / rel}: unparsable history CSV ({exc})") from None
        return frame

    def _parse_income(self, rel: str, blob: bytes) -> pd.DataFrame:
        try:
            frame = pd.read_csv(io.BytesIO(blob), index_col=0)
            frame.index = pd.Index([str(i) for i in frame.index])  # default str dtype, as yfinance
            frame.index.name = None
            frame.columns = pd.DatetimeIndex(pd.to_datetime(list(frame.columns), format="%Y-%m-%d"))
            frame = frame.astype("float64")
        except (ValueError, KeyError, TypeError, pd.errors.ParserError) as exc:
            raise InputError(f"{self.path / rel}: unparsable income statement CSV ({exc})") from None
        return frame

    def _quote(self, symbol: str) -> JSONObject:
        self._require(symbol)
        if symbol not in self._quotes:
            rel = f"quote/{file_stem(symbol)}.json"
            blob = self._blobs.get(rel)
            if blob is None:
                self._quotes[symbol] = {"info": {}, "fast_info": {}}
            else:
                try:
                    quote = json.loads(blob)
                    if not isinstance(quote.get("info"), dict) or not isinstance(quote.get("fast_info"), dict):
                        raise ValueError("'info' and 'fast_info' must be objects")
                except ValueError as exc:
                    raise InputError(f"{self.path / rel}: unparsable quote JSON ({exc})") from None
                self._quotes[symbol] = quote
        return self._quotes[symbol]


def split_pending(raw: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``raw`` bars cut into the priced bars and the pending event rows that follow the last of them:
    rows with every price empty, ``Volume`` 0 and a dividend or split. Other rows are left with the
    bars, where an empty cell is the caller's error to report."""
    prices = raw[list(PRICED_COLUMNS)].isna().all(axis=1).to_numpy()
    events = (raw["Volume"].to_numpy() == 0) & ((raw["Dividends"] != 0) | (raw["Stock Splits"] != 0)).to_numpy()
    tail = len(raw)
    while tail > 0 and prices[tail - 1] and events[tail - 1]:
        tail -= 1
    return raw.iloc[:tail], raw.iloc[tail:]


def event_amounts(bars: pd.DataFrame, pending: pd.DataFrame | None, column: str) -> pd.Series:
    """The non-zero ``column`` (``Dividends``, ``Stock Splits``) of the bars and the pending event
    rows after them, as yfinance's ``dividends`` / ``splits`` list them."""
    frames = [bars] if pending is None or pending.empty else [bars, pending]
    series = pd.concat([f.loc[f[column] != 0, column] for f in frames])
    series.name = column
    return series


def load_snapshot(path: str | os.PathLike[str] | None = None, parsed: ParsedFiles | None = None) -> Snapshot:
    """Open (and verify) a snapshot; the bundled one (:func:`finevo.paths.snapshot_dir`) by default.
    ``parsed``: frames already parsed from the same files by other snapshots (:class:`ParsedFiles`)."""
    if path is None:
        from finevo.paths import snapshot_dir

        path = snapshot_dir()
    return Snapshot(path, parsed)
