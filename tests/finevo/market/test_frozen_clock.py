"""frozen_clock: freezing, ticking, isinstance compatibility, and a clean unfreeze.

Each case runs in a fresh interpreter so the patched modules never leak into other tests (the C-clock
readings: one interpreter per host time zone, for the three anchors in turn).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap

import pytest


def _run(body: str, env: dict[str, str] | None = None) -> dict:
    code = textwrap.dedent("""
        import json, time, datetime as dt
        from zoneinfo import ZoneInfo
        import pandas as pd
        from finevo.market import frozen_clock as fc
        ANCHOR = dt.datetime(2024, 12, 31, 16, 0, tzinfo=ZoneInfo("America/New_York"))
        out = {}
    """) + textwrap.dedent(body) + "\nprint(json.dumps(out, default=str))\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=None if env is None else {**os.environ, **env})
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_clock_never_leaves_the_anchor_day() -> None:
    out = _run("""
        fc.freeze(ANCHOR)
        fc._STATE.started -= 10 * 3600          # as if a warm worker had lived ten hours
        out["now"] = dt.datetime.now().isoformat()
        out["today"] = dt.date.today().isoformat()
    """)
    assert out["now"] == "2024-12-31T23:59:59" and out["today"] == "2024-12-31"


def test_a_restart_brings_an_aged_clock_back_to_its_anchor_and_leaves_a_real_one_alone() -> None:
    out = _run("""
        real = time.time()
        fc.restart()                            # not frozen: the real clock, untouched
        out["real"] = time.time() - real
        moment = ANCHOR.replace(hour=11, minute=7)
        fc.freeze(moment)
        fc._STATE.started -= 3 * 3600           # forked from a zygote that froze three hours ago
        out["aged"] = dt.datetime.now().isoformat()
        fc.restart()
        out["restarted"] = time.time() - moment.timestamp()
        out["now"] = dt.datetime.now().isoformat()
    """)
    assert 0 <= out["real"] < 60
    assert out["aged"].startswith("2024-12-31T14:07")
    assert 0 <= out["restarted"] < 60 and out["now"].startswith("2024-12-31T11:0")


@pytest.mark.slow
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


_C_READINGS = """
        import numpy as np
        out["by_anchor"] = {}
        for ANCHOR_PARTS in ANCHORS_IN_ORDER:
            fc.freeze(dt.datetime(*ANCHOR_PARTS, 16, 0, tzinfo=ZoneInfo("America/New_York")))
            day = lambda x: str(x)[:10]
            one = out["by_anchor"][str(ANCHOR_PARTS)] = {}
            one["patched"] = fc.c_clock_patched()
            one["days"] = {
                "np_today": day(np.datetime64("today")),
                "np_now": day(np.datetime64("now")),
                "np_array": day(np.array(["today", "now"], dtype="datetime64[s]")[0]),
                "np_array_now": day(np.array(["today", "now"], dtype="datetime64[s]")[1]),
                "np_astype": day(np.array(["today"]).astype("datetime64[D]")[0]),
                "pd_index": day(pd.DatetimeIndex(["today"])[0]),
                "pd_index_utc": day(pd.DatetimeIndex(["now"], tz="UTC")[0]),
                "pd_series": day(pd.to_datetime(pd.Series(["today"]))[0]),
                "pd_astype": day(pd.Series(["now"]).astype("datetime64[ns]")[0]),
                "pd_astype_tz": day(pd.Series(["now"]).astype("datetime64[ns, UTC]")[0]),
                "pd_period": str(pd.Period.now("D")),
                "real_timestamp_class": day(type(pd.Timestamp(0)).now()),
                "real_datetime_class": day(pd.Timestamp.__mro__[-3].now()),
                "fromtimestamp_local": day(dt.datetime.fromtimestamp(time.time())),
            }
            one["now_hour_utc"] = str(np.datetime64("now"))[11:13]
            fc.unfreeze()
"""

ANCHORS = [(2024, 12, 31), (2021, 3, 15), (2019, 7, 1)]
HOST_ZONES = ["UTC", "Asia/Tokyo", "Pacific/Kiritimati", "America/Los_Angeles"]


@pytest.fixture(scope="module")
def c_readings() -> dict[str, dict[str, dict]]:
    """host zone -> anchor -> the readings: one interpreter per host zone (the zone is the process's
    own), freezing each anchor in turn and unfreezing between them. Each anchor is the first one
    frozen in some zone, so every anchor is read from a fresh interpreter too."""
    readings: dict[str, dict[str, dict]] = {}
    for i, zone in enumerate(HOST_ZONES):
        order = ANCHORS[i % len(ANCHORS):] + ANCHORS[:i % len(ANCHORS)]
        readings[zone] = _run(f"        ANCHORS_IN_ORDER = {order!r}\n" + _C_READINGS, env={"TZ": zone})["by_anchor"]
    return readings


def test_every_anchor_is_frozen_first_in_a_fresh_interpreter_in_some_zone() -> None:
    firsts = {(ANCHORS[i % len(ANCHORS):] + ANCHORS[:i % len(ANCHORS)])[0] for i in range(len(HOST_ZONES))}
    assert firsts == set(ANCHORS)


# one worker reads the module fixture's four interpreters for all twelve (split, both workers ran them)
@pytest.mark.slow
@pytest.mark.xdist_group("frozen-clock-c-readings")
@pytest.mark.parametrize("anchor", ANCHORS)
@pytest.mark.parametrize("host_zone", HOST_ZONES)
def test_c_code_reads_the_frozen_clock(c_readings: dict[str, dict[str, dict]], anchor: tuple[int, int, int],
                                       host_zone: str) -> None:
    """numpy's datetime parser and CPython's datetime.now() run in C: they read the anchor's date
    too, whatever the anchor and whatever the host's time zone (Kiritimati is UTC+14, where the
    anchor's 16:00 in New York is already the next day)."""
    out = c_readings[host_zone][str(anchor)]
    expected = dt.date(*anchor).isoformat()
    assert out["patched"] == {"numpy": True, "datetime": True, "interpreter": True}
    assert out["days"] == dict.fromkeys(out["days"], expected)
    assert out["now_hour_utc"] in ("20", "21")  # 16:00 New York, in UTC (summer / winter)


def test_prepare_redirects_c_clocks_once_and_leaves_them_real_until_a_freeze() -> None:
    """A process that forks many freezing processes redirects the C clocks once, before forking: the
    clocks read the real time until a freeze, which then only anchors them."""
    out = _run("""
        import numpy as np
        fc.prepare()
        out["patched"] = fc.c_clock_patched()
        out["real"] = [str(np.datetime64("today"))[:4], str(dt.datetime.now().year)]
        redirect = fc._redirect
        fc._redirect = lambda *a: out.setdefault("redirected_again", True)
        fc.freeze(ANCHOR)
        fc._redirect = redirect
        out["frozen"] = [str(np.datetime64("today")), str(dt.datetime.now().date())]
    """)
    assert out["patched"] == {"numpy": True, "datetime": True, "interpreter": True}
    assert all(int(year) > 2024 for year in out["real"])
    assert out["frozen"] == ["2024-12-31"] * 2 and "redirected_again" not in out


@pytest.mark.slow
def test_unfreeze_gives_c_code_the_real_clock_back() -> None:
    out = _run("""
        import numpy as np
        before_zone = time.tzname
        fc.freeze(ANCHOR)
        frozen = str(np.datetime64("today"))
        fc.unfreeze()
        out["frozen"] = frozen
        out["real"] = [str(np.datetime64("today"))[:4], str(pd.DatetimeIndex(["today"])[0])[:4],
                       str(pd.Period.now("D"))[:4], str(type(pd.Timestamp(0)).now())[:4]]
        out["zone_restored"] = time.tzname == before_zone
        out["patched_after"] = fc.c_clock_patched()
    """, env={"TZ": "Asia/Tokyo"})
    assert out["frozen"] == "2024-12-31"
    assert all(int(year) > 2024 for year in out["real"])
    assert out["zone_restored"] and out["patched_after"] == {"numpy": False, "datetime": False,
                                                             "interpreter": False}


@pytest.mark.slow
def test_the_interpreters_clock_alone_covers_datetime_and_follows_re_anchoring() -> None:
    """Where ``_datetime`` is built into the interpreter (Debian's python3, the container image)
    only the interpreter's own clock_gettime can be redirected: that alone must cover C code."""
    out = _run("""
        import numpy as np
        real_redirect = fc._redirect
        fc._redirect = lambda name, *a: False if name == "system_clock" else real_redirect(name, *a)
        real_datetime = pd.Timestamp.__mro__[-3]
        mono = time.monotonic()
        fc.freeze(ANCHOR)
        out["patched"] = fc.c_clock_patched()
        out["first"] = [str(real_datetime.now().date()), str(type(pd.Timestamp(0))("now").date()),
                        str(pd.Series(["now"]).astype("datetime64[ns, UTC]")[0].date())]
        fc.freeze(dt.datetime(2020, 2, 3, 16, 0, tzinfo=ZoneInfo("America/New_York")))
        out["second"] = [str(real_datetime.now().date()), str(np.datetime64("today"))]
        out["monotonic_real"] = 0 <= time.monotonic() - mono < 60
        fc.unfreeze()
        out["after"] = real_datetime.now().year
    """)
    assert out["patched"]["interpreter"] and out["patched"]["datetime"]
    assert out["first"] == ["2024-12-31"] * 3
    assert out["second"] == ["2020-02-03"] * 2
    assert out["monotonic_real"] and out["after"] > 2024
