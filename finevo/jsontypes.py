"""The JSON boundary: the one name for data that is JSON and nothing more specific.

Use :data:`JSONValue` and :data:`JSONObject` only where the data really is open JSON: a tool's
arguments, an LLM's reply before it is read, a task file's oracle parameters before their typed model
reads them, a JSON file on its way in or out. A record with fixed keys gets a type of its own (a
pydantic model, a dataclass, a ``TypedDict``) and is read into it right here, at the boundary.

:data:`JSONValue` is pydantic's ``JsonValue``: mypy reads it as the recursive union ``None | bool |
int | float | str | list[JSONValue] | dict[str, JSONValue]``, and a pydantic field of this type
accepts exactly that (a tuple, a set or any other object is refused). :data:`JSONObject` leaves its
values ``Any``: the code that reads such an object narrows each value where it reads it (a document on
its way into its model, a tool's arguments on their way into a call), so the alias names the boundary
rather than proving the values' shape.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from pydantic import JsonValue

__all__ = ["JSONObject", "JSONValue"]

#: Any JSON value.
JSONValue: TypeAlias = JsonValue
#: A JSON object: text keys, values narrowed where they are read.
JSONObject: TypeAlias = dict[str, Any]
