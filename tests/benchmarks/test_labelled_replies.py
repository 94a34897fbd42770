"""Labelled replies through the judge: wrong-but-plausible tools must fail, right variants must pass.

``labelled_replies.jsonl`` holds 201 final tools for the 20 tasks, written without reading the judge's
tests (165 ``wrong``: each gives the right number on the task's own arguments but is wrong in general
-- a hard-coded argument, a clamp, an off-by-one window, answering from fewer data than asked, part
of a list, a reporting lag or a year length assumed, a window anchored at the last bar instead of
today...; 36 ``correct``: other accepted conventions or equivalent implementations). Lines 71-83
were added later, of classes the first 70 do not cover; lines 84-120 are a third batch written blind
(from the documented readings only), each label checked again when it was added; lines 121-131 are
from a fourth blind batch, the statement and dividend classes (fetch_001, 003, 006, 007: eight wrong,
three correct); lines 132-136 from the same batch, the argument and data classes (calc_003: calendar
days fetched for sessions; calc_005: an optional parameter ignored; comp_001: six months whatever the
windows; comp_002: "price up" from summed returns; comp_004: ten years as all the history); line 137
from the same batch, an RSI whose lookback is silently widened to fit its window (calc_001: caught
since the judge asks argument sets where the accepted readings part). Lines from 138 on are from a
fifth blind batch, each a class the judge passed in every seed until it was closed: 138, a moving
average with no length check whose NaN placeholders the sandbox refuses (calc_002: a refused value
is not the error an expect-error probe asks for); 139 and 140, a sibling line item read for the one
asked (fetch_003: Operating Revenue for Total Revenue; fetch_001: Net Income Common Stockholders for
Net Income; equal in the generated statements, given figures of their own in every world); 141, a
fiscal year ending in January-March named by the calendar year before it (fetch_003: the seed
world's company whose fiscal year ends in January); 142, a "latest close" that looks back three
calendar days (fetch_004: the closure world, as of 2012-10-30). Lines from 143 on are from a sixth
blind batch, closed the same way: 143, a quarter taken as filed when any figure is there (fetch_006:
the seed world's unfiled quarter shows its revenue, no Net Income); 144, an RSI of 0 for a window of
gains only (calc_001: the seed world's run of gains); 145, "price up" from raw closes (comp_002: the
round-trip world's dividend above the net move); 146, the RSV carried forward over a zero range
(calc_006) and 147, a latest bar of Volume 0 dropped (calc_003): the seed world's halt up to its
as-of day. Lines from 148 on are from a seventh blind batch, closed the same way: 148, a quarter's
end built as month ``3q+1`` (fetch_001: month 13 for Q4; the quarter probe asks the year's last
quarter); 149, a data check off by one (calc_002: ``window + days`` closes asked; the lookbacks are
probed at the data's limit); 150, "price up" tested with ``>=`` (comp_002: the zigzag world's last close
ties the window's first). Line 63, an SMA-smoothed KDJ that divides by the range, was labelled correct until that
halt: it answers NaN there, where the documented reading is RSV 50, and is labelled wrong. Lines 151-156
are from an eighth blind batch: 151 and 152, a tool that needs, or falls back to, a row other than the one
asked (fetch_003: Operating Revenue where the year's Total Revenue cell is empty; fetch_006: a quarter taken
as filed only when its Diluted EPS is there too): the seed world's empty cells in the asked row and beside
it; 153, a correlation that answers 0.0 where a series does not move, and 154, one that raises there
(calc_008: the seed world's halt up to its as-of day, asked at the shortest window, where the correlation
is undefined and a tool must raise); 155, a "latest close" that drops bars of Volume 0, and 156, one that
keeps them (fetch_004: the seed world's index with Volume 0 on its latest sessions). Line 65, a log-return
correlation labelled correct until then, answers NaN there (``np.corrcoef`` of a constant) and is labelled
wrong. Lines 157-162 are the same batch's classes closed a round later: 157, a basket that leaves out a symbol
whose history is shorter than the window (comp_003), and 158, a correlation that checks the first symbol's
history only (calc_008): the listing world's stock listed weeks ago, where the window's data cannot be had and
a tool must raise; 159, "all available history" read from 1990-01-01 (comp_004: the long world reaches back to
1980); 160, closes rounded to cents before "last > first" (comp_002: the round-trip world ends 0.4 cent up);
161, fiscal quarters from a table of fiscal year-ends per ticker (fetch_001: the seed world ends Apple's,
Amazon's and Tesla's fiscal years in drawn months); 162, a tie of the two averages counted as a cross
(comp_001: ``>=`` for ``>``; the halt world ties them exactly). Line 163, a moving average that
declares the price column to average and always averages Close (calc_002: a parameter declared and
never read fails from the source, ``runner/judging/unread_params.py``); 164, volume's trend measured per
calendar day instead of per session (comp_002: the round-trip world's volume falls by session and rises
by calendar day); 165, a "latest close" whose bars are memoised with ``lru_cache`` (fetch_004: market data
kept from one call to the next fails from the source); 166, Bollinger's variance as the mean of squares
minus the squared mean (calc_003: over a flat window the two cancel to rounding noise, a negative one
gives NaN bands; the flat world halts the symbols at a cent price where that rounding shows). Lines 167-172
are the classes of a ninth blind batch (numbers: degenerate and small dispersions), written for the
repository in their own code: 167, a volatility that refuses a window whose returns do not vary, and 168, a
drawdown that raises when the price never falls (calc_005, calc_007: both are 0 over the seed world's halt,
asked at the shortest window); 169, a correlation that calls a daily spread under 0.2 % too flat (calc_008:
the quiet world's returns spread by 0.04 %); 170, a post-signal average of 0.0 when nothing is selected
(comp_004: a threshold no RSI reaches must raise); 171 and 172, right Cutler RSI tools whose window of no
change (0/0) is 50 or gives no signal (calc_001, comp_004: no accepted reading settles 0/0, so the oracle
accepts the answer of each common treatment, 100, 50, 0 or none, where it accepted only 100). Lines 173
and 174 are the class of a tenth blind batch: a "latest close" that reads the last row (fetch_005), wrong,
and one that drops rows without a close first, right: before the open on an ex-dividend date real
yfinance ends ``history()`` with the dividend's row, prices NaN (the ``preopen`` world). Lines 68 (a
latest quote from the last row, fetch_002) and 83 (a divergence over the last N rows, comp_002),
labelled correct until then, answer NaN or read one session short there, and are labelled wrong. Lines 175
and 176 are from an eleventh blind batch: 175, a "latest close" that drops every row with a dividend to be
rid of the pending one, and so the bar of an ex-dividend session too (fetch_005: the preopen world's other
payers went ex-dividend on its last session); 176, ``periods_per_year`` truncated with ``int()`` (calc_005:
a real optional parameter is probed at a fraction). Lines 177 and 178 are the eleventh batch's classes
closed a round later, 179-183 from a twelfth blind batch: 177, a highest close over bars passed through
``drop_duplicates()`` (fetch_008: the halted world's flat bars are sessions, and dropping them reads the
fall before the halt); 178, moving averages of
``auto_adjust=False`` closes (comp_001: the dividend world's special ex-dividend inside the long window
decides the quoted reading); 179, "price up" from the compounded daily returns (comp_002: the zigzag world's
tie rounds above 1 compounded), all wrong; 180-183, right tools in their own code (calc_002's sliding sums,
calc_007's running peak, comp_001's sums over counts, comp_003's inner-joined dates). Lines 184-190 are
from the thirteenth and fourteenth blind batches and a sweep of mutants of the reference tools, each a
class the judge passed until it was closed: 184, a zero average loss made NaN (comp_004: the rally world's
rally turns before its as-of day, so the signals of the rally's days are missed); 185, a threshold of 1 or
less read as a fraction (comp_001: the derived probe at a level of 1); 186, the last N rows with the
pending dividend row among them (fetch_008: the preopen world's peak on the window's oldest session);
187, the long average over one session fewer (comp_001, a mutant of the reference: the world whose answer
turns at the long window's edge), all wrong; 188-190, right tools in their own code (calc_001's RSI seeded
with a mean over the last closes, comp_002's volume trend from the sign of a correlation, fetch_001's
fiscal year-end month from the month-end nearest each annual column). Lines 191-192 are from the
twenty-sixth blind batches, both wrong: 191, a quarter's end built as the 30th of month 3q then the month's
end (fetch_001: right for Q1 and Q4, raises for Q2 and Q3, now probed each); 192, KDJ's K and D seeded at
the first RSV by ``ewm(adjust=False)`` (calc_006: the short-run probe, a dozen sessions past the range).
Lines 193-196 are from the twenty-sixth and twenty-seventh, all wrong: 193, a quote that takes the book's
midpoint while the market is open (fetch_002: the midsession world); 194, a latest close refused as a bad
print beyond a 15 % move (fetch_005: the gap world); 195, quarterly columns kept only with half their cells
filled (fetch_006: the seed world's newest reported quarter, most of its cells empty); 196, dividends above
three times the median dropped as feed errors (fetch_007: the as_of world's special dividend). Lines 197-198
are from the twenty-ninth, both wrong: 197, an RSI whose data check lets ``days == window`` through and
answers from one change fewer than the window (calc_001: the probe one below the floor); 198, a fiscal
year ending in January to March named by the calendar year it starts in (fetch_001: Apple's year ends in
March in every seed world). Line 199 is from the same batch: a hand-written MACD whose EMAs start at zero
(calc_004: forgotten after years of history, still off on the pinned listing world's stock listed months
ago). Lines 200-201 are from the thirtieth, both wrong: 200, an RSI rounded to two decimals before the
strict comparison (comp_001: the threshold probes sit 0.002 % from the level); 201, a latest close that
drops bars whose High equals their Low as feed placeholders (fetch_005: the gap world's single prints).
They are
judged as the gate judges a final tool (``scripts/judge_replies.py``), in five seeds' probes and hidden
worlds.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.judge_scripts import SHARED_CHUNKS, SHARED_SEEDS, group, run_script, seed_range

ROOT = Path(__file__).resolve().parents[2]
REPLIES = Path(__file__).with_name("labelled_replies.jsonl")
LINE = re.compile(r"^seed (\d+) #(\d+) (\S+) \[.*\]: (FALSE PASS|FALSE FAIL): ")

#: Wrong replies the judge does not catch yet, by line, with the reason: each needs data the
#: bundled snapshot and its hidden worlds never hold. A reply missing from this table that passes
#: is a regression of the judge; one in it that fails is progress (remove it from the table).
#: (Lines 72 and 95, MACD from one year of closes, are caught since the long world's probe; line 122,
#: statement columns matched within 45 days, since the seed world's company whose fiscal quarters end
#: in January, April, July and October, where the readings part and the judge asks.)
KNOWN_FALSE_PASSES: dict[int, str] = {}


@pytest.mark.slow
@pytest.mark.timeout(1800)
# in this process, in the seeds the 20-seed sweep of the reference tools judges in too: one worker builds
# each seed's probes and worlds once for both (tests/support/judge_scripts.py); in two chunks of seeds,
# each with the sweep's chunk of the same seeds in one xdist group, so that the two workers share them
# (one test of five seeds was the suite's longest after the sweep, pinned to one worker)
@pytest.mark.parametrize("seeds", [pytest.param(s, marks=pytest.mark.xdist_group(group(s))) for s in SHARED_CHUNKS])
def test_wrong_replies_fail_and_right_ones_pass(seeds: str, judge_seed_contexts: Any) -> None:
    code, stdout = run_script("judge_replies", [str(REPLIES), "--seeds", seeds, "--in-process"], judge_seed_contexts)
    assert code in (0, 1), stdout[-2000:]
    found = [m.groups() for m in map(LINE.match, stdout.splitlines()) if m]
    false_fails = [f for f in found if f[3] == "FALSE FAIL"]
    assert not false_fails, false_fails
    unexpected = [f for f in found if f[3] == "FALSE PASS" and int(f[1]) not in KNOWN_FALSE_PASSES]
    assert not unexpected, unexpected
    summary = stdout.splitlines()[-1]
    assert summary.startswith(f"201 replies x {len(seed_range(seeds))} seed(s)"), summary


def test_the_chunks_judge_the_labelled_replies_in_five_seeds_each_once() -> None:
    """Issue 17: the corpus is judged in at least five world seeds; the chunks together are seeds 1-5."""
    judged = [seed for chunk in SHARED_CHUNKS for seed in seed_range(chunk)]
    assert sorted(judged) == list(SHARED_SEEDS) == [1, 2, 3, 4, 5]
