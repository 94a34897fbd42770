"""The corpus loaders are strict, and the bundled corpora have the coverage the security gate needs."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from finevo.errors import InputError
from finevo.paths import benchmarks_dir
from runner.inputs.corpus import CANARIES, FORGED_VALUE, PLACEHOLDERS, BenignTool, Payload, load_benign, load_payloads
from runner.inputs.tasks import load_security_tasks

SNAPSHOT_SYMBOLS = {"AAPL", "MSFT", "GOOGL", "AMZN", "TSLA", "SPY", "^GSPC"}


def _line(**over: object) -> str:
    rec = {"id": "pay_001", "technique": "t", "attempts": "a", "code": "def run():\n    return 1\n",
           "entry": "run", "args": {}, "canary": "none", "expect": "runtime"}
    rec.update(over)
    return json.dumps(rec)


# --------------------------------------------------------------------------- payload loader
def test_load_payloads_reads_records(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text("# comment\n\n" + _line() + "\n" + _line(id="pay_002", canary="network", expect="policy",
                                                          code="x = '@@CANARY_HOST@@:@@CANARY_PORT@@'\n") + "\n")
    got = load_payloads(f)
    assert [p.id for p in got] == ["pay_001", "pay_002"]
    assert got[1].canary == "network" and got[1].expect == "policy" and got[1].entry == "run"
    assert got[1].placeholders == {"@@CANARY_HOST@@", "@@CANARY_PORT@@"}


@pytest.mark.parametrize("content,fragment", [
    ("{not json\n", ":1: malformed JSON"),
    ("[1, 2]\n", ":1: expected a JSON object"),
    (_line() + "\n" + _line() + "\n", ":2: duplicate id 'pay_001' (first on line 1)"),
    (_line(canary="disk") + "\n", ":1: canary 'disk'"),
    (_line(expect="maybe") + "\n", ":1: expect 'maybe'"),
    (_line(id="p1") + "\n", ":1: id 'p1'"),
    (_line(extra=1) + "\n", ":1: unknown field(s) extra"),
    (json.dumps({"id": "pay_001"}) + "\n", ":1: missing field(s)"),
    (_line(args=[1]) + "\n", ":1: field 'args' must be a JSON object"),
    (_line(code="") + "\n", ":1: field 'code' must be a non-empty string"),
    (_line(code="x = '@@HOME@@'") + "\n", ":1: unknown placeholder(s) @@HOME@@"),
    ("\n# only a comment\n", ": no payloads"),
])
def test_load_payloads_names_file_and_line_on_any_flaw(tmp_path: Path, content: str, fragment: str) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(content)
    with pytest.raises(InputError) as err:
        load_payloads(f)
    assert str(err.value).startswith(str(f)) and fragment in str(err.value)


def test_load_payloads_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_payloads(tmp_path / "nope.jsonl")


def test_materialise_replaces_every_placeholder() -> None:
    code = ("a = '@@CANARY_FILE@@'\nb = '@@CANARY_DIR@@/x'\nc = ('@@CANARY_HOST@@', int('@@CANARY_PORT@@'))\n"
            "d = '@@SECRET_NAME@@'\n")
    p = Payload(id="pay_001", technique="t", attempts="a", code=code, canary="none", expect="policy")
    out = p.materialise(canary_file="/c/f", canary_dir="/c", host="127.0.0.9", port=4242, secret_name="K")
    assert "@@" not in out
    ns: dict = {}
    exec(compile(out, "<materialised>", "exec"), ns)  # the test's own literal code, not a payload
    assert (ns["a"], ns["b"], ns["c"], ns["d"]) == ("/c/f", "/c/x", ("127.0.0.9", 4242), "K")


# --------------------------------------------------------------------------- bundled payloads
PAYLOADS = load_payloads()


def test_bundled_payload_corpus_size_and_ids() -> None:
    assert len(PAYLOADS) >= 60
    # ids ascend in contiguous runs: the first from pay_001, each later one from a fresh hundred
    # (pay_301, ...), so corpora extended side by side never renumber each other's payloads
    numbers = [int(p.id[4:]) for p in PAYLOADS]
    assert numbers == sorted(numbers)
    runs = [[numbers[0]]]
    for n in numbers[1:]:
        if n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    assert runs[0][0] == 1 and all(r[0] % 100 == 1 for r in runs[1:]), [(r[0], r[-1]) for r in runs]
    assert len({p.technique for p in PAYLOADS}) == len(PAYLOADS), "techniques must be distinct"
    assert sum(p.expect == "runtime" for p in PAYLOADS) >= 10


def test_every_canary_kind_is_exercised() -> None:
    assert {p.canary for p in PAYLOADS} == set(CANARIES)


REQUIRED_TECHNIQUES = {
    "sys-modules-os", "sys-modules-subprocess", "pandas-io-common-os", "typing-sys", "inspect-os",
    "open-alias", "pandas-read-csv", "pandas-read-pickle", "numpy-load-pickle", "pandas-read-html",
    "pandas-to-sql-db", "fork-bomb", "forge-result-markers", "import-os-environ", "os-remove",
    "socket-connect", "subprocess-curl", "memory-bomb-list", "cpu-spin", "output-flood",
    "deep-recursion", "pickle-reduce", "format-string-attr", "decorator-expression", "type-three-args",
    "metaclass", "encoding-utf7", "unicode-lookalike", "builtins-dict", "subclasses-walk",
    "getattr-computed", "lambda-default", "traceback-frame", "generator-gi-frame", "function-globals",
    # the binding pre-pass and the classes closed with it
    "dead-branch-import-alias", "type-checking-import-alias", "except-importerror-import-alias",
    "dead-branch-asname-shadows-open", "match-capture-rebinds-callable", "match-capture-module-member-mutation",
    "builtin-name-rebound-dispatch", "class-body-import-module-value", "private-package-import-path",
    "series-label-array-interface", "json-text-dunder-label", "numpy-typing-ndarray-alias-buffer",
    "masked-array-baseclass-buffer", "pandas-core-computation-route", "pipe-unbound-query",
}


def test_payloads_cover_every_escape_named_in_the_issue() -> None:
    missing = REQUIRED_TECHNIQUES - {p.technique for p in PAYLOADS}
    assert not missing, sorted(missing)


@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: p.id)
def test_payload_defines_its_entry_and_uses_only_known_placeholders(payload: Payload) -> None:
    code = payload.materialise(canary_file="/c/f", canary_dir="/c", host="127.0.0.1", port=1, secret_name="K")
    assert "@@" not in code
    if payload.technique in {"encoding-utf7", "relative-import"}:
        return  # their point is to look different to the policy than to the interpreter
    tree = ast.parse(code)
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert payload.entry in names


def test_forge_payloads_all_forge_what_the_sandbox_test_looks_for() -> None:
    # A forge either passes off FORGED_VALUE as its result or claims a containment layer it was
    # not stopped by (technique ``claim-*``: the sandbox tests check no such layer is reported).
    for p in PAYLOADS:
        if p.canary == "forge_result":
            assert repr(FORGED_VALUE) in p.code or p.technique.startswith("claim-"), p.id


def test_runtime_payloads_target_runtime_canaries() -> None:
    for p in PAYLOADS:
        if p.expect == "runtime":
            assert p.canary in {"resource", "forge_result"}, p.id


# --------------------------------------------------------------------------- benign tools
def _write_tool(d: Path, name: str, entry: str = "f") -> None:
    (d / name).write_text(f"def {entry}(x: int = 1) -> int:\n    return x\n")


def test_load_benign_reads_tools(tmp_path: Path) -> None:
    _write_tool(tmp_path, "a.py")
    _write_tool(tmp_path, "b.py", "g")
    (tmp_path / "calls.json").write_text(json.dumps({"a.py": {"entry": "f", "args": {"x": 2}},
                                                     "b.py": {"entry": "g"}}))
    tools = load_benign(tmp_path)
    assert [(t.name, t.entry, t.args) for t in tools] == [("a", "f", {"x": 2}), ("b", "g", {})]
    assert isinstance(tools[0], BenignTool) and "def f" in tools[0].code


@pytest.mark.parametrize("calls,fragment", [
    (None, "calls.json: file not found"),
    ("{broken", "calls.json:1: malformed JSON"),
    (json.dumps([]), "expected a JSON object"),
    (json.dumps({}), "a.py: no entry in calls.json"),
    (json.dumps({"a.py": {"entry": "f"}, "z.py": {"entry": "f"}}), "entries without a tool file: z.py"),
    (json.dumps({"a.py": {"entry": 3}}), "entry 'a.py' must be"),
    (json.dumps({"a.py": {"entry": "f", "args": [1]}}), "'args' must be a JSON object"),
    (json.dumps({"a.py": {"entry": "f", "kwargs": {}}}), "entry 'a.py' must be"),
])
def test_load_benign_is_strict(tmp_path: Path, calls: str | None, fragment: str) -> None:
    _write_tool(tmp_path, "a.py")
    if calls is not None:
        (tmp_path / "calls.json").write_text(calls)
    with pytest.raises(InputError) as err:
        load_benign(tmp_path)
    assert fragment in str(err.value) and str(tmp_path) in str(err.value)


BENIGN = load_benign()


def test_bundled_benign_corpus_size() -> None:
    assert len(BENIGN) >= 30
    assert BENIGN[0].path.parent == benchmarks_dir() / "benign"


@pytest.mark.parametrize("tool", BENIGN, ids=lambda t: t.name)
def test_benign_tool_shape(tool: BenignTool) -> None:
    tree = ast.parse(tool.code)
    public = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              and not n.name.startswith("_")]
    assert public == [tool.entry], "one public function, the one calls.json names"
    assert ast.get_docstring(tree), "module docstring"
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == tool.entry)
    params = {a.arg for a in [*fn.args.args, *fn.args.kwonlyargs]}
    assert set(tool.args) <= params, f"calls.json passes unknown parameters {set(tool.args) - params}"
    assert fn.returns is not None, "return type hint"
    mains = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
    assert len(mains) == 1, 'an `if __name__ == "__main__":` self-test'
    symbols = [v for k, v in tool.args.items() if k in ("symbol", "symbol_a", "symbol_b", "benchmark")]
    symbols += [s for k, v in tool.args.items() if k == "symbols" for s in v]
    assert symbols and set(symbols) <= SNAPSHOT_SYMBOLS


def test_benign_docstrings_carry_the_words_old_checkers_tripped_on() -> None:
    text = " ".join(ast.get_docstring(ast.parse(t.code)) or "" for t in BENIGN).lower()
    for word in ("directory", "file", "system", "eval"):
        assert word in text, word


# --------------------------------------------------------------------------- security tasks
SECURITY = load_security_tasks(benchmarks_dir() / "security_tasks.jsonl")


def test_security_tasks_cover_the_required_requests() -> None:
    assert len(SECURITY) >= 12
    assert [t.id for t in SECURITY] == [f"sec_{i:03d}" for i in range(1, len(SECURITY) + 1)]
    queries = " | ".join(t.query.lower() for t in SECURITY)
    for needle in ("rm -rf /", "/etc/passwd", "subprocess", "curl", "import os", "eval",
                   "openai_api_key", "spawn processes", "pickle",
                   "ten billion", "http://", "pandas"):
        assert needle in queries, needle


@pytest.mark.parametrize("task", SECURITY, ids=lambda t: t.id)
def test_security_task_code_is_a_complete_tool(task) -> None:
    tree = ast.parse(task.malicious_code)
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert task.entry in names
    assert any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body)
    assert set(PLACEHOLDERS).isdisjoint(task.malicious_code.split())


def test_security_tasks_name_their_canaries_and_fill_into_valid_code() -> None:
    values = {"canary_file": "/c/canary.txt", "canary_dir": "/c", "host": "127.0.0.1", "port": "4242",
              "secret_name": "FINEVO_SECURITY_CANARY_SECRET"}
    named = set()
    for task in SECURITY:
        named |= {token for token in PLACEHOLDERS if token in task.query + task.malicious_code}
        filled = task.filled(values)
        assert "@@" not in filled.query + filled.malicious_code, task.id
        ast.parse(filled.malicious_code)
    # the listener and the secret are each the target of some request: a sandbox that failed shows
    # up as a tripped canary, not only as a missing layer
    assert {"@@CANARY_HOST@@", "@@CANARY_PORT@@", "@@SECRET_NAME@@"} <= named
