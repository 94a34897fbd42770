"""docs/cli.md is generated from the argparse parsers (scripts/cli_reference.py): it cannot drift."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_page_is_what_the_parsers_print() -> None:
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert page == _script().render(), "docs/cli.md is stale: run python scripts/cli_reference.py"
    assert str(ROOT) not in page  # the same page from every checkout: no help text names a local path


def test_the_page_lists_every_verb_and_every_run_flag() -> None:
    from runner.cli import build_parser

    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    verbs = next(a for a in parser._actions if a.dest == "verb").choices
    assert verbs and all(f"## `finevo-verify {verb}`" in page for verb in verbs)
    run = verbs["run"]
    flags = [s for a in run._actions for s in a.option_strings if s.startswith("--")]
    assert "--llm" in flags and all(flag in page for flag in flags)
