"""``diff A B``, ``report RESULTS|EVENTS`` and ``merge RESULTS... --out DIR``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from finevo.errors import InputError
from runner.events import read_events
from runner.exitcodes import Exit
from runner.reports import document, write_all


def register(sub: Any) -> None:
    d = sub.add_parser("diff", help="compare two results files task by task")
    d.add_argument("a", type=Path)
    d.add_argument("b", type=Path)
    d.set_defaults(func=cmd_diff)

    r = sub.add_parser("report", help="re-render every report from results.json or events.jsonl")
    r.add_argument("source", type=Path, help="results.json, partial_<run_id>.json or events.jsonl")
    r.add_argument("--out", type=Path, help="directory to write into (default: the source's directory)")
    r.set_defaults(func=cmd_report)

    m = sub.add_parser("merge", help="merge the results of sharded runs into one verdict")
    m.add_argument("results", type=Path, nargs="+")
    m.add_argument("--out", type=Path, required=True)
    m.add_argument("--run-id", help="run id of the merged run (default: the first shard's)")
    m.set_defaults(func=cmd_merge)


def load_source(path: Path) -> dict[str, Any]:
    """A results document from a results file or (rebuilt) from an events log."""
    from runner.gate import rebuild_from_events

    if path.suffix == ".jsonl":
        return rebuild_from_events(read_events(path))
    return document.load(path)


def cmd_report(args: argparse.Namespace) -> int:
    doc = load_source(args.source)
    out = args.out or args.source.parent
    try:
        paths = write_all(doc, out)
    except OSError as exc:
        raise InputError(f"{out}: cannot write reports ({exc.strerror or exc})") from None
    for kind in ("json", "junit", "markdown"):
        print(paths[kind])
    print(f"verdict: {doc['verdict']['status']} (exit {doc['verdict']['exit_code']})")
    return int(Exit.PASSED)


def _states(doc: dict[str, Any]) -> dict[str, tuple[str, str]]:
    rows = {t["task_id"]: (t["state"], t["reason"]) for t in doc["tasks"]}
    rows.update({s["task_id"]: (s["state"], s["reason"]) for s in doc["security"]["tasks"]})
    return rows


def diff_lines(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    sa, sb = _states(a), _states(b)
    lines = [f"A {a['run_id']}: {a['verdict']['status']}, pass rate {a['summary']['pass_rate']:.1%}",
             f"B {b['run_id']}: {b['verdict']['status']}, pass rate {b['summary']['pass_rate']:.1%}"]
    changed = 0
    for tid in list(sa) + [t for t in sb if t not in sa]:
        old, new = sa.get(tid, ("absent", "")), sb.get(tid, ("absent", ""))
        if old[0] != new[0]:
            changed += 1
            lines.append(f"  {tid}: {old[0]} -> {new[0]}" + (f" ({new[1]})" if new[1] else ""))
    for key in ("model", "provider", "snapshot_hash", "judge_version", "agent_mode", "git_sha"):
        if a["config"].get(key) != b["config"].get(key):
            lines.append(f"  config {key}: {a['config'].get(key)} -> {b['config'].get(key)}")
    lines.append(f"{changed} task(s) changed state")
    return lines


def cmd_diff(args: argparse.Namespace) -> int:
    for line in diff_lines(document.load(args.a), document.load(args.b)):
        print(line)
    return int(Exit.PASSED)


def merge_documents(docs: list[dict[str, Any]], run_id: str | None = None) -> dict[str, Any]:
    if not docs:
        raise InputError("merge: no results files given")
    first = docs[0]
    for key in ("snapshot_hash", "judge_version", "provider", "agent_mode"):
        values = {str(d["config"].get(key)) for d in docs}
        if len(values) > 1:
            raise InputError(f"merge: shards disagree on {key}: {', '.join(sorted(values))}")
    tasks, security, payloads = [], [], []
    seen: dict[str, str] = {}
    for d in docs:
        t, s, p = document.records_of(d)
        for rec in [*t, *s]:
            if rec.task_id in seen and rec.state != "skipped":
                raise InputError(f"merge: task {rec.task_id} appears in runs {seen[rec.task_id]} and {d['run_id']}")
            seen[rec.task_id] = d["run_id"]
        tasks += t
        security += s
        payloads += p
    checks = [d.get("selfcheck") for d in docs if d.get("selfcheck") and d["selfcheck"].get("enabled")]
    selfcheck = None
    if checks:
        bad = [c["reason"] for c in checks if not c.get("ok")]
        selfcheck = {"enabled": True, "ok": not bad, "reason": "; ".join(bad) if bad else "every shard: reference 100%, null 0%"}
    elif any(d.get("selfcheck") for d in docs):
        selfcheck = {"enabled": False, "ok": None, "reason": "skipped in the shards"}
    partial = [d.get("interrupted_by") for d in docs if d["partial"]]
    config = dict(first["config"])
    config["selection"] = {"merged_from": [d["run_id"] for d in docs]}
    return document.assemble(
        run_id=run_id or first["run_id"], config=config, tasks=tasks, security=security, payloads=payloads,
        started_at=min(d["started_at"] for d in docs), finished_at=max(d["finished_at"] for d in docs),
        duration_s=max(float(d["duration_s"]) for d in docs), partial_signal=partial[0] if partial else None,
        selfcheck=selfcheck)


def cmd_merge(args: argparse.Namespace) -> int:
    from runner.console import Console
    from runner.reports import github, markdown

    doc = merge_documents([document.load(p) for p in args.results], args.run_id)
    run_dir = args.out / doc["run_id"]
    try:
        write_all(doc, run_dir)
    except OSError as exc:
        raise InputError(f"{args.out}: cannot write reports ({exc.strerror or exc})") from None
    Console().summary(doc)
    github.publish(doc, markdown.render(doc), sys.stdout)
    print(f"reports: {run_dir}")
    return int(doc["verdict"]["exit_code"])
