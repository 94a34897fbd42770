"""``finevo-verify baseline update RESULTS [--baseline FILE]``: take a run's per-task passes and
trials as the new baseline (version 2, :mod:`runner.verdict.baseline`).

Never automatic. Tasks that ran in RESULTS replace their old baseline entry (this run's passes and
trials); tasks that did not run (another shard, ``--only``) keep their entry.

Only a run that evaluated the agent and reached a verdict can update the baseline: a reference run
(the gold tools answered, not the agent), a partial run or a run without a verdict is refused
(exit 2) unless ``--force`` is given -- following the summary's hint must never write gold results
into the baseline.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finevo.errors import InputError
from finevo.fsutil import atomic_write
from finevo.paths import benchmarks_dir
from runner.exitcodes import Exit

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject
    from runner.reports.model import ResultsDocument


def register(sub: Any) -> None:
    p = sub.add_parser("baseline", help="manage the baseline")
    verbs = p.add_subparsers(dest="baseline_verb", metavar="ACTION", required=True)
    up = verbs.add_parser("update", help="set the baseline from a results file")
    up.add_argument("results", type=Path, help="results.json of a complete run")
    up.add_argument("--baseline", type=Path, default=benchmarks_dir() / "baseline.json")
    up.add_argument("--force", action="store_true",
                    help="accept a run that did not evaluate the agent (reference, partial, no verdict)")
    up.set_defaults(func=cmd_update)


def refusal(doc: ResultsDocument) -> str | None:
    """Why ``doc`` cannot update the baseline (None: it can)."""
    if not doc.evaluates_agent:
        return "it is a reference run (the gold reference tools answered, not the agent)"
    if doc.partial:
        return "it is a partial run (interrupted or crashed)"
    if not doc.has_verdict:
        return f"it has no verdict ({doc.verdict.status.value})"
    return None


def updated_baseline(old: JSONObject, doc: ResultsDocument) -> JSONObject:
    """The version 2 baseline: the run's per-task passes and trials replace the old entries."""
    from runner.verdict.baseline import updated_baseline_v2

    c = doc.config
    return updated_baseline_v2(
        old, doc.tasks, usage=doc.statistics.usage if doc.statistics is not None else None,
        updated_from={"run_id": doc.run_id, "git_sha": c.git_sha, "provider": c.provider, "model": c.model,
                      "repeats": c.repeats})


def cmd_update(args: argparse.Namespace) -> int:
    from runner.inputs.suite import load_baseline
    from runner.reports import document

    doc = document.load(args.results)
    why = refusal(doc)
    if why is not None:
        if not args.force:
            raise InputError(f"{args.results}: refusing to take this run as the baseline: {why} "
                             "(--force to take it anyway)")
        print(f"warning: {args.results}: {why}; taken as the baseline because of --force", file=sys.stderr)
    load_baseline(args.baseline)  # the old file must be valid too
    old = json.loads(Path(args.baseline).read_text(encoding="utf-8"))
    new = updated_baseline(old, doc)
    from runner.verdict.baseline import passing_of

    if not passing_of(new):
        raise InputError(f"{args.results}: no task passes: a baseline must name at least one task")
    atomic_write(args.baseline, json.dumps(new, indent=2) + "\n")
    added = sorted(passing_of(new) - passing_of(old))
    removed = sorted(passing_of(old) - passing_of(new))
    print(f"{args.baseline}: {len(passing_of(new))} passing task(s) (version 2, "
          f"{doc.config.repeats} repeat(s) measured); "
          f"added: {', '.join(added) or 'none'}; removed: {', '.join(removed) or 'none'}")
    return int(Exit.PASSED)
