"""The JSON boundary, named once.

:data:`JSONObject` is a JSON object whose keys are not fixed by the project: a tool's arguments,
the value a tool returned, a typed error's free-form details, a document read from disk or HTTP
before it is validated into its model. A record with a fixed set of keys is never a ``JSONObject``:
it is a model (a dataclass or a pydantic model) from the moment it is created.
"""

from __future__ import annotations

from typing import Any, TypeAlias

__all__ = ["JSONObject"]

#: A JSON object of arbitrary keys and JSON values (see the module's docstring for where it is used).
JSONObject: TypeAlias = dict[str, Any]
