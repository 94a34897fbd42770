"""Render a run's summary.md as GitHub would (cmark-gfm) and screenshot it with headless Chromium.

    python scripts/summary_picture.py out/<run_id>/summary.md docs/summary.png

Makes the picture of a job summary in README.md and docs/index.md (from a `--llm reference` run).
Needs `chromium` (Debian: apt-get install chromium fonts-noto-color-emoji).
"""

from __future__ import annotations

import html
import subprocess
import sys
import tempfile
from pathlib import Path

import cmarkgfm

STYLE = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; font-size: 14px; line-height: 1.5;
       color: #1f2328; max-width: 980px; margin: 24px auto; padding: 0 24px; }
h1, h2 { border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; }
table { border-collapse: collapse; margin: 8px 0; } th, td { border: 1px solid #d1d9e0; padding: 4px 10px; }
th { background: #f6f8fa; } code { background: #eff1f3; padding: .1em .3em; border-radius: 4px; font-size: 85%; }
blockquote { margin: 12px 0; padding: 4px 14px; border-left: 4px solid #0969da; }
blockquote.warn { border-color: #9a6700; } .label { color: #0969da; } blockquote.warn .label { color: #9a6700; }
"""
#: GitHub's alert blocks (`> [!WARNING]`), which cmark-gfm leaves as plain quotes.
ALERTS = {"WARNING": ("warn", "⚠️ Warning"), "NOTE": ("note", "ℹ️ Note")}


def page(markdown: str) -> str:
    body = cmarkgfm.github_flavored_markdown_to_html(markdown)
    for kind, (css, label) in ALERTS.items():
        opened = f'<blockquote class="{css}">\n<p><b class="label">{label}</b><br>'
        body = body.replace(f"<blockquote>\n<p>[!{kind}]", opened)
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{html.escape('summary')}</title>"
            f"<style>{STYLE}</style></head><body>{body}</body></html>")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    source, target = Path(argv[0]), Path(argv[1]).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        rendered = Path(tmp) / "summary.html"
        rendered.write_text(page(source.read_text(encoding="utf-8")), encoding="utf-8")
        subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--screenshot={target}", "--window-size=1000,1000", rendered.as_uri()],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
