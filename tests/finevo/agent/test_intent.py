"""The query parser: the 20 benchmark queries, word-boundary matching, tickers, numbers."""

from __future__ import annotations

import pytest

from finevo.agent.intent import CATALOGUE, find_symbols, indicator_spec, parse_query
from finevo.paths import benchmarks_dir

# The fixed intent table of the benchmark (what the reference tools implement).
EXPECTED = {
    "Get AAPL 2023 Q1 net income": ("net_income", {"symbol": "AAPL", "year": 2023, "quarter": 1}),
    "Get MSFT latest market quote": ("latest_quote", {"symbol": "MSFT"}),
    "Get GOOGL 2023 total revenue": ("total_revenue", {"symbol": "GOOGL", "year": 2023}),
    "Get S&P 500 index latest close price": ("latest_close", {"symbol": "^GSPC"}),
    "Get SPY ETF latest close price": ("latest_close", {"symbol": "SPY"}),
    "Get AMZN latest quarterly net income": ("net_income", {"symbol": "AMZN"}),
    "Get AAPL dividend history for last 3 years": ("dividend_history", {"symbol": "AAPL", "years": 3}),
    "Get TSLA highest close price in last 30 days": ("max_close", {"symbol": "TSLA", "days": 30}),
    "Calculate AAPL RSI-14 over last 30 days": ("rsi", {"symbol": "AAPL", "window": 14, "days": 30}),
    "Calculate MSFT 5-day moving average over last 20 days":
        ("moving_average", {"symbol": "MSFT", "window": 5, "days": 20}),
    "Calculate GOOGL Bollinger Bands(20,2)": ("bollinger_bands", {"symbol": "GOOGL", "window": 20, "num_std": 2}),
    "Calculate AMZN MACD(12,26,9)": ("macd", {"symbol": "AMZN", "fast": 12, "slow": 26, "signal": 9}),
    "Calculate TSLA 60-day volatility": ("volatility", {"symbol": "TSLA", "window": 60}),
    "Calculate AAPL KDJ(9,3,3)": ("kdj", {"symbol": "AAPL", "n": 9, "k_period": 3, "d_period": 3}),
    "Calculate MSFT max drawdown over last 250 days": ("max_drawdown", {"symbol": "MSFT", "days": 250}),
    "Calculate correlation between S&P 500 and AAPL over last 30 days":
        ("correlation", {"symbols": ["^GSPC", "AAPL"], "days": 30}),
    "If AAPL MA5>MA20 and RSI<30, return True, else return False":
        ("ma_cross_rsi_signal", {"symbol": "AAPL", "short_window": 5, "long_window": 20,
                                 "rsi_window": 14, "rsi_threshold": 30}),
    "Calculate MSFT 30-day volume-price divergence (price up but volume down)":
        ("volume_price_divergence", {"symbol": "MSFT", "days": 30}),
    "Calculate equal-weight portfolio return (AAPL,GOOGL,AMZN) over last 30 days":
        ("portfolio_return", {"symbols": ["AAPL", "GOOGL", "AMZN"], "days": 30}),
    "Calculate AAPL average 5-day return after RSI>70":
        ("post_signal_return", {"symbol": "AAPL", "rsi_window": 14, "rsi_threshold": 70, "horizon": 5}),
}


@pytest.mark.parametrize("query", sorted(EXPECTED))
def test_parser_reproduces_the_intent_table(query: str) -> None:
    intent = parse_query(query)
    assert intent is not None
    indicator, args = EXPECTED[query]
    assert intent.indicator == indicator
    assert intent.args == args
    # exact types too: 2 is not 2.0 for a registry signature or a cassette key
    assert {k: type(v) for k, v in intent.args.items()} == {k: type(v) for k, v in args.items()}


def test_parser_agrees_with_every_benchmark_task() -> None:
    path = benchmarks_dir() / "tasks.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not present in this checkout")
    from runner.inputs.tasks import load_tasks

    tasks = load_tasks(path)
    assert len(tasks) == 20
    for task in tasks:
        intent = parse_query(task.query)
        assert intent is not None, task.id
        assert (intent.indicator, intent.args) == (task.intent.indicator, task.intent.args), task.id


@pytest.mark.parametrize("query", [
    "Calculate MSFT max drawdown over last 250 days",
    "Calculate AAPL maximum drawdown",
    "What is the max draw-down of TSLA over the last 100 days",
])
def test_max_drawdown_is_never_a_moving_average(query: str) -> None:
    intent = parse_query(query)
    assert intent is not None and intent.indicator == "max_drawdown"


@pytest.mark.parametrize("query", [
    "Calculate MSFT max drawdown over last 250 days",
    "Show the drawdown of AAPL in the last 60 days",
])
def test_drawdown_never_maps_to_the_dow(query: str) -> None:
    assert "^DJI" not in find_symbols(query)
    intent = parse_query(query)
    assert intent is not None
    assert "^DJI" not in str(intent.args)


def test_the_dow_as_a_whole_word_is_the_index() -> None:
    assert find_symbols("Get Dow Jones latest close price") == ["^DJI"]
    assert parse_query("Get Dow Jones latest close price").args == {"symbol": "^DJI"}


def test_moving_average_intent_generalises_to_other_symbols_and_windows() -> None:
    a = parse_query("Calculate MSFT 5-day moving average over last 20 days")
    b = parse_query("Calculate AAPL 10-day moving average over last 40 days")
    assert a is not None and b is not None
    assert a.indicator == b.indicator == "moving_average"
    assert set(a.args) == set(b.args)  # same contract: the same tool can serve both
    assert b.args == {"symbol": "AAPL", "window": 10, "days": 40}


def test_sp500_is_the_index_and_spy_the_etf() -> None:
    assert find_symbols("S&P 500 vs SPY ETF") == ["^GSPC", "SPY"]
    assert find_symbols("the S&P500 index") == ["^GSPC"]


def test_indicator_acronyms_and_quarters_are_not_tickers() -> None:
    assert find_symbols("If AAPL MA5>MA20 and RSI<30, return True") == ["AAPL"]
    assert find_symbols("Get AAPL 2023 Q1 net income") == ["AAPL"]
    assert find_symbols("Calculate AMZN MACD(12,26,9)") == ["AMZN"]


def test_company_names_map_to_their_tickers() -> None:
    intent = parse_query("Calculate Tesla 30-day volatility")
    assert intent is not None and intent.args == {"symbol": "TSLA", "window": 30}


def test_defaults_fill_in_a_bare_indicator() -> None:
    intent = parse_query("Calculate AMZN MACD")
    assert intent is not None and intent.args == {"symbol": "AMZN", "fast": 12, "slow": 26, "signal": 9}
    rsi = parse_query("Calculate TSLA RSI")
    assert rsi is not None and rsi.args == {"symbol": "TSLA", "window": 14}


def test_ordinal_quarters_and_decimal_arguments() -> None:
    intent = parse_query("Get MSFT net income for the second quarter of 2022")
    assert intent is not None and intent.args == {"symbol": "MSFT", "year": 2022, "quarter": 2}
    bb = parse_query("Calculate AAPL Bollinger Bands(20,2.5)")
    assert bb is not None and bb.args["num_std"] == 2.5


@pytest.mark.parametrize("query", ["Tell me a joke", "Calculate the RSI", "What is the weather in Paris"])
def test_unknown_or_symbol_less_queries_give_none(query: str) -> None:
    assert parse_query(query) is None


def test_every_catalogue_entry_has_a_contract() -> None:
    names = [spec.name for spec in CATALOGUE]
    assert len(names) == len(set(names))
    for spec in CATALOGUE:
        assert indicator_spec(spec.name) is spec
        assert spec.category in ("fetch", "calculation", "composite")
        assert spec.params and spec.params[0] in ("symbol", "symbols")
    assert indicator_spec("no_such_indicator") is None
