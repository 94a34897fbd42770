"""Getting the tool's Python code out of a model reply.

Models wrap code in many ways: reasoning in ``<think>...</think>`` tags (sometimes with the
opening tag missing), prose before and after, several fenced blocks (the tool, then a usage
example), ``py`` / ``python3`` / untagged fences, or bare code with no fence at all. The rule:

1. Drop reasoning sections.
2. Among complete fenced blocks whose language is Python or unstated, keep those that parse and
   define a public top-level function; prefer ``python``-tagged ones; of those, take the last
   (a model that corrects itself puts the fix last).
3. With no fenced block, accept the reply itself (or its tail from the first ``import`` /
   ``from`` / ``def`` / ``@`` line) when that parses and defines a public function.
4. Otherwise: a reply that declines (``I can't help with that``) raises
   :class:`~finevo.errors.ModelRefused`; anything else (empty, prose only, truncated or
   unparseable code) raises :class:`~finevo.errors.CodeExtractionError` saying why.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from finevo.errors import CodeExtractionError, ModelRefused
from finevo.pysource import parse

_REASONING_TAGS = ("think", "thinking", "reasoning", "reflection")
_CLOSED_REASONING = re.compile(
    r"<(?P<tag>" + "|".join(_REASONING_TAGS) + r")\b[^>]*>.*?</(?P=tag)\s*>", re.DOTALL | re.IGNORECASE)
_CLOSING_ONLY = re.compile(r"</(?:" + "|".join(_REASONING_TAGS) + r")\s*>", re.IGNORECASE)
_OPEN_UNCLOSED = re.compile(r"<(?:" + "|".join(_REASONING_TAGS) + r")\b[^>]*>", re.IGNORECASE)

_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]*)[^\n]*$", re.MULTILINE)
_PYTHON_LANGS = {"python", "py", "python3", "py3"}
_CODE_START = re.compile(r"^(?:import\s|from\s+\S+\s+import\s|def\s|async\s+def\s|@)", re.MULTILINE)

_REFUSAL = re.compile(
    r"\b(?:I\s*(?:can(?:'|’)?t|cannot|can\s+not|won(?:'|’)?t|will\s+not|am\s+unable\s+to|(?:'|’)m\s+unable\s+to|"
    r"am\s+not\s+able\s+to|(?:'|’)m\s+not\s+able\s+to|must\s+decline|refuse)"
    r"|I(?:'|’)m\s+sorry,?\s+but|I\s+am\s+sorry,?\s+but|not\s+able\s+to\s+(?:help|assist|comply)"
    r"|against\s+(?:my|the)\s+(?:guidelines|polic(?:y|ies)))",
    re.IGNORECASE)


@dataclass(frozen=True)
class _Block:
    lang: str
    code: str
    complete: bool


def extract_code(reply: str) -> str:
    """The tool code in ``reply`` (ending with one newline); see the module docstring for the rules."""
    if reply is None or not reply.strip():
        raise CodeExtractionError("empty reply: the model returned no text")
    text = strip_reasoning(reply)
    if not text.strip():
        raise CodeExtractionError("reply holds only reasoning (no answer after the <think> section)")

    blocks = _fenced_blocks(text)
    if blocks:
        code = _pick(blocks)
        if code is not None:
            return code
    else:
        for candidate in _unfenced_candidates(text):
            if _defines_public_function(candidate):
                return candidate.strip("\n") + "\n"

    if _REFUSAL.search(text) and not any(b.complete and b.lang in _PYTHON_LANGS for b in blocks):
        raise ModelRefused(f"the model declined: {_first_sentence(text)}")
    raise CodeExtractionError(_why_not(text, blocks))


def strip_reasoning(reply: str) -> str:
    """The reply without ``<think>``-style sections (closed, closing-tag-only or never closed)."""
    text = _CLOSED_REASONING.sub("", reply)
    closing = list(_CLOSING_ONLY.finditer(text))
    if closing:  # an opening tag was left out by the chat template: everything before is reasoning
        text = text[closing[-1].end():]
    opened = _OPEN_UNCLOSED.search(text)
    if opened:  # never closed: the reply was cut off while still reasoning
        text = text[: opened.start()]
    return text


# --------------------------------------------------------------------------- internals
def _fenced_blocks(text: str) -> list[_Block]:
    blocks: list[_Block] = []
    pos = 0
    while True:
        opening = _FENCE_OPEN.search(text, pos)
        if opening is None:
            return blocks
        fence = opening.group("fence")
        body_start = opening.end() + 1
        closing = re.compile(r"^[ \t]{0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$",
                             re.MULTILINE).search(text, body_start)
        lang = opening.group("lang").lower()
        if closing is None:
            blocks.append(_Block(lang, text[body_start:], complete=False))
            return blocks
        blocks.append(_Block(lang, text[body_start:closing.start()], complete=True))
        pos = closing.end()


def _pick(blocks: list[_Block]) -> str | None:
    usable = [b for b in blocks if b.complete and (b.lang in _PYTHON_LANGS or b.lang == "")]
    good = [b for b in usable if _defines_public_function(b.code)]
    tagged = [b for b in good if b.lang in _PYTHON_LANGS]
    chosen = (tagged or good)[-1:] if (tagged or good) else []
    return chosen[0].code.strip("\n") + "\n" if chosen else None


def _unfenced_candidates(text: str) -> list[str]:
    candidates = [text]
    start = _CODE_START.search(text)
    if start is not None and start.start() > 0:
        candidates.append(text[start.start():])
    return candidates


def _parse(code: str) -> ast.Module | None:
    try:
        return parse(code)
    except (SyntaxError, ValueError):
        return None


def _defines_public_function(code: str) -> bool:
    tree = _parse(code)
    if tree is None:
        return False
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_")
               for node in tree.body)


def _why_not(text: str, blocks: list[_Block]) -> str:
    pythonish = [b for b in blocks if b.lang in _PYTHON_LANGS or b.lang == ""]
    if any(not b.complete for b in pythonish) and not any(b.complete for b in pythonish):
        return "reply ends inside an unterminated code block (truncated output?)"
    for block in pythonish:
        try:
            parse(block.code)
        except SyntaxError as exc:
            return f"code block does not parse: line {exc.lineno}: {exc.msg}"
    if pythonish:
        return "no code block defines a public function"
    if blocks:
        langs = ", ".join(sorted({b.lang or "untagged" for b in blocks}))
        return f"no Python code block in the reply (found: {langs})"
    if _CODE_START.search(text):
        tree_error = None
        try:
            parse(text[_CODE_START.search(text).start():])  # type: ignore[union-attr]
        except SyntaxError as exc:
            tree_error = f"line {exc.lineno}: {exc.msg}"
        if tree_error:
            return f"unfenced code does not parse ({tree_error}; truncated output?)"
        return "unfenced code defines no public function"
    return f"no code in the reply: {_first_sentence(text)}"


def _first_sentence(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    match = re.match(r"(.+?[.!?])(\s|$)", flat)
    sentence = match.group(1) if match else flat
    return sentence if len(sentence) <= limit else sentence[: limit - 3] + "..."
