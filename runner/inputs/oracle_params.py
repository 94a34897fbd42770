"""The oracle's parameters: one typed model per oracle function, and the readings a task accepts.

A task file gives its oracle's parameters as JSON: ``oracle.params``, each convention's ``params``
merged over them, the shared readings the oracle adds (:data:`SHARED_READINGS`), and each probe's
``oracle_params`` merged last. :func:`parse_params` is the one place that JSON becomes the oracle's
typed parameters: each model (:data:`PARAMS`) refuses an unknown key, a missing one, and a value of
the wrong type or outside its range, and the oracle functions (:mod:`runner.judging.oracle`) read
only the model. A task is checked against these models when it is loaded
(:class:`runner.inputs.tasks.Task`, every accepted reading and every probe), so a wrong parameter
fails the suite load (exit 2), never a run.

The shared readings (benchmarks/README.md, "Shared readings") are decided here once: the same
choice, such as calendar days for "last N days" or raw closes for a price level, is accepted for
every task it applies to, or for none; :func:`accepted_readings` crosses a task's own conventions
with them and refuses a task that sets one itself.

Pydantic and the standard library only: the task loader imports this module, and loading a task file
must not load pandas.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator
from pydantic.fields import FieldInfo

from finevo.errors import InputError
from finevo.jsontypes import JSONObject, JSONValue

if TYPE_CHECKING:
    from runner.inputs.tasks import Task

__all__ = [
    "PARAMS",
    "READINGS",
    "SHARED_READINGS",
    "BollingerBandsParams",
    "CorrelationParams",
    "DividendHistoryParams",
    "KdjParams",
    "LatestCloseParams",
    "LatestQuoteParams",
    "MaCrossRsiSignalParams",
    "MacdParams",
    "MaxCloseParams",
    "MaxDrawdownParams",
    "MovingAverageParams",
    "NetIncomeParams",
    "OracleParams",
    "OracleParamsError",
    "PortfolioReturnParams",
    "PostSignalReturnParams",
    "Reading",
    "RsiParams",
    "TotalRevenueParams",
    "VolatilityParams",
    "VolumePriceDivergenceParams",
    "accepted_readings",
    "check_task",
    "param_bounds",
    "param_kind",
    "param_leading",
    "param_seeded",
    "parse_params",
]

# --------------------------------------------------------------------------- value types
#: A ticker as the snapshot names it (``AAPL``, ``^GSPC``).
Symbol: TypeAlias = Annotated[str, Strict(), Field(min_length=1)]
#: A count of sessions, days, years or periods (a window, a lookback, a horizon): a positive JSON integer.
Count: TypeAlias = Annotated[int, Strict(), Field(gt=0)]
#: A :data:`Count` that seeds a recursive smoothing (an EMA's span, Wilder's RSI window, KDJ's K and D
#: periods): the value depends on history long before the window, so the judge's probes give it
#: :data:`~runner.judging.probes.WARM_UP` windows of data, where a plain window or lookback needs its own
#: length only.
Seeded: TypeAlias = Annotated[int, Strict(), Field(gt=0), "seeds a recursive smoothing"]
#: A :data:`Count` that sets where a recursive smoothing seeded at a constant begins (KDJ's range ``n``:
#: K and D start at 50 on the first full range): the value depends on how many sessions the recursion
#: has run, so a seed of another kind is forgotten only where many follow -- the judge also asks a value
#: that leaves the recursion a short run (:func:`~runner.judging.probes.range_probes`).
Leading: TypeAlias = Annotated[int, Strict(), Field(gt=0), "starts a recursion seeded at a constant"]
#: A JSON number (an integer is read as a float; a boolean is refused).
Number: TypeAlias = Annotated[float, Strict()]
#: A calendar year (``2023``).
Year: TypeAlias = Annotated[int, Strict(), Field(ge=1900)]
#: Degrees of freedom of a standard deviation: 0 (population) or 1 (sample).
Ddof: TypeAlias = Annotated[int, Strict(), Field(ge=0, le=1)]

#: Closes adjusted for dividends and splits (yfinance's default) or as quoted that day.
Prices: TypeAlias = Literal["adjusted", "raw"]
#: "Last N days": N sessions, or the sessions dated on or after (``calendar``) or strictly after
#: (``calendar_after``) the as-of date minus N calendar days.
WindowUnit: TypeAlias = Literal["sessions", "calendar", "calendar_after"]
#: A window of N days holds N closes (``prices``) or N daily returns (``returns``).
CountOf: TypeAlias = Literal["prices", "returns"]
#: Simple or log daily returns.
Returns: TypeAlias = Literal["simple", "log"]
#: RSI smoothing: Wilder's ``ewm(alpha=1/n)``, the same seeded with an n-period mean, Cutler's plain means.
RsiMethod: TypeAlias = Literal["wilder", "wilder_sma", "simple"]
#: Whether the RSI's first values (before n changes) count.
RsiWarmup: TypeAlias = Literal["skip", "keep"]
#: A list answer oldest first (``asc``) or newest first.
Order: TypeAlias = Literal["asc", "desc"]


# --------------------------------------------------------------------------- the models
class OracleParams(BaseModel):
    """The parameters of one oracle function: frozen, every key known, every value typed."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NetIncomeParams(OracleParams):
    """Quarterly Net Income of ``quarter`` of ``year`` (both omitted: the latest reported quarter).

    ``basis="calendar"``: the quarter ending in calendar quarter ``quarter`` of ``year``; ``"fiscal"``:
    the company's fiscal quarter of the fiscal year ending in ``year`` (``fiscal_year_end_month`` when
    its annual statements do not say the month)."""

    symbol: Symbol
    year: Year | None = None
    quarter: Annotated[int, Strict(), Field(ge=1, le=4)] | None = None
    basis: Literal["calendar", "fiscal"] = "calendar"
    fiscal_year_end_month: Annotated[int, Strict(), Field(ge=1, le=12)] = 12

    @model_validator(mode="after")
    def _both_or_neither(self) -> NetIncomeParams:
        if (self.year is None) != (self.quarter is None):
            raise ValueError(f"net_income needs both year and quarter 1..4, got year={self.year} "
                             f"quarter={self.quarter}")
        return self


class TotalRevenueParams(OracleParams):
    """Annual Total Revenue of the fiscal year ending in ``year``."""

    symbol: Symbol
    year: Year


class LatestCloseParams(OracleParams):
    symbol: Symbol


class LatestQuoteParams(OracleParams):
    """The last traded price from ``fast_info``, ``info`` or the last close (``history``)."""

    symbol: Symbol
    source: Literal["fast_info", "info", "history"] = "fast_info"


class DividendHistoryParams(OracleParams):
    """Dividends with an ex-date within the last ``years`` calendar years."""

    symbol: Symbol
    years: Count
    #: An ex-date exactly ``years`` back is in (``inclusive``) or out.
    since: Literal["inclusive", "exclusive"] = "inclusive"
    order: Order = "asc"


class MaxCloseParams(OracleParams):
    symbol: Symbol
    days: Count
    window_unit: WindowUnit = "sessions"
    prices: Prices = "adjusted"


class MovingAverageParams(OracleParams):
    """The last ``days`` values of the ``window``-session simple moving average of Close."""

    symbol: Symbol
    window: Count
    days: Count
    prices: Prices = "adjusted"
    order: Order = "asc"


class RsiParams(OracleParams):
    """The latest ``window``-period RSI, of the last ``days`` closes (``lookback="window"``) or of them all."""

    symbol: Symbol
    window: Seeded
    days: Count | None = None
    lookback: Literal["window", "full"] = "window"
    window_unit: WindowUnit = "sessions"
    prices: Prices = "adjusted"
    rsi_method: RsiMethod = "wilder"

    @model_validator(mode="after")
    def _days_of_the_window(self) -> RsiParams:
        if self.lookback == "window" and self.days is None:
            raise ValueError("parameter 'days' is required with lookback 'window' (the RSI of the last days closes)")
        return self


class BollingerBandsParams(OracleParams):
    symbol: Symbol
    window: Count
    num_std: Number
    ddof: Ddof = 0
    prices: Prices = "adjusted"


class MacdParams(OracleParams):
    """EMA(``fast``) - EMA(``slow``) of Close and its EMA(``signal``)."""

    symbol: Symbol
    fast: Seeded
    slow: Seeded
    signal: Seeded
    prices: Prices = "adjusted"
    #: pandas' ``ewm(adjust=...)``: False, the recursive EMA seeded at the first close; True, each EMA the
    #: weighted average of every value so far (pandas' default). One value on a year of closes or more.
    adjust: Annotated[bool, Strict()] = False


class VolatilityParams(OracleParams):
    """The standard deviation of the last ``window`` daily returns, annualised by default."""

    symbol: Symbol
    window: Count
    count: CountOf = "returns"
    returns: Returns = "simple"
    ddof: Ddof = 1
    annualise: Annotated[bool, Strict()] = True
    periods_per_year: Annotated[float, Strict(), Field(gt=0)] = 252.0


class KdjParams(OracleParams):
    symbol: Symbol
    n: Leading
    k_period: Seeded
    d_period: Seeded
    smoothing: Literal["recursive", "sma"] = "recursive"
    prices: Prices = "adjusted"


class MaxDrawdownParams(OracleParams):
    """The largest peak-to-trough fall of Close: a negative fraction, or its magnitude (``positive``)."""

    symbol: Symbol
    days: Count
    window_unit: WindowUnit = "sessions"
    sign: Literal["negative", "positive"] = "negative"


class CorrelationParams(OracleParams):
    """Pearson correlation of two symbols' daily returns (a list of another length has no answer)."""

    symbols: tuple[Symbol, ...]
    days: Count
    count: CountOf = "prices"
    window_unit: WindowUnit = "sessions"
    returns: Returns = "simple"


class MaCrossRsiSignalParams(OracleParams):
    """True when SMA(``short_window``) > SMA(``long_window``) and RSI(``rsi_window``) < ``rsi_threshold``."""

    symbol: Symbol
    short_window: Count
    long_window: Count
    rsi_window: Seeded
    rsi_threshold: Number
    rsi_method: RsiMethod = "wilder"


class VolumePriceDivergenceParams(OracleParams):
    """True when Close rose over the window while Volume trended down (its ``slope``, or by ``halves``)."""

    symbol: Symbol
    days: Count
    window_unit: WindowUnit = "sessions"
    volume_trend: Literal["slope", "halves"] = "slope"


class PortfolioReturnParams(OracleParams):
    """Equal-weight return of ``symbols`` over the window, buy-and-hold or rebalanced daily."""

    symbols: Annotated[tuple[Symbol, ...], Field(min_length=1)]
    days: Count
    count: CountOf = "prices"
    window_unit: WindowUnit = "sessions"
    rebalance: Literal["none", "daily"] = "none"


class PostSignalReturnParams(OracleParams):
    """Mean ``horizon``-session forward return after the sessions whose RSI is above ``rsi_threshold``."""

    symbol: Symbol
    rsi_window: Seeded
    rsi_threshold: Number
    horizon: Count
    #: Every session above the threshold, or only those that cross it.
    signal: Literal["every_day", "cross"] = "every_day"
    rsi_method: RsiMethod = "wilder"
    rsi_warmup: RsiWarmup = "skip"


#: Oracle name -> the model of its parameters (:mod:`runner.judging.oracle` pairs each with its function).
PARAMS: dict[str, type[OracleParams]] = {
    "net_income": NetIncomeParams,
    "total_revenue": TotalRevenueParams,
    "latest_quote": LatestQuoteParams,
    "latest_close": LatestCloseParams,
    "dividend_history": DividendHistoryParams,
    "max_close": MaxCloseParams,
    "rsi": RsiParams,
    "moving_average": MovingAverageParams,
    "bollinger_bands": BollingerBandsParams,
    "macd": MacdParams,
    "volatility": VolatilityParams,
    "kdj": KdjParams,
    "max_drawdown": MaxDrawdownParams,
    "correlation": CorrelationParams,
    "ma_cross_rsi_signal": MaCrossRsiSignalParams,
    "volume_price_divergence": VolumePriceDivergenceParams,
    "portfolio_return": PortfolioReturnParams,
    "post_signal_return": PostSignalReturnParams,
}


# --------------------------------------------------------------------------- the JSON boundary
class OracleParamsError(InputError):
    """Parameters an oracle refuses; ``detail`` says which parameter and why (the message adds the oracle)."""

    def __init__(self, oracle: str, detail: str) -> None:
        super().__init__(f"oracle {oracle!r}: {detail}", oracle=oracle)
        self.oracle = oracle
        self.detail = detail


def _known(name: str, who: str = "") -> type[OracleParams]:
    model = PARAMS.get(name)
    if model is None:
        raise InputError(f"{who}unknown oracle {name!r} (known: {', '.join(sorted(PARAMS))})")
    return model


#: How much of a refused value an error shows.
_SHOWN = 60


def _describe(model: type[OracleParams], exc: ValidationError) -> str:
    """One line for the first problem: the parameter and what is wrong with it."""
    first = exc.errors(include_url=False)[0]
    field = ".".join(str(part) for part in first["loc"])
    if not field:  # a check of the parameters together (the message names them)
        return str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "missing":
        return f"parameter {field!r} is required"
    if first["type"] == "extra_forbidden":
        return f"unknown parameter {field!r} (it takes {', '.join(model.model_fields)})"
    given = repr(first["input"])
    if len(given) > _SHOWN:  # the line stays one short line, whatever the task file holds
        given = given[: _SHOWN - 3] + "..."
    return f"parameter {field!r}: {first['msg']}, got {given}"


def parse_params(name: str, params: Mapping[str, JSONValue]) -> OracleParams:
    """``params`` (JSON) as the typed parameters of oracle ``name``: :class:`InputError` when there is no
    such oracle, :class:`OracleParamsError` naming the oracle and the parameter when it refuses a key or a value."""
    model = _known(name)
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        raise OracleParamsError(name, _describe(model, exc)) from None


# --------------------------------------------------------------------------- shared readings
@dataclass(frozen=True)
class Reading:
    """One choice a careful analyst may make the same way on every task it applies to: the
    oracle parameter it sets and its accepted values, each with the label that names it in a
    convention (the first value of a task's oracle is its primary, unlabelled)."""

    key: str
    values: tuple[tuple[str, JSONValue], ...]


#: The shared readings (reasons in benchmarks/README.md, "Shared readings").
READINGS: dict[str, Reading] = {
    "window": Reading("window_unit", (("sessions", "sessions"), ("calendar_days", "calendar"),
                                      ("calendar_days_after", "calendar_after"))),
    "count": Reading("count", (("n_closes", "prices"), ("n_returns", "returns"))),
    "prices": Reading("prices", (("adjusted_close", "adjusted"), ("raw_close", "raw"))),
    "std": Reading("ddof", (("population_std", 0), ("sample_std", 1))),
    "rsi": Reading("rsi_method", (("wilder", "wilder"), ("wilder_sma_seed", "wilder_sma"), ("cutler", "simple"))),
    "order": Reading("order", (("oldest_first", "asc"), ("newest_first", "desc"))),
    "warmup": Reading("rsi_warmup", (("skip_warmup", "skip"), ("count_warmup", "keep"))),
    "returns": Reading("returns", (("simple_returns", "simple"), ("log_returns", "log"))),
    "edge": Reading("since", (("on_or_after", "inclusive"), ("strictly_after", "exclusive"))),
}

#: Oracle -> the shared readings it accepts, each with the oracle's primary value. An oracle
#: absent here (fundamentals, quotes, the boolean signals) accepts no shared reading: its task's
#: own conventions are all there is.
SHARED_READINGS: dict[str, dict[str, JSONValue]] = {
    "max_close": {"window": "sessions", "prices": "adjusted"},
    "moving_average": {"prices": "adjusted", "order": "asc"},
    "rsi": {"window": "sessions", "prices": "adjusted", "rsi": "wilder"},
    "bollinger_bands": {"prices": "adjusted", "std": 0},
    "macd": {"prices": "adjusted"},
    "kdj": {"prices": "adjusted"},
    "volatility": {"count": "returns", "std": 1, "returns": "simple"},
    "max_drawdown": {"window": "sessions"},
    "correlation": {"window": "sessions", "count": "prices", "returns": "simple"},
    "portfolio_return": {"window": "sessions", "count": "prices"},
    "post_signal_return": {"rsi": "wilder", "warmup": "skip"},
    "dividend_history": {"order": "asc", "edge": "inclusive"},
}


def _meaningful(params: JSONObject, defaults: JSONObject) -> bool:
    """False for a combination one of whose readings changes nothing (it would only repeat
    another convention): a calendar window fixes the closes itself (no N closes / N returns), a
    full-history RSI has no window to read in days, and Cutler's RSI has no warm-up values to keep."""
    calendar = params.get("window_unit", "sessions") != "sessions"
    if calendar and "count" in defaults and params.get("count") != defaults["count"]:
        return False
    if params.get("rsi_method") in ("simple", "wilder_sma") and params.get("rsi_warmup", "skip") != "skip":
        return False  # plain n-period means have no value before n changes: nothing to keep
    return not (calendar and params.get("lookback") == "full")


#: What a parameter measures, for the judge's probes: a count (a window, a lookback, a horizon) or a
#: real number (a multiplier, a threshold).
ParamKind: TypeAlias = Literal["count", "number"]


def _is(field: FieldInfo, alias: object) -> bool:
    """Whether ``field`` is declared as ``alias`` (:data:`Count`, :data:`Number`), optional or not."""
    ref = FieldInfo.from_annotation(alias)  # type: ignore[arg-type]
    declared = [field] + [FieldInfo.from_annotation(a) for a in get_args(field.annotation) if a is not type(None)]
    return any(f.annotation is ref.annotation and f.metadata == ref.metadata for f in declared)


def _field(oracle: str, key: str) -> FieldInfo | None:
    model = PARAMS.get(oracle)
    return model.model_fields.get(key) if model is not None else None


def param_kind(oracle: str, key: str) -> ParamKind | None:
    """``"count"`` (:data:`Count` or :data:`Seeded`) or ``"number"`` for a parameter of ``oracle``
    declared as one, else None."""
    field = _field(oracle, key)
    if field is None:
        return None
    return "count" if any(_is(field, kind) for kind in (Count, Seeded, Leading)) else \
        "number" if _is(field, Number) else None


def param_seeded(oracle: str, key: str) -> bool:
    """Whether a count of ``oracle`` seeds a recursive smoothing (:data:`Seeded`)."""
    field = _field(oracle, key)
    return field is not None and _is(field, Seeded)


def param_leading(oracle: str, key: str) -> bool:
    """Whether a count of ``oracle`` sets where a recursion seeded at a constant begins (:data:`Leading`)."""
    field = _field(oracle, key)
    return field is not None and _is(field, Leading)


def param_bounds(oracle: str, key: str) -> tuple[int | float | None, int | float | None]:
    """The least and the greatest value ``oracle`` declares for ``key`` (``ge``/``le``; None where it
    declares none): a quarter is 1..4, a ``ddof`` 0..1."""
    field = _field(oracle, key)
    if field is None:
        return None, None
    low: int | float | None = None
    high: int | float | None = None
    declared = [field] + [FieldInfo.from_annotation(a) for a in get_args(field.annotation) if a is not type(None)]
    for info in declared:
        for item in info.metadata:
            low = getattr(item, "ge", low)
            high = getattr(item, "le", high)
    return low, high


def accepted_readings(task: Task) -> list[tuple[str, JSONObject]]:
    """``(convention name, oracle params)`` for every accepted reading of ``task``, primary first.

    Each of the task's conventions is crossed with every shared reading of its oracle
    (:data:`SHARED_READINGS`; none for a boolean answer, where each extra reading could make the
    other answer pass). A task whose conventions or oracle parameters set a shared reading
    themselves are refused with :class:`InputError`: the shared readings are decided once.
    The parameters are JSON as the task file gives them; :func:`parse_params` reads each.
    """
    shared = {} if task.output.type == "boolean" else SHARED_READINGS.get(task.oracle.name, {})
    defaults: JSONObject = {READINGS[axis].key: primary for axis, primary in shared.items()}
    for key, value in task.oracle.params.items():
        if key in defaults and value != defaults[key]:
            raise InputError(f"task {task.id}: oracle parameter {key}={value!r} is a shared reading whose primary "
                             f"is {defaults[key]!r} (benchmarks/README.md, Shared readings)")
    for convention in task.conventions:
        owned = sorted(set(convention.params) & set(defaults))
        if owned:
            raise InputError(f"task {task.id}: convention {convention.name!r} sets {', '.join(owned)}, a shared "
                             "reading the oracle adds to every task it applies to (benchmarks/README.md, "
                             "Shared readings)")
    readings: list[tuple[str, JSONObject]] = [(c.name, {**task.oracle.params, **defaults, **c.params})
                                              for c in task.conventions]
    for axis in shared:
        reading = READINGS[axis]
        crossed: list[tuple[str, JSONObject]] = []
        for name, params in readings:
            crossed.append((name, params))
            for label, value in reading.values:
                if value != defaults[reading.key]:
                    combined = {**params, reading.key: value}
                    if _meaningful(combined, defaults):
                        crossed.append((f"{name}+{label}", combined))
        readings = crossed
    return readings


def check_task(task: Task) -> None:
    """Every accepted reading of ``task``, alone and under each of its probes, parses into its
    oracle's model (:func:`parse_params`); else :class:`InputError` naming the task, the reading (and
    probe) and the parameter. The task loader runs it on every task: a wrong oracle parameter fails the load.
    """
    _known(task.oracle.name, f"task {task.id}: ")
    for convention, params in accepted_readings(task):
        for index, probe in enumerate((None, *task.probes)):
            try:
                parse_params(task.oracle.name, params if probe is None else {**params, **probe.oracle_params})
            except OracleParamsError as exc:
                where = f"convention {convention!r}" + (f", probe {index}" if probe is not None else "")
                raise InputError(f"task {task.id}: oracle {task.oracle.name!r} {where}: {exc.detail}") from None
