"""frozen_clock: freezing, ticking, isinstance compatibility, and a clean unfreeze.

Each case runs in a fresh interpreter so the patched modules never leak into other tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap


def _run(body: str) -> dict:
    code = textwrap.dedent("""
        import json, time, datetime as dt
        from zoneinfo import ZoneInfo
        import pandas as pd
        from finevo.market import frozen_clock as fc
        ANCHOR = dt.datetime(2024, 12, 31, 16, 0, tzinfo=ZoneInfo("America/New_York"))
        out = {}
    """) + textwrap.dedent(body) + "\nprint(json.dumps(out, default=str))\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_clock_ticks_from_the_anchor() -> None:
    out = _run("""
        fc.freeze(ANCHOR)
        a = time.time()
        deadline = time.monotonic() + 5
        while time.time() == a and time.monotonic() < deadline:
            pass
        out["a"], out["b"] = a, time.time()
        out["frozen_at"] = fc.frozen_at().isoformat()
    """)
    assert 1735678800 <= out["a"] < out["b"] < 1735678800 + 10
    assert out["frozen_at"] == "2024-12-31T16:00:00-05:00"


def test_unfreeze_restores_real_classes_and_clock() -> None:
    out = _run("""
        real_dt, real_ts, real_time = dt.datetime, pd.Timestamp, time.time
        fc.freeze(ANCHOR)
        out["patched"] = dt.datetime is not real_dt and pd.Timestamp is not real_ts
        fc.unfreeze()
        out["restored"] = dt.datetime is real_dt and pd.Timestamp is real_ts and time.time is real_time
        out["year"] = dt.date.today().year
        out["frozen_at"] = fc.frozen_at()
    """)
    assert out["patched"] and out["restored"] and out["year"] > 2024 and out["frozen_at"] is None


def test_frozen_classes_still_build_ordinary_values() -> None:
    out = _run("""
        fc.freeze(ANCHOR)
        from datetime import datetime, date, timedelta
        out["ts"] = str(pd.Timestamp("2023-05-01", tz="UTC"))
        out["delta"] = str(datetime(2024, 1, 31) - timedelta(days=31))
        out["parsed"] = str(datetime.strptime("2024-02-03", "%Y-%m-%d").date())
        out["isinstance"] = [isinstance(pd.Timestamp("2020-01-01"), datetime),
                             isinstance(dt.date(2020, 1, 1), date),
                             issubclass(pd.Timestamp, datetime)]
        out["aware"] = datetime.now(ZoneInfo("Asia/Tokyo")).isoformat()
        try:
            fc.freeze(dt.datetime(2024, 1, 1))
        except ValueError as exc:
            out["naive_error"] = str(exc)
    """)
    assert out["ts"] == "2023-05-01 00:00:00+00:00"
    assert out["delta"] == "2023-12-31 00:00:00" and out["parsed"] == "2024-02-03"
    assert out["isinstance"] == [True, True, True]
    assert out["aware"].startswith("2025-01-01T06:00:0")          # same instant, Tokyo wall time
    assert "tz-aware" in out["naive_error"]


def test_clock_never_leaves_the_anchor_day() -> None:
    out = _run("""
        fc.freeze(ANCHOR)
        fc._STATE.started -= 10 * 3600          # as if a warm worker had lived ten hours
        out["now"] = dt.datetime.now().isoformat()
        out["today"] = dt.date.today().isoformat()
    """)
    assert out["now"] == "2024-12-31T23:59:59" and out["today"] == "2024-12-31"


def test_pandas_now_and_today_words_read_the_frozen_clock() -> None:
    out = _run("""
        real = (pd.Timestamp, pd.to_datetime, pd.date_range, pd.bdate_range)
        fc.freeze(ANCHOR)
        day = lambda x: str(x.date())
        out["timestamps"] = [day(pd.Timestamp("today")), day(pd.Timestamp("now")),
                             day(pd.Timestamp(ts_input="now")), str(pd.Timestamp("now", tz="UTC"))[:16]]
        out["to_datetime"] = [day(pd.to_datetime("today")),
                              [day(x) for x in pd.to_datetime(["now", "2020-01-02"])]]
        out["bdate_end"] = [day(x) for x in pd.bdate_range(end="today", periods=3)]
        out["date_end"] = [day(pd.date_range(end="today", periods=2)[-1]),
                           day(pd.date_range(end="now", periods=2)[-1]),
                           day(pd.date_range(None, "now", 2)[-1]),
                           str(pd.date_range(end="now", periods=1, freq="h")[-1])[:16]]
        out["date_start"] = day(pd.date_range(start="today", periods=1)[0])
        out["bdate_tz"] = str(pd.bdate_range(end="today", periods=1, tz="UTC")[-1])
        out["plain"] = [str(x) for x in pd.date_range("2024-12-30", "2025-01-01")]
        out["range_name"] = pd.date_range.__name__
        fc.unfreeze()
        out["restored"] = real == (pd.Timestamp, pd.to_datetime, pd.date_range, pd.bdate_range)
        out["real_year"] = pd.bdate_range(end="today", periods=1)[-1].year
    """)
    assert out["timestamps"] == ["2024-12-31"] * 3 + ["2024-12-31 21:00"]
    assert out["to_datetime"] == ["2024-12-31", ["2024-12-31", "2020-01-02"]]
    assert out["bdate_end"] == ["2024-12-27", "2024-12-30", "2024-12-31"]  # business days up to as-of
    assert out["date_end"] == ["2024-12-31", "2024-12-31", "2024-12-31", "2024-12-31 16:00"]
    assert out["date_start"] == "2024-12-31"
    assert out["bdate_tz"] == "2024-12-31 00:00:00+00:00"
    assert out["plain"] == ["2024-12-30 00:00:00", "2024-12-31 00:00:00", "2025-01-01 00:00:00"]
    assert out["range_name"] == "date_range"
    assert out["restored"] and out["real_year"] > 2024
