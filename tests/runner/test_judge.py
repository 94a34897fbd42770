"""runner.judging.compare: strict verdicts on structured values.

The first class replays every false pass of the judge this project replaces and proves each
one is now a fail; the rest pin the tolerance, convention and error rules.
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest

from finevo.errors import (
    AgentFailure,
    CassetteMissError,
    ContractViolation,
    DeadlineExceeded,
    FinevoError,
    LLMRateLimitError,
    PolicyViolation,
)
from finevo.outcome import Outcome
from runner.inputs.tasks import Task
from runner.judging.compare import JUDGE_VERSION, Judgement, compare, judge_outcome, judge_value

# Expected values shaped like the oracle's, chosen for these tests (not copied from any run).
NET_INCOME = {"calendar_quarter": 24_160_000_000.0, "fiscal_quarter": 29_998_000_000.0}
REVENUE_2023 = {"fiscal_year_2023": 307_394_000_000.0}
REVENUE_2022 = 282_836_000_000.0
MSFT_QUOTE = 421.5
DRAWDOWN = {"negative_fraction": -0.1532, "positive_fraction": 0.1532}
SIGNAL_FALSE = {"wilder_rsi": False}
SIGNAL_TRUE = {"wilder_rsi": True}
BANDS = {"sma20_2std": {"upper": 198.2, "middle": 190.0, "lower": 181.8},
         "sma20_2std+sample_std": {"upper": 198.4, "middle": 190.0, "lower": 181.6}}
DIVIDENDS_ASC = [{"date": "2022-02-04", "amount": 0.22}, {"date": "2022-05-06", "amount": 0.23},
                 {"date": "2022-08-05", "amount": 0.23}, {"date": "2022-11-04", "amount": 0.23}]
DIVIDENDS = {"ex_date_within_3_years": DIVIDENDS_ASC, "ex_date_within_3_years+newest_first": DIVIDENDS_ASC[::-1]}
MA = {"sma5_last_20_sessions": [400.0 + i * 0.5 for i in range(20)]}


def _fails(judgement: Judgement) -> bool:
    return judgement.state == "fail" and judgement.convention is None and bool(judgement.reason)


class TestOldFalsePassesNowFail:
    @pytest.mark.parametrize("value", [1.0, 0.0, 1, 0, "False", "True"])
    def test_float_or_text_for_a_boolean_task(self, tasks: dict[str, Task], value: Any) -> None:
        assert _fails(judge_value(tasks["comp_001"], value, SIGNAL_FALSE))
        assert _fails(judge_value(tasks["comp_001"], value, SIGNAL_TRUE))

    @pytest.mark.parametrize("value", [
        "The net income was 24160000000.0",
        "24160000000.0",
        "Net income: $24.16B (2023 Q1)",
        ["24160000000.0"],
        {"net_income": 24_160_000_000.0},
    ])
    def test_text_containing_the_right_digits_for_a_numeric_task(self, tasks: dict[str, Task], value: Any) -> None:
        assert _fails(judge_value(tasks["fetch_001"], value, NET_INCOME))

    def test_right_number_only_in_stdout(self, tasks: dict[str, Task]) -> None:
        outcome = Outcome(task_id="fetch_001", value=None, stage="done", stdout="24160000000.0\n")
        assert _fails(judge_outcome(tasks["fetch_001"], outcome, NET_INCOME))

    def test_dict_of_none_values(self, tasks: dict[str, Task]) -> None:
        judgement = judge_value(tasks["calc_003"], {"upper": None, "middle": None, "lower": None}, BANDS)
        assert _fails(judgement)
        assert "None" in judgement.reason

    def test_max_drawdown_that_is_really_the_msft_quote(self, tasks: dict[str, Task]) -> None:
        judgement = judge_value(tasks["calc_007"], MSFT_QUOTE, DRAWDOWN)
        assert _fails(judgement)
        assert "negative_fraction" in judgement.reason and "positive_fraction" in judgement.reason

    def test_previous_years_revenue_constant(self, tasks: dict[str, Task]) -> None:
        assert _fails(judge_value(tasks["fetch_003"], REVENUE_2022, REVENUE_2023))

    def test_random_dividend_history(self, tasks: dict[str, Task]) -> None:
        rng = random.Random(7)
        fake = [{"date": rec["date"], "amount": round(rng.uniform(0.1, 1.0), 4)} for rec in DIVIDENDS_ASC]
        assert _fails(judge_value(tasks["fetch_007"], fake, DIVIDENDS))
        fake_dates = [{"date": f"2023-0{i + 1}-15", "amount": rec["amount"]} for i, rec in enumerate(DIVIDENDS_ASC)]
        assert _fails(judge_value(tasks["fetch_007"], fake_dates, DIVIDENDS))
        numbers_only = [rng.uniform(0.1, 1.0) for _ in DIVIDENDS_ASC]
        assert _fails(judge_value(tasks["fetch_007"], numbers_only, DIVIDENDS))

    @pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float64("nan")])
    def test_nan_and_inf(self, tasks: dict[str, Task], value: float) -> None:
        assert _fails(judge_value(tasks["calc_007"], value, DRAWDOWN))
        assert _fails(judge_value(tasks["calc_003"], {"upper": value, "middle": 190.0, "lower": 181.8}, BANDS))

    def test_int_beyond_float_range_fails_instead_of_crashing(self, tasks: dict[str, Task]) -> None:
        assert _fails(judge_value(tasks["calc_007"], 10**400, DRAWDOWN))
        assert _fails(judge_value(tasks["calc_002"], [10**400] * 20, MA))

    @pytest.mark.parametrize("value", [True, False, np.bool_(True)])
    def test_bool_for_a_numeric_task(self, tasks: dict[str, Task], value: Any) -> None:
        # 1 and 0 as expected numbers: a bool must not pass as one
        assert _fails(judge_value(tasks["calc_008"], value, {"pearson_daily_returns": 1.0,
                                                             "pearson_daily_returns+n_returns": 0.0,
                                                             "pearson_daily_returns+log_returns": 1.0}))

    def test_missing_key(self, tasks: dict[str, Task]) -> None:
        judgement = judge_value(tasks["calc_003"], {"upper": 198.2, "middle": 190.0}, BANDS)
        assert _fails(judgement) and "'lower'" in judgement.reason

    def test_extra_long_and_short_lists(self, tasks: dict[str, Task]) -> None:
        values = MA["sma5_last_20_sessions"]
        assert _fails(judge_value(tasks["calc_002"], [*values, 410.0], MA))
        assert _fails(judge_value(tasks["calc_002"], [390.0, *values], MA))
        assert _fails(judge_value(tasks["calc_002"], values[:-1], MA))
        assert _fails(judge_value(tasks["calc_002"], values[::-1], MA))


class TestPasses:
    def test_numbers_within_tolerance_of_any_convention(self, tasks: dict[str, Task]) -> None:
        task = tasks["fetch_001"]
        for name, expected in NET_INCOME.items():
            judgement = judge_value(task, np.float64(expected), NET_INCOME)
            assert judgement.state == "pass" and judgement.convention == name
        tol = task.tolerance
        margin = tol.abs + tol.rel * NET_INCOME["calendar_quarter"]
        assert judge_value(task, NET_INCOME["calendar_quarter"] + 0.9 * margin, NET_INCOME).passed
        assert not judge_value(task, NET_INCOME["calendar_quarter"] + 1.1 * margin, NET_INCOME).passed
        assert judge_value(task, 24_160_000_000, NET_INCOME).passed  # an int is a number

    def test_real_bools_and_numpy_bools(self, tasks: dict[str, Task]) -> None:
        assert judge_value(tasks["comp_001"], False, SIGNAL_FALSE).passed
        assert judge_value(tasks["comp_001"], np.bool_(True), SIGNAL_TRUE).passed
        assert not judge_value(tasks["comp_001"], True, SIGNAL_FALSE).passed

    def test_dict_matches_one_convention_entirely(self, tasks: dict[str, Task]) -> None:
        task = tasks["calc_003"]
        sample = dict(BANDS["sma20_2std+sample_std"], width=16.8)  # extra keys are fine
        judgement = judge_value(task, sample, BANDS)
        assert judgement.passed and judgement.convention == "sma20_2std+sample_std"
        mixed = {"upper": 198.2, "middle": 190.0, "lower": 181.6}  # upper of one, lower of the other
        assert _fails(judge_value(task, mixed, BANDS))

    def test_dividend_records(self, tasks: dict[str, Task]) -> None:
        task = tasks["fetch_007"]
        as_timestamps = [{"date": f"{r['date']}T00:00:00-05:00", "amount": r["amount"]} for r in DIVIDENDS_ASC]
        assert judge_value(task, as_timestamps, DIVIDENDS).convention == "ex_date_within_3_years"
        assert judge_value(task, DIVIDENDS_ASC[::-1], DIVIDENDS).convention == "ex_date_within_3_years+newest_first"
        shuffled = [DIVIDENDS_ASC[i] for i in (1, 0, 2, 3)]
        assert _fails(judge_value(task, shuffled, DIVIDENDS))
        epoch_dates = [{"date": 1643932800, "amount": r["amount"]} for r in DIVIDENDS_ASC]
        assert _fails(judge_value(task, epoch_dates, DIVIDENDS))

    def test_numpy_array_list(self, tasks: dict[str, Task]) -> None:
        assert judge_value(tasks["calc_002"], np.array(MA["sma5_last_20_sessions"]), MA).passed


class TestOutcomes:
    @pytest.mark.parametrize("error", [LLMRateLimitError("429"), CassetteMissError("no entry"),
                                       DeadlineExceeded("too slow", stage="synthesis")])
    def test_external_errors_are_errors(self, tasks: dict[str, Task], error: FinevoError) -> None:
        outcome = Outcome(task_id="fetch_001", value=NET_INCOME["calendar_quarter"], error=error)
        judgement = judge_outcome(tasks["fetch_001"], outcome, NET_INCOME)
        assert judgement.state == "error" and error.code in judgement.reason

    @pytest.mark.parametrize("error", [AgentFailure("bad"), ContractViolation("shape"),
                                       PolicyViolation("import os"), FinevoError("other")])
    def test_other_errors_are_fails_even_with_a_right_value(self, tasks: dict[str, Task], error: FinevoError) -> None:
        outcome = Outcome(task_id="fetch_001", value=NET_INCOME["calendar_quarter"], error=error)
        judgement = judge_outcome(tasks["fetch_001"], outcome, NET_INCOME)
        assert judgement.state == "fail" and error.code in judgement.reason

    def test_blocked_tool_on_a_benchmark_task_fails(self, tasks: dict[str, Task]) -> None:
        outcome = Outcome(task_id="calc_007", value=-0.1532, tool_source="blocked")
        assert judge_outcome(tasks["calc_007"], outcome, DRAWDOWN).state == "fail"

    def test_right_value_passes_and_reused_wrong_tool_fails(self, tasks: dict[str, Task]) -> None:
        ok = Outcome(task_id="calc_007", value=0.1532, tool_source="reused", stage="done")
        judgement = judge_outcome(tasks["calc_007"], ok, DRAWDOWN)
        assert judgement.passed and judgement.convention == "positive_fraction"
        wrong = Outcome(task_id="calc_007", value=MSFT_QUOTE, tool_source="reused", stage="done")
        assert judge_outcome(tasks["calc_007"], wrong, DRAWDOWN).state == "fail"

    def test_missing_oracle_value_is_an_error_not_a_fail(self, tasks: dict[str, Task]) -> None:
        outcome = Outcome(task_id="calc_007", value=-0.1532, stage="done")
        assert judge_outcome(tasks["calc_007"], outcome, {}).state == "error"
        assert judge_value(tasks["calc_007"], -0.1532, {"made_up": -0.1532}).state == "error"


def test_compare_treats_an_oracle_none_as_unmatchable() -> None:
    from runner.inputs.tasks import Tolerance

    assert compare(None, None, Tolerance()) is not None
    assert compare(1.0, 1.0 + 1e-9, Tolerance(rel=1e-6, abs=0.0)) is None


def test_judge_version_is_recorded() -> None:
    assert isinstance(JUDGE_VERSION, str) and JUDGE_VERSION
    assert Judgement("pass", "ok", "c").to_dict() == {"state": "pass", "reason": "ok", "convention": "c"}


class TestOnTheBundledSnapshot:
    """The same false passes with values taken from the bundled snapshot through the oracle."""

    @pytest.fixture(scope="class")
    def snapshot(self) -> Any:
        from finevo.market.snapshot import load_snapshot

        return load_snapshot()

    def test_msft_quote_reused_as_max_drawdown(self, tasks: dict[str, Task], snapshot: Any) -> None:
        from runner.judging.oracle import compute, expected_values

        task = tasks["calc_007"]
        quote = compute("latest_quote", snapshot, {"symbol": "MSFT"})
        assert _fails(judge_outcome(task, Outcome(task_id=task.id, value=quote, tool_source="reused", stage="done"),
                                    expected_values(task, snapshot)))

    def test_previous_year_revenue_for_googl_2023(self, tasks: dict[str, Task], snapshot: Any) -> None:
        from runner.judging.oracle import compute, expected_values

        task = tasks["fetch_003"]
        expected = expected_values(task, snapshot)
        revenue_2022 = compute("total_revenue", snapshot, {"symbol": "GOOGL", "year": 2022})
        revenue_2023 = compute("total_revenue", snapshot, {"symbol": "GOOGL", "year": 2023})
        assert revenue_2022 != revenue_2023
        assert _fails(judge_value(task, revenue_2022, expected))
        assert judge_value(task, revenue_2023, expected).passed

    def test_random_amounts_on_real_dividend_dates(self, tasks: dict[str, Task], snapshot: Any) -> None:
        from runner.judging.oracle import expected_values

        task = tasks["fetch_007"]
        expected = expected_values(task, snapshot)
        rng = random.Random(3)
        fake = [{"date": r["date"], "amount": rng.uniform(0.1, 1.0)} for r in expected["ex_date_within_3_years"]]
        assert _fails(judge_value(task, fake, expected))
        assert judge_value(task, expected["ex_date_within_3_years"], expected).passed


# --------------------------------------------------------------------------- judged calls
class TestJudgedCalls:
    """Every judged call is one sandbox run of the tool's own function with plain arguments, in an
    order drawn anew for every judgement (a tool cannot tell its first call, nor a probe, apart)."""

    CODE = "def ma_cross_rsi_signal(**kwargs):\n    return False\n"

    @staticmethod
    def _expected(task: Task, value: bool) -> dict[str, Any]:
        return {task.conventions[0].name: value}

    def _judge(self, task: Task, answer: Any) -> tuple[Any, list[tuple[str, str, dict[str, Any]]]]:
        from finevo.sandbox.api import ExecutionResult
        from runner.judging.grade import Reruns, judge_task

        calls: list[tuple[str, str, dict[str, Any]]] = []

        def run_tool(code: str, entry: str, args: dict[str, Any], snapshot_dir: str | None = None) -> ExecutionResult:
            calls.append((code, entry, dict(args)))
            return ExecutionResult(status="ok", value=answer(len(calls), args))

        outcome = Outcome(task_id=task.id, value=False, tool_code=self.CODE, stage="done")
        probe_expected = [self._expected(task, False) for _ in task.probes]
        verdict = judge_task(task, outcome, self._expected(task, False), 0.0,
                             Reruns(run_tool, probe_expected=probe_expected))
        return verdict, calls

    def test_each_call_is_its_own_run_of_the_tools_function_in_a_fresh_order(self, tasks: dict[str, Task]) -> None:
        task = tasks["comp_001"]
        orders = set()
        for _ in range(6):
            verdict, calls = self._judge(task, lambda n, args: False)
            assert verdict.state == "pass", verdict.reason
            # the tool's own code and function, never a wrapper; one call per argument set
            assert all(code == self.CODE and entry == "ma_cross_rsi_signal" for code, entry, _ in calls)
            wanted = [dict(task.intent.args)] + [{**task.intent.args, **p.args} for p in task.probes]
            assert sorted(map(repr, (a for _, _, a in calls))) == sorted(map(repr, wanted))
            orders.add(tuple(repr(a) for _, _, a in calls))
        assert len(orders) > 1  # 5 calls: the same order six times in a row is a 1-in-120**5 event

    def test_a_tool_whose_rerun_of_the_main_arguments_differs_fails(self, tasks: dict[str, Task]) -> None:
        task = tasks["comp_001"].model_copy(update={"probes": ()})
        verdict, calls = self._judge(task, lambda n, args: True)
        assert len(calls) == 1 and verdict.state == "fail"
        assert "re-run of the task's own arguments" in verdict.reason


# --------------------------------------------------------------------------- parameters a tool declares
class TestUnreadParameters:
    """A parameter a tool declares is a promise to the later tasks the registry hands it to: one
    whose body never reads it (a default hard-coded in the formula) fails, whatever its value here."""

    VOLATILITY = (
        "import math\nimport yfinance as yf\n\n"
        "def volatility(symbol: str, window: int = 60, {extra}) -> float:\n"
        "    closes = yf.Ticker(symbol).history(period='max')['Close']\n"
        "    daily = float(closes.pct_change().dropna().iloc[-window:].std())\n"
        "    return daily * math.sqrt({factor})\n"
    )

    def _verdict(self, task: Task, code: str) -> Any:
        from runner.judging.grade import judge_task

        expected = {task.conventions[0].name: 0.5}
        return judge_task(task, Outcome(task_id=task.id, value=0.5, tool_code=code, stage="done"), expected, 0.0)

    @pytest.mark.parametrize("extra", ["trading_days: int = 252", "*, days_per_year=252"])
    def test_a_parameter_declared_and_never_read_fails(self, tasks: dict[str, Task], extra: str) -> None:
        verdict = self._verdict(tasks["calc_005"], self.VOLATILITY.format(extra=extra, factor=252))
        name = extra.lstrip("*, ").split(":")[0].split("=")[0].strip()
        assert verdict.state == "fail"
        assert f"declares {name} (default 252) but never reads it" in verdict.reason

    def test_a_name_rebound_before_it_is_read_is_not_read(self, tasks: dict[str, Task]) -> None:
        code = self.VOLATILITY.format(extra="trading_days: int = 252", factor="trading_days").replace(
            "    closes =", "    trading_days = 252\n    closes =")
        assert self._verdict(tasks["calc_005"], code).state == "fail"

    @pytest.mark.parametrize("extra", ["trading_days: int = 252", "_scale: int = 252", "**options"])
    def test_a_parameter_read_private_or_a_catch_all_passes(self, tasks: dict[str, Task], extra: str) -> None:
        factor = "trading_days" if extra.startswith("trading_days") else 252
        verdict = self._verdict(tasks["calc_005"], self.VOLATILITY.format(extra=extra, factor=factor))
        assert verdict.state == "pass", verdict.reason

    def test_the_tasks_own_arguments_are_left_to_the_probes(self, tasks: dict[str, Task]) -> None:
        # an accepted reading ignores ``days`` (Wilder's RSI over the whole history)
        task = tasks["calc_001"]
        code = ("import yfinance as yf\n\ndef rsi(symbol: str = 'AAPL', days: int = 14) -> float:\n"
                "    return float(len(yf.Ticker(symbol).history(period='max')))\n")
        assert self._verdict(task, code).state == "pass"
        assert self._verdict(task, code.replace("days: int = 14", "days: int = 14, smoothing: str = 'wilder'")
                             ).state == "fail"

    def test_a_name_shadowed_or_handed_to_a_helper_that_ignores_it_is_not_read(self, tasks: dict[str, Task]) -> None:
        base = self.VOLATILITY.format(extra="trading_days: int = 252", factor=252)
        shadowed = base.replace("    return daily", "    scale = [trading_days for trading_days in (252,)][0]\n"
                                                   "    return scale / 252 * daily")
        assert self._verdict(tasks["calc_005"], shadowed).state == "fail"
        helper = ("import math\n\ndef _annualise(daily, **options):\n    return daily * math.sqrt(252)\n\n"
                  + base.replace("return daily * math.sqrt(252)", "return _annualise(daily, days=trading_days)"))
        assert self._verdict(tasks["calc_005"], helper).state == "fail"
        reading = helper.replace("**options):\n    return daily * math.sqrt(252)",
                                 "days=252):\n    return daily * math.sqrt(days)")
        verdict = self._verdict(tasks["calc_005"], reading)
        assert verdict.state == "pass", verdict.reason

    def test_the_measures_own_parameters_are_left_to_the_probes(self, tasks: dict[str, Task]) -> None:
        # a daily volatility rightly ignores its annualisation; optional_probes judge it against each reading
        code = self.VOLATILITY.format(extra="periods_per_year: int = 252", factor=1)
        verdict = self._verdict(tasks["calc_005"], code)
        assert verdict.state == "pass", verdict.reason

    def test_a_measure_parameter_no_probe_moves_is_held_to_the_rule(self, tasks: dict[str, Task]) -> None:
        task = tasks["calc_007"]  # max_drawdown: ``sign`` is a parameter of the measure, a string
        code = ("import yfinance as yf\n\ndef max_drawdown(symbol: str, days: int = 250, sign: str = 'negative'):\n"
                "    closes = yf.Ticker(symbol).history(period='max')['Close'].tail(days)\n"
                "    return float((closes / closes.cummax() - 1.0).min())\n")
        verdict = self._verdict(task, code)
        assert verdict.state == "fail" and "declares sign (default 'negative')" in verdict.reason, verdict.reason

    def test_a_function_reading_its_locals_is_not_judged_by_the_rule(self, tasks: dict[str, Task]) -> None:
        code = self.VOLATILITY.format(extra="trading_days: int = 252", factor="locals()['trading_days']")
        assert self._verdict(tasks["calc_005"], code).state == "pass"


class TestCarriedState:
    """Every judged call is a process of its own, so no call shows what a tool keeps across calls: the
    source does. Market data kept from one call to the next fails; state kept for one call does not."""

    BODY = ("    closes = {read}\n"
            "    return float(closes.pct_change().dropna().iloc[-window:].std())\n")
    READ = "yf.Ticker(symbol).history(period='max')['Close']"

    def _state(self, tasks: dict[str, Task], code: str) -> tuple[str, str]:
        from runner.judging.grade import judge_task

        task = tasks["calc_005"]
        expected = {task.conventions[0].name: 0.5}
        verdict = judge_task(task, Outcome(task_id=task.id, value=0.5, tool_code=code, stage="done"), expected, 0.0)
        return verdict.state, verdict.reason

    @pytest.mark.parametrize(("code", "words"), [
        ("import yfinance as yf\n_SEEN = {}\n\ndef volatility(symbol, window=60):\n"
         "    if symbol not in _SEEN:\n        _SEEN[symbol] = {read}\n    closes = _SEEN[symbol]\n"
         "    return float(closes.pct_change().dropna().iloc[-window:].std())\n",
         "module-level _SEEN written in volatility (line 6)"),
        ("import functools\nimport yfinance as yf\n\n@functools.lru_cache(maxsize=None)\n"
         "def _closes(symbol):\n    return {read}\n\ndef volatility(symbol, window=60):\n"
         "    return float(_closes(symbol).pct_change().dropna().iloc[-window:].std())\n",
         "_closes (line 5) is memoised with functools.lru_cache"),
        ("from functools import cache\nfrom yfinance import Ticker\n\n@cache\ndef _bars(symbol):\n"
         "    return Ticker(symbol).history(period='max')\n\ndef volatility(symbol, window=60):\n"
         "    return float(_bars(symbol)['Close'].pct_change().dropna().iloc[-window:].std())\n",
         "_bars (line 5) is memoised with cache"),
        ("import yfinance as yf\n_LAST = None\n\ndef volatility(symbol, window=60):\n    global _LAST\n"
         "    if _LAST is None:\n        _LAST = {read}\n"
         "    return float(_LAST.pct_change().dropna().iloc[-window:].std())\n",
         "global _LAST rebound in volatility (line 7)"),
        ("import yfinance as yf\n\ndef volatility(symbol, window=60, memo={}):\n"
         "    closes = memo.setdefault(symbol, {read})\n"
         "    return float(closes.pct_change().dropna().iloc[-window:].std())\n",
         "volatility's default argument memo filled (line 4)"),
        ("import yfinance as yf\n\nclass _Store:\n    frames: dict = {}\n\n    def get(self, symbol):\n"
         "        if symbol not in self.frames:\n            self.frames[symbol] = {read}\n"
         "        return self.frames[symbol]\n\ndef volatility(symbol, window=60):\n"
         "    return float(_Store().get(symbol).pct_change().dropna().iloc[-window:].std())\n",
         "class-level frames, shared by every instance, written in get (line 8)"),
        ("import yfinance as yf\n_BOOK = {}\n\ndef _fetch(symbol):\n    return {read}\n\n"
         "def volatility(symbol, window=60):\n    closes = _BOOK.get(symbol)\n    if closes is None:\n"
         "        closes = _fetch(symbol)\n        _BOOK.update({symbol: closes})\n"
         "    return float(closes.pct_change().dropna().iloc[-window:].std())\n",
         "module-level _BOOK written in volatility (line 11)"),
        ("import yfinance as yf\n_SPY = yf.Ticker('SPY').history(period='max')\n\n"
         "def volatility(symbol, window=60):\n    closes = {read}\n"
         "    return float(closes.pct_change().dropna().iloc[-window:].std())\n",
         "market data read at import (line 2)"),
        # a local name for the module's dict
        ("import yfinance as yf\n_KEPT = {}\n\ndef volatility(symbol, window=60):\n    kept = _KEPT\n"
         "    if symbol not in kept:\n        kept[symbol] = {read}\n"
         "    return float(kept[symbol].pct_change().dropna().iloc[-window:].std())\n",
         "module-level _KEPT written through kept in volatility (line 7)"),
        # lru_cache under another name, applied at import
        ("from functools import lru_cache as _remember\nimport yfinance as yf\n\ndef _fetch(symbol):\n"
         "    return {read}\n\n_closes = _remember(maxsize=None)(_fetch)\n\n"
         "def volatility(symbol, window=60):\n"
         "    return float(_closes(symbol).pct_change().dropna().iloc[-window:].std())\n",
         "_fetch memoised at import with _remember (line 7)"),
        # a hand-written memo: a closure made at import around a reader
        ("import yfinance as yf\n\ndef _memo(fn):\n    seen = {}\n    def inner(key):\n"
         "        if key not in seen:\n            seen[key] = fn(key)\n        return seen[key]\n    return inner\n\n"
         "def _fetch(symbol):\n    return {read}\n\n_closes = _memo(_fetch)\n\n"
         "def volatility(symbol, window=60):\n"
         "    return float(_closes(symbol).pct_change().dropna().iloc[-window:].std())\n",
         "a closure made at import by _memo keeps state in inner (line 14)"),
        # a loader made once at import, its own attributes filled by a reading method
        ("import yfinance as yf\n\nclass _Loader:\n    def __init__(self):\n        self.frames = {}\n\n"
         "    def closes(self, symbol):\n        if symbol not in self.frames:\n"
         "            self.frames[symbol] = {read}\n        return self.frames[symbol]\n\n_LOADER = _Loader()\n\n"
         "def volatility(symbol, window=60):\n"
         "    return float(_LOADER.closes(symbol).pct_change().dropna().iloc[-window:].std())\n",
         "frames of the instance made at import written in closes (line 9)"),
    ])
    def test_market_data_kept_across_calls_fails(self, tasks: dict[str, Task], code: str, words: str) -> None:
        state, reason = self._state(tasks, code.replace("{read}", self.READ))
        assert state == "fail"
        assert f"keeps market data from one call to the next ({words})" in reason, reason

    @pytest.mark.parametrize("code", [
        # a dict kept for one call
        "import yfinance as yf\n\ndef volatility(symbol, window=60):\n    seen = {}\n"
        "    seen[symbol] = {read}\n    return float(seen[symbol].pct_change().dropna().iloc[-window:].std())\n",
        # a memo of arithmetic that reads no market data, and a read-only module-level table
        "import functools\nimport math\nimport yfinance as yf\n_SCALE = {{'daily': 1}}\n\n"
        "@functools.lru_cache(maxsize=None)\ndef _root(n):\n    return math.sqrt(n)\n\n"
        "def volatility(symbol, window=60):\n    closes = {read}\n"
        "    return _SCALE['daily'] * float(closes.pct_change().dropna().iloc[-window:].std()) * _root(1)\n",
        # an instance built for the call, its cache set in __init__
        "import yfinance as yf\n\nclass _Reader:\n    def __init__(self):\n        self.frames = {}\n\n"
        "    def get(self, symbol):\n        self.frames[symbol] = {read}\n        return self.frames[symbol]\n\n"
        "def volatility(symbol, window=60):\n"
        "    return float(_Reader().get(symbol).pct_change().dropna().iloc[-window:].std())\n",
        # a factory made at import whose closure keeps only its argument
        "import yfinance as yf\n\ndef _reader(column):\n    def read(symbol):\n"
        "        return yf.Ticker(symbol).history(period='max')[column]\n    return read\n\n"
        "_closes = _reader('Close')\n\ndef volatility(symbol, window=60):\n"
        "    return float(_closes(symbol).pct_change().dropna().iloc[-window:].std())\n",
        # a module-level call made for its effect keeps nothing
        "import yfinance as yf\nyf.pdr_override()\n\ndef volatility(symbol, window=60):\n" + BODY,
        # a demonstration under __main__
        "import yfinance as yf\n\ndef volatility(symbol, window=60):\n" + BODY +
        "\nif __name__ == '__main__':\n    print(volatility('AAPL'), yf.Ticker('AAPL').info)\n",
    ])
    def test_state_kept_for_one_call_or_free_of_market_data_passes(self, tasks: dict[str, Task], code: str) -> None:
        state, reason = self._state(tasks, code.replace("{read}", self.READ))
        assert state == "pass", reason
