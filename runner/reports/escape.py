"""The one escaping layer: every piece of untrusted text crosses it before it reaches a report.

Untrusted is everything a tool or the agent produced (values, reasons built from exception text,
stdout, code) and everything read back from a results document that may have been forged. Each
medium has its own functions here, and the writers use nothing else:

* **markdown / HTML** (``summary.md``, the PR comment): :func:`md_inline` for a table cell, a
  ``<summary>`` line or a sentence -- one line, every character GitHub's markdown or HTML could read
  as markup written as a numeric character reference (shown as itself, never parsed), ``@``, ``#``
  and ``GH-`` followed by a word joiner (no mention, no issue reference), the ``:`` of ``://`` and
  the ``.`` of ``www.`` as references (nothing is autolinked), a leading list marker or underline
  neutralised; :func:`md_code_block` for multi-line text, in a fence longer than any backtick run
  inside it (GitHub links nothing in code). The markup the writer itself emits never comes from here.
* **the GitHub job log** (workflow commands): :func:`command_data` / :func:`command_property` escape
  an annotation's message and properties as the runner expects; :func:`log_text` makes untrusted
  text one safe piece of a line (no line break, no control character, so it can never start a line
  with ``::``); :func:`stop_commands` wraps a block of untrusted lines in ``::stop-commands::`` with
  a random token so that nothing inside can be read as a command.
* **XML** (``junit.xml``): :func:`xml_text` keeps only characters XML 1.0 allows.

All of them first make text safe as text (:func:`clean`): lone surrogates (invalid UTF-8 read with
``surrogateescape``), NUL and other control characters, and bidirectional overrides become U+FFFD;
and every one caps the length, so a 1 MB line costs the report a few hundred characters.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterable, Iterator
from typing import Any

REPLACEMENT = "\ufffd"
WORD_JOINER = "\u2060"
ELLIPSIS = "…"

#: C0 controls but tab and line feed, DEL, C1 controls, lone surrogates, bidi embeddings/overrides/isolates,
#: and the non-characters XML 1.0 refuses.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069\ufffe\uffff]")
_LINE_BREAKS = re.compile("\r\n|[\r\n\u0085\u2028\u2029]")
#: Characters that markdown, GitHub's extensions (tables, strikethrough, math, autolinks) or HTML read
#: as markup: written as numeric references, which CommonMark shows as literal text.
_MD_SPECIAL = frozenset("\\`*_[]<>&|!~#:$\"")
#: What opens a block when it starts a line: a list marker, a setext underline, a thematic break.
_BLOCK_START = re.compile(r"[-+*][ \t]|[-+*]$|[0-9]{1,9}[.)]([ \t]|$)|=+[ \t]*$|-+[ \t]*$")
_WWW = re.compile("(w)(ww)\\.", re.IGNORECASE)
#: ``GH-123`` is an issue reference on GitHub as surely as ``#123``.
_GH_REF = re.compile(r"\b(gh-)(?=[0-9])", re.IGNORECASE)


def clean(text: Any, *, keep_newlines: bool = True) -> str:
    """``text`` as a safe ``str``: unsafe characters replaced by U+FFFD, ``\\r\\n`` / ``\\r`` as ``\\n``."""
    if isinstance(text, bytes):
        raw = text.decode("utf-8", "replace")
    else:
        raw = text if isinstance(text, str) else short_value(text)
    safe = _UNSAFE.sub(REPLACEMENT, _LINE_BREAKS.sub("\n", raw))
    return safe if keep_newlines else safe.replace("\n", " ⏎ ")


def cap(text: str, limit: int) -> str:
    """At most ``limit`` characters; a cut says how much was left out."""
    if len(text) <= limit:
        return text
    note = f"{ELLIPSIS} [{len(text) - limit} more characters]"
    return text[: max(0, limit - len(note))] + note


def short_value(value: Any, limit: int = 400, depth: int = 4) -> str:
    """A compact JSON-like rendering of any value, at most ``depth`` levels deep and ``limit`` long
    (never recursing into a deeply nested value, never raising)."""
    writer = _ShortWriter(limit, depth)
    writer.walk(value, 0)
    text = "".join(writer.out)
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


class _ShortWriter:
    """:func:`short_value`'s walk: each ``emit`` spends the budget; False once it is spent."""

    def __init__(self, limit: int, depth: int) -> None:
        self.out: list[str] = []
        self.budget = limit + 1
        self.limit = limit
        self.depth = depth

    def emit(self, piece: str) -> bool:
        self.out.append(piece)
        self.budget -= len(piece)
        return self.budget > 0

    def walk(self, v: Any, level: int) -> bool:
        if isinstance(v, dict):
            return self.emit("{…}") if level >= self.depth else self._mapping(v, level)
        if isinstance(v, (list, tuple)):
            return self.emit("[…]") if level >= self.depth else self._sequence(v, level)
        if isinstance(v, str):
            return self.emit(json.dumps(v[: self.limit], ensure_ascii=False))
        if v is None or isinstance(v, (bool, int, float)):
            return self.emit(json.dumps(v) if not isinstance(v, int) or abs(v) < 10**40
                             else f"{type(v).__name__}(…)")
        return self.emit(f"<{type(v).__name__}>")

    def _mapping(self, v: dict[Any, Any], level: int) -> bool:
        if not self.emit("{"):
            return False
        for i, (k, item) in enumerate(v.items()):
            if (i and not self.emit(", ")) or not self.emit(json.dumps(str(k), ensure_ascii=False) + ": "):
                return False
            if not self.walk(item, level + 1):
                return False
        return self.emit("}")

    def _sequence(self, v: list[Any] | tuple[Any, ...], level: int) -> bool:
        if not self.emit("["):
            return False
        for i, item in enumerate(v):
            if (i and not self.emit(", ")) or not self.walk(item, level + 1):
                return False
        return self.emit("]")


# --------------------------------------------------------------------------- markdown / HTML

def md_inline(text: Any, limit: int = 300) -> str:
    """Untrusted text as inert inline markdown/HTML on one line (a table cell, a ``<summary>``).

    Kept literal where CommonMark cannot read them as markup, so ids stay readable in the source:
    ``_`` inside a word (it opens no emphasis there) and ``:`` not followed by ``//``.
    """
    plain = cap(clean(text, keep_newlines=False), limit).lstrip()
    out: list[str] = []
    last = len(plain) - 1
    for i, ch in enumerate(plain):
        if i == 0 and _BLOCK_START.match(plain):  # would open a list or underline a heading
            out.append(f"&#{ord(ch)};")
            continue
        intraword = ch == "_" and 0 < i < last and plain[i - 1].isalnum() and plain[i + 1].isalnum()
        if intraword or (ch == ":" and not plain.startswith("//", i + 1)):
            out.append(ch)
        elif ch in _MD_SPECIAL:
            out.append(f"&#{ord(ch)};")
        elif ch == "@":
            out.append("@" + WORD_JOINER)
        else:
            out.append(ch)
    # An issue reference is "#123" after decoding: keep "#" and what follows apart; "www." starts
    # an autolink as surely as "https://" does.
    text = _WWW.sub(r"\1\2&#46;", "".join(out).replace("&#35;", "&#35;" + WORD_JOINER))
    return _GH_REF.sub(r"\1" + WORD_JOINER, text)


def md_code_block(text: Any, limit: int = 12_000, lang: str = "") -> list[str]:
    """Untrusted multi-line text as a fenced code block (lines, without a trailing blank)."""
    body = cap(clean(text), limit).replace("\t", "    ")
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    info = re.sub(r"[^A-Za-z0-9_+-]", "", lang)
    return [fence + info, *body.split("\n"), fence]


def md_inline_code(text: Any, limit: int = 200, *, in_table: bool = False) -> str:
    """A short untrusted value as inline code on one line (in a table, ``|`` kept from splitting the row)."""
    body = cap(clean(text, keep_newlines=False), limit)
    if in_table:
        body = body.replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or not body.strip() else ""
    return f"{ticks}{pad}{body or ' '}{pad}{ticks}"


# --------------------------------------------------------------------------- the GitHub job log

def command_data(text: Any, limit: int = 4000) -> str:
    """The message of a workflow command (``::error ...::MESSAGE``)."""
    body = cap(clean(text), limit)
    return body.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def command_property(text: Any, limit: int = 200) -> str:
    """A property value of a workflow command (``title=...``, ``file=...``)."""
    return command_data(text, limit).replace(":", "%3A").replace(",", "%2C")


def log_text(text: Any, limit: int = 2000) -> str:
    """Untrusted text as one piece of a log line: no line break or control character survives, so
    it can only ever follow the writer's own prefix on the writer's own line."""
    return cap(clean(text, keep_newlines=False), limit)


def stop_commands(lines: Iterable[str], token: str | None = None) -> Iterator[str]:
    """``lines`` between ``::stop-commands::TOKEN`` and ``::TOKEN::``: the runner reads no command
    in between. The token is random (and checked absent from the block), so it cannot be forged."""
    block = list(lines)
    token = token or secrets.token_hex(16)
    while any(token in line for line in block):
        token = secrets.token_hex(16)
    yield f"::stop-commands::{token}"
    yield from block
    yield f"::{token}::"


# --------------------------------------------------------------------------- XML

_XML_UNSAFE = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: Any, limit: int | None = None) -> str:
    """Text XML 1.0 can hold: every character it forbids (NUL, controls, surrogates, U+FFFE/FFFF)
    replaced by U+FFFD. Markup characters are the XML writer's job (it escapes them)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    elif not isinstance(text, str):
        text = short_value(text)
    text = _XML_UNSAFE.sub(REPLACEMENT, _LINE_BREAKS.sub("\n", text))
    return cap(text, limit) if limit is not None else text
