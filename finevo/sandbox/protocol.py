"""Length-prefixed JSON frames between the sandbox parent and its warm worker."""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

_HEADER = struct.Struct(">I")
MAX_FRAME = 256 * 1024 * 1024
#: Bytes a sandbox child may send on its control pipe (the result record included); the child
#: refuses a larger result itself, the supervisor kills a child that sends more.
RESULT_CAP = 16 * 1024 * 1024


# --------------------------------------------------------------------------- the sealed encoder
# Tool code runs in the same interpreter as the harness that reports its result, and it may
# import json: replacing json.JSONEncoder.encode (or iterencode, or json.dumps) would put its own
# text into every record serialised through the json package afterwards -- a forged "ok" result,
# or a refusal of the audit hook that never reaches the supervisor. The records a sandbox child
# sends are therefore encoded by C objects captured here, at import, before any tool code runs;
# Python code cannot replace a C function already held. Floats, ints and strings are rendered by
# the C encoder itself (float subclasses by float's own repr), NaN/Infinity are refused.
def _not_serialisable(obj: Any) -> Any:
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


# typeshed does not declare the C accelerator's names (they are None without _json)
_c_make_encoder = json.encoder.c_make_encoder  # type: ignore[attr-defined]
_c_encode_ascii = json.encoder.c_encode_basestring_ascii  # type: ignore[attr-defined]
if _c_make_encoder is None or _c_encode_ascii is None:  # pragma: no cover - CPython always has _json
    raise ImportError("the sandbox needs the C accelerator of the json package (_json)")
_SEALED_ENCODE = _c_make_encoder(None, _not_serialisable, _c_encode_ascii, None, ": ", ", ",
                                 False, False, False)
_join = "".join


def sealed_dumps(obj: Any) -> str:
    """``json.dumps(obj, allow_nan=False)`` (ASCII output) that tool code cannot tamper with.

    Raises TypeError for a value JSON cannot hold, ValueError for NaN/Infinity and RecursionError
    for a structure that contains itself."""
    return _join(_SEALED_ENCODE(obj, 0))


class ChannelClosed(EOFError):
    """The other side closed the pipe (or died)."""


class ChannelTimeout(TimeoutError):
    """No complete frame arrived before the deadline."""


def write_frame(fd: int, obj: Any) -> None:
    payload = json.dumps(obj, allow_nan=False).encode("utf-8")
    data = memoryview(_HEADER.pack(len(payload)) + payload)
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _read_exact(fd: int, size: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeout("no reply before the deadline")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise ChannelClosed("channel closed")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, deadline: float | None = None) -> Any:
    """Read one frame; ``deadline`` is a ``time.monotonic()`` value (None = wait forever)."""
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
    if size > MAX_FRAME:
        raise ChannelClosed(f"frame of {size} bytes is too large")
    return json.loads(_read_exact(fd, size, deadline))
