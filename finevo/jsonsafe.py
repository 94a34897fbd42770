"""The one rule for turning any value into strict JSON: :func:`json_safe`.

Every record that leaves the process as JSON (error details, registry traces, the snapshot's
quote files and manifest, results.json, events.jsonl) goes through it, so ``json.dumps(...,
allow_nan=False)`` always succeeds and every reader sees the same value for the same input.

The rule, applied recursively:

==============================================  =============================================
value                                           becomes
==============================================  =============================================
``None``, ``bool``, ``int``, ``str``            itself (subclasses, e.g. enum members, become the
                                                plain ``bool`` / ``int`` / ``str``)
finite ``float`` (``Decimal`` too)              a plain ``float``
NaN, +-infinity, ``NaT``, ``pd.NA``             ``None`` (JSON ``null``): *missing*, never a string
numpy / pandas scalars and arrays               their Python value (``.tolist()``), then this rule
``datetime`` / ``date`` / ``time``              ISO 8601 text (``.isoformat()``)
``bytes``                                       UTF-8 text (undecodable bytes replaced)
mapping                                         ``dict`` with ``str`` keys: a ``str`` key is kept,
                                                any other key is cleaned by this rule and written
                                                as JSON writes it (``1`` -> ``"1"``, ``True`` ->
                                                ``"true"``, ``None`` -> ``"null"``); when two keys
                                                collide the later one wins, as a JSON reader would
``list`` / ``tuple``                            ``list``, in order
``set`` / ``frozenset``                         ``list``, sorted by its items' JSON text
a container nested deeper than ``max_depth``    the text ``"<nested deeper than N levels>"`` (this
                                                also ends a self-referencing container)
anything else                                   ``repr(value)`` (``"<unrepresentable T>"`` when
                                                ``repr`` itself fails)
==============================================  =============================================

The module imports nothing beyond the standard library (numpy and pandas values are recognised by
what they offer, ``tolist``), so light callers such as :mod:`finevo.errors` stay light.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

__all__ = ["MAX_DEPTH", "json_safe"]

#: Containers nested deeper than this are cut (far deeper than any record the project writes).
MAX_DEPTH = 64

#: Type names of pandas' missing-value singletons (recognised without importing pandas).
_MISSING_TYPES = frozenset({"NaTType", "NAType"})


def json_safe(value: Any, *, max_depth: int = MAX_DEPTH) -> Any:
    """A copy of ``value`` made only of JSON values, by the rule in this module's docstring."""
    cut = f"<nested deeper than {max_depth} levels>"

    def clean(value: Any, depth: int) -> Any:
        if value is None or type(value) in (str, bool, int):
            return value
        kind = type(value).__name__
        if kind in _MISSING_TYPES:
            return None
        if isinstance(value, bool):
            return bool(value)
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float | Decimal):
            number = float(value)
            return number if math.isfinite(number) else None
        if isinstance(value, str):
            return str.__str__(value)
        if isinstance(value, datetime | date | time):
            return value.isoformat()
        if kind == "datetime64":  # numpy: its tolist() may give nanoseconds as an int
            text = str(value)
            return None if text == "NaT" else text
        if isinstance(value, bytes | bytearray):
            return bytes(value).decode("utf-8", errors="replace")
        if isinstance(value, Mapping | list | tuple | set | frozenset):
            if depth >= max_depth:
                return cut
            if isinstance(value, Mapping):
                out: dict[str, Any] = {}
                for key, item in value.items():
                    out[key if type(key) is str else _key_text(clean(key, depth + 1))] = clean(item, depth + 1)
                return out
            items = [clean(item, depth + 1) for item in value]
            if isinstance(value, set | frozenset):
                items.sort(key=lambda item: json.dumps(item, sort_keys=True))
            return items
        to_list = getattr(value, "tolist", None)
        if callable(to_list):  # numpy scalars and arrays, pandas Series and Index
            try:
                plain = to_list()
            except Exception:  # a broken or hostile tolist(): the repr below
                pass
            else:
                if type(plain) is not type(value):
                    return clean(plain, depth)
        try:
            return repr(value)
        except Exception:
            return f"<unrepresentable {kind}>"

    return clean(value, 0)


def _key_text(key: Any) -> str:
    """A cleaned non-``str`` key as JSON writes it (``1`` -> ``"1"``, ``None`` -> ``"null"``)."""
    return key if isinstance(key, str) else json.dumps(key, sort_keys=True)
