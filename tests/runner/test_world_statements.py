"""Statements and dividends as a reused tool meets them: the seed world's statements shaped as recorded
(a loss in the newest reported quarter with line items missing, a skipped quarter, an empty Total Revenue), the leap
world's company that stopped paying and its Feb 29 as-of, and the probes that ask for what the data
do not hold (a period not reported yet, a year without its quarter, a symbol with nothing to read).
Each wrong tool below is right for its task's own arguments on the snapshot and must fail the judge."""

from __future__ import annotations

import itertools
from datetime import date, timedelta

import numpy as np
import pandas as pd
import pytest

from finevo.market.synthetic import FUNDAMENTALS
from runner.judging.oracle import compute, expected_values
from runner.judging.probes import probes_for
from runner.judging.world_statements import (
    EMPTY_BESIDE,
    EMPTY_EPS_ROWS,
    JANUARY_YEAR_SYMBOL,
    KEPT_ROWS,
    MOVED_FISCAL_YEARS,
    REVENUE_GAP_YEAR,
    SIBLING_ROWS,
)
from runner.judging.worlds import WorldKind, Worlds
from tests.runner.test_worlds import SEED, Env, edited, env, reference

__all__ = ["env"]  # the judge's harness of tests/runner/test_worlds.py, shared
# The harness (a warm sandbox, three hidden worlds, every task's probes) is a module fixture: one worker
# runs the module, so it is built once, not once per worker (the module's tests landed on both).
# Every test needs the harness (seconds to build) and most judge a tool in every world: outside the inner loop.
pytestmark = [pytest.mark.xdist_group("world-statements"), pytest.mark.slow]


@pytest.fixture(scope="module")
def drawn(env: Env) -> Env:
    """The harness with every task's probes drawn from the run's seed too, as the gate draws them."""
    judged = {k: t.model_copy(update={"probes": probes_for(t, env.snapshot, SEED)}) for k, t in env.tasks.items()}
    return Env(env.snapshot, env.tasks, judged, env.worlds, env.sandbox)


def _seed_market(env: Env):  # type: ignore[no-untyped-def]
    return env.worlds.variants(WorldKind.SEED, 0)[0][2].market


def test_seed_world_statements_hold_a_loss_missing_line_items_and_a_skipped_quarter(env: Env) -> None:
    market = _seed_market(env)
    for symbol in ("AAPL", "MSFT", "GOOGL", "AMZN", "TSLA"):
        frame = market.income_stmt(symbol, "quarterly")
        filed = frame.loc[:, frame.loc["Net Income"].notna()]  # filed: its Net Income is reported
        ends = sorted((pd.Timestamp(c) for c in filed.columns), reverse=True)
        newest = filed[ends[0]]
        assert newest["Net Income"] < 0, symbol  # a loss, and still the latest reported quarter
        missing = [r for r in newest.index if pd.isna(newest[r])]
        drawn = [r for r in missing if r not in EMPTY_BESIDE]
        assert set(EMPTY_BESIDE) <= set(missing), (symbol, missing)  # its revenue and EPS empty, filed all the same
        assert not set(drawn) & KEPT_ROWS, (symbol, missing)
        assert len(missing) > len(newest.index) / 2, (symbol, missing)  # most of its cells, filed all the same
        gaps = [(a - b).days for a, b in itertools.pairwise(ends)]
        assert sum(g > 110 for g in gaps) == 1, (symbol, gaps)  # one quarter skipped, the others 3 months apart
        latest = compute("net_income", market, {"symbol": symbol})
        assert latest == float(newest["Net Income"])


def test_the_seed_world_shows_the_subjects_revenue_before_its_net_income_is_filed(env: Env) -> None:
    """yfinance shows a quarter's column once some figures are in, before the statement is filed: a
    quarter is filed when its Net Income is reported (the latest-quarter task's reading), so the
    newest column here, revenue and no Net Income, is not the latest quarter; ``info`` names the one
    before it too."""
    market = _seed_market(env)
    symbol = env.tasks["fetch_006"].intent.args["symbol"]
    frame = market.income_stmt(symbol, "quarterly")
    newest = max(frame.columns, key=pd.Timestamp)
    assert pd.isna(frame.at["Net Income", newest]) and frame.at["Total Revenue", newest] > 0, frame[newest]
    filed = [c for c in frame.columns if pd.notna(frame.at["Net Income", c])]
    before = max(filed, key=pd.Timestamp)
    assert compute("net_income", market, {"symbol": symbol}) == float(frame.at["Net Income", before])
    stamp = market.info(symbol)["mostRecentQuarter"]
    assert pd.Timestamp(stamp, unit="s", tz="America/New_York").date() == pd.Timestamp(before).date()


@pytest.mark.parametrize(("task_id", "old", "new"), [
    # a column with any NaN taken for a quarter not filed yet
    ("fetch_006", 'row = statement.loc["Net Income"]', 'row = statement.dropna(axis=1).loc["Net Income"]'),
    # ... or a column with most of its cells NaN: the newest reported quarter holds little beyond its Net Income
    ("fetch_006", 'row = statement.loc["Net Income"]',
     'row = statement.dropna(axis=1, thresh=len(statement.index) // 2).loc["Net Income"]'),
    # NaN dropped with a comparison that drops losses too
    ("fetch_006", 'row = statement.loc["Net Income"]', 'row = statement.loc["Net Income"]\n    row = row[row > 0]'),
    # a quarter taken as filed when any figure is there, not its Net Income: the seed world's newest
    # column holds its revenue before the rest is filed, and the tool raises there
    ("fetch_006", 'for period_end in sorted(row.index, reverse=True):',
     "for period_end in sorted((c for c in statement.columns if statement[c].notna().any()), reverse=True)[:1]:"),
    # a year without its quarter (or the reverse) answered with the latest quarter
    ("fetch_001",
     'if (year is None) != (quarter is None):\n        raise ValueError("give both year and quarter, or neither")',
     "if year is None or quarter is None:\n        year = quarter = None"),
    # a fiscal year not reported yet answered with the latest one reported
    ("fetch_003", 'raise ValueError(f"{symbol} has no Total Revenue for fiscal {year}")',
     "if int(year) > max(pd.Timestamp(c).year for c in row.index):\n"
     "        return float(row.dropna().sort_index().iloc[-1])\n"
     '    raise ValueError(f"{symbol} has no Total Revenue for fiscal {year}")'),
    # a special dividend dropped as a feed error: the as_of world's extra dividend is one, several times
    # the payer's latest (a payment above three times the median taken for a bad print)
    ("fetch_007", 'if paid.empty:\n        raise',
     "paid = paid[paid <= 3 * paid.median()]\n    if paid.empty:\n        raise"),
    # an empty window filled with the last dividend before it
    ("fetch_007", 'if paid.empty:\n        raise',
     "if paid.empty:\n        every = yf.Ticker(symbol).dividends\n        paid = every[every > 0].tail(1)\n"
     "    if paid.empty:\n        raise"),
])
def test_a_tool_wrong_on_recorded_statements_or_dividends_fails(drawn: Env, task_id: str, old: str, new: str) -> None:
    verdict, alone = drawn.judge(task_id, edited(task_id, old, new))
    assert alone, "right for the task's own arguments on the snapshot"
    assert verdict.state != "pass", verdict.reason


def test_quarters_counted_back_from_the_newest_column_fail(drawn: Env) -> None:
    code = ("import pandas as pd\nimport yfinance as yf\n\n\n"
            "def net_income(symbol: str, year: int | None = None, quarter: int | None = None) -> float:\n"
            "    row = yf.Ticker(symbol).quarterly_income_stmt.loc['Net Income']\n"
            "    if (year is None) != (quarter is None):\n        raise ValueError('both or neither')\n"
            "    cols = sorted(row.index, reverse=True)\n"
            "    if year is None:\n        return float(row[cols][row[cols].notna()].iloc[0])\n"
            "    top = (pd.Timestamp(cols[0]) + pd.Timedelta(days=10)).to_period('Q')\n"
            "    steps = (top.year - year) * 4 + top.quarter - quarter\n"
            "    if not 0 <= steps < len(cols) or pd.isna(row[cols[steps]]):\n"
            "        raise ValueError('no such quarter')\n"
            "    return float(row[cols[steps]])\n")
    verdict, alone = drawn.judge("fetch_001", code)
    assert alone and verdict.state != "pass", verdict.reason


def test_a_year_back_with_date_replace_fails_in_the_leap_world_as_of_feb_29(drawn: Env) -> None:
    code = ("import datetime\nimport yfinance as yf\n\n\n"
            "def dividend_history(symbol: str, years: int = 3) -> list:\n"
            "    today = datetime.date.today()\n"
            "    start = today.replace(year=today.year - years)\n"
            "    d = yf.Ticker(symbol).dividends\n"
            "    out = [{'date': t.strftime('%Y-%m-%d'), 'amount': float(a)} for t, a in d.items()\n"
            "           if a > 0 and start <= t.date() <= today]\n"
            "    if not out:\n        raise ValueError('none')\n"
            "    return out\n")
    verdict, alone = drawn.judge("fetch_007", code)
    assert alone and verdict.state != "pass"
    assert "leap-2024-02-29" in verdict.reason or "2024-02-29" in verdict.reason, verdict.reason


def test_the_leap_world_is_as_of_feb_29_and_holds_a_company_that_stopped_paying(env: Env) -> None:
    plan = env.worlds.leap_plan()
    assert plan is not None and plan[0] == date(2024, 2, 29)
    leap = env.worlds.leap_market()
    assert leap is not None
    market = leap[2]
    task = env.tasks["fetch_007"]
    paid = pd.DatetimeIndex(market.dividends("AMZN").index).date
    assert len(paid) >= 4 and max(paid) < date(2020, 3, 1)  # quarterly, then nothing for four years
    assert max(paid) - min(paid) < timedelta(days=366 * 3)
    with pytest.raises(Exception, match="no dividends"):
        expected_values(task, market, {"symbol": "AMZN"})  # an empty window: a clear error is the answer
    assert expected_values(task, market, {"symbol": "AMZN", "years": 5})  # an older window holds them
    world = next(w for w in env.worlds.for_task(env.judged["fetch_007"], []) if w.kind is WorldKind.LEAP)
    right = env.run(reference("fetch_007"), "dividend_history", {"symbol": "AMZN", "years": 3}, str(world.path))
    assert right.status == "exception"


def test_probes_ask_for_what_the_data_do_not_hold_and_expect_an_error(env: Env) -> None:
    refused = {t: [dict(p.args) for p in probes_for(env.tasks[t], env.snapshot, SEED) if p.expect_error]
               for t in ("fetch_001", "fetch_003", "fetch_006", "fetch_007", "calc_001")}
    assert {"year": None} in refused["fetch_001"] and {"quarter": None} in refused["fetch_001"]
    assert {"year": 2025} in refused["fetch_001"]  # 2025 Q1: not reported
    assert {"year": 2024} in refused["fetch_003"]  # fiscal 2024 ends on the as-of day: not reported
    assert {"symbol": "AMZN"} in refused["fetch_007"]  # a stock that pays no dividend
    assert {"symbol": "SPY"} in refused["fetch_006"]  # an ETF has no income statement
    # calc_001's full-history reading answers without days: no refusal is asked of it
    assert not any("days" in a and a["days"] is None for a in refused["calc_001"])


def test_worlds_of_other_seeds_keep_the_feb_29_leap_day(env: Env) -> None:
    for seed in (1, 2, 3):
        plan = Worlds(env.snapshot, 3, seed).leap_plan()
        assert plan is not None and plan[0] == date(2024, 2, 29), seed


#: The rows the statement tasks ask (fetch_001 and fetch_006: Net Income; fetch_003: Total Revenue).
ASKED_ROWS = ("Net Income", "Total Revenue")


def _copies(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """Pairs of rows of ``frame`` whose figures are all equal (where both have one; a row of zeros
    or of nothing at all aside, and the per-share rows: basic and diluted EPS differ by a dilution of
    0.6 %, which rounding to cents hides for a small EPS)."""
    assert frame.index.is_unique, frame.index
    rows = [r for r in frame.index if frame.loc[r].notna().any() and (frame.loc[r].fillna(0) != 0).any()
            and r not in ("Basic EPS", "Diluted EPS")]
    # every pair at once (rows x rows x columns): pair by pair in pandas this was 32 s of a 34 s test
    values = frame.loc[rows].to_numpy(dtype=float)
    present = ~np.isnan(values)
    both = present[:, None, :] & present[None, :, :]
    same = both.any(axis=2) & ((values[:, None, :] == values[None, :, :]) | ~both).all(axis=2)
    return [(str(rows[i]), str(rows[j])) for i, j in itertools.combinations(range(len(rows)), 2) if same[i, j]]


def test_the_generated_statements_copy_sibling_rows_and_no_world_does(env: Env) -> None:
    """The generator (and so the bundled snapshot) copies one figure into several rows: Operating
    Revenue is Total Revenue, Net Income Common Stockholders is Net Income. In every world each of
    those rows has figures of its own, and none equals a row a task asks."""
    snapshot_copies = {pair for s in ("AAPL", "MSFT") for pair in _copies(env.snapshot.income_stmt(s, "quarterly"))}
    assert ("Net Income Common Stockholders", "Net Income") in snapshot_copies
    assert ("Total Revenue", "Operating Revenue") in snapshot_copies
    markets = {name: base.market for kind in (WorldKind.SEED, WorldKind.AS_OF, WorldKind.EDGE)
               for name, _, base in env.worlds.variants(kind, 0)}
    markets["flip"] = env.worlds._shaped_base()
    markets["long"] = env.worlds.long_market()
    for name, market in markets.items():
        for symbol in ("AAPL", "MSFT", "GOOGL", "AMZN", "TSLA"):
            for freq in ("quarterly", "yearly"):
                frame = market.income_stmt(symbol, freq)
                assert not _copies(frame), (name, symbol, freq, _copies(frame))
                for row in SIBLING_ROWS:
                    assert row in frame.index, (name, symbol, freq, row)
                for asked in ASKED_ROWS:
                    near = [r for r in SIBLING_ROWS if  # in no column, not even a loss's
                            ((frame.loc[r] - frame.loc[asked]).abs() <= 1e-6 * frame.loc[asked].abs()).any()]
                    assert not near, (name, symbol, freq, asked, near)


def test_an_annual_sibling_row_still_sums_its_quarters(env: Env) -> None:
    market = env.worlds.variants(WorldKind.EDGE, 0)[0][2].market
    quarterly, yearly = market.income_stmt("AAPL", "quarterly"), market.income_stmt("AAPL", "yearly")
    for column in yearly.columns:
        end = pd.Timestamp(column)
        four = [c for c in quarterly.columns if end - pd.Timedelta(days=330) < pd.Timestamp(c) <= end]
        if len(four) == 4 and quarterly[four].notna().all().all():
            for row in ("Operating Revenue", "Net Income Common Stockholders"):
                assert abs(float(quarterly.loc[row, four].sum()) - float(yearly.loc[row, column])) <= 4e3, row
            return
    pytest.fail("no fiscal year of AAPL with its four quarters in the world")


@pytest.mark.parametrize(("task_id", "old", "new"), [
    # the revenue read from the "Operating Revenue" line (a bank's, an insurer's total revenue is more)
    ("fetch_003", 'row = statement.loc["Total Revenue"]', 'row = statement.loc["Operating Revenue"]'),
    # net income read after preferred dividends
    ("fetch_001", 'row = statement.loc["Net Income"]', 'row = statement.loc["Net Income Common Stockholders"]'),
    ("fetch_006", 'row = statement.loc["Net Income"]', 'row = statement.loc["Net Income Including Noncontrolling '
                                                        'Interests"]'),
])
def test_a_tool_reading_a_sibling_line_item_fails(drawn: Env, task_id: str, old: str, new: str) -> None:
    verdict, alone = drawn.judge(task_id, edited(task_id, old, new))
    assert alone, "right for the task's own arguments on the snapshot (the rows are copies there)"
    assert verdict.state == "fail", verdict.reason


def test_the_seed_world_holds_a_company_whose_fiscal_year_ends_in_january(env: Env) -> None:
    """Walmart's, Nvidia's shape: a fiscal year ending in January (dated as a 52/53-week calendar
    dates it, up to three days into February). "Fiscal N" is the year ending in calendar N, as those
    companies name theirs, and the revenue task asks this company in every run (its own subject)."""
    market = _seed_market(env)
    yearly = market.income_stmt(JANUARY_YEAR_SYMBOL, "yearly")
    ends = [pd.Timestamp(c) for c in yearly.columns]
    assert ends and all((e.month, e.day) <= (2, 3) and (e.month == 2 or e.day >= 25) for e in ends), ends
    assert env.tasks["fetch_003"].intent.args["symbol"] == JANUARY_YEAR_SYMBOL
    gap = sorted(ends, reverse=True)[REVENUE_GAP_YEAR]  # its Total Revenue is empty (revenue_gaps)
    for end in (e for e in ends if e != gap):
        assert compute("total_revenue", market, {"symbol": JANUARY_YEAR_SYMBOL, "year": end.year}) == \
            float(yearly.loc["Total Revenue", yearly.columns[ends.index(end)]])


def test_a_january_fiscal_year_named_by_the_calendar_year_before_it_fails(drawn: Env) -> None:
    code = edited("fetch_003", "        if pd.Timestamp(period_end).year == int(year):",
                  "        end = pd.Timestamp(period_end)\n"
                  "        if (end.year - 1 if end.month <= 3 else end.year) == int(year):")
    verdict, alone = drawn.judge("fetch_003", code)
    assert alone, "right for the task's own arguments on the snapshot (no fiscal year ends in January there)"
    assert verdict.state == "fail" and verdict.reason.startswith("world seed-"), verdict.reason


def test_the_seed_world_leaves_a_years_total_revenue_empty_beside_its_siblings(drawn: Env) -> None:
    """Yahoo leaves single cells empty, the asked rows' too: the revenue task's subject's fiscal year
    before the task's own has its Net Income and Operating Revenue but no Total Revenue (undefined:
    the oracle reads that row only, and a tool must raise), the task's own year its Total Revenue but
    no EPS (answered), the newest year whole (reported by the as-of day: a tool refusing the current
    calendar year by the clock fails on it). The derived probe of the year asks the gap year there, in
    every run; the probe of "a period not reported yet" the newest, which the oracle answers there."""
    from runner.judging.oracle import Undefined

    market = _seed_market(drawn)
    yearly = market.income_stmt(JANUARY_YEAR_SYMBOL, "yearly")
    newest, own, gap = sorted(yearly.columns, key=pd.Timestamp, reverse=True)[:REVENUE_GAP_YEAR + 1]
    assert pd.isna(yearly.at["Total Revenue", gap])
    assert yearly.at["Operating Revenue", gap] > 0 and pd.notna(yearly.at["Net Income", gap])
    with pytest.raises(Undefined, match="leaves Total Revenue empty"):
        compute("total_revenue", market, {"symbol": JANUARY_YEAR_SYMBOL, "year": pd.Timestamp(gap).year})
    assert all(pd.isna(yearly.at[r, own]) for r in EMPTY_EPS_ROWS) and yearly.at["Total Revenue", own] > 0
    assert yearly.at["Total Revenue", newest] > 0
    task = drawn.judged["fetch_003"]
    assert task.intent.args["year"] == pd.Timestamp(own).year
    asked = [{**task.intent.args, **p.args} for p in task.probes]
    assert {"symbol": JANUARY_YEAR_SYMBOL, "year": pd.Timestamp(gap).year} in asked, task.probes
    assert {"symbol": JANUARY_YEAR_SYMBOL, "year": pd.Timestamp(newest).year} in asked, task.probes


def test_info_keeps_the_trailing_figures_of_a_quarter_whose_cells_are_empty(env: Env) -> None:
    """``info``'s trailing figures are Yahoo's: they count the newest reported quarter although the
    statement serves its revenue and EPS cells empty (not the three other quarters alone)."""
    market = _seed_market(env)
    for symbol in ("AAPL", "AMZN", "GOOGL"):
        frame = market.income_stmt(symbol, "quarterly")
        filed = frame.loc[:, frame.loc["Net Income"].notna()]
        four = sorted(filed.columns, key=pd.Timestamp, reverse=True)[:4]
        info = market.info(symbol)
        assert info["netIncomeToCommon"] == int(filed.loc["Net Income", four].sum()), symbol
        shown = float(filed.loc["Total Revenue", four[1:]].sum())
        assert 0.5 < (info["totalRevenue"] - shown) / float(filed.at["Total Revenue", four[1]]) < 2, symbol
        assert abs(info["trailingEps"] - round(float(filed.loc["Diluted EPS", four[1:]].sum()), 2)) > 0.05, symbol


REVENUE_FALLBACK = """import math

import pandas as pd
import yfinance as yf


def total_revenue(symbol: str, year: int) -> float:
    statement = yf.Ticker(symbol).income_stmt
    for label in ("Total Revenue", "Operating Revenue", "Revenue"):
        if label not in statement.index:
            continue
        for period_end, value in statement.loc[label].items():
            if pd.Timestamp(period_end).year == int(year) and math.isfinite(float(value)):
                return float(value)
    raise ValueError(f"no revenue for {symbol} in {year}")
"""

REVENUE_NEEDS_EPS = """import math

import pandas as pd
import yfinance as yf


def total_revenue(symbol: str, year: int) -> float:
    statement = yf.Ticker(symbol).income_stmt
    for period_end in statement.columns:
        column = statement[period_end]
        if pd.Timestamp(period_end).year == int(year) and math.isfinite(float(column["Diluted EPS"])):
            return float(column["Total Revenue"])
    raise ValueError(f"fiscal {year} of {symbol} is not reported")
"""

REVENUE_RIGHT = """import pandas as pd
import yfinance as yf


def total_revenue(symbol: str, year: int) -> float:
    row = yf.Ticker(symbol).income_stmt.loc["Total Revenue"].dropna()
    found = [float(v) for c, v in row.items() if pd.Timestamp(c).year == int(year)]
    if len(found) != 1:
        raise ValueError(f"{symbol}: no Total Revenue reported for fiscal {year}")
    return found[0]
"""

LATEST_NEEDS_EPS = """import pandas as pd
import yfinance as yf


def net_income(symbol: str) -> float:
    statement = yf.Ticker(symbol).quarterly_income_stmt
    for period_end in sorted(statement.columns, reverse=True):
        column = statement[period_end]
        if pd.notna(column["Net Income"]) and pd.notna(column["Diluted EPS"]):
            return float(column["Net Income"])
    raise ValueError(f"no filed quarter for {symbol}")
"""

LATEST_NEEDS_REVENUE = LATEST_NEEDS_EPS.replace('column["Diluted EPS"]', 'column["Total Revenue"]')

LATEST_RIGHT = """import pandas as pd
import yfinance as yf


def net_income(symbol: str) -> float:
    row = yf.Ticker(symbol).quarterly_income_stmt.loc["Net Income"].dropna()
    if row.empty:
        raise ValueError(f"no reported quarter for {symbol}")
    return float(row[max(row.index, key=pd.Timestamp)])
"""


#: "Not reported yet" read off the clock: any year of the current calendar year refused. A fiscal year
#: that ends early in the year (January, September) is reported within it: the seed world's newest
#: year of the revenue task's subject ends in January of its as-of year, and is asked.
REVENUE_REFUSES_THIS_YEAR = REVENUE_RIGHT.replace(
    "def total_revenue(symbol: str, year: int) -> float:\n",
    "def total_revenue(symbol: str, year: int) -> float:\n"
    "    import datetime\n"
    "    if int(year) >= datetime.date.today().year:\n"
    "        raise ValueError(f'fiscal {year} is not reported yet')\n")


@pytest.mark.parametrize(("task_id", "code"), [
    ("fetch_003", REVENUE_REFUSES_THIS_YEAR),  # a year of the clock's calendar year refused though filed
    ("fetch_003", REVENUE_FALLBACK),  # an empty Total Revenue answered from the Operating Revenue line
    ("fetch_003", REVENUE_NEEDS_EPS),  # a year taken as reported only when its EPS is there
    ("fetch_006", LATEST_NEEDS_EPS),  # a quarter taken as filed only when its EPS is there
    ("fetch_006", LATEST_NEEDS_REVENUE),  # ... only when its revenue is there
])
def test_a_tool_that_needs_or_falls_back_to_another_row_fails(drawn: Env, task_id: str, code: str) -> None:
    verdict, alone = drawn.judge(task_id, code)
    assert alone, "right for the task's own arguments on the snapshot (no cell is empty there)"
    assert verdict.state == "fail" and verdict.reason.startswith("world seed-"), verdict.reason


@pytest.mark.parametrize(("task_id", "code"), [("fetch_003", REVENUE_RIGHT), ("fetch_006", LATEST_RIGHT)])
def test_a_tool_reading_only_the_asked_row_passes_beside_empty_cells(drawn: Env, task_id: str, code: str) -> None:
    verdict, _ = drawn.judge(task_id, code)
    assert verdict.state == "pass", verdict.reason


def _fiscal_month(column: object) -> int:
    """The month a statement period ends in (a 52/53-week date up to three days into the next month)."""
    return int(((pd.Timestamp(column) + pd.Timedelta(days=15)).to_period("M") - 1).month)


def test_the_seed_world_ends_fiscal_years_in_other_months_than_the_companies_own(env: Env) -> None:
    """Apple's year does not end in September there, nor Amazon's or Tesla's in December: each ends
    in a drawn month that ends a calendar quarter, so the calendar and the fiscal reading of the
    statement task's own arguments both answer, with different quarters."""
    market = _seed_market(env)
    for symbol, choices in MOVED_FISCAL_YEARS.items():
        months = {_fiscal_month(c) for c in market.income_stmt(symbol, "yearly").columns}
        assert len(months) == 1, (symbol, months)
        month = months.pop()
        assert month in choices and month != FUNDAMENTALS[symbol].fiscal_year_end_month, (symbol, month)
        assert {_fiscal_month(c) % 3 for c in market.income_stmt(symbol, "quarterly").columns} == {0}, symbol
    task = env.tasks["fetch_001"]
    assert task.intent.args["symbol"] in MOVED_FISCAL_YEARS
    values = expected_values(task, market)
    assert values["calendar_quarter"] != values["fiscal_quarter"]
    words = env.worlds.variants(WorldKind.SEED, 0)[0][1]
    assert "fiscal years ending in" in words, words


#: Fiscal quarters from a table of fiscal year-ends per ticker (every other ticker's year taken to end
#: in December): right wherever the table is, wrong for a company that keeps another calendar.
NET_INCOME_TABLE = '''"""Net income of a company's fiscal quarter."""

import pandas as pd
import yfinance as yf

YEAR_ENDS = {"AAPL": "SEP", "MSFT": "JUN", "NVDA": "JAN", "ORCL": "MAY", "CSCO": "JUL"}


def net_income(symbol: str, year: int | None = None, quarter: int | None = None) -> float:
    """Net Income of fiscal ``quarter`` of the fiscal year ending in ``year``."""
    if year is None or quarter is None:
        raise ValueError("a fiscal year and a quarter are needed")
    period = pd.Period(year=int(year), quarter=int(quarter), freq="Q-" + YEAR_ENDS.get(symbol.upper(), "DEC"))
    end = period.end_time.normalize()
    row = yf.Ticker(symbol).quarterly_income_stmt.loc["Net Income"]
    for column, value in row.items():
        if abs((pd.Timestamp(column).tz_localize(None) - end).days) <= 15:
            if pd.isna(value):
                raise ValueError(f"{symbol}: fiscal {year} Q{quarter} is not reported")
            return float(value)
    raise ValueError(f"{symbol}: no quarter ending near {end.date()}")
'''


def test_a_table_of_fiscal_year_ends_per_ticker_fails(drawn: Env) -> None:
    verdict, alone = drawn.judge("fetch_001", NET_INCOME_TABLE)
    assert alone, "right for the task's own arguments on the snapshot (the fiscal reading)"
    assert verdict.state == "fail" and verdict.reason.startswith("world seed-"), verdict.reason
