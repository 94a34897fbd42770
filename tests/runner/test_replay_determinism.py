"""Record -> replay determinism of the whole gate, driven through the real CLI over real HTTP.

One live run talks to a scripted OpenAI-compatible server (real sockets, the real ``openai`` SDK)
and records every exchange with ``--record``. The server is then stopped and the same selection
is replayed twice from the cassette alone. The two replays must produce the same results.json
apart from timestamps, durations and run ids, and the same judged answers as the live run; a
cassette with one exchange removed must end that task in *error* (a cassette miss), never *fail*.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runner.reports import document
from tests.support.scripted_llm import RecordedRequest, Reply, ScriptedLLMServer

# the recorded live run and its two replays (a module fixture) serve every test here: one worker,
# so the three gate runs happen once, not once per worker
pytestmark = pytest.mark.xdist_group("replay-determinism")

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
TASKS = BENCH / "tasks.jsonl"
REFERENCE = BENCH / "reference"
ONLY = ("fetch_001", "fetch_006", "calc_002", "calc_007", "comp_001")
API_KEY = "test-key-" + "5f1c0a9e7d3b"  # distinctive, so a leak into any file is unmistakable
RUN_TIMEOUT_S = 240.0
#: the first user message of every tool request opens with "Task: <query>" (finevo.agent.prompts)
_TASK_LINE = re.compile(r"^Task: (?P<query>.+)$", re.MULTILINE)


def _queries() -> dict[str, str]:
    """query -> task id, from the benchmark file itself."""
    out: dict[str, str] = {}
    for line in TASKS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out[row["query"]] = row["id"]
    return out


class ReferenceModel:
    """Answers a chat request with the reference tool of the task its prompt asks about."""

    def __init__(self) -> None:
        self.by_query = _queries()
        self.lock = threading.Lock()
        self.answered: list[str] = []  # task id per answered request ("?" when unknown)

    def task_of(self, request: RecordedRequest) -> str | None:
        for message in request.messages:
            if message.get("role") != "user":
                continue
            match = _TASK_LINE.search(str(message.get("content") or ""))
            if match:
                return self.by_query.get(match.group("query").strip())
        return None

    def __call__(self, request: RecordedRequest) -> Reply:
        task_id = self.task_of(request)
        with self.lock:
            self.answered.append(task_id or "?")
        if task_id is None or not (REFERENCE / f"{task_id}.py").is_file():
            # no task we know: a polite reply without code (the agent's synthesis stage rejects it)
            return Reply("I cannot help with that request.")
        code = (REFERENCE / f"{task_id}.py").read_text(encoding="utf-8").rstrip()
        # a refinement request carries the same "Task:" line; the reference tool is the fix
        return Reply(f"Here is the tool for this task.\n\n```python\n{code}\n```\n",
                     prompt_tokens=100 + len(request.body) % 97, completion_tokens=len(code) // 4)


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str
    run_dir: Path

    @property
    def doc(self) -> dict[str, Any]:
        return document.load(self.run_dir / "results.json").to_json_dict()

    def explain(self) -> str:
        return f"exit {self.exit_code}\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}"


def _clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without any LLM endpoint, key or CI summary target, plus ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "FINEVO_LLM_", "GITHUB_")) and k not in ("DASHSCOPE_API_KEY",)}
    env.update({"NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}, **extra)
    return env


def _gate(out: Path, run_id: str, llm: str, env: dict[str, str], *extra: str) -> Run:
    args = [sys.executable, "-c", "import sys; from runner.cli import main; sys.exit(main())",
            "run", "--llm", llm, *extra, "--only", ",".join(ONLY), "--no-payloads", "--no-self-check",
            "--security-tasks", "none", "--out", str(out), "--run-id", run_id, "--task-timeout", "60",
            # A replay judges in the recorded run's hidden world: the same seed. One world, not the
            # default three: the replay's path through a world is the same for one as for three (the
            # worlds' own reproducibility is test_worlds.py's), and each world judges every task and its
            # probes again, in each of the four runs here.
            "--worlds", "1", "--worlds-seed", "3"]
    proc = subprocess.run(args, check=False, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)
    return Run(proc.returncode, proc.stdout, proc.stderr, out / run_id)


def _cassette_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _answers(doc: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """What the agent answered per task: the judged state, the value and the tool that produced it."""
    return {t["task_id"]: (t["state"], t["actual"], t["tool"]["hash"], t["tool"]["name"], t["tool"]["source"])
            for t in doc["tasks"]}


def _stable(doc: dict[str, Any], *, provider: bool = True) -> dict[str, Any]:
    """The stable view without the run id (and, with ``provider=False``, without which provider answered)."""
    view = document.stable_view(doc)
    view.pop("run_id")
    if not provider:
        view["config"].pop("llm")
        view["config"].pop("provider")
    return view


@dataclass
class Recorded:
    out: Path
    cassette: Path
    live: Run
    replays: tuple[Run, Run]
    server_requests: int
    server_authorised: bool
    answered: list[str]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    out = tmp_path_factory.mktemp("replay") / "out"
    cassette = out.parent / "cassette.jsonl"
    model = ReferenceModel()
    server = ScriptedLLMServer(handler=model).start()
    try:
        env = _clean_env(FINEVO_LLM_BASE_URL=server.base_url, FINEVO_LLM_API_KEY=API_KEY)
        live = _gate(out, "live", "live", env, "--record", str(cassette))
        requests = list(server.requests)
    finally:
        server.stop()
    assert live.exit_code == 0, live.explain()
    replay_env = _clean_env()  # no endpoint, no key: a replay must never need them
    first = _gate(out, "replay-1", f"replay:{cassette}", replay_env)
    second = _gate(out, "replay-2", f"replay:{cassette}", replay_env)
    return Recorded(out=out, cassette=cassette, live=live, replays=(first, second),
                    server_requests=len(requests),
                    server_authorised=all(r.authorized_with(API_KEY) for r in requests),
                    answered=list(model.answered))


@pytest.mark.slow
def test_live_run_talked_to_the_server_and_passed(recorded: Recorded) -> None:
    doc = recorded.live.doc
    assert [t["task_id"] for t in doc["tasks"]] == list(ONLY)
    assert all(t["state"] == "pass" for t in doc["tasks"]), [(t["task_id"], t["reason"]) for t in doc["tasks"]]
    assert recorded.server_requests > 0 and recorded.server_authorised
    assert "?" not in recorded.answered, "the server got a request naming no benchmark task"
    assert sum(t["llm"]["calls"] for t in doc["tasks"]) == recorded.server_requests


@pytest.mark.slow
def test_two_replays_agree_with_each_other_apart_from_times(recorded: Recorded) -> None:
    first, second = recorded.replays
    assert first.exit_code == second.exit_code, first.explain() + "\n" + second.explain()
    doc_1, doc_2 = first.doc, second.doc  # document.load validates each against the schema
    assert doc_1["run_id"] != doc_2["run_id"]
    assert _stable(doc_1) == _stable(doc_2)


@pytest.mark.slow
def test_replay_reproduces_the_recorded_live_run(recorded: Recorded) -> None:
    live = recorded.live.doc
    for replay in recorded.replays:
        assert replay.exit_code == recorded.live.exit_code, replay.explain()
        doc = replay.doc
        assert _answers(doc) == _answers(live)
        assert doc["verdict"]["status"] == live["verdict"]["status"]
        assert doc["summary"] == live["summary"]
        # the replay reports what the recorded run paid, call for call and token for token
        assert ([(t["llm"]["calls"], t["llm"]["prompt_tokens"], t["llm"]["completion_tokens"])
                 for t in doc["tasks"]]
                == [(t["llm"]["calls"], t["llm"]["prompt_tokens"], t["llm"]["completion_tokens"])
                    for t in live["tasks"]])
        assert doc["config"]["llm"] == f"replay:{recorded.cassette}"
        # and nothing else differs: same tools, code, attempts, stages, verdict, selection, model
        assert _stable(doc, provider=False) == _stable(live, provider=False)


@pytest.mark.slow
def test_cassette_holds_one_entry_per_call_and_no_secret(recorded: Recorded) -> None:
    entries = _cassette_lines(recorded.cassette)
    assert len(entries) == recorded.server_requests
    assert len({e["key"] for e in entries}) == len(entries)
    calls = {t["task_id"]: t["llm"]["calls"] for t in recorded.live.doc["tasks"]}
    per_task: dict[str, int] = {}
    for entry in entries:
        per_task[entry["request"]["task_id"]] = per_task.get(entry["request"]["task_id"], 0) + 1
    assert per_task == {k: v for k, v in calls.items() if v}
    assert [e["request"]["task_id"] for e in entries] == recorded.answered
    assert API_KEY not in recorded.cassette.read_text(encoding="utf-8")
    assert "test-key" not in recorded.cassette.read_text(encoding="utf-8")
    # nor any report, registry database or stored tool of the live run
    for path in (recorded.out / "live").rglob("*"):
        if path.is_file():
            assert API_KEY.encode() not in path.read_bytes(), path


@pytest.mark.slow
def test_a_missing_exchange_is_an_error_that_says_how_to_re_record(recorded: Recorded) -> None:
    entries = _cassette_lines(recorded.cassette)
    # drop the first exchange of the last task that called the model: the tasks before it are untouched
    victim = entries[-1]["request"]["task_id"]
    dropped = next(i for i, e in enumerate(entries) if e["request"]["task_id"] == victim)
    holed = recorded.out.parent / "holed.jsonl"
    holed.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for i, e in enumerate(entries) if i != dropped),
                     encoding="utf-8")

    run = _gate(recorded.out, "holed", f"replay:{holed}", _clean_env())
    assert run.exit_code == 1, run.explain()
    doc = run.doc
    by_id = {t["task_id"]: t for t in doc["tasks"]}
    missed = by_id[victim]
    assert missed["state"] == "error", missed["reason"]
    assert missed["error"]["code"] == "cassette_miss"
    assert f"--llm live --record {holed}" in missed["error"]["message"]
    assert missed["error"]["details"]["key"] == entries[dropped]["key"]
    live = _answers(recorded.live.doc)
    before = list(ONLY)[: list(ONLY).index(victim)]
    assert {k: _answers(doc)[k] for k in before} == {k: live[k] for k in before}
