"""Many processes registering tools into one registry at the same moment (the test and the benchmark).

Each of ``procs`` processes opens its own :class:`Registry` on ``url``, waits at a barrier, then makes
``per_proc`` registrations in turn under three kinds of names:

* ``shared_same``: every process registers the same few contents (same name, same code at once);
* ``shared_new``: every registration is new content (same name, different code at once);
* ``own_<i>``: a name only process ``i`` uses, whose first content is also ``shared_same``'s first
  (the same code under different names: one code row).

:func:`check` then proves what the registry must guarantee; :func:`hammer` returns the timings.
"""

from __future__ import annotations

import multiprocessing
import queue
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text

SAME_VARIANTS = 5


def code_for(name: str, variant: str) -> str:
    return f"def {name}(symbol: str, window: int = 5) -> float:\n    return {variant}\n"


def workload(proc: int, per_proc: int) -> list[tuple[str, str, str]]:
    """(name, function name, code) of each registration of process ``proc``, in order."""
    items = []
    for k in range(per_proc):
        kind = k % 3
        if kind == 0:
            items.append(("shared_same", "f", code_for("f", f"{(k // 3) % SAME_VARIANTS}.0")))
        elif kind == 1:
            items.append(("shared_new", "f", code_for("f", f"{proc}.{k}")))
        else:
            variant = "0.0" if k == 2 else f"{proc}.{k}"
            items.append((f"own_{proc}", "f", code_for("f", variant)))
    return items


def _worker(url: str, proc: int, per_proc: int, barrier: Any, out: Any) -> None:
    try:
        from finevo.registry import Registry, ToolInterface

        with Registry(url) as reg:
            barrier.wait(timeout=120)
            start = time.monotonic()
            results = []
            for name, _function, code in workload(proc, per_proc):
                tool = reg.register(name, code, ToolInterface("hammer", "numeric"))
                results.append((name, tool.content_hash, tool.version, tool.id))
            out.put(("ok", proc, results, start, time.monotonic()))
    except BaseException:  # reported to the parent, which fails
        out.put(("error", proc, traceback.format_exc(), 0.0, 0.0))


@dataclass
class HammerResult:
    procs: int
    registrations: int
    seconds: float
    results: dict[int, list[tuple[str, str, str, int]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.registrations / self.seconds if self.seconds > 0 else 0.0


def hammer(url: str, procs: int = 8, per_proc: int = 30, deadline_s: float = 600.0) -> HammerResult:
    """Run the workload; the time is from the first process leaving the barrier to the last finishing."""
    from finevo.registry import Registry

    Registry(url).close()  # the schema exists before the race (creating it concurrently is tested apart)
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(procs)
    out = ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(url, i, per_proc, barrier, out), daemon=True) for i in range(procs)]
    for w in workers:
        w.start()
    result = HammerResult(procs, procs * per_proc, 0.0)
    starts, ends = [], []
    end_by = time.monotonic() + deadline_s
    try:
        for _ in workers:
            status, proc, payload, start, end = out.get(timeout=max(1.0, end_by - time.monotonic()))
            if status == "ok":
                result.results[proc] = payload
                starts.append(start)
                ends.append(end)
            else:
                result.errors.append(f"process {proc}: {payload}")
    except queue.Empty:
        result.errors.append(f"not every process finished within {deadline_s:.0f}s (a deadlock?)")
    finally:
        for w in workers:
            w.join(timeout=10)
            if w.is_alive():
                w.kill()
                w.join()
    if starts:
        result.seconds = max(ends) - min(starts)
    return result


def check(url: str, result: HammerResult, per_proc: int) -> None:
    """Assert the registry's guarantees after :func:`hammer` (AssertionError naming the first breach)."""
    from finevo.registry import Registry, content_hash

    assert not result.errors, "\n".join(result.errors)
    assert len(result.results) == result.procs
    submitted: dict[str, set[str]] = defaultdict(set)
    for proc in range(result.procs):
        for name, _function, code in workload(proc, per_proc):
            submitted[name].add(content_hash(code))
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    for rows in result.results.values():
        for name, digest, version, _id in rows:
            seen[(name, digest)].add(version)
    # one version per (name, content), whoever registered it
    assert all(len(v) == 1 for v in seen.values()), {k: v for k, v in seen.items() if len(v) > 1}
    with Registry(url) as reg:
        tools = reg.list()
        by_name: dict[str, list[Any]] = defaultdict(list)
        for tool in tools:
            by_name[tool.name].append(tool)
        assert set(by_name) == set(submitted), "a name is missing or extra"
        for name, rows in by_name.items():
            # no lost write, no duplicate: exactly the contents submitted, once each
            assert sorted(t.content_hash for t in rows) == sorted(submitted[name]), name
            # unique, gap-free versions
            assert sorted(t.minor for t in rows) == list(range(len(rows))), (name, sorted(t.version for t in rows))
            assert {(t.major, t.patch) for t in rows} == {(1, 0)}
            for t in rows:
                assert seen[(name, t.content_hash)] == {t.version}, (name, t.version)
                assert content_hash(reg.read_code(t)) == t.content_hash
        with reg.engine.connect() as conn:
            codes = conn.execute(text("SELECT count(*) FROM tool_code")).scalar_one()
        distinct = set().union(*submitted.values())
        assert codes == len(distinct), f"{codes} code rows for {len(distinct)} distinct contents"
