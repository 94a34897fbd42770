"""Open generated reports in a real headless Chromium (Debian's, driven by Playwright).

Like Docker, the browser is mandatory in CI and optional elsewhere: without Playwright or the
browser, the tests marked ``browser`` are skipped with the reason, unless ``FINEVO_REQUIRE_BROWSER=1``
(set by ``.ci/run``), when they fail. ``bash scripts/setup-browser.sh`` installs the browser;
``FINEVO_CHROMIUM`` names another executable (default ``/usr/bin/chromium``).

No browser is downloaded: Playwright drives the system's Chromium through ``executable_path``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("FINEVO_CHROMIUM", "/usr/bin/chromium")


def _unavailable() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        return f"Playwright is not installed ({exc}): pip install -e '.[dev]'"
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM}: bash scripts/setup-browser.sh (or set FINEVO_CHROMIUM)"
    return None


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("FINEVO_REQUIRE_BROWSER") == "1":
        pytest.fail(f"FINEVO_REQUIRE_BROWSER=1 but the browser tests cannot run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = _unavailable()
    if reason is not None:
        _skip_or_fail(reason)
    from playwright.sync_api import Error, sync_playwright

    with sync_playwright() as pw:
        try:
            # Chromium's own sandbox needs user namespaces a root container often lacks; the page
            # under test is our own file, and the CSP is what is being tested.
            launched = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        except Error as exc:
            _skip_or_fail(f"{CHROMIUM} did not start: {str(exc).splitlines()[0]}")
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Opened:
    """A report open in a page, with every console error, page error and request it caused."""

    page: Any
    url: str
    load_s: float
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    @property
    def other_requests(self) -> list[str]:
        """Requests for anything but the page's own file (a fragment is the same file)."""
        return [u for u in self.requests if u.split("#", 1)[0] != self.url]

    def text(self, selector: str) -> str:
        return str(self.page.locator(selector).inner_text()).strip()

    def visible_rows(self) -> list[str]:
        return list(self.page.eval_on_selector_all(
            "#task-table tbody tr", "rows => rows.filter(r => !r.hidden).map(r => r.dataset.id)"))


def open_report(browser: Any, path: Path, *, timeout_s: float = 60.0, width: int = 1280) -> Opened:
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    url = path.resolve().as_uri()
    opened = Opened(page=page, url=url, load_s=0.0)
    page.on("console", lambda m: opened.console_errors.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: opened.page_errors.append(str(e)))
    page.on("request", lambda r: opened.requests.append(r.url))
    # Anything that is not the file itself is refused (and recorded above): the page must need nothing.
    context.route(lambda u: not u.startswith("file:"), lambda route: route.abort())
    page.set_default_timeout(20_000)
    started = time.monotonic()
    page.goto(url, wait_until="load", timeout=timeout_s * 1000)
    opened.load_s = time.monotonic() - started
    return opened
