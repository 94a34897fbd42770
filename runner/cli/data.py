"""``finevo-verify data info|refresh``: inspect the market snapshot, or record a real one.

* ``data info [--data DIR]`` -- label (synthetic / recorded), as-of date, generator, content hash,
  hash check status and, per symbol, rows and date range. Exit 0; a broken snapshot (missing
  file, bad hash, unparsable file) is one line and exit 2.
* ``data refresh --out DIR [--symbols ...] [--start D] [--end D] [--as-of D]`` -- record real
  data through yfinance in the same format (``"synthetic": false``). A network / data-source
  failure is one line and exit 3; nothing is written then.
"""

from __future__ import annotations

import argparse
import logging
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from finevo.errors import ExternalError, InputError
from finevo.paths import snapshot_dir
from runner.exitcodes import Exit

DEFAULT_SYMBOLS = ("AAPL", "MSFT", "GOOGL", "AMZN", "TSLA", "SPY", "^GSPC")
DEFAULT_START = date(2022, 1, 3)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("data", help="inspect the market snapshot or record a real one",
                                   description=__doc__.splitlines()[0] if __doc__ else None)
    verbs = parser.add_subparsers(dest="data_verb", metavar="{info,refresh}")
    parser.set_defaults(func=_usage(parser))

    info = verbs.add_parser("info", help="describe and verify a snapshot")
    info.add_argument("--data", metavar="DIR", help="snapshot directory (default: the bundled snapshot)")
    info.set_defaults(func=run_info)

    refresh = verbs.add_parser("refresh", help="record a real snapshot through yfinance (needs network)")
    refresh.add_argument("--out", metavar="DIR", required=True, help="directory to write the snapshot to")
    refresh.add_argument("--symbols", nargs="+", default=list(DEFAULT_SYMBOLS), metavar="SYM",
                         help=f"symbols to record (default: {' '.join(DEFAULT_SYMBOLS)})")
    refresh.add_argument("--start", default=DEFAULT_START.isoformat(), help="first day, YYYY-MM-DD")
    refresh.add_argument("--end", default=None, help="last day, YYYY-MM-DD (default: today, UTC)")
    refresh.add_argument("--as-of", dest="as_of", default=None, help="as-of date (default: --end)")
    refresh.set_defaults(func=run_refresh)


def _usage(parser: argparse.ArgumentParser) -> Any:
    def show(args: argparse.Namespace) -> int:
        parser.print_usage(sys.stderr)
        print("finevo-verify data: error: choose a verb: info or refresh", file=sys.stderr)
        return int(Exit.USAGE)

    return show


def _parse_day(value: str | None, flag: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise InputError(f"{flag}: {value!r} is not a date (YYYY-MM-DD)") from None


def run_info(args: argparse.Namespace) -> int:
    from finevo.market.snapshot import Snapshot

    path = Path(args.data) if args.data else snapshot_dir()
    snap = Snapshot(path)                     # verifies every sha256; InputError -> exit 2
    manifest = snap.manifest
    kind = "SYNTHETIC" if snap.synthetic else "recorded (real)"
    lines = [
        f"snapshot:   {path}",
        f"label:      {snap.label} [{kind}]",
        f"as-of:      {snap.as_of.isoformat()}",
        f"generator:  {manifest.get('generator')} {manifest.get('generator_version')}"
        + (f" (seed {manifest['seed']})" if manifest.get("seed") is not None else ""),
        f"hash:       {snap.content_hash}",
        f"files:      {len(manifest['files'])} listed, all sha256 OK",
    ]
    for symbol in snap.symbols():
        bars = snap.history(symbol)               # parses: an unparsable file is an InputError
        yearly = snap.income_stmt(symbol, "yearly")
        quarterly = snap.income_stmt(symbol, "quarterly")
        divs = snap.dividends(symbol)
        lines.append(f"  {symbol:<6} {len(bars):>5} rows  {bars.index[0].date()} .. {bars.index[-1].date()}  "
                     f"dividends {len(divs):>2}  statements {len(yearly.columns)}y/{len(quarterly.columns)}q")
    print("\n".join(lines))
    return int(Exit.PASSED)


def run_refresh(args: argparse.Namespace) -> int:
    from finevo.market.live import record_snapshot

    start = _parse_day(args.start, "--start")
    end = _parse_day(args.end, "--end") or datetime.now(UTC).date()
    as_of = _parse_day(args.as_of, "--as-of")
    assert start is not None
    if start > end:
        raise InputError(f"--start {start} is after --end {end}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a directory")
    # yfinance logs every retry and crumb failure itself; the failure is reported once, below.
    yf_logger = logging.getLogger("yfinance")
    previous_level = yf_logger.level
    yf_logger.setLevel(logging.CRITICAL)
    try:
        manifest = record_snapshot(out, args.symbols, start, end, as_of=as_of)
    except ExternalError as exc:
        print(f"finevo-verify data refresh: cannot record market data: {exc.message}", file=sys.stderr)
        return int(Exit.NO_VERDICT)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:
        raise InputError(f"--out {out}: cannot write ({exc.strerror or exc})") from None
    finally:
        yf_logger.setLevel(previous_level)
    print(f"recorded {len(manifest['symbols'])} symbols ({', '.join(manifest['symbols'])}) "
          f"{manifest['start']} .. {manifest['as_of']} into {out} [{manifest['label']}]")
    return int(Exit.PASSED)
