"""``diff A B``, ``report RESULTS|EVENTS`` and ``merge RESULTS... --out DIR``.

The report modules (jsonschema, the results model) are imported by the handlers, not here: the
parser is built for every ``--help``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from finevo.errors import InputError
from runner.events import read_events
from runner.exitcodes import Exit
from runner.records import SecurityResult, TaskResult, TaskState


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
    from runner.replay import rebuild_from_events
    from runner.reports import document

    if path.suffix == ".jsonl":
        return rebuild_from_events(read_events(path))
    return document.load(path)


def cmd_report(args: argparse.Namespace) -> int:
    """Re-render every report; the exit code is the document's own (a rebuilt killed run: 3), so a
    script that only has the results or the event log gets the same answer as the run itself."""
    from runner.reports import write_all

    doc = load_source(args.source)
    out = args.out or args.source.parent
    try:
        paths = write_all(doc, out)
    except OSError as exc:
        raise InputError(f"{out}: cannot write reports ({exc.strerror or exc})") from None
    for kind in ("json", "junit", "markdown"):
        print(paths[kind])
    print(f"verdict: {doc['verdict']['status']} (exit {doc['verdict']['exit_code']})")
    return int(doc["verdict"]["exit_code"])


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
    from runner.reports import document

    for line in diff_lines(document.load(args.a), document.load(args.b)):
        print(line)
    return int(Exit.PASSED)


def _shard_of(doc: dict[str, Any]) -> tuple[int, int] | None:
    text = (doc["config"].get("selection") or {}).get("shard")
    if not text:
        return None
    k, _, n = str(text).partition("/")
    try:
        return int(k), int(n)
    except ValueError:
        raise InputError(f"merge: run {doc['run_id']} has an unreadable shard {text!r}") from None


def _baseline_key(doc: dict[str, Any]) -> str:
    baseline = doc["config"].get("baseline")
    if not baseline:
        return "none"
    return f"{sorted(baseline.get('passing_tasks') or [])} target {baseline.get('target_pass_rate')}"


def _baseline_label(doc: dict[str, Any]) -> str:
    baseline = doc["config"].get("baseline")
    if not baseline:
        return "no baseline"
    return (f"{baseline.get('path') or 'baseline'} with {len(baseline.get('passing_tasks') or [])} task(s), "
            f"target {baseline.get('target_pass_rate')}")


def _check_shards(docs: list[dict[str, Any]], shards: list[tuple[int, int] | None]) -> None:
    """Shards must form one complete set: the same N, every K in 1..N exactly once, the same selection."""
    sharded = [(d, s) for d, s in zip(docs, shards, strict=False) if s is not None]
    if not sharded:
        return
    ns = sorted({n for _, (_, n) in sharded})
    if len(ns) > 1:
        given = ", ".join(f"{d['run_id']}={k}/{n}" for d, (k, n) in sharded)
        raise InputError(f"merge: shards of different splits (N = {', '.join(map(str, ns))}): {given}")
    n = ns[0]
    ks = [k for _, (k, _) in sharded]
    twice = sorted({k for k in ks if ks.count(k) > 1})
    if twice:
        raise InputError(f"merge: shard(s) {', '.join(f'{k}/{n}' for k in twice)} given more than once")
    missing = [k for k in range(1, n + 1) if k not in ks]
    if missing:
        raise InputError(f"merge: incomplete set of shards: missing {', '.join(f'{k}/{n}' for k in missing)}")
    selections = {json.dumps({k: v for k, v in (d["config"].get("selection") or {}).items() if k != "shard"},
                             sort_keys=True) for d, _ in sharded}
    if len(selections) > 1:
        raise InputError(f"merge: shards of different selections (--only/--category): {'; '.join(sorted(selections))}")


def _suite_order(groups: list[list[Any]], round_robin: bool) -> list[Any]:
    """Undo round-robin sharding (item i is in shard i % N): shard K's j-th item is the suite's
    (j * N + K - 1)-th. Without shards, inputs keep their given order."""
    if not round_robin:
        return [x for g in groups for x in g]
    out: list[Any] = []
    for j in range(max((len(g) for g in groups), default=0)):
        out += [g[j] for g in groups if j < len(g)]
    return out


def merge_documents(docs: list[dict[str, Any]], run_id: str | None = None) -> dict[str, Any]:
    """One document from the results of sharded runs (or of disjoint selections).

    Every input must agree on what is measured (snapshot, judge, provider, agent mode) and on what it
    is measured against (baseline, threshold); shards must be one complete set (same N, K = 1..N
    once each). Records come out in suite order.
    """
    from runner.reports import document

    if not docs:
        raise InputError("merge: no results files given")
    first = docs[0]
    for key in ("snapshot_hash", "judge_version", "provider", "agent_mode", "min_pass_rate"):
        values = {str(d["config"].get(key)) for d in docs}
        if len(values) > 1:
            raise InputError(f"merge: shards disagree on {key}: {', '.join(sorted(values))}")
    if len({_baseline_key(d) for d in docs}) > 1:
        given = "; ".join(f"{d['run_id']}: {_baseline_label(d)}" for d in docs)
        raise InputError(f"merge: shards disagree on the baseline ({given})")
    shards = [_shard_of(d) for d in docs]
    _check_shards(docs, shards)
    # Sharded inputs in K order first (their records interleave back into suite order), then the rest.
    order = sorted(range(len(docs)), key=lambda i: (shards[i] is None, shards[i] or (0, 0), i))
    round_robin = all(s is not None for s in shards)
    groups = [document.records_of(docs[i]) for i in order]
    seen: dict[str, str] = {}
    for i, (t, s, _) in zip(order, groups, strict=False):
        recs: list[TaskResult | SecurityResult] = [*t, *s]
        for rec in recs:
            if rec.task_id in seen and rec.state != TaskState.SKIPPED:
                raise InputError(f"merge: task {rec.task_id} appears in runs {seen[rec.task_id]} "
                                 f"and {docs[i]['run_id']}")
            seen[rec.task_id] = docs[i]["run_id"]
    tasks = _suite_order([g[0] for g in groups], round_robin)
    security = _suite_order([g[1] for g in groups], round_robin)
    payloads = _suite_order([g[2] for g in groups], round_robin)
    checks: list[dict[str, Any]] = [d["selfcheck"] for d in docs
                                     if d.get("selfcheck") and d["selfcheck"].get("enabled")]
    selfcheck: dict[str, Any] | None = None
    if checks:
        bad = [c["reason"] for c in checks if not c.get("ok")]
        selfcheck = {"enabled": True, "ok": not bad,
                     "reason": "; ".join(bad) if bad else "every shard: reference 100%, null 0%"}
    elif any(d.get("selfcheck") for d in docs):
        selfcheck = {"enabled": False, "ok": None, "reason": "skipped in the shards"}
    partial = [d.get("interrupted_by") for d in docs if d["partial"]]
    config = dict(first["config"])
    config["selection"] = {"merged_from": [d["run_id"] for d in docs]}
    warnings = list(dict.fromkeys(w for d in docs for w in d["verdict"].get("warnings", [])))
    return document.assemble(
        run_id=run_id or first["run_id"], config=config, tasks=tasks, security=security, payloads=payloads,
        started_at=min(d["started_at"] for d in docs), finished_at=max(d["finished_at"] for d in docs),
        duration_s=max(float(d["duration_s"]) for d in docs), partial_signal=partial[0] if partial else None,
        selfcheck=selfcheck, warnings=warnings)


def cmd_merge(args: argparse.Namespace) -> int:
    from runner.console import Console
    from runner.reports import document, github, markdown, write_all

    doc = merge_documents([document.load(p) for p in args.results], args.run_id)
    run_dir = args.out / doc["run_id"]
    try:
        paths = write_all(doc, run_dir)
    except OSError as exc:
        raise InputError(f"{args.out}: cannot write reports ({exc.strerror or exc})") from None
    Console().summary(doc)
    github.publish(doc, markdown.render(doc, results_path=paths["json"]), sys.stdout)
    print(f"reports: {run_dir}")
    return int(doc["verdict"]["exit_code"])
