"""What a sandbox process loads before any tool runs: single-threaded numpy/pandas and market data.

Both the warm worker (once, before forking children) and the cold child (per execution) call
:func:`preload`. Loading the snapshot here, before the guard is installed, is what lets tools read
market data without any file access of their own.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

#: Set before numpy is imported: one BLAS / OpenMP thread, so RLIMIT_NPROC can stay at zero extra.
BLAS_ENV: dict[str, str] = {
    "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1", "VECLIB_MAXIMUM_THREADS": "1",
}


def _warm_up_pandas() -> None:
    """Run the operations tools use most, so pandas' lazy imports happen now, not in the child."""
    import numpy as np
    import pandas as pd

    index = pd.date_range("2024-01-01", periods=40, freq="D", tz="America/New_York", name="Date")
    frame = pd.DataFrame({"Close": np.linspace(1.0, 2.0, 40), "Volume": np.arange(40)}, index=index)
    close = frame["Close"]
    close.rolling(5).mean().ewm(span=3, adjust=False).mean().pct_change().dropna().std()
    close.diff().clip(lower=0).rolling(3).sum()
    frame.resample("W").last()
    frame.loc["2024-01-05":"2024-01-20"].describe()
    close.to_dict()
    close.tz_convert("UTC").tz_localize(None).to_frame().reset_index()
    pd.to_datetime(["2024-01-02"]).tz_localize("America/New_York")
    pd.Timestamp("2024-03-01").to_period("Q")
    np.polyfit(np.arange(5.0), np.arange(5.0), 1)
    np.percentile(np.arange(10.0), 95)
    frame.groupby(frame.index.month)["Close"].agg(["mean", "max"])
    repr(frame.head())
    pd.read_csv(io.StringIO("a,b\n1,2\n"))  # caches pandas' CPU-quota probe (reads /sys)


def _close_label_attribute_routes() -> None:
    """pandas answers an unknown attribute with the column or row of that label, so a label
    computed at run time (``"__array_interface__"`` built with ``chr``) reaches protocols that
    numpy and Python read by attribute -- raw memory at an address the tool picks. Dunder names
    are never labels here: every pandas class that defines ``__getattr__`` refuses them before
    looking up a label. The policy refuses such labels when they are spelled; this holds when it
    cannot see them."""
    import inspect

    for name, module in list(sys.modules.items()):
        if not name.startswith("pandas") or module is None:
            continue
        for obj in list(vars(module).values()):
            if not inspect.isclass(obj) or "__getattr__" not in obj.__dict__ or obj.__dict__.get("_finevo_closed"):
                continue
            original = obj.__dict__["__getattr__"]

            def __getattr__(self: Any, attr: str, _original: Any = original) -> Any:
                if attr[:2] == "__" and attr[-2:] == "__":
                    raise AttributeError(attr)
                return _original(self, attr)

            obj.__getattr__ = __getattr__  # type: ignore[attr-defined]
            obj._finevo_closed = True  # type: ignore[attr-defined]


def parse_everything(provider: Any) -> None:
    """Parse every recorded frame now, so children inherit the parsed caches: each symbol's bars
    (raw, adjusted and pending rows: through ``history_view`` where the provider has one, which
    copies nothing), its quote and its statements."""
    bars = getattr(provider, "history_view", None) or provider.history
    for symbol in provider.symbols():
        for read in (bars, provider.info):
            with contextlib.suppress(Exception):  # not recorded for this symbol: the shim will say so to the tool
                read(symbol)
        for freq in ("yearly", "quarterly"):
            with contextlib.suppress(Exception):
                provider.income_stmt(symbol, freq)


def _missing_yfinance() -> types.ModuleType:
    module = types.ModuleType("yfinance")
    module.__doc__ = "Placeholder: this sandbox was created without a market snapshot."

    def __getattr__(name: str) -> Any:
        raise RuntimeError("no market snapshot is loaded in this sandbox (yfinance unavailable)")

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module


def preload_libraries() -> JSONObject:
    """Import numpy/pandas single-threaded and warm them up; no market data yet."""
    for key, value in BLAS_ENV.items():
        os.environ[key] = value
    import numpy  # noqa: F401
    import pandas  # noqa: F401

    info: JSONObject = {"snapshot": None}
    try:
        _warm_up_pandas()
    except Exception as exc:  # a pandas change must not take the sandbox down
        info["warm_up_error"] = f"{type(exc).__name__}: {exc}"
    _close_label_attribute_routes()
    return info


def load_world(snapshot_dir: str | None) -> JSONObject:
    """Load and parse one snapshot and install the yfinance replay shim over it (no snapshot: a
    shim that says there is no market data)."""
    if not snapshot_dir:
        sys.modules["yfinance"] = _missing_yfinance()
        return {"snapshot": None}
    from finevo.market.replay import install
    from finevo.market.snapshot import load_snapshot

    provider = load_snapshot(snapshot_dir)
    parse_everything(provider)
    install(provider)
    return {"snapshot": str(snapshot_dir), "as_of": str(getattr(provider, "as_of", ""))}


def preload(snapshot_dir: str | None) -> JSONObject:
    """Import numpy/pandas single-threaded, load the snapshot, install the yfinance replay shim."""
    info = preload_libraries()
    info.update(load_world(snapshot_dir))
    return info
