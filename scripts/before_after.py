"""Before/after check of a refactoring: the same gate runs on two versions of the code give the same reports.

Runs, on a git ref (default ``main``, exported with ``git archive`` into a temporary directory) and on
the working tree:

* ``finevo-verify --llm reference`` (every task passes, every security task and payload is blocked);
* a predictions run with failures: the gold tools, except one tool off by a factor of two (a wrong
  answer), one that raises (a crashed tool), one returning a string (a wrong shape) and one task with
  no prediction at all (an external error); the security tasks are answered by nothing.

Both with a fixed ``--worlds-seed``, then compares results.json (parsed, times and ids masked),
junit.xml and summary.md (times and ids masked in the text) and prints every difference. Exit 0 when
the reports are the same, 1 otherwise.

Expect one kind of difference that is not the code's: on a loaded machine, which of the limits a
payload meets first (the wall-clock timeout, the CPU rlimit, the result-size bound) can change from
run to run of the same code (state ``blocked`` either way); compare the payload's state, then re-run.

    python scripts/before_after.py                 # main against the working tree
    python scripts/before_after.py --ref e61c442   # another base
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SEED = "11"
#: Keys whose values are clocks, durations or run names: they differ between any two runs.
_VOLATILE_KEYS = re.compile(r"(_s|_at|_ms|^run_id|^path|^started|^finished|^timestamp|^timings|^git_sha)$")
_TEXT_MASKS = [
    (re.compile(r'time="[0-9.]+"'), 'time="T"'),
    (re.compile(r'timestamp="[^"]*"'), 'timestamp="T"'),
    (re.compile(r"\b\d+(\.\d+)?\s?(s|ms|seconds)\b"), "T s"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "DATE"),
    (re.compile(r"\d+m\d+(\.\d+)?s"), "T"),
    (re.compile(r"\| \d+\.\d\d \|"), "| T |"),  # the duration column of summary.md's task table
    (re.compile(r'(name="git_sha" value=)"[0-9a-f]*"'), r'\1"SHA"'),
    (re.compile(r"(\| git_sha \|) [0-9a-f ]+\|"), r"\1 SHA |"),
]


def _mask(value: Any, names: list[str]) -> Any:
    if isinstance(value, dict):
        return {k: ("MASKED" if _VOLATILE_KEYS.search(k) else _mask(v, names)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(item, names) for item in value]
    if isinstance(value, str):
        return _mask_text(value, names)
    return value


def _mask_text(text: str, names: list[str]) -> str:
    for name in sorted(names, key=len, reverse=True):  # a path before any path it starts with
        text = text.replace(name, "NAME")
    for pattern, repl in _TEXT_MASKS:
        text = pattern.sub(repl, text)
    return text


def _predictions(tree: Path, target: Path) -> Path:
    """Gold tools for every benchmark task but four, each broken in its own way; one task left out."""
    reference = tree / "benchmarks" / "reference"
    lines = []
    for tool in sorted(reference.glob("*.py")):
        task_id, code = tool.stem, tool.read_text(encoding="utf-8")
        if task_id == "calc_002":
            code = code.replace("return value", "return value * 2.0")
        elif task_id == "fetch_003":
            code = code.replace("\nimport ", "\nimport finevo_no_such_module\nimport ", 1)  # crashes on import
        elif task_id == "comp_003":
            code = re.sub(r"^(    return )(.+)$", r"\1str(\2)", code, count=1, flags=re.M)  # a wrong shape
        elif task_id == "fetch_008":
            continue  # no prediction: an external error
        lines.append(json.dumps({"task_id": task_id, "content": f"```python\n{code}\n```"}))
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def _python_for(tree: Path, work: Path) -> str:
    """A Python that imports ``finevo`` and ``runner`` from ``tree`` (and nowhere else) with this one's libraries.

    A virtual environment whose only ``.pth`` names the tree, then this environment's site-packages
    (whose own ``.pth`` files, among them an editable install of the working tree, are not read): the
    sandbox's child processes, started from the same interpreter, see the same code.
    """
    if tree == ROOT:
        return sys.executable
    venv = work / "venv-before"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    deps = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    (site / "_before.pth").write_text(f"{tree}\n{deps}\n", encoding="utf-8")
    return str(venv / "bin" / "python")


def _run(python: str, tree: Path, out: Path, run_id: str, llm: str, extra: list[str]) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FINEVO_") and k != "PYTHONPATH"}
    env["NO_COLOR"] = "1"
    cmd = [python, "-m", "runner.cli", "run", "--llm", llm, "--out", str(out), "--run-id", run_id,
           "--worlds-seed", SEED, "--quiet", *extra]
    with open(out.parent / f"{out.name}-{run_id}.log", "wb") as log:
        return subprocess.run(cmd, cwd=out, env=env, stdout=log, stderr=subprocess.STDOUT).returncode


def _reports(run_dir: Path, names: list[str]) -> dict[str, str]:
    doc = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    return {
        "results.json": json.dumps(_mask(doc, names), indent=1, sort_keys=True),
        "junit.xml": _mask_text((run_dir / "junit.xml").read_text(encoding="utf-8"), names),
        "summary.md": _mask_text((run_dir / "summary.md").read_text(encoding="utf-8"), names),
    }


def _export(ref: str, target: Path) -> Path:
    archive = target / "src.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), ref], check=True)
    tree = target / "tree"
    tree.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    return tree


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", default="main", help="git ref of the 'before' code (default main)")
    parser.add_argument("--keep", type=Path, help="keep the run directories here")
    args = parser.parse_args(argv)
    # Not under /tmp: the sandbox mounts a private /tmp, which would hide the 'before' interpreter.
    (ROOT / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="before-after-", dir=ROOT / "build") as tmp:
        work = (args.keep or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        before_tree = _export(args.ref, Path(tempfile.mkdtemp(dir=tmp)))
        preds = _predictions(ROOT, work / "preds.jsonl")
        pythons = {"before": _python_for(before_tree, before_tree.parent), "after": sys.executable}
        runs = [("reference", "reference", []), ("predictions", f"predictions:{preds}", [])]
        same = True
        for label, llm, extra in runs:
            results = {}
            for side, tree in (("before", before_tree), ("after", ROOT)):
                out = work / side
                out.mkdir(parents=True, exist_ok=True)
                code = _run(pythons[side], tree, out, label, llm, extra)
                names = [str(out / label), str(out), str(tree), str(work), label]
                results[side] = (code, _reports(out / label, names))
            (code_b, rep_b), (code_a, rep_a) = results["before"], results["after"]
            print(f"{label}: exit {code_b} before, {code_a} after")
            if code_b != code_a:
                same = False
            for name in rep_b:
                if rep_b[name] != rep_a[name]:
                    same = False
                    diff = difflib.unified_diff(rep_b[name].splitlines(), rep_a[name].splitlines(),
                                                f"before/{label}/{name}", f"after/{label}/{name}", lineterm="", n=2)
                    print("\n".join(list(diff)[:200]))
                else:
                    print(f"  {name}: identical (times and ids masked)")
        print("SAME" if same else "DIFFERENT")
        return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
