"""runner.judging.oracle: reference values, cross-checked against the independent `ta` library and
against hand computations on small frames built here."""

from __future__ import annotations

import math
from datetime import date
from typing import Any

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from ta.momentum import RSIIndicator, StochasticOscillator
from ta.trend import MACD, SMAIndicator
from ta.volatility import BollingerBands

from finevo.errors import InputError
from runner.inputs.tasks import OracleSpec, Task
from runner.judging import oracle
from runner.judging.oracle import compute, expected_values, rsi_series

AS_OF = date(2024, 12, 31)
TZ = "America/New_York"


def _frame(closes: np.ndarray, volume: np.ndarray | None = None, seed: int = 0) -> pd.DataFrame:
    n = len(closes)
    index = pd.bdate_range(end=pd.Timestamp(AS_OF), periods=n, tz=TZ, name="Date")
    rng = np.random.default_rng(seed)
    spread = np.abs(rng.normal(0.0, 0.01, n)) * closes
    if volume is None:
        volume = rng.integers(1_000_000, 5_000_000, n)
    return pd.DataFrame({
        "Open": closes * (1 + rng.normal(0, 0.003, n)),
        "High": closes + spread + 0.01,
        "Low": closes - spread - 0.01,
        "Close": closes.astype(float),
        "Volume": np.asarray(volume, dtype="int64"),
        "Dividends": 0.0,
        "Stock Splits": 0.0,
    }, index=index)


def _walk(n: int, seed: int, start: float = 100.0, vol: float = 0.02) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return start * np.exp(np.cumsum(rng.normal(0.0003, vol, n)))


class FakeProvider:
    """A MarketProvider over frames the test controls."""

    def __init__(self, frames: dict[str, pd.DataFrame], dividends: dict[str, pd.Series] | None = None,
                 statements: dict[tuple[str, str], pd.DataFrame] | None = None,
                 fast: dict[str, dict[str, Any]] | None = None, info: dict[str, dict[str, Any]] | None = None):
        self.frames, self.divs = frames, dividends or {}
        self.statements, self.fast, self.infos = statements or {}, fast or {}, info or {}

    @property
    def as_of(self) -> date:
        return AS_OF

    def symbols(self) -> list[str]:
        return sorted(self.frames)

    def history(self, symbol: str) -> pd.DataFrame:
        return self.frames[symbol]

    def dividends(self, symbol: str) -> pd.Series:
        return self.divs[symbol]

    def income_stmt(self, symbol: str, freq: str = "yearly") -> pd.DataFrame:
        return self.statements[(symbol, freq)]

    def info(self, symbol: str) -> dict[str, Any]:
        return self.infos[symbol]

    def fast_info(self, symbol: str) -> dict[str, Any]:
        return self.fast[symbol]


@pytest.fixture(scope="module")
def market() -> FakeProvider:
    return FakeProvider({
        "AAA": _frame(_walk(400, 1), seed=1),
        "BBB": _frame(_walk(400, 2, start=50.0), seed=2),
        "CCC": _frame(_walk(380, 3, start=10.0, vol=0.04), seed=3),
    })


def _ta_close(provider: FakeProvider, symbol: str) -> pd.Series:
    return provider.history(symbol)["Close"]


# --------------------------------------------------------------------------- indicators vs ta
class TestAgainstTa:
    def test_rsi_full_history_matches_ta(self, market: FakeProvider) -> None:
        value = compute("rsi", market, {"symbol": "AAA", "window": 14, "days": 30, "lookback": "full"})
        expected = RSIIndicator(_ta_close(market, "AAA"), window=14).rsi().iloc[-1]
        assert value == pytest.approx(expected, rel=1e-9)

    def test_rsi_window_uses_only_the_last_closes(self, market: FakeProvider) -> None:
        closes = _ta_close(market, "AAA")
        value = compute("rsi", market, {"symbol": "AAA", "window": 14, "days": 30})
        # ta seeds its smoothing with a zero change at the first row; from the 2nd close on it is
        # exactly Wilder's ewm, so feed it the window with that first change removed.
        window = closes.iloc[-30:]
        expected = RSIIndicator(window.iloc[1:], window=14).rsi().iloc[-1]
        assert value != pytest.approx(RSIIndicator(closes, window=14).rsi().iloc[-1], rel=1e-6)
        manual = rsi_series(window, 14).iloc[-1]
        assert value == pytest.approx(manual, rel=1e-12)
        assert 0.0 <= value <= 100.0 and not math.isnan(expected)

    def test_sma_list_matches_ta(self, market: FakeProvider) -> None:
        values = compute("moving_average", market, {"symbol": "BBB", "window": 5, "days": 20})
        expected = SMAIndicator(_ta_close(market, "BBB"), window=5).sma_indicator().iloc[-20:].tolist()
        assert len(values) == 20
        assert values == pytest.approx(expected, rel=1e-12)

    @pytest.mark.parametrize("symbol", ["AAA", "CCC"])
    def test_bollinger_population_matches_ta(self, market: FakeProvider, symbol: str) -> None:
        bands = compute("bollinger_bands", market, {"symbol": symbol, "window": 20, "num_std": 2})
        bb = BollingerBands(_ta_close(market, symbol), window=20, window_dev=2)
        assert bands["upper"] == pytest.approx(bb.bollinger_hband().iloc[-1], rel=1e-10)
        assert bands["middle"] == pytest.approx(bb.bollinger_mavg().iloc[-1], rel=1e-10)
        assert bands["lower"] == pytest.approx(bb.bollinger_lband().iloc[-1], rel=1e-10)

    def test_bollinger_sample_std(self, market: FakeProvider) -> None:
        bands = compute("bollinger_bands", market, {"symbol": "AAA", "window": 20, "num_std": 2, "ddof": 1})
        closes = _ta_close(market, "AAA").iloc[-20:].tolist()
        mean = sum(closes) / 20
        std = math.sqrt(sum((c - mean) ** 2 for c in closes) / 19)
        assert bands == pytest.approx({"upper": mean + 2 * std, "middle": mean, "lower": mean - 2 * std}, rel=1e-10)

    def test_macd_matches_ta(self, market: FakeProvider) -> None:
        result = compute("macd", market, {"symbol": "BBB", "fast": 12, "slow": 26, "signal": 9})
        m = MACD(_ta_close(market, "BBB"), window_slow=26, window_fast=12, window_sign=9)
        assert result["macd"] == pytest.approx(m.macd().iloc[-1], rel=1e-9)
        assert result["signal"] == pytest.approx(m.macd_signal().iloc[-1], rel=1e-9)
        assert result["histogram"] == pytest.approx(m.macd_diff().iloc[-1], rel=1e-7, abs=1e-12)

    def test_macd_adjusted_is_the_weighted_average_of_every_close_so_far(self, market: FakeProvider) -> None:
        """``adjust=True`` (pandas' default ``ewm``): each EMA is sum(w^i x[t-i]) / sum(w^i), w = 1 - 2/(span+1),
        computed here by hand over the closes, and the signal line the same over the MACD line."""
        closes = _ta_close(market, "BBB").tolist()[:80]

        def weighted(values: list[float], span: int) -> list[float]:
            w = 1.0 - 2.0 / (span + 1)
            return [sum(w ** (t - i) * values[i] for i in range(t + 1)) / sum(w ** k for k in range(t + 1))
                    for t in range(len(values))]

        line = [f - s for f, s in zip(weighted(closes, 12), weighted(closes, 26), strict=True)]
        signal = weighted(line, 9)[-1]
        short = FakeProvider({"BBB": market.history("BBB").iloc[:80]})
        result = compute("macd", short, {"symbol": "BBB", "fast": 12, "slow": 26, "signal": 9, "adjust": True})
        assert result == pytest.approx({"macd": line[-1], "signal": signal, "histogram": line[-1] - signal}, rel=1e-9)
        recursive = compute("macd", short, {"symbol": "BBB", "fast": 12, "slow": 26, "signal": 9})
        assert abs(recursive["macd"] - result["macd"]) > 1e-6, "80 closes: the two EMAs still part"

    def test_kdj_sma_variant_matches_ta_stochastic(self, market: FakeProvider) -> None:
        h = market.history("CCC")
        result = compute("kdj", market, {"symbol": "CCC", "n": 9, "k_period": 3, "d_period": 3, "smoothing": "sma"})
        so = StochasticOscillator(h["High"], h["Low"], h["Close"], window=9, smooth_window=3)
        k = so.stoch_signal()  # 3-session mean of the raw stochastic (RSV)
        d = k.rolling(3).mean()
        assert result["k"] == pytest.approx(k.iloc[-1], rel=1e-9)
        assert result["d"] == pytest.approx(d.iloc[-1], rel=1e-9)
        assert result["j"] == pytest.approx(3 * k.iloc[-1] - 2 * d.iloc[-1], rel=1e-9)

    def test_kdj_recursive_follows_the_classic_recursion(self, market: FakeProvider) -> None:
        h = market.history("AAA")
        rsv = StochasticOscillator(h["High"], h["Low"], h["Close"], window=9, smooth_window=3).stoch().dropna()
        k = d = 50.0
        for r in rsv:
            k = (2 * k + r) / 3
            d = (2 * d + k) / 3
        result = compute("kdj", market, {"symbol": "AAA", "n": 9, "k_period": 3, "d_period": 3})
        assert result["k"] == pytest.approx(k, rel=1e-9)
        assert result["d"] == pytest.approx(d, rel=1e-9)
        assert result["j"] == pytest.approx(3 * k - 2 * d, rel=1e-9)

    @pytest.mark.parametrize(("returns", "annualise"), [("simple", True), ("log", True), ("simple", False)])
    def test_volatility_matches_numpy(self, market: FakeProvider, returns: str, annualise: bool) -> None:
        c = _ta_close(market, "CCC").to_numpy()[-61:]
        r = np.diff(c) / c[:-1] if returns == "simple" else np.diff(np.log(c))
        expected = np.std(r, ddof=1) * (math.sqrt(252) if annualise else 1.0)
        value = compute("volatility", market,
                        {"symbol": "CCC", "window": 60, "returns": returns, "annualise": annualise})
        assert value == pytest.approx(expected, rel=1e-10)

    def test_correlation_matches_numpy(self, market: FakeProvider) -> None:
        a = _ta_close(market, "AAA").to_numpy()[-30:]
        b = _ta_close(market, "BBB").to_numpy()[-30:]
        expected = np.corrcoef(np.diff(a) / a[:-1], np.diff(b) / b[:-1])[0, 1]
        value = compute("correlation", market, {"symbols": ["AAA", "BBB"], "days": 30})
        assert value == pytest.approx(expected, rel=1e-10)
        a31 = _ta_close(market, "AAA").to_numpy()[-31:]
        b31 = _ta_close(market, "BBB").to_numpy()[-31:]
        by_returns = compute("correlation", market, {"symbols": ["AAA", "BBB"], "days": 30, "count": "returns"})
        expected = np.corrcoef(np.diff(a31) / a31[:-1], np.diff(b31) / b31[:-1])[0, 1]
        assert by_returns == pytest.approx(expected, rel=1e-10)


# --------------------------------------------------------------------------- hand-computed cases
def test_rsi_of_a_rising_series_is_100_and_simple_rsi_by_hand() -> None:
    rising = pd.Series(np.arange(1.0, 40.0))
    assert rsi_series(rising, 14).iloc[-1] == 100.0
    # 14 changes: seven +2 and seven -1 -> avg gain 1, avg loss 0.5, RS 2, RSI 66.67
    changes = [2.0, -1.0] * 7
    closes = pd.Series(np.concatenate([[100.0], 100.0 + np.cumsum(changes)]))
    assert rsi_series(closes, 14, "simple").iloc[-1] == pytest.approx(100 - 100 / 3, rel=1e-12)
    assert math.isnan(rsi_series(closes.iloc[:14], 14, "simple").iloc[-1])


def test_max_drawdown_and_max_close_by_hand() -> None:
    closes = np.array([500.0] * 5 + [100.0, 120.0, 90.0, 110.0, 80.0, 130.0])
    provider = FakeProvider({"X": _frame(closes)})
    assert compute("max_drawdown", provider, {"symbol": "X", "days": 6}) == pytest.approx(80 / 120 - 1)
    positive = compute("max_drawdown", provider, {"symbol": "X", "days": 6, "sign": "positive"})
    assert positive == pytest.approx(1 - 80 / 120)
    assert compute("max_drawdown", provider, {"symbol": "X", "days": 7}) == pytest.approx(80 / 500 - 1)
    assert compute("max_close", provider, {"symbol": "X", "days": 6}) == 130.0
    assert compute("max_close", provider, {"symbol": "X", "days": 7}) == 500.0
    # the last six sessions are 2024-12-24..31; 2024-12-31 minus 7 days = 2024-12-24, minus 8 reaches a 500
    assert compute("max_close", provider, {"symbol": "X", "days": 7, "window_unit": "calendar"}) == 130.0
    assert compute("max_close", provider, {"symbol": "X", "days": 8, "window_unit": "calendar"}) == 500.0
    assert compute("max_close", provider, {"symbol": "X", "days": 14, "window_unit": "calendar"}) == 500.0


def test_portfolio_return_by_hand() -> None:
    provider = FakeProvider({
        "A": _frame(np.array([1.0, 100.0, 110.0, 120.0])),
        "B": _frame(np.array([1.0, 50.0, 40.0, 45.0])),
    })
    hold = compute("portfolio_return", provider, {"symbols": ["A", "B"], "days": 3})
    assert hold == pytest.approx((0.20 + (-0.10)) / 2)
    daily = compute("portfolio_return", provider, {"symbols": ["A", "B"], "days": 3, "rebalance": "daily"})
    assert daily == pytest.approx((1 + (0.10 - 0.20) / 2) * (1 + (120 / 110 - 1 + 45 / 40 - 1) / 2) - 1)


def test_volume_price_divergence_cases() -> None:
    up = np.linspace(100.0, 110.0, 30)
    falling_volume = np.linspace(5e6, 1e6, 30)
    rising_volume = falling_volume[::-1]
    for closes, volume, expected in [(up, falling_volume, True), (up, rising_volume, False),
                                     (up[::-1], falling_volume, False)]:
        provider = FakeProvider({"M": _frame(np.concatenate([[1.0] * 5, closes]),
                                             np.concatenate([[9e9] * 5, volume]))})
        for trend in ("slope", "halves"):
            got = compute("volume_price_divergence", provider, {"symbol": "M", "days": 30, "volume_trend": trend})
            assert got is expected


def test_ma_cross_rsi_signal_is_a_real_bool(market: FakeProvider) -> None:
    params = {"symbol": "AAA", "short_window": 5, "long_window": 20, "rsi_window": 14, "rsi_threshold": 30}
    closes = _ta_close(market, "AAA")
    expected = (closes.iloc[-5:].mean() > closes.iloc[-20:].mean()
                and RSIIndicator(closes, window=14).rsi().iloc[-1] < 30)
    assert compute("ma_cross_rsi_signal", market, params) is bool(expected)
    always = compute("ma_cross_rsi_signal", market, {**params, "rsi_threshold": 101})
    assert always is bool(closes.iloc[-5:].mean() > closes.iloc[-20:].mean())


def test_post_signal_return_by_loop(market: FakeProvider) -> None:
    closes = _ta_close(market, "CCC").tolist()
    rsi = RSIIndicator(_ta_close(market, "CCC"), window=14).rsi().tolist()
    # ta differs from the oracle only in its first rows' seeding; skip those when looping.
    every, cross = [], []
    for t in range(60, len(closes) - 5):
        if rsi[t] > 60:
            every.append(closes[t + 5] / closes[t] - 1)
            if rsi[t - 1] <= 60:
                cross.append(closes[t + 5] / closes[t] - 1)
    assert every and cross
    params = {"symbol": "CCC", "rsi_window": 14, "rsi_threshold": 60, "horizon": 5}
    full = rsi_series(_ta_close(market, "CCC"), 14)
    early = [t for t in range(14, 60) if full.iloc[t] > 60]
    early_every = [closes[t + 5] / closes[t] - 1 for t in early]
    assert compute("post_signal_return", market, params) == pytest.approx(
        sum(every + early_every) / len(every + early_every), rel=1e-9)
    early_cross = [closes[t + 5] / closes[t] - 1 for t in early
                   if t - 1 >= 14 and not full.iloc[t - 1] > 60]
    assert compute("post_signal_return", market, {**params, "signal": "cross"}) == pytest.approx(
        sum(cross + early_cross) / len(cross + early_cross), rel=1e-9)


# --------------------------------------------------------------------------- fundamentals / quotes
@pytest.fixture
def fundamentals() -> FakeProvider:
    ends = [pd.Timestamp(d) for d in ("2024-09-30", "2024-06-30", "2024-03-31", "2023-12-31", "2023-09-30",
                                       "2023-06-30", "2023-03-31", "2022-12-31", "2022-09-30")]
    quarterly = pd.DataFrame([[float(i + 1) * 1e9 for i in range(len(ends))]], index=["Net Income"], columns=ends)
    quarterly.loc["Net Income", pd.Timestamp("2024-09-30")] = np.nan  # not reported yet
    yearly = pd.DataFrame([[3e11, 2.5e11, 2e11]], index=["Total Revenue"],
                          columns=[pd.Timestamp("2024-12-31"), pd.Timestamp("2023-12-31"), pd.Timestamp("2022-12-31")])
    div_index = pd.DatetimeIndex(["2021-11-05", "2022-02-04", "2023-02-10", "2024-11-08"], tz=TZ, name="Date")
    divs = pd.Series([0.22, 0.22, 0.23, 0.25], index=div_index, name="Dividends")
    return FakeProvider({"Q": _frame(np.array([10.0, 11.0, 12.5]))}, dividends={"Q": divs},
                        statements={("Q", "quarterly"): quarterly, ("Q", "yearly"): yearly},
                        fast={"Q": {"lastPrice": 12.4}}, info={"Q": {"regularMarketPrice": 12.3}})


def test_net_income_calendar_fiscal_and_latest(fundamentals: FakeProvider) -> None:
    base = {"symbol": "Q", "year": 2023, "quarter": 1}
    assert compute("net_income", fundamentals, base) == 7e9  # column 2023-03-31
    # The fiscal year is the company's own: its annual statements end in December, so its fiscal
    # Q1 2023 is the calendar one whatever the convention's fallback month says ...
    fiscal = compute("net_income", fundamentals, {**base, "basis": "fiscal", "fiscal_year_end_month": 9})
    assert fiscal == 7e9
    # ... and the fallback month counts when the statements do not say (FY2023 Q1 ends 2022-12-31).
    fundamentals.statements[("Q", "yearly")] = pd.DataFrame()
    assert compute("net_income", fundamentals, {**base, "basis": "fiscal", "fiscal_year_end_month": 9}) == 8e9
    fundamentals.statements[("Q", "yearly")] = pd.DataFrame([[1.0, 1.0]], index=["Total Revenue"],
                                                            columns=[pd.Timestamp("2024-09-30"),
                                                                     pd.Timestamp("2023-09-30")])
    assert compute("net_income", fundamentals, {**base, "basis": "fiscal"}) == 8e9  # September, from the data
    assert compute("net_income", fundamentals, {**base, "quarter": 4}) == 4e9
    assert compute("net_income", fundamentals, {"symbol": "Q"}) == 2e9  # newest *reported* quarter
    with pytest.raises(ValueError, match="no statement period"):
        compute("net_income", fundamentals, {"symbol": "Q", "year": 2021, "quarter": 1})
    with pytest.raises(InputError, match="both year and quarter"):
        compute("net_income", fundamentals, {"symbol": "Q", "year": 2023})


def test_total_revenue(fundamentals: FakeProvider) -> None:
    assert compute("total_revenue", fundamentals, {"symbol": "Q", "year": 2023}) == 2.5e11


def test_dividend_history_window_and_order(fundamentals: FakeProvider) -> None:
    records = compute("dividend_history", fundamentals, {"symbol": "Q", "years": 3})
    assert records == [{"date": "2022-02-04", "amount": 0.22}, {"date": "2023-02-10", "amount": 0.23},
                       {"date": "2024-11-08", "amount": 0.25}]
    newest = compute("dividend_history", fundamentals, {"symbol": "Q", "years": 3, "order": "desc"})
    assert newest == records[::-1]
    assert len(compute("dividend_history", fundamentals, {"symbol": "Q", "years": 1})) == 1


def test_quote_sources(fundamentals: FakeProvider) -> None:
    assert compute("latest_quote", fundamentals, {"symbol": "Q"}) == 12.4
    assert compute("latest_quote", fundamentals, {"symbol": "Q", "source": "info"}) == 12.3
    assert compute("latest_quote", fundamentals, {"symbol": "Q", "source": "history"}) == 12.5
    assert compute("latest_close", fundamentals, {"symbol": "Q"}) == 12.5


# --------------------------------------------------------------------------- expected_values
def _task(**overrides: Any) -> Task:
    data: dict[str, Any] = {
        "id": "calc_099", "category": "calculation", "query": "Calculate X 3-day drawdown",
        "output": {"type": "numeric"},
        "intent": {"indicator": "max_drawdown", "args": {"symbol": "X", "days": 6}},
        "oracle": {"name": "max_drawdown", "params": {"symbol": "X", "days": 6, "sign": "negative"}},
        "conventions": [{"name": "negative", "reason": "r"},
                        {"name": "positive", "params": {"sign": "positive"}, "reason": "r"}],
    }
    data.update(overrides)
    return Task.model_validate(data)


def test_expected_values_one_per_convention_in_order() -> None:
    provider = FakeProvider({"X": _frame(np.array([100.0, 120.0, 90.0, 110.0, 80.0, 130.0]))})
    values = expected_values(_task(), provider)
    # each of the task's conventions, crossed with the shared readings of a drawdown (the window)
    assert list(values) == ["negative", "negative+calendar_days", "negative+calendar_days_after",
                            "positive", "positive+calendar_days", "positive+calendar_days_after"]
    assert values["negative"] == pytest.approx(-1 / 3) and values["positive"] == pytest.approx(1 / 3)
    assert all(type(v) is float for v in values.values())


def test_unknown_oracle_and_bad_params_name_the_task() -> None:
    """A task cannot be built with an unknown oracle or a parameter its model refuses (the task file
    fails to load: tests/runner/test_oracle_params.py); the oracle names the task all the same for one
    built without validation, for a probe's overrides and for data too short."""
    provider = FakeProvider({"X": _frame(np.array([1.0, 2.0, 3.0]))})
    with pytest.raises(ValidationError, match=r"task calc_099: unknown oracle 'nope'"):
        _task(oracle={"name": "nope", "params": {}})
    with pytest.raises(ValidationError, match=r"task calc_099: oracle 'max_drawdown' convention 'negative': "
                                              r"parameter 'days' is required"):
        _task(oracle={"name": "max_drawdown", "params": {"symbol": "X"}})
    unchecked = _task().model_copy(update={"oracle": OracleSpec(name="nope")})
    with pytest.raises(InputError, match=r"task calc_099: unknown oracle 'nope'"):
        expected_values(unchecked, provider)
    with pytest.raises(InputError, match=r"calc_099.*need 6 sessions, have 3"):
        expected_values(_task(), provider)
    with pytest.raises(InputError, match=r"^task calc_099 probe 1: oracle 'max_drawdown' convention 'negative': "
                                         r"parameter 'days': Input should be a valid integer, got '6'$"):
        expected_values(_task(), provider, {"days": "6"}, "probe 1")


def test_a_caching_provider_computes_each_oracle_value_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deriving probes asks the oracle again for argument sets already answered: one caching
    provider computes each (oracle, parameters) once, gives each caller its own copy of a value, and
    raises the same "no answer here" again without computing it again."""
    provider = FakeProvider({"X": _frame(np.array([100.0, 120.0, 90.0, 110.0, 80.0, 130.0]))})
    seen: list[tuple[str, int]] = []
    real = oracle.ORACLES["max_drawdown"]

    def counted(market: Any, params: Any) -> Any:
        seen.append((params.sign, params.days))
        return real.function(market, params)

    monkeypatch.setitem(oracle.ORACLES, "max_drawdown", oracle.Oracle(counted, real.params))
    cached = oracle.caching(provider)
    assert oracle.caching(cached) is cached
    first = expected_values(_task(), cached, {"days": 4})
    assert len(seen) == 6
    assert expected_values(_task(), cached, {"days": 4}) == first
    assert len(seen) == 6  # all six readings again: none computed twice
    assert expected_values(_task(), cached, {"days": 5}) != first
    assert len(seen) == 12  # other arguments: computed
    for _ in range(2):
        with pytest.raises(InputError, match="need 9 sessions, have 6"):
            expected_values(_task(), cached, {"days": 9})
    assert seen[12:] == [("negative", 9)]  # the first reading refused: asked once, raised twice
    # a fresh provider knows nothing of the other's values
    expected_values(_task(), oracle.caching(provider), {"days": 4})
    assert len(seen) == 12 + 1 + 6


def test_a_cached_list_value_is_each_callers_own() -> None:
    closes = np.array([10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0])
    cached = oracle.caching(FakeProvider({"X": _frame(closes)}))
    task = _task(oracle={"name": "moving_average", "params": {"symbol": "X", "window": 3, "days": 2}},
                 conventions=[{"name": "sma", "reason": "r"}])
    first = expected_values(task, cached)
    primary = next(iter(first))
    assert first[primary] == pytest.approx([14.0, 15.0])
    first[primary].append(99.0)
    assert expected_values(task, cached)[primary] == pytest.approx([14.0, 15.0])


def test_a_world_reads_its_bars_once_for_every_task_judged_in_it(tmp_path: Any) -> None:
    from runner.judging.grade import world_answers
    from runner.judging.worlds import World, WorldKind

    reads: list[str] = []

    class Counting(FakeProvider):
        def history(self, symbol: str) -> pd.DataFrame:
            reads.append(symbol)
            return super().history(symbol)

    closes = np.array([100.0, 120.0, 90.0, 110.0, 80.0, 130.0, 125.0, 140.0])
    world = World(name="w", kind=WorldKind.SEED, path=tmp_path, provider=Counting({"X": _frame(closes)}))
    drawdown = world_answers(_task(), world)
    average = {"name": "moving_average", "params": {"symbol": "X", "window": 3, "days": 2}}
    averages = world_answers(_task(id="calc_098", conventions=[{"name": "sma", "reason": "r"}], oracle=average), world)
    assert drawdown[0][1]["negative"] == pytest.approx(80 / 110 - 1)  # type: ignore[index]
    assert averages[0][1]["sma"] == pytest.approx([335 / 3, 395 / 3])  # type: ignore[index]
    assert reads == ["X"]  # read once for both tasks and all their readings (adjusted and raw closes)


@pytest.mark.parametrize("order", ["dated", "shuffled"])
def test_the_oracle_reads_the_bars_up_to_the_as_of_date_in_date_order(order: str) -> None:
    """Bars dated after the as-of date are not read, whichever order the provider holds them in; a
    provider that shares its frame (``history_view``) is read without a copy and left as it was."""
    closes = _walk(40, 5)
    later = _frame(closes).set_axis(pd.bdate_range(start=pd.Timestamp(AS_OF), periods=40, tz=TZ, name="Date"))
    frame = pd.concat([_frame(closes), later.iloc[1:]])  # 39 sessions past the as-of date
    if order == "shuffled":
        frame = frame.sample(frac=1.0, random_state=3)
    held = frame.copy()

    class Sharing(FakeProvider):
        def history_view(self, symbol: str) -> pd.DataFrame:
            return self.frames[symbol]

    for provider in (FakeProvider({"X": frame}), Sharing({"X": frame})):
        bars = oracle._read_history(provider, "X", "adjusted")
        assert bars.index.is_monotonic_increasing and bars.index[-1].date() == AS_OF
        assert bars["Close"].to_list() == closes.tolist()
        pd.testing.assert_frame_equal(frame, held)


def test_every_task_oracle_name_is_known() -> None:
    from finevo.paths import benchmarks_dir
    from runner.inputs.tasks import load_tasks

    tasks = load_tasks(benchmarks_dir() / "tasks.jsonl")
    assert len(tasks) == 20
    assert {t.oracle.name for t in tasks} <= set(oracle.ORACLES)
    for t in tasks:
        assert t.oracle.name == t.intent.indicator
        assert t.intent.args.items() <= t.oracle.params.items()


def _answers(task: Task, provider: Any, overrides: dict[str, Any] | None) -> list[tuple[str, str]]:
    """Each reading's value, or its refusal, bit for bit (``repr`` of a float keeps every bit)."""
    return [(name, repr(value)) for name, value in oracle.each_reading(task, provider, overrides)]


@pytest.mark.slow
def test_what_a_caching_provider_keeps_changes_no_value_bit_for_bit() -> None:
    """A caching provider keeps what readings and argument sets derive alike (closes, RSI series of
    the same sessions, aligned closes): every suite task's every reading, on its own arguments, its
    probes' and windows of sessions and calendar days that hold the same sessions, answers exactly
    what the bare provider answers, for one caching provider shared by all of them."""
    from finevo.market.snapshot import load_snapshot
    from finevo.paths import benchmarks_dir
    from runner.inputs.tasks import load_tasks

    snapshot = load_snapshot(None)
    cached = oracle.caching(snapshot)
    compared = 0
    for task in load_tasks(benchmarks_dir() / "tasks.jsonl"):
        argument_sets: list[dict[str, Any] | None] = [None, *(dict(p.oracle_params) for p in task.probes)]
        if "days" in task.oracle.params:
            argument_sets += [{"days": days} for days in (3, 7, 29, 30, 31, 250)]
        for overrides in argument_sets:
            assert _answers(task, cached, overrides) == _answers(task, snapshot, overrides), (task.id, overrides)
            compared += 1
    assert compared > 60


@pytest.mark.parametrize("unit", ["calendar", "calendar_after"])
def test_calendar_windows_count_local_dates_across_a_clock_change(unit: str) -> None:
    """A calendar window compares each bar's local date with the window's first day; around the
    clock changes (and at a bar dated exactly on that day) the bars kept are those whose date is on
    or after it (``calendar``) or after it (``calendar_after``)."""
    frame = _frame(_walk(120, 7))  # from July: the clocks went back on 3 November
    provider = FakeProvider({"X": frame})
    for days in range(2, 160):
        start = AS_OF - pd.Timedelta(days=days).to_pytimedelta()
        dates = frame.index.date
        kept = frame.loc[dates >= start] if unit == "calendar" else frame.loc[dates > start]
        window = oracle._last(frame["Close"], provider, days, unit, "test")
        assert list(window.index) == list(kept.index), days


# --------------------------------------------------------------------------- an RSI over a window that does not move
def _rsi_task() -> Task:
    return _task(id="calc_098", query="Calculate X RSI-5 over last 12 days",
                 intent={"indicator": "rsi", "args": {"symbol": "X", "window": 5, "days": 12}},
                 oracle={"name": "rsi", "params": {"symbol": "X", "window": 5, "days": 12, "lookback": "window"}},
                 conventions=[{"name": "last_12", "reason": "r"}])


def test_a_window_without_a_price_change_leaves_the_cutler_rsi_unsettled() -> None:
    """0/0 (no gain, no loss) is 100, 50, 0 or no value by library: the Cutler reading, which reads only
    those changes, accepts any of them or a clear error, and nothing else; Wilder's, whose averages still
    hold the earlier gains, keeps its one value. A window with a gain and no loss is 100 under every reading."""
    from runner.judging.compare import compare

    tolerance = Task.model_fields["tolerance"].default
    rising_then_flat = np.array([10.0, 11.0, 10.5, 11.5, 12.0, 12.5, 13.0, 13.0, 13.0, 13.0, 13.0, 13.0, 13.0])
    provider = FakeProvider({"X": _frame(rising_then_flat)})
    values = oracle.judged_values(_rsi_task(), provider)
    unsettled = {name: v for name, v in values.items() if isinstance(v, oracle.OneOf)}
    assert unsettled and all(name.endswith("+cutler") for name in unsettled), values
    assert oracle.OR_RAISES in values  # no value is one of the choices: a clear error is as right there
    for choices in unsettled.values():
        assert sorted(choices) == [0.0, 50.0, 100.0] and choices.refuses
        assert all(compare(x, choices, tolerance) is None for x in (100.0, 50.0, 0.0))
        assert compare(25.0, choices, tolerance) is not None
    wilder = values["last_12"]
    assert isinstance(wilder, float) and 0.0 < wilder < 100.0
    # one more session with a rise: every window holds a gain and no loss, so every reading settles it
    settled = oracle.judged_values(_rsi_task(), FakeProvider({"X": _frame(np.append(rising_then_flat, 13.5))}))
    assert oracle.OR_RAISES not in settled and not any(isinstance(v, oracle.OneOf) for v in settled.values())
    assert settled["last_12+cutler"] == 100.0


def test_a_flat_window_matters_to_a_signal_only_where_the_conventions_part() -> None:
    """A Cutler RSI series across a halt: the post-signal return turns on the halt's sessions at a
    threshold of 70 (100 counts them, 0 and NaN do not), so it is unsettled; at a threshold no RSI
    exceeds (100) no convention gives a signal, and the reading refuses as before."""
    rng = np.random.default_rng(7)
    walk = 100 * np.exp(np.cumsum(rng.normal(0.002, 0.02, 120)))
    walk[60:80] = walk[59]  # a halt of 20 sessions, forward returns of 0 inside it
    provider = FakeProvider({"X": _frame(walk)})
    params = {"symbol": "X", "rsi_window": 14, "rsi_threshold": 70, "horizon": 5, "rsi_method": "simple"}
    with pytest.raises(oracle.Unsettled) as unsettled:
        compute("post_signal_return", provider, params)
    # two answers: 100 counts the halt's sessions as signals, 50, 0 and no value do not
    assert len(unsettled.value.values) == 2 and not unsettled.value.refuses
    assert isinstance(compute("post_signal_return", provider, {**params, "rsi_method": "wilder"}), float)
    with pytest.raises(ValueError, match="no signal") as raised:
        compute("post_signal_return", provider, {**params, "rsi_threshold": 100})
    assert not isinstance(raised.value, oracle.Unsettled)
