"""Suite-wide test policy.

* Tests marked ``docker`` need a working Docker engine. Without one they are skipped, unless
  ``FINEVO_REQUIRE_DOCKER=1`` (set by ``.ci/run``): then a missing engine fails every such test.
* No test touches the real network or a real LLM: OPENAI_* / FINEVO_LLM_* variables from the
  developer's shell are removed for every test.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator

import pytest


def _docker_available() -> str | None:
    """None when an engine answers, else the reason it does not."""
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
        client.close()
        return None
    except Exception as exc:  # any failure means "no usable engine"
        return f"{type(exc).__name__}: {exc}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    docker_items = [item for item in items if "docker" in item.keywords]
    if not docker_items:
        return
    reason = _docker_available()
    if reason is None:
        return
    required = os.environ.get("FINEVO_REQUIRE_DOCKER") == "1"
    for item in docker_items:
        if required:
            item.add_marker(pytest.mark.usefixtures("_docker_required_but_missing"))
        else:
            item.add_marker(pytest.mark.skip(reason=f"no Docker engine ({reason})"))
    config._finevo_docker_reason = reason  # type: ignore[attr-defined]


class _XdistGroupsForPytest92:
    """Keep ``xdist_group`` working under pytest 9.2: pytest-xdist 3.8 marks a grouped test for
    ``--dist loadgroup`` by appending ``@group`` to ``item._nodeid``, which pytest 9.2 no longer reads
    (the id is ``item._id``), so every group was silently ignored and grouped tests landed on both
    workers, each building the shared fixture. Last of the hooks, on a worker, for a test that is
    grouped but whose id lacks the suffix, this sets it as xdist meant to; where xdist's works, nothing."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if not (os.environ.get("PYTEST_XDIST_WORKER") and config.getvalue("loadgroup")):
            return
        for item in items:
            names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                            for m in item.iter_markers("xdist_group")})
            if names and item.nodeid.rfind("@") <= item.nodeid.rfind("]"):
                from _pytest.nodeid import coerce_node_id  # pytest >= 9.2 only: where the suffix is lost

                item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(names)}")


class _LongestFirst:
    """Under xdist, hand out the long tests first. ``--dist loadgroup`` gives a worker one work unit
    at a time in collection order (groups first, largest first; then every other test alone), so a
    test of minutes collected last runs alone at the end while the other worker idles: the 20-seed
    world sweep's two halves came last and ran one after the other on one worker, 9.7 of the 38
    minutes of a run at load 10. Tests marked ``slow`` go first, the ones with the longest
    ``timeout`` mark first among them; everything else keeps its order (a stable sort: a module's
    slow tests stay together, and so do its others, so a module fixture is built at most once more)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if not os.environ.get("PYTEST_XDIST_WORKER"):
            return

        def key(item: pytest.Item) -> tuple[int, float]:
            if item.get_closest_marker("slow") is None:
                return (1, 0.0)
            timeout = item.get_closest_marker("timeout")
            return (0, -float(timeout.args[0]) if timeout and timeout.args else 0.0)

        items[:] = sorted(items, key=key)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """Keep the assertion-rewritten test modules between runs, even with ``PYTHONDONTWRITEBYTECODE=1``.

    Collecting imports about 200 test modules, and pytest rewrites each one's asserts (an AST pass and
    a compile) unless a cached rewrite sits in the module's ``__pycache__`` -- which it writes only when
    bytecode may be written. With the variable set, every run (and every xdist worker) paid ~4.5 s of
    CPU of its ~8.5 s collection again. Bytecode is written while the suite is collected and nowhere
    else: the tests' own child processes, forks and sandboxes inherit the setting unchanged.
    ``__pycache__/`` is git-ignored."""
    saved = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = saved


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_XdistGroupsForPytest92(), "finevo-xdist-groups")
    config.pluginmanager.register(_LongestFirst(), "finevo-longest-first")


@pytest.fixture(scope="session")
def judge_seed_contexts() -> Generator[object, None, None]:
    """The bundled snapshot's seeds as the judge's scripts build them (``tests/support/judge_scripts.py``):
    seeds 1-5 built once per worker and kept for the session, shared by the sweep of the reference
    tools and the labelled replies (one ``xdist_group``); closed, with their worlds, at the end."""
    from finevo.paths import benchmarks_dir, snapshot_dir
    from runner.inputs.tasks import load_tasks
    from tests.support.judge_scripts import SHARED_SEEDS, script

    contexts = script("bench_worlds").SeedContexts(snapshot_dir(), load_tasks(benchmarks_dir() / "tasks.jsonl"),
                                                   3, keep=SHARED_SEEDS)
    try:
        yield contexts
    finally:
        contexts.close()


@pytest.fixture
def _docker_required_but_missing(request: pytest.FixtureRequest) -> None:
    reason = getattr(request.config, "_finevo_docker_reason", "unknown")
    pytest.fail(f"FINEVO_REQUIRE_DOCKER=1 but no Docker engine answers: {reason}")


@pytest.fixture(autouse=True)
def _no_real_llm_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "FINEVO_LLM_")) or name in ("DASHSCOPE_API_KEY",):
            monkeypatch.delenv(name, raising=False)
