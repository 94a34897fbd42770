"""``diff A B``, ``report RESULTS|EVENTS``, ``merge RESULTS... --out DIR`` and ``schema``.

Every verb reads a results file through the typed model (:mod:`runner.reports.model`): a document
that does not validate -- unknown keys, a malformed time, counts that do not match the records --
is one input error (exit 2), never a report. ``report --comment FILE`` renders the sticky PR
comment, and ``report --html FILE`` the self-contained page, from the validated document only (the
publishing workflow's way of treating an uploaded results file as untrusted data).

The report modules (the results model, the renderers) are imported by the handlers, not here: the
parser is built for every ``--help``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finevo.errors import InputError
from finevo.fsutil import atomic_write
from runner.exitcodes import Exit

if TYPE_CHECKING:
    from runner.reports.model import ResultsDocument

#: ``report --max-input-bytes`` default (runner.reports._MAX_RESULTS_BYTES, not imported here).
_MAX_RESULTS_BYTES = 256 * 1024 * 1024


def register(sub: Any) -> None:
    d = sub.add_parser("diff", help="compare two results files task by task")
    d.add_argument("a", type=Path)
    d.add_argument("b", type=Path)
    d.set_defaults(func=cmd_diff)

    r = sub.add_parser("report", help="re-render every report from results.json or events.jsonl")
    r.add_argument("source", type=Path, help="results.json, partial_<run_id>.json or events.jsonl")
    r.add_argument("--out", type=Path, help="directory to write into (default: the source's directory)")
    r.add_argument("--comment", type=Path, metavar="FILE",
                   help="also write the PR comment (markdown, within GitHub's comment limit) to FILE")
    r.add_argument("--html", type=Path, metavar="FILE",
                   help="also write the self-contained HTML page (report.html) to FILE")
    r.add_argument("--run-url", metavar="URL", help="with --comment: link to the workflow run (https only)")
    r.add_argument("--head-repo", metavar="OWNER/NAME", help="with --comment: repository the run's code came from")
    r.add_argument("--base-repo", metavar="OWNER/NAME", help="with --comment: this repository (a different "
                   "--head-repo is named as a fork)")
    r.add_argument("--max-input-bytes", type=int, default=_MAX_RESULTS_BYTES, metavar="N",
                   help=f"refuse a results file larger than N bytes (default {_MAX_RESULTS_BYTES})")
    r.set_defaults(func=cmd_report)

    m = sub.add_parser("merge", help="merge the results of sharded runs into one verdict")
    m.add_argument("results", type=Path, nargs="+")
    m.add_argument("--out", type=Path, required=True)
    m.add_argument("--run-id", help="run id of the merged run (default: the first shard's)")
    m.set_defaults(func=cmd_merge)

    sc = sub.add_parser("schema", help="write the results JSON Schema generated from the typed model")
    sc.add_argument("--check", action="store_true", help="exit 1 when the committed schema is out of date")
    sc.add_argument("--out", type=Path, default=None, help="schema file (default: runner/schemas/results.schema.json)")
    sc.set_defaults(func=cmd_schema)


def load_source(path: Path, max_bytes: int = _MAX_RESULTS_BYTES) -> ResultsDocument:
    """A results document from a results file or (rebuilt) from an events log."""
    from runner.reports import document
    from runner.reports.events import read_events
    from runner.reports.rebuild import rebuild_from_events

    if path.suffix == ".jsonl":
        return rebuild_from_events(read_events(path))
    return document.load(path, max_bytes=max_bytes)


def cmd_report(args: argparse.Namespace) -> int:
    """Re-render every report; the exit code is the document's own (a rebuilt killed run: 3), so a
    script that only has the results or the event log gets the same answer as the run itself."""
    from runner.reports import markdown, write_all

    doc = load_source(args.source, args.max_input_bytes)
    out = args.out or args.source.parent
    try:
        paths = write_all(doc, out)
        if args.comment is not None:
            comment = markdown.render_comment(doc, run_url=args.run_url, head_repo=args.head_repo,
                                              base_repo=args.base_repo)
            paths["comment"] = atomic_write(args.comment, comment)
        if args.html is not None:
            from runner.reports import html

            paths["html_file"] = atomic_write(args.html, html.render(doc))
    except OSError as exc:
        raise InputError(f"{out}: cannot write reports ({exc.strerror or exc})") from None
    for kind in ("json", "junit", "markdown", "html", "comment", "html_file"):
        if kind in paths:
            print(paths[kind])
    print(f"verdict: {doc.verdict.status.value} (exit {doc.verdict.exit_code})")
    return int(doc.verdict.exit_code)


def cmd_schema(args: argparse.Namespace) -> int:
    from runner.reports import schema

    return schema.run(check_only=args.check, out=args.out or schema.SCHEMA_PATH)


def _states(doc: ResultsDocument) -> dict[str, tuple[str, str]]:
    # With repeats each trial is its own row (``id [repeat r]``); a single-repeat run keeps plain ids.
    rows = {(t.task_id if t.repeat == 1 else f"{t.task_id} [repeat {t.repeat}]"): (t.state.value, t.reason)
            for t in doc.tasks}
    rows.update({s.task_id: (s.state.value, s.reason) for s in doc.security.tasks})
    return rows


def diff_lines(a: ResultsDocument, b: ResultsDocument) -> list[str]:
    from runner.reports.escape import log_text

    sa, sb = _states(a), _states(b)
    lines = [f"A {a.run_id}: {a.verdict.status.value}, pass rate {a.summary.pass_rate:.1%}",
             f"B {b.run_id}: {b.verdict.status.value}, pass rate {b.summary.pass_rate:.1%}"]
    changed = 0
    for tid in list(sa) + [t for t in sb if t not in sa]:
        old, new = sa.get(tid, ("absent", "")), sb.get(tid, ("absent", ""))
        if old[0] != new[0]:
            changed += 1
            lines.append(f"  {log_text(tid, 100)}: {old[0]} -> {new[0]}"
                         + (f" ({log_text(new[1], 300)})" if new[1] else ""))
    for key in ("model", "provider", "snapshot_hash", "judge_version", "agent_mode", "git_sha"):
        va, vb = getattr(a.config, key), getattr(b.config, key)
        if va != vb:
            lines.append(f"  config {key}: {log_text(va, 200)} -> {log_text(vb, 200)}")
    lines.append(f"{changed} task(s) changed state")
    return lines


def cmd_diff(args: argparse.Namespace) -> int:
    from runner.reports import document


    for line in diff_lines(document.load(args.a), document.load(args.b)):
        print(line)
    return int(Exit.PASSED)


def _shard_of(doc: ResultsDocument) -> tuple[int, int] | None:
    text = doc.config.selection.shard
    if not text:
        return None
    k, _, n = text.partition("/")
    return int(k), int(n)  # the model checked the K/N form


def _baseline_key(doc: ResultsDocument) -> str:
    baseline = doc.config.baseline
    if not baseline:
        return "none"
    if baseline.tasks is not None:  # version 2: the counts and the quarantine are what is compared against
        return json.dumps(baseline.model_dump(mode="json", exclude={"path", "description"}), sort_keys=True)
    return f"{sorted(baseline.passing_tasks)} target {baseline.target_pass_rate}"


def _baseline_label(doc: ResultsDocument) -> str:
    baseline = doc.config.baseline
    if not baseline:
        return "no baseline"
    return (f"{baseline.path or 'baseline'} with {len(baseline.passing_tasks)} task(s), "
            f"target {baseline.target_pass_rate}")


def _check_shards(docs: list[ResultsDocument], shards: list[tuple[int, int] | None]) -> None:
    """Shards must form one complete set: the same N, every K in 1..N exactly once, the same selection."""
    sharded = [(d, s) for d, s in zip(docs, shards, strict=True) if s is not None]
    if not sharded:
        return
    ns = sorted({n for _, (_, n) in sharded})
    if len(ns) > 1:
        given = ", ".join(f"{d.run_id}={k}/{n}" for d, (k, n) in sharded)
        raise InputError(f"merge: shards of different splits (N = {', '.join(map(str, ns))}): {given}")
    n = ns[0]
    ks = [k for _, (k, _) in sharded]
    twice = sorted({k for k in ks if ks.count(k) > 1})
    if twice:
        raise InputError(f"merge: shard(s) {', '.join(f'{k}/{n}' for k in twice)} given more than once")
    missing = [k for k in range(1, n + 1) if k not in ks]
    if missing:
        raise InputError(f"merge: incomplete set of shards: missing {', '.join(f'{k}/{n}' for k in missing)}")
    selections = {json.dumps(d.config.selection.model_dump(mode="json", exclude={"shard"}, exclude_none=True),
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


def merge_documents(docs: list[ResultsDocument], run_id: str | None = None) -> ResultsDocument:
    """One document from the results of sharded runs (or of disjoint selections).

    Every input must agree on what is measured (snapshot, judge, provider, agent mode) and on what it
    is measured against (baseline, threshold); shards must be one complete set (same N, K = 1..N
    once each). Records come out in suite order.
    """
    from runner.records import SecurityResult, SelfCheck, TaskResult
    from runner.reports import document


    if not docs:
        raise InputError("merge: no results files given")
    first = docs[0]
    for key in ("snapshot_hash", "judge_version", "provider", "agent_mode", "min_pass_rate", "repeats", "alpha",
                "threshold_on", "correction", "budgets"):
        values = {str(getattr(d.config, key)) for d in docs}
        if len(values) > 1:
            raise InputError(f"merge: shards disagree on {key}: {', '.join(sorted(values))}")
    if len({_baseline_key(d) for d in docs}) > 1:
        given = "; ".join(f"{d.run_id}: {_baseline_label(d)}" for d in docs)
        raise InputError(f"merge: shards disagree on the baseline ({given})")
    shards = [_shard_of(d) for d in docs]
    _check_shards(docs, shards)
    # Sharded inputs in K order first (their records interleave back into suite order), then the rest.
    order = sorted(range(len(docs)), key=lambda i: (shards[i] is None, shards[i] or (0, 0), i))
    round_robin = all(s is not None for s in shards)
    groups = [document.records_of(docs[i]) for i in order]
    seen: dict[str, str] = {}
    for i, (t, s, _) in zip(order, groups, strict=True):
        recs: list[TaskResult | SecurityResult] = [*t, *s]
        for rec in recs:
            key = f"{rec.task_id} (repeat {rec.repeat})" if isinstance(rec, TaskResult) and rec.repeat > 1 \
                else rec.task_id
            if key in seen and rec.state != "skipped":
                raise InputError(f"merge: task {key} appears in runs {seen[key]} and {docs[i].run_id}")
            seen[key] = docs[i].run_id
    # Repeat by repeat (as one process runs them), suite order inside each repeat.
    repeats = sorted({t.repeat for g in groups for t in g[0]})
    tasks = [rec for r in repeats
             for rec in _suite_order([[t for t in g[0] if t.repeat == r] for g in groups], round_robin)]
    security = _suite_order([g[1] for g in groups], round_robin)
    payloads = _suite_order([g[2] for g in groups], round_robin)
    checks = [d.selfcheck for d in docs if d.selfcheck is not None and d.selfcheck.enabled]
    selfcheck: SelfCheck | None = None
    if checks:
        bad = [c.reason for c in checks if not c.ok]
        selfcheck = SelfCheck(enabled=True, ok=not bad,
                              reason="; ".join(bad) if bad else "every shard: reference 100%, null 0%")
    elif any(d.selfcheck is not None for d in docs):
        selfcheck = SelfCheck.not_run("skipped in the shards")
    # The shards' containment self-tests: the worst one speaks for the merge (failed, then not judged).
    proofs = [d.containment_selftest for d in docs if d.containment_selftest is not None]
    proofs.sort(key=lambda c: {False: 0, None: 1, True: 2}[c.ok])
    containment = proofs[0] if proofs else None
    partial = [d.interrupted_by for d in docs if d.partial]
    config = first.config.model_dump(mode="json")
    config["selection"] = {"merged_from": [d.run_id for d in docs]}
    warnings = list(dict.fromkeys(w for d in docs for w in d.verdict.warnings))
    return document.assemble(
        run_id=run_id or first.run_id, config=config,
        records=document.RunRecords(tasks, security, payloads, selfcheck=selfcheck, containment_selftest=containment),
        span=document.RunSpan(min(d.started_at for d in docs).isoformat(),
                              max(d.finished_at for d in docs).isoformat(),
                              max(d.duration_s for d in docs), partial_signal=partial[0] if partial else None),
        warnings=warnings)


def cmd_merge(args: argparse.Namespace) -> int:
    from runner.reports import document, github, markdown, write_all
    from runner.reports.console import Console

    doc = merge_documents([document.load(p) for p in args.results], args.run_id)
    run_dir = args.out / doc.run_id
    try:
        paths = write_all(doc, run_dir)
    except OSError as exc:
        raise InputError(f"{args.out}: cannot write reports ({exc.strerror or exc})") from None
    Console().summary(doc)
    github.publish(doc, markdown.render(doc, results_path=paths["json"]), sys.stdout)
    print(f"reports: {run_dir}")
    return int(doc.verdict.exit_code)
