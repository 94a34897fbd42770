"""``runner/schemas/results.schema.json``, generated from the typed results model.

    python -m runner.reports.schema            # (re)write the committed schema
    python -m runner.reports.schema --check    # exit 1 when the committed file is not what the model gives
    finevo-verify schema [--check] [--out FILE]

The schema is never edited by hand: change :mod:`runner.reports.model` (or the records) and
regenerate. A test fails when the committed file and the model drift apart.

The invariants that tie figures to records (summary counts equal the task states, ...) are not
expressible in JSON Schema; they are enforced by the model when a document is read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from finevo.jsontypes import JSONObject
from runner.exitcodes import Exit
from runner.reports.model import SCHEMA_VERSION, ResultsDocument

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "results.schema.json"


def generate() -> JSONObject:
    schema = ResultsDocument.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://finevo.invalid/schemas/results.schema.json",
        **schema,
        "title": f"finevo-verify results (schema {SCHEMA_VERSION})",
        "description": "results.json written by finevo-verify (one gate run, or several merged shards). "
                       "Generated from runner/reports/model.py by `finevo-verify schema`; do not edit. "
                       "Counts must also equal the records (checked by the model, not expressible here).",
    }


def dumps() -> str:
    return json.dumps(generate(), indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def check(path: Path = SCHEMA_PATH) -> bool:
    try:
        return path.read_text(encoding="utf-8") == dumps()
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.reports.schema", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed schema is out of date")
    parser.add_argument("--out", type=Path, default=SCHEMA_PATH, help=f"schema file (default {SCHEMA_PATH})")
    args = parser.parse_args(argv)
    return run(check_only=args.check, out=args.out)


def run(*, check_only: bool, out: Path) -> int:
    if check_only:
        if check(out):
            print(f"{out}: up to date")
            return Exit.PASSED
        print(f"{out}: out of date: regenerate it with `finevo-verify schema`", file=sys.stderr)
        return Exit.FAILED
    from finevo.fsutil import atomic_write

    atomic_write(out, dumps())
    print(out)
    return Exit.PASSED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
