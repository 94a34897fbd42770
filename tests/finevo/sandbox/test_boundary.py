"""What comes back from a tool, through a real sandbox: normalised values, truncated output, the
frozen clock in C code, and a supervisor that turns anything a hostile child sends into a failure
of that tool (never a crashed worker, an external error or a leaked directory)."""

from __future__ import annotations

import json
import os
import platform
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from finevo.market.snapshot import SnapshotOrigin, write_snapshot
from finevo.market.synthetic import LABEL, generate
from finevo.paths import snapshot_dir
from finevo.sandbox import Limits, create_sandbox, seccomp
from finevo.sandbox.backends import SubprocessSandbox, WarmSandbox, _BaseSandbox
from finevo.sandbox.supervise import CONTROL_CAP, MAX_CONTROL_RECORDS

pytestmark = pytest.mark.timeout(600)
FAST = Limits(timeout_s=20.0, cpu_s=10, memory_mb=1536)
BUNDLED_AS_OF = "2024-12-31"


# A subprocess run starts a fresh interpreter (~0.5 s of CPU each): that backend's cases are slow here, and
# the inner loop keeps the warm backend's (the gate's default).
@pytest.fixture(scope="module", params=["warm", pytest.param("subprocess", marks=pytest.mark.slow)])
def guarded(request: pytest.FixtureRequest) -> Iterator[_BaseSandbox]:
    """The sandbox as the gate uses it: policy on, bundled snapshot."""
    with create_sandbox(snapshot_dir(), backend=request.param, policy=True) as box:
        yield box


@pytest.fixture(scope="module")
def open_warm() -> Iterator[WarmSandbox]:
    """Policy off: the runtime layers alone, as if a tool got past the policy."""
    with WarmSandbox(None, policy=False) as box:
        yield box


# --------------------------------------------------------------------------- normalisation
CORRECT_TOOL = '''
import numpy as np
import pandas as pd
import yfinance as yf


def values(symbol: str) -> dict:
    close = yf.Ticker(symbol).history(period="1y")["Close"]
    ma = close.rolling(5).mean()
    divs = yf.Ticker(symbol).dividends
    return {
        "signal": ma.iloc[-1] > ma.iloc[-2] and close.iloc[-1] < close.max(),
        "ma_series": ma.tail(20),
        "ma_list": ma.tail(20).tolist(),
        "ma_array": ma.tail(5).to_numpy(),
        "last_value": close.iloc[-1],
        "last_value_float": float(close.iloc[-1]),
        "latest_day": close.index[-1],
        "latest_day_text": str(close.index[-1].date()),
        "peak_day": close.idxmax(),
        "peak_day_text": str(close.idxmax().date()),
        "records": [{"date": d, "amount": a} for d, a in divs.tail(3).items()],
        "records_text": [{"date": str(d.date()), "amount": float(a)} for d, a in divs.tail(3).items()],
        "by_symbol": pd.Series({symbol: close.iloc[-1]}),
        "pair": (np.int64(1), np.float32(0.5)),
        "count": np.int64(len(close)),
    }
'''


def test_correct_tools_returning_numpy_and_pandas_values_pass(guarded: _BaseSandbox) -> None:
    result = guarded.run(CORRECT_TOOL, "values", {"symbol": "AAPL"}, FAST)
    assert result.status == "ok", result
    value = result.value
    assert type(value["signal"]) is bool
    assert value["ma_series"] == value["ma_list"] and len(value["ma_list"]) == 20
    assert value["ma_array"] == value["ma_list"][-5:]
    assert type(value["last_value"]) is float and value["last_value"] == value["last_value_float"]
    assert value["latest_day"] == value["latest_day_text"] == BUNDLED_AS_OF
    assert value["peak_day"] == value["peak_day_text"]
    assert value["records"] == value["records_text"] and len(value["records"]) == 3
    assert value["by_symbol"] == {"AAPL": value["last_value"]}
    assert value["pair"] == [1, 0.5] and type(value["count"]) is int


@pytest.mark.parametrize(("body", "error_type"), [
    ("return float('nan')", "ResultNotFinite"),
    ("return {'k': float('inf')}", "ResultNotFinite"),
    ("import pandas as pd\n    return pd.DataFrame({'a': [1.0]})", "ResultShape"),
    ("return {1.5, 2.5}", "ResultShape"),
    ("x = []\n    for _ in range(990):\n        x = [x]\n    return x", "ResultTooDeep"),
    ("x = []\n    for _ in range(200000):\n        x = [x]\n    return x", "ResultTooDeep"),
    ("return [0.5] * 2_000_000", "ResultTooLarge"),
])
def test_values_that_cannot_cross_fail_the_tool(guarded: _BaseSandbox, body: str, error_type: str) -> None:
    result = guarded.run(f"def f():\n    {body}\n", "f", {}, FAST)
    assert result.status == "crashed" and result.layer == "result", result
    assert result.error_type == error_type
    assert result.error_message and "value" in result.error_message


# --------------------------------------------------------------------------- output
def test_a_correct_tool_printing_10_mb_passes_with_its_output_cut(guarded: _BaseSandbox) -> None:
    code = ("def f(n: int) -> float:\n    print('FIRST LINE')\n    for i in range(n):\n"
            "        print('%09d' % i + 'x' * 90)\n    print('LAST LINE')\n    return 2.5\n")
    lines = 100_000  # 100 bytes a line: 10 MB
    cap = 65536
    result = guarded.run(code, "f", {"n": lines}, Limits(timeout_s=60, cpu_s=30, output_bytes=cap))
    assert result.status == "ok" and result.value == 2.5, result
    total = len("FIRST LINE\n") + lines * 100 + len("LAST LINE\n")
    cut = result.details["output_cut"]["stdout"]
    marker = f"\n[... {cut} bytes cut ...]\n"
    assert result.stdout.startswith("FIRST LINE\n") and result.stdout.endswith("LAST LINE\n")
    assert marker in result.stdout
    kept = len(result.stdout.encode()) - len(marker)
    assert kept + cut == total and cap - 64 <= len(result.stdout.encode()) <= cap


def test_stderr_is_cut_the_same_way(open_warm: WarmSandbox) -> None:
    code = ("import pandas as pd\ndef f() -> int:\n    data = b'E' * 5_000_000 + b'END'\n"
            "    while data:\n        data = data[pd.io.common.os.write(2, data):]\n    return 1\n")
    result = open_warm.run(code, "f", {}, Limits(timeout_s=60, cpu_s=30, output_bytes=1000))
    assert result.status == "ok" and result.value == 1, result
    assert result.stderr.startswith("E" * 400) and result.stderr.endswith("END")
    cut = result.details["output_cut"]["stderr"]
    assert len(result.stderr) - len(f"\n[... {cut} bytes cut ...]\n") + cut == 5_000_003
    assert len(result.stderr) <= 1000


# --------------------------------------------------------------------------- the clock
CLOCK_TOOL = '''
import datetime
import numpy as np
import pandas as pd


def today() -> dict:
    return {
        "np_today": str(np.datetime64("today")),
        "np_now": str(np.datetime64("now", "D")),
        "np_array": str(np.array(["today"], dtype="datetime64[D]")[0]),
        "np_array_now": str(np.array(["now"], dtype="datetime64[s]").astype("datetime64[D]")[0]),
        "np_astype": str(np.array(["today"]).astype("datetime64[D]")[0]),
        "pd_index": str(pd.DatetimeIndex(["today"])[0].date()),
        "pd_series": str(pd.to_datetime(pd.Series(["now"]))[0].date()),
        "pd_astype_utc": str(pd.Series(["today"]).astype("datetime64[ns, UTC]")[0].date()),
        "pd_timestamp": str(pd.Timestamp("today").date()),
        "pd_period": str(pd.Period.now("D")),
        "datetime": str(datetime.datetime.now().date()),
        "date": str(datetime.date.today()),
        "fromtimestamp": str(datetime.datetime.fromtimestamp(pd.Timestamp.now(tz="UTC").timestamp()).date()),
    }
'''


def _clock_readings(box: _BaseSandbox) -> dict[str, str]:
    result = box.run(CLOCK_TOOL, "today", {}, FAST)
    assert result.status == "ok", result
    return dict(result.value)


def test_every_today_reads_the_as_of_date(guarded: _BaseSandbox) -> None:
    readings = _clock_readings(guarded)
    assert readings == dict.fromkeys(readings, BUNDLED_AS_OF)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["warm", "subprocess"])
def test_the_clock_follows_the_snapshot(tmp_path: Path, backend: str) -> None:
    as_of = date(2023, 6, 30)
    write_snapshot(tmp_path / "snap", generate(),
                   SnapshotOrigin(as_of=as_of, synthetic=True, label=LABEL, generator="test", generator_version="1"))
    with create_sandbox(tmp_path / "snap", backend=backend, policy=True) as box:
        readings = _clock_readings(box)
    assert readings == dict.fromkeys(readings, as_of.isoformat())


# --------------------------------------------------------------------------- a hostile child
def _forge(payload: bytes) -> str:
    """A tool (run with the policy off) writing ``payload`` on the control descriptor itself (3 in a
    warm worker's child; any open descriptor in a cold child) and leaving before the harness can."""
    return (f"import pandas as pd\ndef f():\n    os = pd.io.common.os\n    for fd in range(3, 64):\n"
            f"        try:\n            os.write(fd, {payload!r})\n        except OSError:\n"
            f"            pass\n    os._exit(0)\n")


RESULT = b'{"kind": "result", "outcome": "ok", "value": '
HOSTILE_RECORDS: dict[str, bytes] = {
    "NaN": RESULT + b"NaN}\n",
    "Infinity": RESULT + b"[1, -Infinity]}\n",
    "number beyond float range": RESULT + b"1e999}\n",
    "integer of 5000 digits": RESULT + b"1" * 5000 + b"}\n",
    "nested just under the recursion limit": RESULT + b"[" * 990 + b"]" * 990 + b"}\n",
    "nested far beyond it": RESULT + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
    "garbage bytes": b"\xff\xfe\x00garbage\x80\n",
    "invalid UTF-8 inside a string": RESULT + b'"\xc3\x28"}\n',
    "truncated record": RESULT + b'{"a": [1, 2',
    "two results": RESULT + b"1}\n" + RESULT + b"2}\n",
    "a list, not a record": b"[1, 2, 3]\n",
    "unknown outcome": b'{"kind": "result", "outcome": "maybe", "value": 1}\n',
    "ill-typed exception fields": (b'{"kind": "result", "outcome": "exception", "error_type": {"a": [1]}, '
                                   b'"error_message": [1, 2], "traceback": 5, "line": "x", "col": 1e300, '
                                   b'"errno": "EMFILE", "memory_error": "yes"}\n'),
    "forged harness error": b'{"kind": "harness_error", "error_type": ["x"], "error_message": {"y": 1}}\n',
    "many refusals": b'{"kind": "refused", "event": ["e"], "detail": {"d": 1}}\n' * 50_000,
    "keys that clean alike": RESULT + b'{"\\ud800": 1, "\\udfff": 2}}\n',
}


@pytest.mark.parametrize("name", list(HOSTILE_RECORDS))
def test_anything_on_the_control_pipe_is_a_failure_of_that_tool(open_warm: WarmSandbox, name: str) -> None:
    restarts = open_warm.restarts
    result = open_warm.run(_forge(HOSTILE_RECORDS[name]), "f", {}, FAST)
    assert result.status != "ok", result
    assert result.status in ("crashed", "exception", "blocked")
    json.dumps(result.to_dict(), allow_nan=False).encode("utf-8")  # a report can hold it
    assert open_warm.restarts == restarts  # the worker did not fall over
    assert open_warm.run("def g():\n    return 3\n", "g", {}, FAST).value == 3


def test_a_lone_surrogate_never_reaches_a_report(open_warm: WarmSandbox) -> None:
    result = open_warm.run(_forge(RESULT + b'"\\ud800"}\n'), "f", {}, FAST)
    json.dumps(result.to_dict(), allow_nan=False).encode("utf-8")


@pytest.mark.slow
def test_a_control_flood_is_cut_and_fails_the_tool(open_warm: WarmSandbox) -> None:
    result = open_warm.run(_forge(b"[" * (CONTROL_CAP + 10)), "f", {}, FAST)
    assert result.status == "killed" and result.layer == "output-cap"


def test_a_flood_of_tiny_records_is_cut_and_fails_the_tool(open_warm: WarmSandbox) -> None:
    """Millions of two-byte records stay under the byte cap; decoding each would cost the
    supervisor seconds and gigabytes after the tool's clock stopped. The record count is capped
    too: the tool is killed, the worker carries on."""
    restarts = open_warm.restarts
    result = open_warm.run(_forge(b"1\n" * (4 * MAX_CONTROL_RECORDS)), "f", {}, FAST)
    assert (result.status, result.layer) == ("killed", "output-cap"), result
    assert f"more than {MAX_CONTROL_RECORDS} records" in str(result.error_message)
    assert open_warm.restarts == restarts
    assert open_warm.run("def g():\n    return 3\n", "g", {}, FAST).value == 3


def test_a_tool_refused_again_and_again_is_still_refused(open_warm: WarmSandbox) -> None:
    """More audit-hook refusals than the record cap (the hook writes one per refused call): the
    run is still the hook's block, not a flood."""
    code = (f"def f() -> int:\n    for _ in range({MAX_CONTROL_RECORDS + 500}):\n        try:\n"
            "            open('/etc/shadow')\n        except Exception:\n            pass\n    return 1\n")
    result = open_warm.run(code, "f", {}, FAST)
    assert (result.status, result.layer) == ("blocked", "audit-hook"), result


@pytest.mark.slow
@pytest.mark.parametrize("backend", [WarmSandbox, SubprocessSandbox], ids=["warm", "subprocess"])
def test_a_tool_cannot_lower_the_limits_whose_signal_is_evidence(backend: type[_BaseSandbox]) -> None:
    """Lowering its own CPU or file-size limit would let a tool be "stopped by the kernel's limit
    signal" after a second of CPU or a byte (the layers below the policy): the filter answers
    EPERM to setting any limit but the open-file one, which the tool may read and lower."""
    code = ("import errno, resource\n\n\ndef f() -> dict:\n    seen = {}\n"
            "    for name in ('RLIMIT_CPU', 'RLIMIT_FSIZE', 'RLIMIT_AS', 'RLIMIT_NOFILE'):\n"
            "        which = getattr(resource, name)\n        soft, hard = resource.getrlimit(which)\n"
            "        try:\n            resource.setrlimit(which, (min(soft, 16), hard))\n"
            "            seen[name] = 'set'\n        except ValueError:  # how CPython reports EPERM here\n"
            "            seen[name] = 'EPERM'\n        except OSError as exc:\n"
            "            seen[name] = errno.errorcode[exc.errno]\n    return seen\n")
    with backend(None, policy=False) as box:
        result = box.run_kernel_only(code, "f", {}, FAST)
    assert result.status == "ok", result
    assert result.value == {"RLIMIT_CPU": "EPERM", "RLIMIT_FSIZE": "EPERM", "RLIMIT_AS": "EPERM",
                            "RLIMIT_NOFILE": "set"}


@pytest.mark.slow
def test_a_tool_cannot_hold_the_signal_queue_its_user_shares() -> None:
    """The kernel counts queued signals per user: a tool that queues blocked real-time signals to
    itself (the only process it may signal) under the host's default limit holds every slot of its
    user, and another process of that user gets EAGAIN from ``sigqueue`` while the tool runs. The
    child's own limit stops it after a few."""
    from finevo.sandbox.confine import SIGPENDING

    code = ("import ctypes, errno, os, resource, signal\n\n\ndef f() -> dict:\n"
            "    libc = ctypes.CDLL(None, use_errno=True)\n"
            "    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])\n    queued = 0\n"
            "    for _ in range(5000):\n"
            "        if libc.sigqueue(os.getpid(), int(signal.SIGRTMIN), 0) != 0:\n"
            "            return {'queued': queued, 'error': errno.errorcode[ctypes.get_errno()],\n"
            "                    'limit': list(resource.getrlimit(resource.RLIMIT_SIGPENDING))}\n"
            "        queued += 1\n"
            "    return {'queued': queued, 'limit': list(resource.getrlimit(resource.RLIMIT_SIGPENDING))}\n")
    with WarmSandbox(None, policy=False) as box:
        result = box.run_kernel_only(code, "f", {}, FAST)
    assert result.status == "ok", result
    assert result.value["limit"] == [SIGPENDING, SIGPENDING], result.value
    assert result.value.get("error") == "EAGAIN" and result.value["queued"] <= SIGPENDING, result.value


@pytest.mark.slow
def test_the_cold_backend_reads_a_nan_record_as_a_failure() -> None:
    with SubprocessSandbox(None, policy=False) as box:
        result = box.run(_forge(HOSTILE_RECORDS["NaN"]), "f", {}, FAST)
    assert result.status == "crashed" and result.layer == "result"


# --------------------------------------------------------------------------- working directories
def _worker_dirs(pid: int) -> list[str]:
    root = tempfile.gettempdir()
    try:  # a worker in its own mount namespace keeps its directories on a private /tmp: look there
        if os.stat(f"/proc/{pid}/ns/mnt").st_ino != os.stat("/proc/self/ns/mnt").st_ino:
            root = f"/proc/{pid}/root/tmp"
    except OSError:
        return []  # the worker is gone, and its private /tmp with it
    try:
        names = os.listdir(root)
    except OSError:
        return []
    return [os.path.join(root, n) for n in names if n.startswith(f"finevo-sbx-{pid}-")]


def _gone(paths: list[str], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while any(os.path.lexists(p) for p in paths) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not any(os.path.lexists(p) for p in paths)


def _wait_for(predicate: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_a_1200_level_tree_is_removed(open_warm: WarmSandbox) -> None:
    """The worker's clean-up of a working directory holding a tree deeper than Python's recursion
    limit (read-only directories, a link out of it): built from outside while the tool waits, since
    the run-time guard refuses the tool's own mkdir."""
    code = ("import pandas as pd\ndef f() -> str:\n    os = pd.io.common.os\n"
            "    open('ready.txt', 'w').write('x')\n    for _ in range(3000):\n"
            "        if os.path.exists('go.txt'):\n            return os.getcwd()\n"
            "        for _ in range(200_000):\n            pass\n    return 'never told to go'\n")
    pid = int(open_warm.worker_info["pid"])
    restarts = open_warm.restarts
    outcome: list[object] = []
    runner = threading.Thread(target=lambda: outcome.append(open_warm.run(code, "f", {},
                                                                          Limits(timeout_s=120, cpu_s=100))))
    runner.start()
    _wait_for(lambda: any(os.path.exists(os.path.join(d, "ready.txt")) for d in _worker_dirs(pid)), 60,
              "the tool never started")
    workdir = next(d for d in _worker_dirs(pid) if os.path.exists(os.path.join(d, "ready.txt")))
    outside = tempfile.mkdtemp()
    Path(outside, "keep.txt").write_text("keep")
    top = os.open(workdir, os.O_RDONLY)
    current = top
    for level in range(1200):
        os.mkdir("d", dir_fd=current)
        inner = os.open("d", os.O_RDONLY, dir_fd=current)
        if level % 300 == 0:
            os.symlink(outside, "out", dir_fd=inner)
            os.chmod("d", 0o500, dir_fd=current)  # read-only directory
        if current != top:
            os.close(current)
        current = inner
    os.close(current)
    os.close(top)
    Path(workdir, "go.txt").write_text("go")
    runner.join(120)
    assert outcome and outcome[0].status == "ok", outcome  # type: ignore[attr-defined]
    assert _gone([workdir], 120.0)
    assert Path(outside, "keep.txt").read_text() == "keep"  # the link was removed, not followed
    assert open_warm.restarts == restarts


@pytest.mark.slow
def test_a_killed_workers_directories_are_removed() -> None:
    with WarmSandbox(None, policy=False) as box:
        first = int(box.worker_info["pid"])
        _wait_for(lambda: _worker_dirs(first), 30, "no spare child's directory")  # its spare, waiting
        os.kill(first, signal.SIGKILL)
        assert box.run("def g():\n    return 3\n", "g", {}, FAST).value == 3  # restarted
        assert box.restarts == 1 and not _worker_dirs(first)

        # killed while a child is running in its directory
        second = int(box.worker_info["pid"])
        code = ("def f() -> int:\n    open('busy.txt', 'w').write('x')\n    while True:\n"
                "        open('more.txt', 'a').write('x')\n")
        outcome: list[object] = []
        runner = threading.Thread(target=lambda: outcome.append(box.run(code, "f", {}, Limits(timeout_s=3))))
        runner.start()
        _wait_for(lambda: any(os.path.exists(os.path.join(d, "busy.txt")) for d in _worker_dirs(second)),
                  30, "the tool never started")
        os.kill(second, signal.SIGKILL)
        runner.join(120)
        assert outcome, "the run did not finish"
        assert _gone(_worker_dirs(second))


@pytest.mark.slow
def test_what_cannot_be_a_record_is_never_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decoding is the supervisor's cost after the tool's clock stopped: a line that could hold more
    values than a result may, a long record that is not the result, and everything after the first
    garbage are refused unread; a record of a kind no harness writes is garbage."""
    from finevo.limits import MAX_ITEMS
    from finevo.sandbox import supervise

    decoded: list[int] = []
    real = supervise.decode_record

    def counting(line: bytes) -> object:
        decoded.append(len(line))
        return real(line)

    monkeypatch.setattr(supervise, "decode_record", counting)
    started = b'{"kind": "started", "audit_hook": true}'
    flood = RESULT + b"[" + b"{}," * (MAX_ITEMS + 200_000) + b"1]}"
    assert supervise._records(b"\n".join([started, flood, started])) == [
        {"kind": "started", "audit_hook": True}, {"kind": "garbage"}]
    assert max(decoded) < 100  # the flood was never decoded, nor anything after it
    decoded.clear()
    long_refusal = b'{"kind": "refused", "event": "open", "detail": "' + b"x" * 20_000 + b'"}'
    assert supervise._records(long_refusal)[-1] == {"kind": "garbage"} and not decoded
    assert supervise._records(b'{"kind": "note", "text": "hello"}\n' + started) == [{"kind": "garbage"}]
    assert supervise._records(RESULT + b"[" + b"1," * 1000 + b"1]}")[0]["value"] == [1] * 1001
    # the largest value the harness sends is read: a list of almost a million empty containers
    largest = supervise._records(started + b"\n" + RESULT + b"[" + b"{}," * (MAX_ITEMS - 100) + b"{}]}")
    assert [r["kind"] for r in largest] == ["started", "result"] and len(largest[1]["value"]) == MAX_ITEMS - 99
    # small records each, too many values in all: the budget is the channel's, not a line's
    decoded.clear()
    refusal = b'{"kind": "refused", "event": "open", "detail": [' + b"{}," * 1300 + b'1]}'
    records = supervise._records(b"\n".join([started] + [refusal] * 2000))
    assert records[-1] == {"kind": "garbage"} and len(records) < 2000
    assert sum(decoded) < 3 * (2 * MAX_ITEMS + 200_000)  # stopped once a result's worth was read


def test_no_kernel_limit_signal_comes_at_the_tools_will(open_warm: WarmSandbox) -> None:
    """The layers below the policy: a new process whose exit signal is SIGXCPU (the kernel would
    send it when that process ends) is refused, and a SIGXFSZ the tool brought on itself (it
    restored the signal the interpreter ignores, then wrote one byte past the limit's offset) is
    no evidence of the file-size limit."""
    _, nr = seccomp._ARCH[platform.machine()]
    clone = ("import ctypes, os, time\n\n\ndef f(sig: int) -> str:\n"
             "    libc = ctypes.CDLL(None, use_errno=True)\n    libc.syscall.restype = ctypes.c_long\n"
             f"    pid = libc.syscall({nr['clone']}, sig, 0, 0, 0, 0)\n"
             "    if pid == 0:\n        os._exit(0)\n    time.sleep(1)\n    return f'forked {pid}'\n")
    forked = open_warm.run_kernel_only(clone, "f", {"sig": int(signal.SIGXCPU)},
                                       Limits(timeout_s=20.0, cpu_s=10, memory_mb=1536, nproc=2))
    assert (forked.status, forked.layer) == ("blocked", "seccomp"), forked
    sparse = ("import signal\n\n\ndef f() -> str:\n    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n"
              "    with open('big', 'wb') as handle:\n        handle.seek(9 * 1024 * 1024)\n"
              "        handle.write(b'!')\n    return 'written'\n")
    result = open_warm.run_kernel_only(sparse, "f", {}, FAST)
    assert (result.status, result.layer) == ("killed", "rlimit-fsize"), result
    assert "evidence" not in result.details, result.details
