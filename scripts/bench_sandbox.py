"""Per-execution overhead of the sandbox backends, side by side, in one run.

    python scripts/bench_sandbox.py [--runs N] [--cold-runs N] [--data DIR|none] [--corpus]

Measures, for a trivial tool (``def f(x): return x + 1``):

* cold   -- a fresh ``python -c "import pandas, numpy"`` subprocess (what every execution would
            cost without warm workers),
* subprocess -- the subprocess backend (cold child + full confinement),
* warm   -- the warm backend (fork of a preloaded worker + full confinement),

Both sandboxes load the bundled market snapshot and the yfinance replay shim by default, as the
gate's do (``--data none`` measures them without it), so the worker RSS is the real one. Printed:
median and p90 wall-clock milliseconds, the warm speed-up over cold, and the resident
memory of a warm worker, with the targets (warm median <= 15 ms, >= 20x faster than cold,
worker RSS <= 200 MB, with every kernel layer -- Landlock, seccomp -- active in the children).

Also measured: the containment self-test the gate runs at start (median of 5, target < 1 s), and
with ``--corpus`` (run from a source checkout, as root) the policy-off containment counts of the
whole payload corpus in each setting -- root, unprivileged, unprivileged without ``unshare`` --
using the test suite's setting launcher: how many payloads a kernel layer refused (by layer), how
many the limits stopped, and how many breached a canary (must be 0).

It then prints the cost of the result boundary (:func:`print_boundary_costs`): normalising
typical return values in the child, a warm execution returning a Series instead of a list, and
the frozen clock's C-level redirection (once per worker start, and per ``datetime64("today")``).
Exit 0 when every target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from finevo.paths import snapshot_dir
from finevo.sandbox import Limits, create_sandbox
from finevo.sandbox.backends import WarmSandbox
from finevo.sandbox.preload import BLAS_ENV
from finevo.sandbox.selftest import run_selftest

TRIVIAL = "def f(x: int) -> int:\n    return x + 1\n"
TARGET_WARM_MS = 15.0
TARGET_SPEEDUP = 20.0
TARGET_RSS_MB = 200.0
TARGET_SELFTEST_S = 1.0


def _time(call: Callable[[], None], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000.0)
    return samples


def _p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="warm executions (default 50)")
    parser.add_argument("--cold-runs", type=int, default=10, help="cold / subprocess executions (default 10)")
    parser.add_argument("--data", default=str(snapshot_dir()),
                        help="market snapshot for the sandboxes, or 'none' (default: the bundled snapshot)")
    parser.add_argument("--corpus", action="store_true",
                        help="also count policy-off containment of the payload corpus in every setting")
    args = parser.parse_args(argv)
    data = None if args.data.strip().lower() == "none" else args.data
    limits = Limits(timeout_s=60.0)

    def cold() -> None:
        subprocess.run([sys.executable, "-c", "import numpy, pandas"], check=True, env=dict(BLAS_ENV))

    rows: list[tuple[str, list[float]]] = [("cold python -c (pandas+numpy)", _time(cold, args.cold_runs))]
    with create_sandbox(data, backend="subprocess", policy=True) as sub:
        def run_sub() -> None:
            result = sub.run(TRIVIAL, "f", {"x": 1}, limits)
            assert result.ok, result
        rows.append(("subprocess backend", _time(run_sub, args.cold_runs)))
    with create_sandbox(data, backend="warm", policy=True) as warm:
        assert isinstance(warm, WarmSandbox)

        def run_warm() -> None:
            result = warm.run(TRIVIAL, "f", {"x": 1}, limits)
            assert result.ok, result
        run_warm()  # the first child is forked while the worker starts
        rows.append(("warm backend", _time(run_warm, args.runs)))
        rss_mb = warm.worker_rss_kb() / 1024.0
        layers = warm.layers()
        selftests = [run_selftest(warm) for _ in range(5)]

    print(f"snapshot: {data or 'none (no market data, no replay shim)'}")
    print(f"{'path':32} {'runs':>5} {'median ms':>10} {'p90 ms':>9}")
    for name, samples in rows:
        print(f"{name:32} {len(samples):5d} {statistics.median(samples):10.1f} {_p90(samples):9.1f}")
    cold_median = statistics.median(rows[0][1])
    warm_median = statistics.median(rows[-1][1])
    speedup = cold_median / warm_median if warm_median else float("inf")
    print(f"warm speed-up over cold: {speedup:.1f}x   warm worker RSS: {rss_mb:.1f} MB")
    print("active layers: " + ", ".join(k for k, v in layers.items() if v)
          + ("   inactive: " + ", ".join(k for k, v in layers.items() if not v) if not all(layers.values()) else ""))
    selftest_s = statistics.median(t.duration_s for t in selftests)
    print(f"containment self-test: median {selftest_s * 1000:.0f} ms over {len(selftests)} runs, "
          f"{len(selftests[0].probes)} probes, ok={all(t.ok for t in selftests)}")
    print_boundary_costs(data, args.runs)
    checks = [(f"warm median <= {TARGET_WARM_MS:g} ms", warm_median <= TARGET_WARM_MS),
              (f"warm >= {TARGET_SPEEDUP:g}x faster than cold", speedup >= TARGET_SPEEDUP),
              (f"worker RSS <= {TARGET_RSS_MB:g} MB", rss_mb <= TARGET_RSS_MB),
              ("kernel layers (landlock, seccomp) active in every child", layers["landlock"] and layers["seccomp"]),
              (f"containment self-test ok and < {TARGET_SELFTEST_S:g} s",
               all(t.ok for t in selftests) and selftest_s < TARGET_SELFTEST_S)]
    if args.corpus:
        checks.append(("no canary breached by any payload with the policy off", _corpus_counts() == 0))
    for label, met in checks:
        print(f"  [{'met' if met else 'MISSED'}] {label}")
    return 0 if all(met for _, met in checks) else 1


def _corpus_counts() -> int:
    """Print policy-off containment counts per setting; return the number of breaches."""
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:  # the setting launcher is the test suite's (a source checkout)
        sys.path.insert(0, root)
    from runner.inputs.corpus import load_payloads
    from tests.finevo.sandbox.kernel_settings import SETTINGS, Scene, run_setting, setting_unavailable

    payloads = load_payloads()
    limits = {"timeout_s": 5.0, "cpu_s": 2, "memory_mb": 1024}
    breaches = 0
    print(f"policy-off containment of {len(payloads)} payloads (static policy and audit hook off):")
    for setting in SETTINGS:
        reason = setting_unavailable(setting)
        if reason:
            print(f"  {setting:26} skipped: {reason}")
            continue
        scene = Scene.create()
        try:
            started = time.perf_counter()
            layers, results = run_setting(setting, payloads, scene, policy="off", limits=limits)
            elapsed = time.perf_counter() - started
        finally:
            scene.close()
        by_layer: dict[str, int] = {}
        broke = 0
        for record in results:
            if record["leaked"] or record["contacts"] or record["canary_changed"] or record["leftovers"] \
                    or record["restarts"]:
                broke += 1
            stopped = record["status"] in ("blocked", "killed", "timeout")
            key = record["layer"] if stopped else "ran or raised, nothing reached"
            by_layer[str(key)] = by_layer.get(str(key), 0) + 1
        breaches += broke
        active = [k for k in ("landlock", "seccomp", "netns", "mountns", "ipcns", "uid") if layers["layers"].get(k)]
        print(f"  {setting:26} layers {'+'.join(active)}: "
              + ", ".join(f"{k} {v}" for k, v in sorted(by_layer.items(), key=lambda kv: -kv[1]))
              + f"; breaches {broke} ({elapsed:.0f} s)")
    return breaches


# --------------------------------------------------------------------------- the result boundary
_SERIES = ("import numpy as np\nimport pandas as pd\ndef f(n: int):\n"
           "    s = pd.Series(np.linspace(1.0, 2.0, n), index=pd.date_range('2024-01-01', periods=n))\n")
SERIES_TOOL = _SERIES + "    return s\n"                    # normalised at the boundary
LIST_TOOL = _SERIES + "    return [float(x) for x in s]\n"  # converted by the tool itself


def _micro(call: Callable[[], object], repeat: int) -> float:
    """Median microseconds of one ``call`` (batches of ``repeat``)."""
    samples = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(repeat):
            call()
        samples.append((time.perf_counter() - start) / repeat * 1e6)
    return statistics.median(samples)


def print_boundary_costs(data: str | None, runs: int) -> None:
    """Normalisation and frozen-clock costs, printed as lines."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    import numpy as np
    import pandas as pd

    from finevo.market import frozen_clock
    from finevo.normalize import TOOL, normalize

    days = pd.date_range("2024-01-01", periods=250, freq="B", tz="America/New_York")
    values: list[tuple[str, object]] = [
        ("float", 1.5),
        ("numpy.bool_", np.bool_(True)),
        ("dict of 3 numpy.float64", {"upper": np.float64(1), "middle": np.float64(2), "lower": np.float64(3)}),
        ("Series of 20 by dates", pd.Series(np.arange(20.0), index=days[:20])),
        ("list of 250 floats", [float(x) for x in range(250)]),
        ("Series of 250 by dates", pd.Series(np.arange(250.0), index=days)),
        ("12 records with Timestamps", [{"date": d, "amount": np.float64(0.24)} for d in days[:12]]),
    ]
    print("result boundary: normalisation in the child (median per value)")
    for name, value in values:
        print(f"  {name:32} {_micro(lambda v=value: normalize(v, TOOL), 200):8.1f} us")
    limits = Limits(timeout_s=60.0)
    with create_sandbox(data, backend="warm", policy=True) as warm:
        def returning(code: str) -> Callable[[], None]:
            def call() -> None:
                result = warm.run(code, "f", {"n": 250}, limits)
                assert result.ok and len(result.value) == 250, result
            return call

        returning(LIST_TOOL)()
        as_list = _time(returning(LIST_TOOL), runs)
        as_series = _time(returning(SERIES_TOOL), runs)
    print(f"  warm execution, 250 values: converted by the tool {statistics.median(as_list):.1f} ms, "
          f"returned as a Series {statistics.median(as_series):.1f} ms (median of {runs})")

    was_frozen = frozen_clock.frozen_at()
    real_today = _micro(lambda: np.datetime64("today"), 2000)
    start = time.perf_counter()
    frozen_clock.freeze(dt.datetime(2024, 12, 31, 16, tzinfo=ZoneInfo("America/New_York")))
    freeze_ms = (time.perf_counter() - start) * 1000.0
    patched = frozen_clock.c_clock_patched()
    frozen_today = _micro(lambda: np.datetime64("today"), 2000)
    frozen_index = _micro(lambda: pd.DatetimeIndex(["today"]), 200)
    frozen_clock.unfreeze()
    if was_frozen is not None:
        frozen_clock.freeze(was_frozen)
    layers = ", ".join(f"{name}: {'on' if on else 'OFF'}" for name, on in patched.items())
    print(f"frozen clock: freeze() incl. C redirection {freeze_ms:.1f} ms once per worker start ({layers}); "
          "per execution: one putenv(TZ) in the child")
    real_clock = _micro(frozen_clock._REAL_DATETIME.now, 20000)  # before freezing: the real clock
    frozen_clock.freeze(dt.datetime(2024, 12, 31, 16, tzinfo=ZoneInfo("America/New_York")))
    redirected_clock = _micro(frozen_clock._REAL_DATETIME.now, 20000)  # the C class, C clock
    frozen_clock.unfreeze()
    if was_frozen is not None:
        frozen_clock.freeze(was_frozen)
    print(f"  datetime.now() in C: real clock {real_clock * 1000:.0f} ns, through the "
          f"redirected clock_gettime {redirected_clock * 1000:.0f} ns")
    print(f"  numpy.datetime64('today'): real clock {real_today:.2f} us, frozen {frozen_today:.2f} us; "
          f"pd.DatetimeIndex(['today']) frozen {frozen_index:.1f} us")


if __name__ == "__main__":
    sys.exit(main())
