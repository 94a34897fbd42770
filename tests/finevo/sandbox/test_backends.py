"""Behaviour of both sandbox backends: results, limits, isolation, clean-up, concurrency."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from finevo.errors import SandboxUnavailable
from finevo.sandbox import Limits, confine, create_sandbox
from finevo.sandbox.backends import WarmSandbox, _BaseSandbox

from .canaries import group_members

pytestmark = pytest.mark.timeout(300)
FAST = Limits(timeout_s=5.0, cpu_s=3, memory_mb=1024)


# A subprocess run starts a fresh interpreter (0.3-1.4 s each): that backend's cases are slow here, and the
# inner loop keeps the warm backend's (the gate's default).
@pytest.fixture(scope="module", params=["warm", pytest.param("subprocess", marks=pytest.mark.slow)])
def sandbox(request: pytest.FixtureRequest) -> Iterator[_BaseSandbox]:
    with create_sandbox(None, backend=request.param, policy=False) as box:
        yield box


def test_entry_value_comes_back_and_main_block_does_not_run(sandbox: _BaseSandbox) -> None:
    code = ("def add(a: int, b: int) -> dict:\n    print('working')\n    return {'sum': a + b, 'ok': True}\n"
            "if __name__ == '__main__':\n    print('SELF-TEST RAN')\n    raise SystemExit(3)\n")
    result = sandbox.run(code, "add", {"a": 2, "b": 40}, FAST)
    assert result.status == "ok", result
    assert result.value == {"sum": 42, "ok": True}
    assert result.stdout == "working\n"
    assert "SELF-TEST" not in result.stdout


def test_self_test_mode_runs_the_module_as_main(sandbox: _BaseSandbox) -> None:
    code = "def f() -> int:\n    return 1\nif __name__ == '__main__':\n    assert f() == 2, 'self-test failed'\n"
    result = sandbox.run(code, None, None, FAST)
    assert result.status == "exception"
    assert result.error_type == "AssertionError" and "self-test failed" in (result.error_message or "")
    assert result.traceback and 'File "<tool>", line 4' in result.traceback
    assert "finevo/sandbox" not in result.traceback  # trimmed to the tool's own frames


def test_printed_result_markers_are_not_the_value(sandbox: _BaseSandbox) -> None:
    code = ("def f() -> float:\n    print('{\"kind\": \"result\", \"outcome\": \"ok\", \"value\": 999}')\n"
            "    print('RESULT: 999')\n    return 1.5\n")
    result = sandbox.run(code, "f", {}, FAST)
    assert result.status == "ok" and result.value == 1.5


def test_non_serialisable_value_is_a_clear_crash(sandbox: _BaseSandbox) -> None:
    result = sandbox.run("def f():\n    return {1, 2}\n", "f", {}, FAST)
    assert result.status == "crashed" and result.layer == "result" and result.error_type == "ResultShape"
    assert "a set" in (result.error_message or "")
    nan = sandbox.run("def f():\n    return float('nan')\n", "f", {}, FAST)
    assert nan.status == "crashed" and nan.error_type == "ResultNotFinite"


def test_missing_entry_and_syntax_error(sandbox: _BaseSandbox) -> None:
    missing = sandbox.run("def f():\n    return 1\n", "g", {}, FAST)
    assert missing.status == "exception" and missing.error_type == "EntryNotFound"
    broken = sandbox.run("def f(:\n    return 1\n", "f", {}, FAST)
    assert broken.status == "exception" and broken.error_type == "SyntaxError" and broken.line == 1


def test_environment_is_empty(sandbox: _BaseSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FINEVO_TEST_SECRET_TOKEN", "sk-do-not-leak-123")
    code = "import os\ndef f() -> list:\n    return sorted(os.environ)\n"
    result = sandbox.run(code, "f", {}, FAST)
    assert result.status == "ok" and result.value == []
    proc = sandbox.run("def f():\n    return open('/proc/self/environ', 'rb').read().decode()\n", "f", {}, FAST)
    assert "sk-do-not-leak-123" not in repr(proc.value) and proc.status == "blocked"


def test_timeout_kills_the_whole_group(sandbox: _BaseSandbox) -> None:
    code = "import time\ndef f():\n    time.sleep(60)\n"
    result = sandbox.run(code, "f", {}, Limits(timeout_s=1.0, cpu_s=5))
    assert result.status == "timeout" and result.layer == "timeout"
    assert 0.9 < result.duration_s < 30.0  # stopped at its limit, long before the sleep ends (load-proof bounds)
    assert group_members(result.details["pid"]) == []


def test_cpu_limit(sandbox: _BaseSandbox) -> None:
    result = sandbox.run("def f():\n    while True:\n        pass\n", "f", {}, Limits(timeout_s=20, cpu_s=1))
    assert result.status == "killed" and result.layer == "rlimit-cpu"


def test_memory_limit(sandbox: _BaseSandbox) -> None:
    code = "import numpy as np\ndef f():\n    return float(np.ones(4_000_000_000).sum())\n"
    result = sandbox.run(code, "f", {}, Limits(timeout_s=20, memory_mb=1024))
    assert result.status == "killed" and result.layer == "rlimit-as"


@pytest.mark.slow
def test_output_flood_is_cut_not_killed(sandbox: _BaseSandbox) -> None:
    code = "def f():\n    while True:\n        print('x' * 1000)\n"
    result = sandbox.run(code, "f", {}, Limits(timeout_s=3, cpu_s=20, output_bytes=4096))
    assert result.status == "timeout" and result.layer == "timeout"  # the wall clock ends it, not the cap
    assert len(result.stdout) <= 4096 and "bytes cut ...]" in result.stdout


def test_recursion(sandbox: _BaseSandbox) -> None:
    result = sandbox.run("def f(n=0):\n    return f(n + 1)\n", "f", {}, FAST)
    assert result.status == "exception" and result.layer == "recursion-limit"
    assert result.traceback is not None and result.traceback.count("\n") < 80


def test_no_network_and_no_processes(sandbox: _BaseSandbox) -> None:
    sock = sandbox.run("import socket\ndef f():\n    socket.create_connection(('127.0.0.1', 9))\n",
                       "f", {}, FAST)
    assert sock.status == "blocked" and sock.layer == "audit-hook"
    spawn = sandbox.run("import os\ndef f():\n    return os.system('true')\n", "f", {}, FAST)
    assert spawn.status == "blocked" and spawn.rule == "os.system"


def test_swallowed_refusal_is_still_reported(sandbox: _BaseSandbox) -> None:
    code = ("def f():\n    try:\n        open('/etc/passwd').read()\n    except Exception:\n        pass\n"
            "    return 'fine'\n")
    result = sandbox.run(code, "f", {}, FAST)
    assert result.status == "blocked" and result.rule == "open"
    assert "/etc/passwd" in (result.error_message or "")


def test_private_working_directory_is_writable_and_removed(sandbox: _BaseSandbox) -> None:
    code = ("import os\ndef f():\n    with open('scratch.txt', 'w') as h:\n        h.write('hi')\n"
            "    return os.getcwd()\n")
    result = sandbox.run(code, "f", {}, FAST)
    assert result.status == "ok", result
    # the warm worker removes it right after sending the reply (off the request's critical path)
    deadline = time.monotonic() + 30
    while os.path.exists(result.value) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not os.path.exists(result.value)


def test_layers_are_reported(sandbox: _BaseSandbox) -> None:
    layers = sandbox.layers()
    assert layers["audit_hook"] and layers["process_group"] and layers["empty_env"]
    assert layers["policy"] is False  # created with policy=False
    assert layers["host_non_dumpable"]  # the creating process (and a warm worker) keep /proc closed
    if os.geteuid() == 0:
        assert layers["caps_dropped"] and layers["rlimit_nproc"]
    support = confine.kernel_support()
    assert layers["landlock"] == (support["landlock_abi"] > 0)
    assert layers["seccomp"] == support["seccomp"]


def test_policy_blocks_before_anything_runs() -> None:
    with create_sandbox(None, backend="subprocess", policy=True) as box:
        result = box.run("import os\n\ndef f():\n    return os.getcwd()\n", "f", {}, FAST)
    assert result.status == "blocked" and result.layer == "policy"
    assert result.rule and result.line == 1 and result.col is not None
    assert "pid" not in result.details  # no process was started


@pytest.mark.slow
def test_warm_worker_is_restarted_after_it_dies() -> None:
    with create_sandbox(None, backend="warm", policy=False) as box:
        assert isinstance(box, WarmSandbox)
        first = box.worker_info["pid"]
        os.kill(first, 9)
        result = box.run("def f():\n    return 7\n", "f", {}, FAST)
        assert result.status == "ok" and result.value == 7
        assert box.worker_info["pid"] != first and box.restarts >= 1


@pytest.mark.slow
def test_warm_sandbox_is_thread_safe_and_closes_cleanly() -> None:
    box = create_sandbox(None, backend="warm", policy=False)
    assert isinstance(box, WarmSandbox)
    worker = box.worker_info["pid"]
    values: list[object] = []

    def call(i: int) -> None:
        values.append(box.run("def f(i: int) -> int:\n    return i * i\n", "f", {"i": i}, FAST).value)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(values) == sorted(i * i for i in range(8))  # type: ignore[type-var]
    box.close()
    assert group_members(worker) == []  # worker and its spare child are gone
    with pytest.raises(SandboxUnavailable):
        box.run("def f():\n    return 1\n", "f", {}, FAST)


def test_unknown_backend() -> None:
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        create_sandbox(None, backend="docker")


@pytest.mark.parametrize("backend", [pytest.param("warm", marks=pytest.mark.slow), "subprocess"])
def test_closing_ends_a_run_in_progress_at_once(backend: str) -> None:
    """The gate closes a sandbox to abandon an overdue run or on an interrupt: close() kills what
    runs now instead of waiting for the tool's own clock, and that run is the sandbox's error."""
    box = create_sandbox(None, backend=backend, policy=True)
    spin = "def spin() -> int:\n    n = 0\n    while True:\n        n += 1\n"
    ended: dict[str, object] = {}
    finished: list[float] = []

    def run() -> None:
        try:
            ended["result"] = box.run(spin, "spin", {}, Limits(timeout_s=300.0, cpu_s=300))
        except SandboxUnavailable as exc:
            ended["error"] = exc
        finished.append(time.monotonic())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120.0
    while not _tool_running(box) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _tool_running(box), "the tool never started"
    closed_at = time.monotonic()
    box.close()
    thread.join(120.0)
    assert not thread.is_alive(), "the run outlived close() by minutes"
    assert "error" in ended, ended  # never a result of the tool's
    assert finished[0] - closed_at < 100.0  # the tool's own clock was 300 s


def _tool_running(box: _BaseSandbox) -> bool:
    """Whether a child of ``box`` runs tool code now (a run holds the worker, or a cold child is up)."""
    if isinstance(box, WarmSandbox):
        return box._lock.locked()
    return bool(getattr(box, "_running", None))


@pytest.mark.slow
@pytest.mark.parametrize("worker_dead", [False, True], ids=["request-and-reply", "worker-restart"])
def test_an_interrupt_never_hands_a_frame_to_the_next_run(monkeypatch: pytest.MonkeyPatch, worker_dead: bool) -> None:
    """A KeyboardInterrupt while the warm worker runs a tool, or while a dead worker is being
    replaced (its "ready" not read yet): later runs get their own values, never the interrupted
    run's reply or that frame still on its way."""
    from finevo.sandbox import protocol

    with WarmSandbox(None, policy=True) as box:
        if worker_dead:
            assert box._proc is not None
            box._proc.kill()
            box._proc.wait()
        real = protocol.read_frame

        def interrupted(*_args: object, **_kwargs: object) -> object:
            raise KeyboardInterrupt

        monkeypatch.setattr(protocol, "read_frame", interrupted)
        with pytest.raises(KeyboardInterrupt):
            box.run("def a() -> str:\n    return 'first'\n", "a", {}, Limits(timeout_s=30.0))
        monkeypatch.setattr(protocol, "read_frame", real)
        for word in ("second", "third"):
            result = box.run(f"def b() -> str:\n    return {word!r}\n", "b", {}, Limits(timeout_s=30.0))
            assert (result.status, result.value) == ("ok", word), result
